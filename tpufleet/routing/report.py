"""From a slice's live graph to the documented routing figures (pure)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpufleet.routing import memo
from tpufleet.routing.analysis import Analysis, RouteTables, analyze
from tpufleet.routing.relieve import RELIEVE_LIMIT, RELIEVED_CANDIDATES
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.canonical import Turn
    from tpufleet.routing.tolerant import RouteInfo
    from tpufleet.topology import ChipGraph

TRAFFICS = ("all-to-all", "all-reduce")


@dataclass
class RouteReport:
    tables: RouteTables
    summary: dict[str, Any]  # the documented figures (JSON-shaped)
    analysis: Analysis  # what the figures came from (routes, loads, VCs): the same tables elsewhere reuse it
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
    return _healthy_reference(shape, expected, traffics)[0]


def healthy_tables(shape: Shape, expected: ChipGraph) -> tuple[Any, Any]:
    """The tool's own healthy tables of a shape, (P, L) as `dor.tables` gives them: the ones `healthy_loads`
    measures and `routes` stores for a whole slice (for a twisted torus, the lighter of plain and balanced DOR)."""
    return _healthy_reference(shape, expected, ("all-to-all",))[1](shape)


def _healthy_reference(
    shape: Shape, expected: ChipGraph, traffics: Sequence[str]
) -> tuple[dict[str, float], Callable[[Shape], tuple[Any, Any]]]:
    """`healthy_loads`, and the maker of the healthy tables they are the loads of."""
    from tpufleet.routing import dor
    from tpufleet.routing.analysis import analyze, symmetric, symmetric_load
    from tpufleet.routing.balanced import BALANCE_LIMIT, balanced_twisted_tables

    if symmetric(shape) and not shape.twisted:
        return _ring_healthy_loads(shape, expected, traffics), dor.tables
    makers: list[Callable[[Shape], tuple[Any, Any]]] = [dor.tables]
    if shape.twisted and len(expected) <= BALANCE_LIMIT:
        makers.append(balanced_twisted_tables)
    best: tuple[dict[str, float], Callable[[Shape], tuple[Any, Any]]] | None = None
    for make in makers:
        P, L = make(shape)
        rt = RouteTables(shape, expected, P, L)
        a2a = symmetric_load(rt) if symmetric(shape) else analyze(rt, deadlock=False).load
        loads = _loads(rt, expected, traffics, weight_load=a2a)
        if best is None or loads.get("all-to-all", 0.0) < best[0].get("all-to-all", 0.0):
            best = (loads, make)
    assert best is not None
    return best


def healthy_tables_broken(shape: Shape, expected: ChipGraph, alive: ChipGraph) -> int:
    """`pairs_broken_by_faults`: the ordered pairs whose route in the tool's healthy tables (the ones
    `healthy_loads` measures) crosses a link the live graph lacks, whatever tables then route around it."""
    from tpufleet.routing.analysis import symmetric
    from tpufleet.routing.dor import DEFAULT_ORDER
    from tpufleet.routing.tolerant import broken_pairs

    if bool((alive == expected).all()):
        return 0
    if symmetric(shape) and not shape.twisted and bool(((alive == expected) | (alive < 0)).all()):
        import numpy as np

        from tpufleet.routing.rings import broken_mask_by_runs

        return int(np.count_nonzero(broken_mask_by_runs(shape, DEFAULT_ORDER, expected, alive)))
    _, make = _healthy_reference(shape, expected, ("all-to-all",))
    P, _ = make(shape)
    return len(broken_pairs(P, expected, alive))


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
    turn: bool = True,
    thorough: bool = False,
) -> RouteReport:
    """Tables plus every documented figure: routable pairs, lengths, VCs, deadlock, loads, throughput kept.

    `auto` tables of a fault with a canonical form (`routing.canonical`, small untwisted tori) are made for that
    form and turned back (`turn`), so the same fault turned gets the same load.

    With a VC budget, the best-ranked candidate that is deadlock-free within `max_vcs` is kept (wild hops on one
    VC, or, if that leaves a dependency cycle, on one VC per hop of a chain); when none fits, the one needing the
    fewest VCs is reported, for the caller to refuse. `thorough`: order pairs whatever the slice's size
    (`dimension_orders.order_pairs`: seconds more on the largest slices; the other families keep their limits).
    """
    if turn and deadlock_check and algorithm == "auto":
        return _turned_or_made(shape, expected, alive, traffics, max_vcs, thorough)
    return _made_for(shape, expected, alive, algorithm, traffics, deadlock_check, max_vcs, thorough)


def verdict_summary(
    shape: Shape, expected: ChipGraph, alive: ChipGraph, traffics: Sequence[str], max_vcs: int
) -> dict[str, Any]:
    """The figures a fault's blast radius reads for a slice's `auto` tables within `max_vcs`.

    When every candidate leaves pairs unroutable, whichever is kept leaves them too, so no table set is made or
    analysed: the summary gives the fewest pairs any candidate leaves (`reach.fewest_left`), VCs, deadlock
    freedom and loads unknown (None), no throughput. Only above the canonical-form limit: below it a whole OCS's
    turned tables may still replace the kept set, which takes the kept candidate's analysis. Otherwise it is
    `evaluate`'s summary.
    """
    from tpufleet.routing.canonical import CANONICAL_LIMIT
    from tpufleet.routing.reach import fewest_left

    left = fewest_left(shape, expected, alive, max_vcs) if len(expected) > CANONICAL_LIMIT else None
    if left is None:
        return evaluate(shape, expected, alive, "auto", traffics, max_vcs=max_vcs).summary
    return {
        "chips": len(expected),
        "unroutable_pairs": left,
        "deadlock_free": None,
        "vcs": None,
        "max_link_load": {},
        "throughput_retained": dict.fromkeys(traffics, 0.0),
        "verdict_only": True,
    }


def _turned_or_made(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    thorough: bool = False,
    seen: dict[bytes, RouteReport] | None = None,
) -> RouteReport:
    """`evaluate` of `auto` tables checked for deadlock: the fault's canonical form's tables turned back
    (`_turned`), else the best candidate made as it is; then a whole OCS's pattern's tables instead where they
    carry all-to-all lighter (`_with_whole_ocs`, which makes the pattern's own answer here, not through
    `evaluate`).

    `seen`: the answers already made in this evaluation, by live graph. Patterns reach the same graph many ways
    (links of OCS a, b and c: expanding a then b, or b then a, or all three at once): each of the 2^k graphs of k
    OCS is made once, not once per path (3 links of 3 OCS on 8x8x8: 8 graphs made, not 20)."""
    seen = {} if seen is None else seen
    key = alive.tobytes()
    if key not in seen:
        own = _turned(shape, expected, alive, traffics, max_vcs)  # canonical forms: within every limit thorough lifts
        if own is None:
            own = _made_for(shape, expected, alive, "auto", traffics, True, max_vcs, thorough)
        seen[key] = _with_whole_ocs(shape, expected, alive, traffics, max_vcs, own, seen)
    return seen[key]


def _with_whole_ocs(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    own: RouteReport,
    seen: dict[bytes, RouteReport],
) -> RouteReport:
    """`own`, or the tables a whole OCS's failure pattern containing the dead optical links gets on its own, when
    they carry all-to-all with a lower maximum load: they never use a link the pattern lacks, so they serve the
    links too, and a link is then never routed worse than its OCS. The live graph's candidates hold each pattern's
    tables as made for it; where faults are routed in their canonical form (`_turned`), the pattern's own answer
    may differ from those, so it is made as the OCS fault itself would be."""
    from tpufleet.routing.patterns import ocs_patterns, patterns_combined

    best = own
    if "all-to-all" not in best.summary["max_link_load"] or patterns_combined(shape, len(expected)):
        return best  # no canonical form: the live graph's candidates already hold each pattern's own tables
    for graph, _ in ocs_patterns(shape, expected, alive):
        other = _as_the_pattern_gets(shape, expected, graph, alive, traffics, max_vcs, seen)
        if other is not None and _a2a(other) < _a2a(best):
            best = other
    return best


def _as_the_pattern_gets(
    shape: Shape,
    expected: ChipGraph,
    pattern: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    seen: dict[bytes, RouteReport],
) -> RouteReport | None:
    """The tables a whole OCS's failure `pattern` gets on its own (its canonical form included), on the live
    graph `alive` (they never use a link the pattern lacks); None when they do not route every pair within
    `max_vcs` there.

    The same routes on more live links arrive, load the links and use the VCs as on the pattern (the channel
    dependencies are the hops' own), so the pattern's analysis stands there; only the live graph's own figures are
    made again."""
    import dataclasses

    made = _turned_or_made(shape, expected, pattern, traffics, max_vcs, seen=seen)
    if made.summary["unroutable_pairs"] or not _fits(made.analysis, max_vcs):
        return None
    tables = dataclasses.replace(made.tables, nbr=alive)
    return _report(shape, expected, traffics, True, "auto", tables, _turned_info(made.summary), made.analysis)


def _a2a(report: RouteReport) -> float:
    return float(report.summary["max_link_load"]["all-to-all"])


def _made_for(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    algorithm: str,
    traffics: Sequence[str],
    deadlock_check: bool,
    max_vcs: int | None,
    thorough: bool = False,
    turned: bool = False,
) -> RouteReport:
    """The tables of the live graph made as it is: the best-ranked candidate. `turned`: `alive` is a fault's
    canonical form, whose tables are turned back (`candidates`)."""
    from tpufleet.routing.candidates import candidates

    options = candidates(shape, expected, alive, algorithm, max_vcs if deadlock_check else None, thorough, turned)
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


def _turned(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
) -> RouteReport | None:
    """The report of the tables made for the fault's canonical form or one of its mirrored images
    (`routing.canonical`), turned back: the lightest for all-to-all that fits `max_vcs` on the real slice (ties:
    the canonical form). None when the fault has no canonical form, the form kept is the live graph itself (made as
    it is), or no turned tables fit."""
    from tpufleet.routing.canonical import canonical_turn, mirrors

    turn = canonical_turn(shape, expected, alive)
    if turn is None:
        return None
    canonical = turn.graph(alive)
    if (canonical == alive).all() and len(mirrors(shape, expected, canonical)) == 1:
        return None  # the live graph is the only form: made as it is, once
    if memo.current() is None:
        forms = _forms_made(shape, _GraphKey(expected), _GraphKey(canonical), tuple(traffics), max_vcs)
    else:  # a command with the state's cache keeps its wild-first choices there, so it searches (or reads them)
        forms = _lightest_first(_forms_of(shape, expected, canonical, traffics, max_vcs), traffics)
    for mirror, made in forms:
        full = turn.then(mirror)
        if (full.graph(alive) == alive).all():
            return None  # this form is the live graph: made as it is
        moved = _moved(shape, expected, traffics, max_vcs, made, functools.partial(full.back, alive=alive))
        if moved is not None:
            return moved
    return None


def _forms_of(
    shape: Shape, expected: ChipGraph, canonical: ChipGraph, traffics: Sequence[str], max_vcs: int | None
) -> list[tuple[Turn, RouteReport]]:
    """Each mirrored image of the canonical form (`canonical.mirrors`, the form itself first) and its tables."""
    from tpufleet.routing.canonical import mirrors

    out = []
    for mirror in mirrors(shape, expected, canonical):
        image = mirror.graph(canonical)
        out.append((mirror, _made_for(shape, expected, image, "auto", traffics, True, max_vcs, turned=True)))
    return out


def _lightest_first(forms: list[tuple[Turn, RouteReport]], traffics: Sequence[str]) -> list[tuple[Turn, RouteReport]]:
    """The forms by all-to-all max load (stable: the canonical form first on ties), when all-to-all is reported."""
    return sorted(forms, key=lambda form: _a2a(form[1])) if "all-to-all" in traffics else forms


class _GraphKey:
    """A chip graph as a memo key: a private copy, hashed by its bytes."""

    __slots__ = ("_hash", "graph")

    def __init__(self, graph: ChipGraph) -> None:
        self.graph = graph.copy()
        self._hash = hash((graph.shape, graph.dtype.str, graph.tobytes()))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _GraphKey) and self._hash == other._hash and bool((self.graph == other.graph).all())


@functools.lru_cache(maxsize=16)
def _forms_made(
    shape: Shape, expected: _GraphKey, canonical: _GraphKey, traffics: tuple[str, ...], max_vcs: int | None
) -> list[tuple[Turn, RouteReport]]:
    """The tables made for a fault's canonical form and its mirrored images, lightest first, kept for the next fault
    of the same form in this process (when no choice cache is installed: `routing.memo`): the 48 OCS of an 8x8x8
    are two forms, and a link fault's whole-OCS candidate is its OCS's form. Read only: `_moved` turns copies of
    the tables."""
    return _lightest_first(_forms_of(shape, expected.graph, canonical.graph, traffics, max_vcs), traffics)


def _moved(
    shape: Shape,
    expected: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    made: RouteReport,
    move: Callable[[RouteTables], RouteTables],
) -> RouteReport | None:
    """The report of `made`'s tables, made for the fault's canonical form, once `move` has turned them back onto
    the live graph (analysed again: the datelines stay put while the routes turn); None when they do not route
    every pair deadlock-free within `max_vcs` there."""
    if not made.summary["deadlock_free"] or made.summary["unroutable_pairs"]:
        return None
    return fitted_report(shape, expected, traffics, max_vcs, move(made.tables), _turned_info(made.summary))


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
    a, layered = _analyzed(rt, max_vcs)
    if not _fits(a, max_vcs):
        return None
    rt.wild_layers = layered
    return _report(shape, expected, traffics, True, "auto", rt, info, a)


def _turned_info(summary: dict[str, Any]) -> RouteInfo:
    """How the canonical form's tables were made, as `candidates` said it (the same counts, turned)."""
    info: RouteInfo = {
        "broken_by_faults": summary["pairs_broken_in_base_orders"],
        "repaired_wild": summary["pairs_repaired_wild"],
        "orders_used": summary["dimension_orders"],
        "strategy": summary["strategy"],
        "relieved": summary["entries_relieved"],
        "max_load": summary["max_link_load"].get("all-to-all", 0.0),
    }
    return info


Checked = tuple[RouteTables, "RouteInfo", Analysis, bool]  # tables, how made, analysis, wild hops layered


def _analyzed(rt: RouteTables, max_vcs: int | None) -> tuple[Analysis, bool]:
    """The analysis that fits `max_vcs` (wild hops on one VC, or, if that leaves a cycle, on one VC per hop of a
    chain), or the leaner of the two."""
    from tpufleet.routing import steps

    best: tuple[Analysis, bool] | None = None
    for layered in (False, True) if rt.wild is not None and rt.wild.any() else (False,):
        rt.wild_layers = layered
        a = analyze(rt)
        steps.advance("analysis", planned=False)
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
        if info.get("relieved"):
            continue  # relieved when made (`tree_families.preleg_made`): relieving them again finds nothing
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
