"""What the routes figures mean, counted independently: the pairs the faults broke (a walk of every pair over the
tool's healthy tables), and the throughput kept against the tool's healthy tables and against the healthy optimum
(the exact LP of benchmarks/routing_quality.py, its own graph and solver)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import routing_quality as rq  # benchmarks/ is not a package: found on the path above

from tpufleet.routing import dor
from tpufleet.routing.balanced import balanced_twisted_tables
from tpufleet.routing.optimum import cut_bound, healthy_optimum, translation_lp
from tpufleet.routing.report import evaluate
from tpufleet.shapes import parse_shape
from tpufleet.topology import neighbors

if TYPE_CHECKING:
    import numpy.typing as npt


def _walk(P: npt.NDArray[np.int8], graph: npt.NDArray[np.int32], alive: npt.NDArray[np.int32]) -> tuple[int, float]:
    """Walk every ordered pair over the healthy graph along table P (P[t, c]: port of chip c towards t): the pairs
    whose route takes a link `alive` lacks, and the max all-to-all link load of the tables."""
    n = len(graph)
    t, cur = np.divmod(np.arange(n * n, dtype=np.int64), n)
    keep = t != cur
    t, cur = t[keep], cur[keep]
    crossed = np.zeros(len(t), dtype=bool)
    load = np.zeros(n * 6, dtype=np.int64)
    for _ in range(4 * n):
        moving = cur != t
        if not moving.any():
            break
        port = P[t[moving], cur[moving]].astype(np.int64)
        assert (port >= 0).all()
        here = cur[moving]
        np.add.at(load, here * 6 + port, 1)
        crossed[moving] |= alive[here, port] != graph[here, port]
        cur[moving] = graph[here, port]
    assert (cur == t).all()
    return int(crossed.sum()), float(load.max())


def test_one_x_ocs_on_8x8x8_breaks_8192_healthy_routes() -> None:
    """The issue's figure: 8,192 routes of the healthy tables cross the dead links of one x OCS on 8x8x8; the
    kept tables' base orders, chosen around the fault, had only 512 to repair (kept as pairs_broken_in_base_orders)."""
    shape = parse_shape("8x8x8")
    expected = neighbors(shape)
    alive = rq.ocs_failures(shape, expected, (("x", 3),))
    P, _ = dor.tables(shape)
    broken, healthy_load = _walk(P, expected, alive)
    assert broken == 8192
    s = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3).summary
    assert s["pairs_broken_by_faults"] == broken
    assert s["healthy_max_link_load"]["all-to-all"] == healthy_load == 512
    assert s["pairs_broken_in_base_orders"] == 512 == s["pairs_repaired_wild"]


def test_healthy_slices_break_nothing_and_keep_everything() -> None:
    shape = parse_shape("4x4x8", True)
    expected = neighbors(shape)
    s = evaluate(shape, expected, expected, "auto", ("all-to-all",), max_vcs=3).summary
    assert s["pairs_broken_by_faults"] == 0 == s["pairs_broken_in_base_orders"]
    assert s["throughput_retained"] == s["throughput_retained_vs_tables"] == {"all-to-all": 1.0}
    # the tool's healthy twisted tables (78) are not the optimum (220/3, the LP's distance bound): said so
    assert s["healthy_optimum_max_link_load"]["all-to-all"] == pytest.approx(220 / 3, abs=1e-4)
    assert s["throughput_retained_vs_optimum"]["all-to-all"] == round((220 / 3) / 78, 4)


def test_twisted_4x4x8_with_one_x_ocs_against_its_tables_and_against_the_optimum() -> None:
    """Twisted 4x4x8, x/3 down: kept throughput against the tool's own healthy tables and against the exact LP of
    the healthy slice (the benchmark's LP); the broken count by walking the healthy tables the
    tool measures against (the lighter of plain and balanced)."""
    shape = parse_shape("4x4x8", True)
    expected = neighbors(shape)
    alive = rq.ocs_failures(shape, expected, (("x", 3),))
    s = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3).summary
    walked = [_walk(make(shape)[0], expected, alive) for make in (dor.tables, balanced_twisted_tables)]
    broken, healthy_load = min(walked, key=lambda w: w[1])
    assert s["healthy_max_link_load"]["all-to-all"] == healthy_load
    assert s["pairs_broken_by_faults"] == broken
    optimum = rq.solve(expected, rq.automorphisms(shape, expected)).optimum  # reduced exactly (test_lp_optimum)
    assert s["healthy_optimum_max_link_load"]["all-to-all"] == pytest.approx(optimum, abs=1e-4)
    assert s["healthy_optimum_exact"] is True
    load = s["max_link_load"]["all-to-all"]
    assert s["throughput_retained_vs_tables"]["all-to-all"] == round(healthy_load / load, 4)
    assert s["throughput_retained_vs_optimum"]["all-to-all"] == round(optimum / load, 4)
    assert s["throughput_retained_vs_optimum"]["all-to-all"] < s["throughput_retained"]["all-to-all"]


@pytest.mark.parametrize(("text", "twisted"), [("4x4x4", False), ("4x4x8", False), ("4x4x8", True)])
def test_healthy_optimum_equals_the_symmetry_reduced_lp(text: str, twisted: bool) -> None:
    """The optimum `routes` reports (cut bound reached by the tables, or the translation LP) equals the benchmark's
    LP reduced by every automorphism it finds link by link (one destination per orbit)."""
    shape = parse_shape(text, twisted)
    expected = neighbors(shape)
    reduced = rq.solve(expected, rq.automorphisms(shape, expected)).optimum
    healthy = evaluate(shape, expected, expected, "auto", ("all-to-all",), max_vcs=3).summary
    best = healthy_optimum(shape, expected, healthy["max_link_load"]["all-to-all"])
    assert best.exact and best.load == pytest.approx(reduced, rel=1e-6)
    if twisted:
        assert cut_bound(shape) == 0.0 and translation_lp(expected) == pytest.approx(reduced, rel=1e-6)
    else:
        assert best.load == cut_bound(shape) == healthy["max_link_load"]["all-to-all"]
