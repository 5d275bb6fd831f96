"""wild-first's rounds with every candidate's route walked once a chunk (`routing.walked`) make the very tables,
loads and leftovers of the batch-by-batch walks they replace, on any tables: plain dimension orders (twisted too),
per-destination orders, and broken pairs that are not closed upstream (the chunk falls back to the batch walks)."""

from typing import Any

import numpy as np
import pytest

from helpers import ocs_failure
from tpufleet.routing import dor, walked
from tpufleet.routing.tolerant import MAX_CHAIN_ROUNDS, base_load, batch_count, broken_pairs, shuffled, wild_first
from tpufleet.shapes import parse_shape
from tpufleet.topology import neighbors


def _batch_by_batch(P, L, alive, broken, base):
    """`tolerant.wild_first` without ring runs, every round one walk a batch (`walked._repair_batch`)."""
    n = len(alive)
    wild = np.zeros(P.shape, dtype=bool)
    Pf, Lf, Wf = P.ravel(), L.ravel(), wild.ravel()
    bad = np.zeros(n * n, dtype=bool)
    bad[broken] = True
    extra = base.copy()
    todo = broken[shuffled(len(broken), 0)]
    limit = int(L.max()) + 2 * MAX_CHAIN_ROUNDS + 4
    for round_no in range(MAX_CHAIN_ROUNDS):
        if not len(todo):
            break
        fixed_any, left = False, []
        for batch in np.array_split(todo, batch_count(len(todo))):
            fixed, rest = walked._repair_batch(P, alive, batch, round_no, bad, extra, limit, (Pf, Lf, Wf))
            fixed_any |= fixed
            left.append(rest)
        todo = np.concatenate(left)
        if not fixed_any:
            break
    Pf[todo], Lf[todo] = -2, -1
    return wild, todo, extra


def _graphs(text, twisted=False):
    shape = parse_shape(text, twisted)
    exp = neighbors(shape)
    x = ocs_failure(shape, "x", 1)[1]
    z = ocs_failure(shape, "z", 2)[1]
    both = np.where((x < 0) | (z < 0), -1, exp)
    link = both.copy()
    link[5, 2] = -1  # and one more optical link's end in y
    return shape, exp, {"x": x, "x+z": both, "x+z+link": link}


REPAIRS: list[Any] = [wild_first, _batch_by_batch]  # the walk kept for a chunk, and a walk a batch (as before)
CASES = [(text, name) for text in ("4x4x8", "8x8x8") for name in ("x", "x+z", "x+z+link")]


@pytest.mark.parametrize("text, name", CASES)
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0)])
def test_walked_once_a_chunk_repairs_exactly_as_batch_by_batch(text, name, order):
    shape, exp, graphs = _graphs(text)
    alive = graphs[name]
    results = []
    for repair in REPAIRS:
        P, L = dor.tables(shape, order)
        broken = broken_pairs(P, exp, alive)
        base = base_load(P, L, alive, broken, shape, exp)
        out = repair(P, L, alive, broken, base=base) if repair is wild_first else repair(P, L, alive, broken, base)
        results.append((P, L, *out))
    for fast, slow in zip(*results, strict=True):
        assert fast.dtype == slow.dtype and np.array_equal(fast, slow)


def test_per_destination_orders_repair_exactly_as_batch_by_batch():
    from tpufleet.routing.dimension_orders import choose_orders

    shape, exp, graphs = _graphs("4x4x8")
    alive = graphs["x+z+link"]
    results = []
    for repair in REPAIRS:
        P, L, _, _, broken = choose_orders(shape, exp, alive, None, [(0, 1, 2), (2, 1, 0)], False, None)
        base = base_load(P, L, alive, broken, shape)
        out = repair(P, L, alive, broken, base=base) if repair is wild_first else repair(P, L, alive, broken, base)
        results.append((P, L, *out))
    for fast, slow in zip(*results, strict=True):
        assert np.array_equal(fast, slow)


def test_broken_pairs_not_closed_upstream_fall_back_to_the_batch_walks(monkeypatch):
    """Every 97th broken pair left out: routes of the others' neighbours may read an entry still broken, and
    those chunks are walked batch by batch (a small chunk makes both kinds)."""
    monkeypatch.setattr(walked, "CHUNK_PAIRS", 64)
    seen = []
    chunk = walked._walk

    def walk(*args: Any) -> Any:
        seen.append(chunk(*args))
        return seen[-1]

    monkeypatch.setattr(walked, "_walk", walk)
    shape, exp, graphs = _graphs("4x4x8", twisted=True)
    alive = graphs["x+z"]
    results = []
    for repair in REPAIRS:
        P, L = dor.tables(shape)
        broken = np.delete(broken_pairs(P, exp, alive), np.s_[::97])
        base = base_load(P, L, alive, broken, shape)
        out = repair(P, L, alive, broken, base=base) if repair is wild_first else repair(P, L, alive, broken, base)
        results.append((P, L, *out))
    for fast, slow in zip(*results, strict=True):
        assert np.array_equal(fast, slow)
    assert any(w is None for w in seen) and any(w is not None for w in seen)


def test_chain_rounds_walk_no_route_batch_by_batch(monkeypatch):
    """Chain rounds (pairs with no intact neighbour) read every route from their chunk's walk or from the pairs
    repaired before them, none walked again in a batch."""
    shape, exp, graphs = _graphs("8x8x8")
    alive = graphs["x+z+link"]
    P, L = dor.tables(shape)
    broken = broken_pairs(P, exp, alive)
    base = base_load(P, L, alive, broken, shape, exp)
    rounds = []
    chunk = walked._walk

    def walk(*args: Any) -> Any:
        rounds.append(args[-1])
        return chunk(*args)

    monkeypatch.setattr(walked, "_walk", walk)
    monkeypatch.setattr(walked, "_walk_max", lambda *a: pytest.fail("a route walked in a batch"))
    wild_first(P, L, alive, broken, base=base)
    assert max(rounds) >= 1
