"""From a slice's live graph to the documented routing figures (pure)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tpufleet.routing import memo
from tpufleet.routing.analysis import RouteTables, analyze
from tpufleet.routing.figures import RouteReport, fitted_report, lighter, report_of
from tpufleet.routing.fitting import first_fitting, fits, relieved
from tpufleet.routing.relieve import RELIEVE_LIMIT
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.routing.canonical import Turn
    from tpufleet.routing.tolerant import RouteInfo
    from tpufleet.topology import ChipGraph

TRAFFICS = ("all-to-all", "all-reduce")


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
    seen: dict[bytes, tuple[float, RouteReport]] | None = None,
    below: float = float("inf"),
) -> RouteReport:
    """`evaluate` of `auto` tables checked for deadlock: the fault's canonical form's tables turned back
    (`_turned`), else the best candidate made as it is; then a whole OCS's pattern's tables instead where they
    carry all-to-all lighter (`_with_whole_ocs`, which makes the pattern's own answer here, not through
    `evaluate`).

    `seen`: the answers already made in this evaluation, by live graph. Patterns reach the same graph many ways
    (links of OCS a, b and c: expanding a then b, or b then a, or all three at once): each of the 2^k graphs of k
    OCS is made once, not once per path (3 links of 3 OCS on 8x8x8: 8 graphs made, not 20). `below`: the caller
    keeps only an answer lighter than this; one that is not may be another not lighter either (`_with_own_where_poor`
    skips candidates); a seen answer serves any `below` up to the one it was made for."""
    seen = {} if seen is None else seen
    key = alive.tobytes()
    if key not in seen or seen[key][0] < below:
        own = _turned(shape, expected, alive, traffics, max_vcs)  # canonical forms: within every limit thorough lifts
        if own is None:
            own = _made_for(shape, expected, alive, "auto", traffics, True, max_vcs, thorough)
        elif shape.twisted and "all-to-all" in traffics:  # translated forms miss what the live graph's own may find
            own = lighter(own, _made_for(shape, expected, alive, "auto", traffics, True, max_vcs, thorough), max_vcs)
        elif "all-to-all" in traffics and _whole_ocs(shape, expected, alive):  # the live graph's own may be lighter
            own = _with_pre_legs(shape, expected, alive, traffics, max_vcs, own)
            own = _with_own_where_poor(shape, expected, alive, traffics, max_vcs, own, thorough, below)
        seen[key] = (below, _with_whole_ocs(shape, expected, alive, traffics, max_vcs, own, seen, below))
    return seen[key][1]


def _whole_ocs(shape: Shape, expected: ChipGraph, alive: ChipGraph) -> bool:
    """Every dead link is optical and its whole OCS is down (`tree_families.whole_ocs_only`): a link fault's
    candidates include its OCS's patterns, whose second making costs seconds (3 links of 3 OCS on 8x8x8: 12 s),
    and the cut bound is loose for it."""
    from tpufleet.routing.patterns import ocs_patterns
    from tpufleet.routing.tree_families import whole_ocs_only

    return whole_ocs_only(shape, expected, alive, ocs_patterns(shape, expected, alive))


def _with_pre_legs(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    turned: RouteReport,
) -> RouteReport:
    """`turned` (a canonical form's tables turned back), or the live graph's own pre-leg tables where they fit and
    carry all-to-all lighter. They are never made for a canonical form (`candidates`), so before, a fault with
    broken rings in all three dimensions whose turned tables fit never met them: on 8x8x8, eleven of twelve sets
    of three OCS down kept 620-679, where pre-leg trees carry 554-585 (`benchmarks/routing_quality.py`). Whole OCS
    down, all-to-all reported (the caller's condition)."""
    from tpufleet.routing.tree_families import preleg_made, prelegs_apply

    if not prelegs_apply(shape, expected, alive, max_vcs):
        return turned
    (load, _), rt, info = preleg_made(shape, expected, alive, alive, "")
    if load >= _a2a(turned):
        return turned
    return fitted_report(shape, expected, traffics, max_vcs, rt, info) or turned


# of the cut bound: turned tables of whole OCS down that keep less are checked against the live graph's own
MADE_AS_IS_BELOW = 0.92
PRUNE = True  # `_with_own_where_poor` makes no candidate proved to reach the turned tables' load (tests compare)


def _with_own_where_poor(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    turned: RouteReport,
    thorough: bool,
    below: float = float("inf"),
) -> RouteReport:
    """`turned`, or the tables made for the live graph as it is where the turned ones keep less than
    MADE_AS_IS_BELOW of the cut bound and those are lighter. Which image of a fault routes well is luck (the
    repairs name dimensions and directions): 8x8x16 with x/5 and z/5 down carries 2477 in its canonical form and
    2214 as it is (cut bound 2184.53). Whole OCS down, all-to-all reported (the caller's condition). Candidates
    proved to reach `turned`'s load or `below` are not made: the same answer wherever it is lighter than `below`."""
    from tpufleet.routing.optimum import kept_at_most

    healthy = float(turned.summary["healthy_max_link_load"]["all-to-all"])
    kept = kept_at_most(shape, alive, healthy)
    if kept is None or healthy / kept >= MADE_AS_IS_BELOW * _a2a(turned):
        return turned
    ceiling = min(_a2a(turned), below) if PRUNE else None
    own = _made_lighter(shape, expected, alive, traffics, max_vcs, thorough, ceiling)
    if own is None:
        return turned
    return lighter(turned, own, max_vcs)


def _made_lighter(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    thorough: bool,
    ceiling: float | None,
) -> RouteReport | None:
    """`_made_for`'s `auto` tables of the live graph as it is, whenever they carry all-to-all below `ceiling` (the
    candidates proved to reach it are not made: `routing.ceiling`); otherwise they may be others, or None."""
    from tpufleet.routing.candidates import candidates

    relieving = len(expected) <= RELIEVE_LIMIT and bool((alive != expected).any())  # relieves the fitting ones
    options = candidates(shape, expected, alive, "auto", max_vcs, thorough, ceiling=None if relieving else ceiling)
    return _kept(shape, expected, alive, "auto", traffics, max_vcs, options) if options else None


def _with_whole_ocs(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int | None,
    own: RouteReport,
    seen: dict[bytes, tuple[float, RouteReport]],
    below: float = float("inf"),
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
        other = _as_the_pattern_gets(shape, expected, graph, alive, traffics, max_vcs, seen, min(below, _a2a(best)))
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
    seen: dict[bytes, tuple[float, RouteReport]],
    below: float = float("inf"),
) -> RouteReport | None:
    """The tables a whole OCS's failure `pattern` gets on its own (its canonical form included), on the live
    graph `alive` (they never use a link the pattern lacks); None when they do not route every pair within
    `max_vcs` there.

    The same routes on more live links arrive, load the links and use the VCs as on the pattern (the channel
    dependencies are the hops' own), so the pattern's analysis stands there; only the live graph's own figures are
    made again."""
    import dataclasses

    made = _turned_or_made(shape, expected, pattern, traffics, max_vcs, seen=seen, below=below)
    if made.summary["unroutable_pairs"] or not fits(made.analysis, max_vcs):
        return None
    tables = dataclasses.replace(made.tables, nbr=alive)
    return report_of(shape, expected, traffics, True, "auto", tables, _turned_info(made.summary), made.analysis)


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
        return report_of(shape, expected, traffics, False, algorithm, rt, info, analyze(rt, deadlock=False))
    return _kept(shape, expected, alive, algorithm, traffics, max_vcs, options)


def _kept(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    algorithm: str,
    traffics: Sequence[str],
    max_vcs: int | None,
    options: list[tuple[RouteTables, RouteInfo]],
) -> RouteReport:
    """The report of the first of the ranked `options` that fits `max_vcs` (else the leanest), relieved."""
    # Relieving makes routes non-minimal: never on a healthy slice, whose tables stay the minimal ones.
    relieving = algorithm == "auto" and len(expected) <= RELIEVE_LIMIT and bool((alive != expected).any())
    kept, fitting = first_fitting(options, max_vcs, relieving)
    if fitting:
        kept = relieved(fitting, kept, max_vcs, expected)
    rt, info, a, layered = kept
    rt.wild_layers = layered
    return report_of(shape, expected, traffics, True, algorithm, rt, info, a)


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
