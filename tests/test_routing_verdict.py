"""A fault's verdict without the analyses it does not need, and the router's steps as progress.

When every candidate's wild-first repair leaves pairs unroutable, whichever candidate is kept leaves them too:
the blast radius (`verdict_summary`) then repairs and analyses none (reach checks tell what each repair would
leave), and its verdict is the full evaluation's. The shortcut applies above the canonical-form limit (full
pods), where no order pairs are made; here both limits are lowered so a small slice takes the same path.
"""

from __future__ import annotations

from typing import Any

import pytest

from helpers import ocs_failure


def _cut_off_chip(shape_text: str, chip: int) -> tuple[Any, Any, Any]:
    """A slice whose chip `chip` has lost every link (both directions), on top of one x OCS: no table routes to
    or from it."""
    from tpufleet.shapes import parse_shape

    shape = parse_shape(shape_text)
    exp, alive = ocs_failure(shape, "x", 3)
    for port in range(6):
        other = exp[chip, port]
        alive[chip, port] = -1
        alive[other, port ^ 1] = -1
    return shape, exp, alive


def test_the_verdict_skips_repairs_and_analyses_when_no_candidate_routes_every_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tpufleet.routing import canonical, dimension_orders, steps
    from tpufleet.routing.candidates import candidates
    from tpufleet.routing.report import evaluate, verdict_summary

    monkeypatch.setattr(canonical, "CANONICAL_LIMIT", 0)
    monkeypatch.setattr(dimension_orders, "PAIRS_LIMIT", 0)
    monkeypatch.setattr(dimension_orders, "PAIRS_LIMIT_ONE_DIM", 0)
    shape, exp, alive = _cut_off_chip("4x4x8", 5)
    n = len(exp)
    options = candidates(shape, exp, alive, "auto", 3)
    assert all(info["broken_by_faults"] > info["repaired_wild"] for _, info in options)

    full = evaluate(shape, exp, alive, "auto", ("all-to-all",), max_vcs=3).summary
    with steps.using(steps.Steps()) as counted:
        quick = verdict_summary(shape, exp, alive, ("all-to-all",), 3)
    assert counted is not None
    assert counted.done == {"repair": 0, "analysis": 0, "reach": len(options)}
    assert counted.planned == counted.done
    # both refuse the reroute for the same reason: pairs left unroutable (at least the cut-off chip's, both ways)
    assert full["unroutable_pairs"] >= 2 * (n - 1)
    assert quick["unroutable_pairs"] >= 2 * (n - 1)
    assert quick["unroutable_pairs"] == min(i["broken_by_faults"] - i["repaired_wild"] for _, i in options)


def test_the_verdict_is_the_full_report_when_a_candidate_routes_every_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    from tpufleet.routing import canonical, dimension_orders, steps
    from tpufleet.routing.report import evaluate, verdict_summary
    from tpufleet.shapes import parse_shape

    monkeypatch.setattr(canonical, "CANONICAL_LIMIT", 0)
    monkeypatch.setattr(dimension_orders, "PAIRS_LIMIT", 0)
    monkeypatch.setattr(dimension_orders, "PAIRS_LIMIT_ONE_DIM", 0)
    shape = parse_shape("4x4x8")
    exp, alive = ocs_failure(shape, "x", 3)
    full = evaluate(shape, exp, alive, "auto", ("all-to-all",), max_vcs=3)
    with steps.using(steps.Steps()) as counted:
        quick = verdict_summary(shape, exp, alive, ("all-to-all",), 3)
    assert counted is not None and counted.done["analysis"] >= 1
    assert counted.done["reach"] == 1  # the first candidate routes every pair: no more reach checks
    assert quick == full.summary


def test_steps_report_done_and_total_in_order() -> None:
    from tpufleet.routing import steps

    seen: list[tuple[int, int]] = []
    counted = steps.Steps(report=lambda done, total: seen.append((done, total)))
    steps.plan("repair", 2)  # nothing installed: nothing happens
    with steps.using(counted):
        steps.plan("repair", 2)
        steps.advance("repair")
        steps.advance("analysis", planned=False)
        steps.advance("repair")
    assert seen == [(0, 2), (1, 2), (2, 3), (3, 3)]
    assert counted.summary() == "2 wild-first repairs, 1 route analysis"


def test_verbose_prints_a_timing_line_and_nothing_without_it(fleet: Any) -> None:
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    quiet = fleet("inject-fault", "ocs:pod0/x/3", "--dry-run", "-o", "json")
    assert quiet.code == 0 and quiet.err == ""  # stderr is no terminal: no progress bar either
    loud = fleet("inject-fault", "ocs:pod0/x/3", "--dry-run", "-v", "-o", "json")
    assert loud.code == 0
    assert loud.json == quiet.json
    (line,) = loud.err.splitlines()
    assert line.startswith("tpufleet: analysing: ") and " wild-first repair" in line and line.endswith(" s")
    routed = fleet("routes", "s", "--verbose", "-o", "json")
    assert routed.code == 0
    (line,) = routed.err.splitlines()
    assert line.startswith("tpufleet: routing s: ")
