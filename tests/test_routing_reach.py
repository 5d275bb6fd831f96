"""Which broken pairs a wild-first repair leaves unroutable, found without making a route (`left_unrepaired`), and
the blast-radius verdict that every candidate leaves some, given without a repair (`fewest_left`).

The oracle is the repair itself: on graphs with many dead links (chains of wild hops, pairs left over, chips cut
off), in every dimension order, with and without the ring-run first round, the count is the repair's exactly.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

import numpy as np
import pytest

from helpers import ocs_failure


def _kill_links(exp: Any, fraction: float, seed: int) -> Any:
    """`exp` with `fraction` of its links dead (both directions of each), drawn with `seed`."""
    rng = np.random.default_rng(seed)
    alive = exp.copy()
    chips, ports = np.nonzero(exp >= 0)
    for i in rng.choice(len(chips), size=int(fraction * len(chips)), replace=False):
        a, p = int(chips[i]), int(ports[i])
        b = int(exp[a, p])
        alive[a, p] = -1
        alive[b, p ^ 1] = -1
    return alive


def _repaired_left(shape: Any, exp: Any, alive: Any, order: Any, ring_runs: bool) -> tuple[int, int]:
    """(pairs broken, pairs the real repair leaves) for the plain tables of `order`."""
    from tpufleet.routing import dor
    from tpufleet.routing.rings import RingPaths
    from tpufleet.routing.tolerant import base_load, broken_pairs, wild_first

    P, L = dor.tables(shape, order)
    broken = broken_pairs(P, exp, alive)
    paths = RingPaths(shape, order) if ring_runs else None
    start = base_load(P, L, alive, broken, shape, exp, paths)
    _, left, _ = wild_first(P, L, alive, broken, base=start, paths=paths)
    return len(broken), len(left)


CASES = [  # (shape, fraction of links dead, seeds, dimension orders)
    ("4x4x8", 0.05, (0, 1), list(permutations(range(3)))),
    ("4x4x8", 0.2, (0, 1), [(0, 1, 2), (2, 1, 0), (1, 0, 2)]),
    ("4x4x8", 0.45, (0, 1, 2), [(0, 1, 2), (2, 0, 1)]),
    ("8x8x8", 0.1, (0,), [(0, 1, 2), (1, 2, 0)]),
]


@pytest.mark.parametrize(("shape_text", "fraction", "seeds", "orders"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_reach_check_counts_exactly_what_the_repair_leaves(
    shape_text: str, fraction: float, seeds: tuple[int, ...], orders: list[Any]
) -> None:
    from tpufleet.routing import dor
    from tpufleet.routing.tolerant import broken_pairs, left_unrepaired
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    shape = parse_shape(shape_text)
    exp = neighbors(shape)
    outcomes = set()
    for seed in seeds:
        alive = _kill_links(exp, fraction, seed)
        for order in orders:
            P, _ = dor.tables(shape, order)
            broken = broken_pairs(P, exp, alive)
            guess = left_unrepaired(alive, broken)
            for ring_runs in (False, True):
                assert _repaired_left(shape, exp, alive, order, ring_runs) == (len(broken), guess)
            outcomes.add(guess > 0)
    # few dead links are all repaired, many leave pairs: both outcomes are checked
    if fraction < 0.1:
        assert False in outcomes
    if fraction > 0.3:
        assert True in outcomes


def test_the_reach_check_counts_a_chip_cut_off_on_twisted_tables() -> None:
    from tpufleet.routing.balanced import balanced_twisted_tables
    from tpufleet.routing.tolerant import base_load, broken_pairs, left_unrepaired, wild_first
    from tpufleet.shapes import parse_shape
    from tpufleet.topology import neighbors

    shape = parse_shape("4x4x8", twisted=True)
    exp = neighbors(shape)
    alive = _kill_links(exp, 0.1, 7)
    cut = 9
    for port in range(6):
        alive[cut, port] = -1
        alive[exp[cut, port], port ^ 1] = -1
    n = len(exp)
    P, L = balanced_twisted_tables(shape, (0, 1, 2))
    broken = broken_pairs(P, exp, alive)
    guess = left_unrepaired(alive, broken)
    _, left, _ = wild_first(P, L, alive, broken, base=base_load(P, L, alive, broken, shape))
    assert guess == len(left) >= 2 * (n - 1)


@pytest.mark.parametrize(
    "faults", [[("x", 3)], [("x", 3), ("y", 5)], [("x", 3), ("y", 5), ("z", 2)]], ids=["one", "two", "three"]
)
def test_fewest_left_is_what_the_candidates_leave(faults: list[tuple[str, int]]) -> None:
    """With 2 VCs no order pair is made, so the candidate list does not depend on loads: the verdict without
    repairs is None exactly when some candidate routes every pair, else the fewest pairs any leaves."""
    from tpufleet.routing.candidates import candidates
    from tpufleet.routing.reach import fewest_left
    from tpufleet.shapes import parse_shape

    shape = parse_shape("8x8x8")
    exp, alive = ocs_failure(shape, *faults[0])
    for dim, index in faults[1:]:
        _, more = ocs_failure(shape, dim, index)
        alive[more < 0] = -1
    for cut in ([], [5]):
        live = alive.copy()
        for chip in cut:
            for port in range(6):
                live[chip, port] = -1
                live[exp[chip, port], port ^ 1] = -1
        options = candidates(shape, exp, live, "auto", 2)
        left = [info["broken_by_faults"] - info["repaired_wild"] for _, info in options]
        want = None if min(left) == 0 else min(left)
        assert fewest_left(shape, exp, live, 2) == want
        if cut:
            assert want is not None and want >= 2 * (len(exp) - 1)


def test_a_full_pod_verdict_is_given_by_reach_checks_alone() -> None:
    """16x16x16 with a chip cut off: no candidate serves its pairs, and the verdict comes without a repair."""
    from tpufleet.routing import steps
    from tpufleet.routing.report import verdict_summary
    from tpufleet.shapes import parse_shape

    shape = parse_shape("16x16x16")
    exp, alive = ocs_failure(shape, "x", 3)
    for port in range(6):
        alive[77, port] = -1
        alive[exp[77, port], port ^ 1] = -1
    with steps.using(steps.Steps()) as counted:
        summary = verdict_summary(shape, exp, alive, ("all-to-all",), 3)
    assert counted is not None
    assert counted.done["repair"] == counted.done["analysis"] == 0
    assert counted.done["reach"] == counted.planned["reach"] > 0
    assert summary["unroutable_pairs"] >= 2 * (len(exp) - 1)
    assert summary["vcs"] is None and summary["throughput_retained"] == {"all-to-all": 0.0}
