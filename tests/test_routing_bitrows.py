"""Reach checks on bit rows (`routing.bitrows`): the broken pairs, the first round and the repair's order found as
bits give exactly the pair-by-pair check's counts (`tolerant.left_unrepaired`, itself held to the repair in
test_routing_reach.py), on tori whose rings fill a word or not, with links dead both ways or one way, chips cut
off, in every dimension order.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

import numpy as np
import pytest


def _dead(exp: Any, fraction: float, seed: int, one_way: bool) -> Any:
    """`exp` with `fraction` of its links dead (both directions, or with `one_way` only the one drawn)."""
    rng = np.random.default_rng(seed)
    alive = exp.copy()
    chips, ports = np.nonzero(exp >= 0)
    for i in rng.choice(len(chips), size=int(fraction * len(chips)), replace=False):
        a, p = int(chips[i]), int(ports[i])
        alive[a, p] = -1
        if not one_way:
            alive[int(exp[a, p]), p ^ 1] = -1
    return alive


def _by_bits(shape: Any, exp: Any, alive: Any, order: Any) -> tuple[int | None, bool]:
    """The count on bit rows, and whether chain rounds were replayed for it."""
    from tpufleet.routing import reach
    from tpufleet.routing.bitrows import torus_bits

    bits = torus_bits(shape, exp, alive)
    assert bits is not None
    first = reach._by_bits(bits, exp, alive, order)
    return reach._finished(reach._ordered(first, reach._Orders())), isinstance(first, reach._Left)


CASES = [  # (shape, fraction of links dead, seed, one way)
    ("4x4x4", 0.3, 0, False),
    ("4x4x8", 0.2, 1, False),
    ("4x4x8", 0.35, 2, True),
    ("4x4x12", 0.15, 3, False),  # 12-chip rings: a 16-bit word with spare bits, rows of 192 chips
    ("4x4x20", 0.1, 4, True),  # 20-chip rings: 32-bit words
    ("8x8x8", 0.05, 5, False),
]


@pytest.mark.parametrize(("shape_text", "fraction", "seed", "one_way"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_bit_rows_count_what_the_pair_by_pair_check_counts(
    shape_text: str, fraction: float, seed: int, one_way: bool
) -> None:
    from tpufleet.routing import dor
    from tpufleet.routing.bitrows import broken_words, torus_bits, unpacked
    from tpufleet.routing.rings import broken_mask_by_runs
    from tpufleet.routing.tolerant import broken_pairs, left_unrepaired
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    shape = parse_shape(shape_text)
    exp = neighbors(shape)
    alive = _dead(exp, fraction, seed, one_way)
    if seed % 2:
        alive[7, :] = -1  # a chip cut off (its own links only: the neighbours still point at it)
    bits = torus_bits(shape, exp, alive)
    assert bits is not None
    chains = set()
    for o in permutations(range(3)):
        order = (o[0], o[1], o[2])
        P, _ = dor.tables(shape, order)
        broken = broken_pairs(P, exp, alive)
        mask = unpacked(bits, broken_words(bits, order, exp, alive))
        assert np.array_equal(mask, broken_mask_by_runs(shape, order, exp, alive))
        assert np.array_equal(np.flatnonzero(mask), broken)
        left, chained = _by_bits(shape, exp, alive, order)
        assert left == left_unrepaired(alive, broken)
        chains.add(chained)
    assert True in chains  # some first rounds left pairs: the chain rounds were replayed


def test_bit_rows_are_for_plain_tori_only() -> None:
    from tpufleet.routing.bitrows import torus_bits
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    twisted = parse_shape("4x4x8", twisted=True)
    assert torus_bits(twisted, neighbors(twisted), neighbors(twisted)) is None
    mesh = parse_shape("2x2x4")
    assert torus_bits(mesh, neighbors(mesh), neighbors(mesh)) is None
    shape = parse_shape("4x4x8")
    exp = neighbors(shape)
    rewired = exp.copy()
    rewired[0, 0], rewired[1, 0] = rewired[1, 0], rewired[0, 0]  # a link wired elsewhere: not a subgraph
    assert torus_bits(shape, exp, rewired) is None
    assert torus_bits(shape, exp, exp) is not None


def test_the_checks_run_the_same_in_one_thread_or_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread that prepares checks ahead changes when work is done, not what is found, nor the steps counted."""
    from helpers import ocs_failure
    from tpufleet.routing import reach, steps
    from tpufleet.shapes import parse_shape

    shape = parse_shape("8x8x8")
    exp, alive = ocs_failure(shape, "x", 3)
    for dim, index in (("y", 5), ("z", 2)):
        alive[ocs_failure(shape, dim, index)[1] < 0] = -1
    alive[9, :] = -1
    seen = []
    for threads in (1, 2):
        monkeypatch.setattr(reach, "REACH_THREADS", threads)
        with steps.using(steps.Steps()) as counted:
            left = reach.fewest_left(shape, exp, alive, 2)
        assert counted is not None
        seen.append((left, counted.done["reach"], counted.planned["reach"]))
    assert seen[0] == seen[1] and seen[0][0] is not None and seen[0][1] == seen[0][2] > 1


@pytest.mark.parametrize(
    ("shape_text", "twisted", "max_vcs"),
    [("4x4x8", True, 2), ("4x4x8", False, 5), ("8x8x8", False, 2)],
    ids=["twisted-pooled", "mixed-orders", "bit-rows"],
)
def test_fewest_left_is_what_the_candidates_leave_on_every_path(
    shape_text: str, twisted: bool, max_vcs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checks off bit rows (twisted tori: `_pooled`; per-destination orders within 5 VCs: made in the thread that
    prepares) and on them give the candidates' own counts: None when one routes every pair, else the fewest left.
    No order pairs (their limit lowered, as above the full pod's size): which candidates are made then does not
    depend on their loads."""
    from helpers import ocs_failure
    from tpufleet.routing import dimension_orders
    from tpufleet.routing.candidates import candidates
    from tpufleet.routing.reach import fewest_left
    from tpufleet.shapes import parse_shape

    monkeypatch.setattr(dimension_orders, "PAIRS_LIMIT", 0)
    monkeypatch.setattr(dimension_orders, "PAIRS_LIMIT_ONE_DIM", 0)
    monkeypatch.setattr(dimension_orders, "PAIRS_LIMIT_TWISTED", 0)
    shape = parse_shape(shape_text, twisted=twisted)
    exp, alive = ocs_failure(shape, "x", 3)
    alive[ocs_failure(shape, "y", 1)[1] < 0] = -1
    for cut in ([], [5]):
        live = alive.copy()
        for chip in cut:
            live[chip, :] = -1
            live[exp[chip], [1, 0, 3, 2, 5, 4]] = -1
        options = candidates(shape, exp, live, "auto", max_vcs)
        left = [info["broken_by_faults"] - info["repaired_wild"] for _, info in options]
        assert fewest_left(shape, exp, live, max_vcs) == (None if min(left) == 0 else min(left))
