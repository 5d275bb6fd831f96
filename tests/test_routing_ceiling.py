"""Candidates proved too heavy are not made (`routing.ceiling`): where the live graph's own tables are made only to
replace its turned ones if lighter (`report._with_own_where_poor`), a candidate whose repair starts from a load at or
above the turned tables' is skipped. The tables, loads, VCs and every figure stay those made without the ceiling."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import ocs_failure
from tpufleet.routing import candidates as cand
from tpufleet.routing import report
from tpufleet.routing.report import evaluate
from tpufleet.shapes import parse_shape

pytestmark = pytest.mark.slow

TRAFFICS = ("all-to-all", "all-reduce")


def _down(*faults: tuple[str, int]):
    shape = parse_shape("8x8x16")  # above RELIEVE_LIMIT (no relieving) and within CANONICAL_LIMIT (turned tables)
    expected, alive = ocs_failure(shape, *faults[0])
    for dim, index in faults[1:]:
        alive[ocs_failure(shape, dim, index)[1] < 0] = -1
    return shape, expected, alive


def _repairs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every wild-first repair made from here on."""
    from tpufleet.routing.tolerant import wild_first as real

    made: list[int] = []

    def counted(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cand, "wild_first", counted)
    return made


def _without_and_with_pruning(monkeypatch: pytest.MonkeyPatch, shape, expected, alive) -> tuple[tuple, tuple]:
    """((tables with every candidate made, repairs made), (tables with the pruning, repairs made))."""
    made = {}
    for prune in (False, True):
        monkeypatch.setattr(report, "PRUNE", prune)
        report._forms_made.cache_clear()
        repairs = _repairs(monkeypatch)
        made[prune] = (evaluate(shape, expected, alive, "auto", TRAFFICS, max_vcs=3), len(repairs))
        monkeypatch.undo()
    return made[False], made[True]


def _same(a, b) -> bool:
    fields = ("P", "L", "wild", "dest_class")
    arrays = all(
        (getattr(a.tables, f) is None and getattr(b.tables, f) is None)
        or np.array_equal(getattr(a.tables, f), getattr(b.tables, f))
        for f in fields
    )
    return arrays and a.tables.orders == b.tables.orders and a.summary == b.summary


@pytest.mark.parametrize(
    "faults",
    [
        (("x", 5), ("z", 5)),  # the live graph's own tables are kept (2214 against 2477 turned)
        (("x", 3), ("y", 5), ("z", 2)),  # the turned ones are kept
        (("y", 2), ("z", 5)),
    ],
)
def test_whole_ocs_faults_get_the_same_tables_with_heavy_candidates_skipped(
    monkeypatch: pytest.MonkeyPatch, faults: tuple[tuple[str, int], ...]
) -> None:
    shape, expected, alive = _down(*faults)
    (without, every), (with_ceiling, fewer) = _without_and_with_pruning(monkeypatch, shape, expected, alive)
    assert _same(without, with_ceiling)
    assert fewer < every  # candidates were skipped: the comparison tests something


def test_the_first_fitting_candidate_lighter_than_the_ceiling_is_the_one_made_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """8x8x16 with x/5 and z/5 made as it is: with the ceiling just above its kept tables' load, the same tables
    (and some candidates skipped); at that load, none lighter."""
    shape, expected, alive = _down(("x", 5), ("z", 5))
    full = report._made_for(shape, expected, alive, "auto", TRAFFICS, True, 3)
    load = full.summary["max_link_load"]["all-to-all"]
    assert full.summary["deadlock_free"] and full.summary["vcs"] <= 3 and load == 2214
    repairs = _repairs(monkeypatch)
    above = report._made_lighter(shape, expected, alive, TRAFFICS, 3, False, load + 1)
    assert above is not None and _same(full, above)
    assert 0 < len(repairs) < 14  # the candidates made without a ceiling: 14
    at = report._made_lighter(shape, expected, alive, TRAFFICS, 3, False, load)
    assert at is None or at.summary["max_link_load"]["all-to-all"] >= load or not at.summary["deadlock_free"]


def test_unroutable_candidates_are_dropped_when_only_a_skipped_one_routes_every_pair() -> None:
    info = {"broken_by_faults": 10, "repaired_wild": 8, "orders_used": 1}
    ranked = [((1.0, 1), object(), info)]
    assert cand.routable_first(ranked, routable=True) == []  # type: ignore[arg-type]
    assert len(cand.routable_first(ranked)) == 1  # type: ignore[arg-type]


def _link(alive, shape, dim: str, index: int, nth: int) -> None:
    """Take down the `nth` link of OCS `dim`/`index` (both directions), as a link fault does."""
    _, pattern = ocs_failure(shape, dim, index)
    d = "xyz".index(dim)
    chip = np.flatnonzero(pattern[:, 2 * d] < 0)[nth]
    alive[alive[chip, 2 * d], 2 * d + 1] = -1
    alive[chip, 2 * d] = -1


def test_a_whole_ocs_pattern_skips_candidates_no_lighter_than_the_answer_so_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """x/3 and a link each of z/7 and y/2 down: the live graph's own tables carry 2400; the pattern of all three OCS
    is made as it is beside its turned tables (2507), and only tables lighter than 2400 could still change the
    answer, so all six of its order pairs (repairs starting at 2416-2528) are skipped, not only the four starting at
    2507 or more. The same answer as with every candidate made."""
    shape, expected, alive = _down(("x", 3))
    _link(alive, shape, "z", 7, 9)
    _link(alive, shape, "y", 2, 5)
    (without, every), (with_ceiling, fewer) = _without_and_with_pruning(monkeypatch, shape, expected, alive)
    assert _same(without, with_ceiling) and without.summary["max_link_load"]["all-to-all"] == 2400
    assert every - fewer == 6
