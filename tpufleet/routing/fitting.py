"""Which candidate tables a slice keeps (pure): the first, best ranked, whose channel dependencies are
deadlock-free within the VC budget (`analyzed`, `first_fitting`), then lighter ones made by relieving the busiest
links of those that fit (`relieved`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpufleet.routing.analysis import Analysis, RouteTables, analyze
from tpufleet.routing.relieve import RELIEVED_CANDIDATES

# Relieving the relieved tables again: its rounds stop at the first that does not lower the maximum, and a fresh
# start from where they stopped often finds more (8x8x8 with x/5 and y/5 down: 597, then 593).
RELIEVE_PASSES = 3

if TYPE_CHECKING:
    from tpufleet.routing.tolerant import RouteInfo
    from tpufleet.topology import ChipGraph

Checked = tuple[RouteTables, "RouteInfo", Analysis, bool]  # tables, how made, analysis, wild hops layered


def analyzed(rt: RouteTables, max_vcs: int | None) -> tuple[Analysis, bool]:
    """The analysis that fits `max_vcs` (wild hops on one VC, or, if that leaves a cycle, on one VC per hop of a
    chain), or the leaner of the two."""
    from tpufleet.routing import steps

    best: tuple[Analysis, bool] | None = None
    for layered in (False, True) if rt.wild is not None and rt.wild.any() else (False,):
        rt.wild_layers = layered
        a = analyze(rt)
        steps.advance("analysis", planned=False)
        if fits(a, max_vcs):
            return a, layered
        if best is None or fewer_vcs(a, best[0]):
            best = (a, layered)
        if a.deadlock_free:
            break  # too many VCs, but no cycle for a VC per wild hop of a chain to break: it would only add VCs
    assert best is not None
    return best


def first_fitting(
    options: list[tuple[RouteTables, RouteInfo]], max_vcs: int | None, relieving: bool
) -> tuple[Checked, list[Checked]]:
    """The best-ranked table set that fits (else the leanest), and, when `relieving`, the first RELIEVED_CANDIDATES
    that fit of each graph the sets were made for (so an optical link's include its whole OCS's)."""
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
        a, layered = analyzed(rt, max_vcs)
        if not fits(a, max_vcs):
            if leanest is None or fewer_vcs(a, leanest[2]):
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


def relieved(fitting: list[Checked], kept: Checked, max_vcs: int | None, expected: ChipGraph) -> Checked:
    """The lightest of `kept` and the fitting sets with their busiest links relieved (subtrees, or leaves), each
    analyzed again: a relieved set is kept only if it fits `max_vcs` and is strictly lighter for all-to-all. The
    routes ring collectives use never move, so all-reduce, all-gather and reduce-scatter keep their times."""
    from tpufleet.routing.relieve import relieve

    for rt, info, _, _ in fitting:
        if info.get("relieved"):
            continue  # relieved when made (`tree_families.preleg_made`): relieving them again finds nothing
        made_for = info.get("made_for", rt.nbr)
        for leaves in (False, True):
            # each set's passes go on while they lower its own load, not only while they beat the lightest so
            # far: a pass that does not may lead to one that does (twisted 4x8x8, a link of x/4: the live
            # graph's set relieved to 192, then the OCS pattern's 193 -> 191, as its whole OCS is relieved)
            tables, moved = rt, 0
            for _ in range(RELIEVE_PASSES):
                done = relieve(tables, made_for, expected, leaves)
                if done is None:
                    break
                a, layered = analyzed(done.tables, max_vcs)
                if not fits(a, max_vcs):
                    break
                tables, moved = done.tables, moved + done.moved
                if done.max_load < kept[1].get("max_load", float("inf")):
                    how = f"{info.get('strategy', 'wild-first')}, busiest links relieved"
                    info_now: RouteInfo = {**info, "strategy": how, "max_load": done.max_load, "relieved": moved}
                    kept = (done.tables, info_now, a, layered)
    return kept


def fits(a: Analysis, max_vcs: int | None) -> bool:
    return bool(a.deadlock_free) and (max_vcs is None or a.vcs <= max_vcs)


def fewer_vcs(a: Analysis, than: Analysis) -> bool:
    """Prefer deadlock-free tables, then fewer VCs."""
    return (not a.deadlock_free, a.vcs) < (not than.deadlock_free, than.vcs)


def min_vcs(rt: RouteTables) -> int:
    """The fewest VCs the tables can need (`cdg.verdict` packs no tighter): two dateline VCs per dimension order on
    a torus (one on a mesh), each further order one more (its block overlapping the previous one), and one VC for
    wild hops; with several orders, legs placed one by one (`routing.legs`) may fit any number of them in one
    order's VCs and one more."""
    per_order = 2 if rt.shape.wraps else 1
    orders = len(set(rt.dest_class.tolist())) if rt.dest_class is not None else 1
    wild = rt.wild is not None and bool(rt.wild.any())
    return per_order + 1 if orders > 1 or wild else per_order
