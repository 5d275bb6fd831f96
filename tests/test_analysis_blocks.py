"""The pair-by-pair analysis sweeps blocks of destination rows (`analysis._Block`) and gathers the channel keys
block by block (`cdg.Channels`): whatever the block size, it gives exactly the answer of one sweep over every pair
with the VC bit sets checked at the end (`analysis.flow`, `analysis.deadlock_check`), cycles included."""

from typing import Any

import numpy as np
import pytest

from tpufleet.routing import analysis, dor
from tpufleet.routing.analysis import Levels, RouteTables, analyze_pairs, deadlock_check, flow, link_load, verify
from tpufleet.shapes import parse_shape
from tpufleet.topology import neighbors


def mixed_tables(text: str, seed: int, wild: bool, classes: bool) -> RouteTables:
    """Each destination on one of three dimension orders (on one VC block unless `classes`: often cyclic), some
    entries flagged wild, a few links dead (pairs over them do not arrive)."""
    shape = parse_shape(text)
    exp = neighbors(shape)
    n = len(exp)
    rng = np.random.default_rng(seed)
    orders = [(0, 1, 2), (1, 0, 2), (2, 1, 0)]
    made = [dor.tables(shape, order) for order in orders]
    pick = rng.integers(0, 3, n)
    P = np.choose(pick[:, None], [p for p, _ in made]).astype(np.int8)
    L = np.choose(pick[:, None], [h for _, h in made]).astype(np.int16)
    alive = exp.copy()
    for chip in rng.integers(0, n, 2).tolist():
        other = int(alive[chip, 0])
        alive[chip, 0] = alive[other, 1] = -1
    flags = rng.random((n, n)) < 0.05 if wild else None
    dest_class = pick.astype(np.int64) if classes else None
    return RouteTables(shape, alive, P, L, flags, dest_class, orders if classes else [(0, 1, 2)])


def one_sweep(rt: RouteTables) -> tuple[bytes, bytes, tuple[int, bool, list[str], dict[str, Any]]]:
    levels = Levels(rt.L)
    routable = verify(rt, levels)
    weight, mask = flow(rt, routable, levels)
    return routable.tobytes(), link_load(rt, weight).tobytes(), deadlock_check(rt, mask)


@pytest.mark.parametrize("text", ["4x4x4", "3x3x4", "4x4x8"])
@pytest.mark.parametrize("wild", [False, True])
@pytest.mark.parametrize("classes", [False, True])
def test_blocks_of_any_size_give_the_one_sweep_answer(monkeypatch, text, wild, classes):
    rt = mixed_tables(text, 7, wild, classes)
    verdicts = set()
    for layered in (False, True):
        rt.wild_layers = layered
        monkeypatch.setattr(analysis, "BLOCK_PAIRS", 10**9)
        whole = one_sweep(rt)
        for pairs in (1, 200, 3000):  # one row a block; several rows; the key width growing mid-sweep
            monkeypatch.setattr(analysis, "BLOCK_PAIRS", pairs)
            a = analyze_pairs(rt)
            assert (a.routable.tobytes(), a.load.tobytes(), (a.vcs, a.deadlock_free, a.cycle, a.vc_blocks)) == whole
            assert one_sweep(rt) == whole
        verdicts.add(whole[2][1])
    assert not analyze_pairs(rt).routable.all()  # the dead links leave pairs that do not arrive
    if not classes:
        assert False in verdicts  # three orders on one VC block: a cycle, found the same way
