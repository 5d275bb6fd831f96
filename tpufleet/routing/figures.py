"""The documented figures of a slice's routing tables (pure): routable pairs, route lengths, VCs, loads against
the healthy tables and the healthy optimum, how the tables were made. `routing.report` decides which tables; this
module says what they achieve."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpufleet.routing.analysis import Analysis, RouteTables
from tpufleet.routing.fitting import analyzed, fits
from tpufleet.routing.healthy import healthy_loads, healthy_tables_broken, traffic_loads
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tpufleet.routing.tolerant import RouteInfo
    from tpufleet.topology import ChipGraph


@dataclass
class RouteReport:
    tables: RouteTables
    summary: dict[str, Any]  # the documented figures (JSON-shaped)
    analysis: Analysis  # what the figures came from (routes, loads, VCs): the same tables elsewhere reuse it
    unroutable: list[tuple[int, int]] = field(default_factory=list)
    cycle: list[str] = field(default_factory=list)


def fitted_report(
    shape: Shape,
    expected: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    rt: RouteTables,
    info: RouteInfo,
) -> RouteReport | None:
    """The report of `auto` tables made elsewhere (turned, a whole OCS's, stored) on their live graph `rt.nbr`,
    with the analysis the router's own candidates get; None when they do not fit `max_vcs` there."""
    a, layered = analyzed(rt, max_vcs)
    if not fits(a, max_vcs):
        return None
    rt.wild_layers = layered
    return report_of(shape, expected, traffics, True, "auto", rt, info, a)


def report_of(
    shape: Shape,
    expected: ChipGraph,
    traffics: Sequence[str],
    deadlock_check: bool,
    algorithm: str,
    rt: RouteTables,
    info: RouteInfo,
    a: Analysis,
) -> RouteReport:

    from tpufleet.routing.distances import graph_distances

    n = rt.n
    routable_pairs, bad_t, bad_s, diameter, mean_hops = _lengths(rt, a)
    loads = traffic_loads(rt, expected, traffics, weight_load=a.load)
    healthy = loads if _is_healthy_reference(rt, expected) else healthy_loads(shape, expected, traffics)
    delivered = float(routable_pairs) / float(n * (n - 1)) if n > 1 else 1.0
    # Throughput kept: the healthy maximum link load over this one, times the share of pairs still delivered
    # (traffic between unroutable pairs is lost, not free).
    retained = {k: round((healthy[k] / loads[k] if loads[k] else 1.0) * delivered, 4) for k in traffics}
    optimum = _optimum_figures(shape, expected, healthy, loads, delivered)
    graph = graph_distances(rt.nbr, shape)
    summary = {
        "chips": n,
        "algorithm": algorithm,
        "strategy": info.get("strategy", algorithm if info["broken_by_faults"] else "dimension-order"),
        "routable_pairs": routable_pairs,
        "unroutable_pairs": len(bad_t),
        "diameter": diameter,
        "mean_hops": mean_hops,
        "graph_diameter": graph.diameter,
        "graph_mean_hops": round(graph.mean_hops, 6),
        "vcs": a.vcs if deadlock_check else None,
        "deadlock_free": a.deadlock_free if deadlock_check else None,
        "max_link_load": loads,
        "healthy_max_link_load": healthy,
        "throughput_retained": retained,
        "throughput_retained_vs_tables": retained,
        **optimum,
        "pairs_broken_by_faults": healthy_tables_broken(shape, expected, rt.nbr),
        "pairs_broken_in_base_orders": info["broken_by_faults"],
        "pairs_repaired_wild": info["repaired_wild"],
        "entries_relieved": info.get("relieved", 0),
        "dimension_orders": info["orders_used"],
        "vc_layout": a.vc_blocks if deadlock_check else None,
    }
    pairs = list(zip(bad_s[:1000].tolist(), bad_t[:1000].tolist(), strict=True))
    return RouteReport(rt, summary, a, pairs, a.cycle)


def _optimum_figures(
    shape: Shape, expected: ChipGraph, healthy: dict[str, float], loads: dict[str, float], delivered: float
) -> dict[str, Any]:
    """All-to-all against the healthy optimum (`routing.optimum`): the optimum, whether it is exact (else a lower
    bound), and the throughput kept against it."""
    from tpufleet.routing.optimum import healthy_optimum

    if "all-to-all" not in healthy:
        return {
            "healthy_optimum_max_link_load": {},
            "healthy_optimum_exact": None,
            "throughput_retained_vs_optimum": {},
        }
    best = healthy_optimum(shape, expected, healthy["all-to-all"])
    load = loads["all-to-all"]
    kept = round((best.load / load if load else 1.0) * delivered, 4)
    return {
        "healthy_optimum_max_link_load": {"all-to-all": round(best.load, 4)},
        "healthy_optimum_exact": best.exact,
        "throughput_retained_vs_optimum": {"all-to-all": kept},
    }


def _is_healthy_reference(rt: RouteTables, expected: ChipGraph) -> bool:
    """These are the very tables `healthy_loads` would measure (plain default-order DOR, untwisted, no fault)."""
    from tpufleet.routing.dor import DEFAULT_ORDER

    base = rt.base
    return (
        base is not None
        and base.load is None
        and base.order == DEFAULT_ORDER
        and not rt.shape.twisted
        and (rt.wild is None or not rt.wild.any())
        and bool((rt.nbr == expected).all())
    )


def _lengths(rt: RouteTables, a: Analysis) -> tuple[int, Any, Any, int, float]:
    """(routable pairs, unroutable (t, s) indices, longest route, mean route length) over distinct pairs."""
    import numpy as np

    n = rt.n
    if n > 1 and a.routable.all():
        # Every pair arrives and the diagonal has length 0, so the whole table gives the same integer sums.
        total = int(rt.L.sum(dtype=np.int64))
        empty = np.empty(0, dtype=np.intp)
        return n * (n - 1), empty, empty, int(rt.L.max()), round(total / (n * (n - 1)), 6)
    off_diag = ~np.eye(n, dtype=bool)
    ok = a.routable & off_diag
    lengths = rt.L[ok]
    bad_t, bad_s = np.nonzero(~a.routable & off_diag)
    diameter = int(lengths.max()) if lengths.size else 0
    mean = round(float(lengths.mean()), 6) if lengths.size else 0.0
    return int(ok.sum()), bad_t, bad_s, diameter, mean


def lighter(kept: RouteReport, other: RouteReport, max_vcs: int | None) -> RouteReport:
    """`other` where it routes every pair, fits `max_vcs` deadlock-free and carries all-to-all lighter than `kept`,
    else `kept`."""
    fitting = other.summary["deadlock_free"] and (max_vcs is None or other.summary["vcs"] <= max_vcs)
    load, than = (float(r.summary["max_link_load"]["all-to-all"]) for r in (other, kept))
    return other if fitting and not other.summary["unroutable_pairs"] and load < than else kept
