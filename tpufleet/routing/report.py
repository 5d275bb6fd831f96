"""From a slice's live graph to the documented routing figures (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpufleet.routing.analysis import Analysis, RouteTables, analyze
from tpufleet.routing.relieve import RELIEVE_LIMIT, RELIEVED_CANDIDATES
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.tolerant import RouteInfo
    from tpufleet.topology import ChipGraph

TRAFFICS = ("all-to-all", "all-reduce")


@dataclass
class RouteReport:
    tables: RouteTables
    summary: dict[str, Any]  # the documented figures (JSON-shaped)
    unroutable: list[tuple[int, int]] = field(default_factory=list)
    cycle: list[str] = field(default_factory=list)


def _loads(
    rt: RouteTables,
    expected: ChipGraph,
    traffics: Sequence[str],
    weight_load: npt.NDArray[np.float64] | None = None,
) -> dict[str, float]:
    from tpufleet.routing.analysis import ring_allreduce_load

    out: dict[str, float] = {}
    for traffic in traffics:
        if traffic == "all-to-all":
            out[traffic] = float(weight_load.max()) if weight_load is not None and weight_load.size else 0.0
        else:
            load = ring_allreduce_load(rt, expected)
            out[traffic] = float(load.max()) if load.size else 0.0
    return out


def healthy_loads(shape: Shape, expected: ChipGraph, traffics: Sequence[str]) -> dict[str, float]:
    """Loads of the tool's own healthy tables (for a twisted torus, the lighter of plain and balanced DOR): the
    reference `throughput_retained` is measured against."""
    from tpufleet.routing import dor
    from tpufleet.routing.analysis import analyze, symmetric, symmetric_load
    from tpufleet.routing.balanced import BALANCE_LIMIT, balanced_twisted_tables

    if symmetric(shape) and not shape.twisted:
        return _ring_healthy_loads(shape, expected, traffics)
    makers = [dor.tables]
    if shape.twisted and len(expected) <= BALANCE_LIMIT:
        makers.append(balanced_twisted_tables)
    best: dict[str, float] | None = None
    for make in makers:
        P, L = make(shape)
        rt = RouteTables(shape, expected, P, L)
        a2a = symmetric_load(rt) if symmetric(shape) else analyze(rt, deadlock=False).load
        loads = _loads(rt, expected, traffics, weight_load=a2a)
        if best is None or loads.get("all-to-all", 0.0) < best.get("all-to-all", 0.0):
            best = loads
    assert best is not None
    return best


def _ring_healthy_loads(shape: Shape, expected: ChipGraph, traffics: Sequence[str]) -> dict[str, float]:
    """`healthy_loads` of an untwisted torus without making its tables: the routes `symmetric_load` and
    `ring_allreduce_load` walk (from one chip of each parity class to all; to every ring neighbour) are counted
    from their ring runs."""
    import numpy as np

    from tpufleet.routing.dor import DEFAULT_ORDER
    from tpufleet.routing.rings import RingPaths
    from tpufleet.topology import coordinates

    n = len(expected)
    paths = RingPaths(shape, DEFAULT_ORDER)
    out: dict[str, float] = {}
    for traffic in traffics:
        if traffic == "all-to-all":
            xyz = coordinates(shape.dims)
            cls = (xyz[:, 0] % 2) * 4 + (xyz[:, 1] % 2) * 2 + (xyz[:, 2] % 2)
            reps = np.array([int(np.flatnonzero(cls == c)[0]) for c in range(8)], dtype=np.int64)
            routes = paths.count(np.repeat(reps, n), np.tile(np.arange(n, dtype=np.int64), 8), n * 6)
            counts = np.zeros((8, 6))
            np.add.at(counts, cls, routes.reshape(n, 6))
            out[traffic] = float(counts[cls].max()) if n else 0.0
        else:
            s, p = np.nonzero(expected >= 0)
            load = paths.count(s.astype(np.int64), expected[s, p].astype(np.int64), n * 6)
            out[traffic] = float(load.max()) if load.size else 0.0
    return out


def evaluate(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    algorithm: str = "auto",
    traffics: Sequence[str] = TRAFFICS,
    deadlock_check: bool = True,
    max_vcs: int | None = None,
) -> RouteReport:
    """Tables plus every documented figure: routable pairs, lengths, VCs, deadlock, loads, throughput kept.

    With a VC budget, the best-ranked candidate that is deadlock-free within `max_vcs` is kept (wild hops on one
    VC, or, if that leaves a dependency cycle, on one VC per hop of a chain); when none fits, the one needing the
    fewest VCs is reported, for the caller to refuse.
    """
    from tpufleet.routing.candidates import candidates

    options = candidates(shape, expected, alive, algorithm, max_vcs if deadlock_check else None)
    if not deadlock_check:
        rt, info = options[0]
        return _report(shape, expected, traffics, False, algorithm, rt, info, analyze(rt, deadlock=False))
    # Relieving makes routes non-minimal: never on a healthy slice, whose tables stay the minimal ones.
    relieving = algorithm == "auto" and len(expected) <= RELIEVE_LIMIT and bool((alive != expected).any())
    kept, fitting = _first_fitting(options, max_vcs, relieving)
    if fitting:
        kept = _relieved(fitting, kept, max_vcs, expected)
    rt, info, a, layered = kept
    rt.wild_layers = layered
    return _report(shape, expected, traffics, True, algorithm, rt, info, a)


Checked = tuple[RouteTables, "RouteInfo", Analysis, bool]  # tables, how made, analysis, wild hops layered


def _analyzed(rt: RouteTables, max_vcs: int | None) -> tuple[Analysis, bool]:
    """The analysis that fits `max_vcs` (wild hops on one VC, or, if that leaves a cycle, on one VC per hop of a
    chain), or the leaner of the two."""
    best: tuple[Analysis, bool] | None = None
    for layered in (False, True) if rt.wild is not None and rt.wild.any() else (False,):
        rt.wild_layers = layered
        a = analyze(rt)
        if _fits(a, max_vcs):
            return a, layered
        if best is None or _fewer_vcs(a, best[0]):
            best = (a, layered)
        if a.deadlock_free:
            break  # too many VCs, but no cycle for a VC per wild hop of a chain to break: it would only add VCs
    assert best is not None
    return best


def _first_fitting(
    options: list[tuple[RouteTables, RouteInfo]], max_vcs: int | None, relieving: bool
) -> tuple[Checked, list[Checked]]:
    """The best-ranked table set that fits (else the leanest), and, when `relieving`, the first RELIEVED_CANDIDATES
    that fit of each graph the sets were made for (so an optical link's include its whole OCS's)."""
    from tpufleet.routing.candidates import min_vcs

    first: Checked | None = None
    leanest: Checked | None = None
    per_graph: dict[int, list[Checked]] = {}
    graphs = {id(info.get("made_for")) for _, info in options}
    for rt, info in options:
        if max_vcs is not None and min_vcs(rt) > max_vcs:
            continue
        group = per_graph.setdefault(id(info.get("made_for")), [])
        if first is not None and len(group) >= RELIEVED_CANDIDATES:
            continue
        a, layered = _analyzed(rt, max_vcs)
        if not _fits(a, max_vcs):
            if leanest is None or _fewer_vcs(a, leanest[2]):
                leanest = (rt, info, a, layered)
            continue
        first = first or (rt, info, a, layered)
        if not relieving:
            break
        group.append((rt, info, a, layered))
        if len(per_graph) == len(graphs) and all(len(g) >= RELIEVED_CANDIDATES for g in per_graph.values()):
            break
    if first is not None:
        return first, [c for g in per_graph.values() for c in g] if relieving else []
    if leanest is None:  # every candidate needs more VCs than the budget allows
        rt, info = min(options, key=lambda option: min_vcs(option[0]))
        a = analyze(rt)
        leanest = (rt, info, a, rt.wild_layers)
    return leanest, []


def _relieved(fitting: list[Checked], kept: Checked, max_vcs: int | None, expected: ChipGraph) -> Checked:
    """The lightest of `kept` and the fitting sets with their busiest links relieved (subtrees, or leaves), each
    analyzed again: a relieved set is kept only if it fits `max_vcs` and is strictly lighter for all-to-all. The
    routes ring collectives use never move, so all-reduce, all-gather and reduce-scatter keep their times."""
    from tpufleet.routing.relieve import relieve

    for rt, info, _, _ in fitting:
        made_for = info.get("made_for", rt.nbr)
        for leaves in (False, True):
            done = relieve(rt, made_for, expected, leaves)
            if done is None or done.max_load >= kept[1].get("max_load", float("inf")):
                continue
            a, layered = _analyzed(done.tables, max_vcs)
            if _fits(a, max_vcs):
                how = f"{info.get('strategy', 'wild-first')}, busiest links relieved"
                relieved: RouteInfo = {**info, "strategy": how, "max_load": done.max_load, "relieved": done.moved}
                kept = (done.tables, relieved, a, layered)
    return kept


def _fits(a: Analysis, max_vcs: int | None) -> bool:
    return bool(a.deadlock_free) and (max_vcs is None or a.vcs <= max_vcs)


def _fewer_vcs(a: Analysis, than: Analysis) -> bool:
    """Prefer deadlock-free tables, then fewer VCs."""
    return (not a.deadlock_free, a.vcs) < (not than.deadlock_free, than.vcs)


def _report(
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
    loads = _loads(rt, expected, traffics, weight_load=a.load)
    healthy = loads if _is_healthy_reference(rt, expected) else healthy_loads(shape, expected, traffics)
    delivered = float(routable_pairs) / float(n * (n - 1)) if n > 1 else 1.0
    # Throughput kept: the healthy maximum link load over this one, times the share of pairs still delivered
    # (traffic between unroutable pairs is lost, not free).
    retained = {k: round((healthy[k] / loads[k] if loads[k] else 1.0) * delivered, 4) for k in traffics}
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
        "pairs_broken_by_faults": info["broken_by_faults"],
        "pairs_repaired_wild": info["repaired_wild"],
        "entries_relieved": info.get("relieved", 0),
        "dimension_orders": info["orders_used"],
        "vc_layout": a.vc_blocks if deadlock_check else None,
    }
    pairs = list(zip(bad_s[:1000].tolist(), bad_t[:1000].tolist(), strict=True))
    return RouteReport(rt, summary, pairs, a.cycle)


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
