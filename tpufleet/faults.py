"""Faults and their blast radius ("Resiliency at Scale" sections 3.3 and 3.6), pure.

What a fault takes away, and what happens to each slice it touches:

* a chip, machine (host), electrical link or whole cube: the cube leaves the pool until repaired; the slices
  running on the failed machines are evicted (``reschedule``), with the replacement cubes that would be chosen
  and the cross-connect changes, or ``pending`` when none are free; other slices in the cube keep running
  (``none``).
* an OCS or optical link: the cubes stay in the pool. Slices with fault-tolerant routing keep running on new
  routing tables (``reroute``) if every pair is still routable and the tables are deadlock-free; slices that
  opted out, or that the router cannot fully serve, are rescheduled: an optical link by replacing the cube that
  owns the failed port, an OCS (which every cube of the pod uses) by moving to another pod.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from tpufleet.allocation import Allocation
from tpufleet.constants import DIMS, HARDWARE_VCS
from tpufleet.errors import BadInput, shown
from tpufleet.fleetstate import Fault, FleetState, Reroute, Slice, SliceState
from tpufleet.ids import (
    ChipId,
    CubeId,
    HostId,
    IciId,
    LinkId,
    OcsId,
    TargetId,
    canonical,
    machine_of,
    natural_key,
    parse_target,
)
from tpufleet.model import Fleet, check_known, component_counts
from tpufleet.moves import Proposal, propose_move, propose_replacement

Json = dict[str, Any]


class DailyRates(Protocol):
    """Failures per component per day (the shipped fault-rate file, or the operator's own)."""

    host_per_day: float
    link_per_day: float
    ocs_per_day: float


def normalize(fleet: Fleet, text: str) -> TargetId:
    return check_known(fleet, parse_target(text, known=lambda target: _known(fleet, target)))


def _known(fleet: Fleet, target: TargetId) -> bool:
    try:
        check_known(fleet, target)
    except BadInput:
        return False
    return True


def machines_hit(target: TargetId) -> set[int] | None:
    """Machines of the cube a compute fault stops (None: the whole cube)."""
    if isinstance(target, HostId):
        return {target.machine}
    if isinstance(target, ChipId):
        return {machine_of(target.x, target.y, target.z)}
    if isinstance(target, IciId):
        d = DIMS.index(target.direction[1])
        other = [target.x, target.y, target.z]
        other[d] += 1 if target.direction[0] == "+" else -1
        return {machine_of(target.x, target.y, target.z), machine_of(*other)}
    return None


def touched_slices(state: FleetState, target: TargetId) -> list[tuple[Slice, str]]:
    """(slice, "compute" | "network" | "bystander") for every slice the fault concerns, by name."""
    out = []
    for name in sorted(state.slices, key=natural_key):
        sl = state.slices[name]
        if isinstance(target, (ChipId, HostId, IciId, CubeId)):
            if target.cube in sl.cubes:
                hit = machines_hit(target)
                out.append((sl, "compute" if hit is None or hit & set(sl.held_machines) else "bystander"))
        elif isinstance(target, OcsId):
            if sl.pod == target.pod and not sl.shape.is_subcube:
                out.append((sl, "network"))
        elif target.cube in sl.cubes and not sl.shape.is_subcube:
            out.append((sl, "network"))
    return out


@dataclass
class SliceImpact:
    slice: str
    action: str  # reschedule | reroute | none
    reason: str
    replacement: Json | None = None
    reroute: Json | None = None

    def to_dict(self) -> Json:
        out: Json = {"slice": self.slice, "action": self.action, "reason": self.reason}
        if self.replacement is not None:
            out["replacement"] = self.replacement
        if self.reroute is not None:
            out["reroute"] = self.reroute
        return out


@dataclass
class BlastRadius:
    fault_id: str
    target: str
    planned: bool
    cubes_out: list[str]
    slices: list[SliceImpact] = field(default_factory=list)
    duplicate_of: str | None = None
    analysis_errors: list[str] = field(default_factory=list)  # bugs met while analysing; the fault stands

    def to_dict(self) -> Json:
        out: Json = {
            "fault_id": self.fault_id,
            "target": self.target,
            "planned": self.planned,
            "cubes_out": self.cubes_out,
            "slices": [s.to_dict() for s in self.slices],
        }
        if self.duplicate_of:
            out["duplicate_of"] = self.duplicate_of
        if self.analysis_errors:
            out["analysis_errors"] = self.analysis_errors
        return out


RoutedGraphs = dict[tuple[str, bool, bytes, bytes], dict[str, Any]]  # (shape, twisted, graphs) -> routing summary


def reroute_figures(state: FleetState, sl: Slice, routed: RoutedGraphs | None = None) -> Json:
    """What the slice's router achieves with the faults as they now stand. `routed` keeps the routing summaries
    of live graphs already analysed in this blast radius: slices of one shape hit by one fault see the same live
    graph (chips are numbered within the slice), so the tables, and the figures, are worked out once."""
    from tpufleet import wiring
    from tpufleet.routing.dimension_orders import broken_dims
    from tpufleet.routing.report import evaluate, verdict_summary
    from tpufleet.routing.rescue import rescued

    if not sl.state.wired:
        return {"fully_routable": False, "why": f"slice is {sl.state}, not wired"}
    graph = wiring.build(sl, state.fleet, state.ocs, state.health())
    key = (sl.shape.text, sl.shape.twisted, graph.expected.tobytes(), graph.nbr.tobytes())
    routed = {} if routed is None else routed
    if key not in routed:
        routed[key] = verdict_summary(sl.shape, graph.expected, graph.nbr, ("all-to-all",), HARDWARE_VCS)
    s, thorough_made = routed[key], False
    broken = broken_dims(graph.expected, graph.nbr)
    if not rescued(s) and thorough_may_keep(
        sl, len(graph.expected), s["unroutable_pairs"] == 0, kept_exactly(s), broken
    ):
        # kept apart: another slice of this graph, with a lower floor, keeps the quick tables' figures
        thorough = (f"thorough {key[0]}", *key[1:])
        if thorough not in routed:
            made = evaluate(
                sl.shape, graph.expected, graph.nbr, "auto", ("all-to-all",), max_vcs=HARDWARE_VCS, thorough=True
            )
            routed[thorough] = made.summary
        s, thorough_made = routed[thorough], True
    return {
        "fully_routable": s["unroutable_pairs"] == 0 and not graph.miswired,
        "unroutable_pairs": s["unroutable_pairs"],
        "deadlock_free": s["deadlock_free"],
        "vcs": s["vcs"],
        "all_to_all_retained": s["throughput_retained"]["all-to-all"],
        # against the healthy optimum, where the healthy tables are heavier (twisted tori): None where not measured
        "all_to_all_retained_vs_optimum": (s.get("throughput_retained_vs_optimum") or {}).get("all-to-all"),
        "all_to_all_kept_exactly": kept_exactly(s),  # the floor is judged on this, not on the rounded figure
        "missing_links": len(graph.missing),
        "thorough": thorough_made,
    }


def routed_around(state: FleetState, sl: Slice) -> tuple[str, ...]:
    """The open network faults a wired slice's rerouted tables avoid: every OCS fault of its pod and optical-link
    fault of its cubes, whenever it was opened (one open before the slice was wired left its pairs deferred)."""
    cubes = set(sl.cubes)
    return tuple(
        f.id
        for f in state.open_faults()
        if isinstance(f.target, (OcsId, LinkId))
        and (f.target.pod == sl.pod if isinstance(f.target, OcsId) else f.target.cube in cubes)
    )


def kept_exactly(s: Json) -> float:
    """The all-to-all share kept, unrounded (healthy over this maximum link load; every pair is delivered when
    the tables may be kept), so a floor of 0.92586 is not met by 512/553 = 0.925859 shown as 0.9259."""
    load, healthy = s["max_link_load"].get("all-to-all"), s.get("healthy_max_link_load", {}).get("all-to-all")
    if s["unroutable_pairs"] or not load or healthy is None:
        return float(s["throughput_retained"]["all-to-all"])
    return float(healthy) / float(load)


def thorough_may_keep(sl: Slice, chips: int, routable: bool, kept: float, broken: int | None = None) -> bool:
    """The quick tables route every pair but `kept` (their share of the healthy all-to-all throughput) is below
    the slice's floor, and thorough tables may keep more with `broken` dimensions broken
    (`dimension_orders.thorough_may_help`; a full pod with two OCS down in different dimensions: 0.69 quick, 0.80
    thorough): seconds spent before moving a slice that could have stayed."""
    from tpufleet.routing.dimension_orders import thorough_may_help

    return routable and kept < sl.min_throughput and thorough_may_help(sl.shape, chips, broken)


def reroute_verdict(figures: Json, sl: Slice, max_vcs: int) -> str | None:
    """None when the slice can run on the rerouted tables, else why not."""
    if not figures["fully_routable"]:
        return figures.get("why") or "fault-tolerant routing cannot serve every pair"
    if not figures.get("deadlock_free"):
        return "the rerouted tables are not deadlock-free"
    if figures["vcs"] > max_vcs:
        return f"the rerouted tables need {figures['vcs']} virtual channels, the hardware has {max_vcs}"
    if figures["all_to_all_kept_exactly"] < sl.min_throughput:
        return (
            f"rerouted, it would keep {figures['all_to_all_kept_exactly']:.6g} of its all-to-all throughput, "
            f"below its floor of {sl.min_throughput:g}"
        )
    return None


def _guarded_figures(state: FleetState, sl: Slice, errors: list[str], routed: RoutedGraphs) -> Json:
    """The reroute figures; should the analysis itself fail (a bug), the slice is treated as not reroutable, so
    it is moved, and the error is kept for the caller to report: recording a fault never depends on analysing
    its consequences."""
    try:
        return reroute_figures(state, sl, routed)
    except Exception as exc:  # noqa: BLE001 - see the docstring: the fault must be recorded whatever the router does
        errors.append(f"slice {sl.name}: {type(exc).__name__}: {exc}")
        return {"fully_routable": False, "why": "its reroute could not be analysed (internal error); moved to be safe"}


def _impact(
    state: FleetState, sl: Slice, how: str, fault: Fault, errors: list[str], routed: RoutedGraphs
) -> SliceImpact:
    """What happens to one touched slice; degrades or evicts it (in `state`)."""
    kind = fault.target.kind
    if how == "bystander":
        return SliceImpact(sl.name, "none", "runs on other machines of the cube")
    if sl.state is SliceState.EVICTED:
        return SliceImpact(sl.name, "none", "already evicted")
    if how == "network" and sl.fault_tolerant_routing and sl.state is SliceState.ALLOCATED and kind == "ocs":
        # nothing runs yet: like a slice allocated now, its plan defers the failed OCS's pairs and routing
        # bridges them (its tables are checked against its floor when they are made)
        down = "drained" if fault.planned else "failed"
        return SliceImpact(sl.name, "none", f"not wired yet: plan-xconnect defers the {down} OCS's cross-connects")
    if how == "network" and sl.state is SliceState.ALLOCATED and isinstance(fault.target, LinkId):
        # nothing runs yet, and `plan-xconnect` refuses a cube with a port down: that cube is replaced
        why = f"not wired yet, and plan-xconnect refuses its cube {fault.target.cube} with {fault.target} down"
    elif how == "network" and sl.fault_tolerant_routing:
        figures = _guarded_figures(state, sl, errors, routed)
        why_not = reroute_verdict(figures, sl, HARDWARE_VCS)
        if why_not is None:
            why = (
                f"{'OCS' if kind == 'ocs' else kind} drained before repair; fault-tolerant routing carries its traffic"
                if fault.planned
                else "fault-tolerant routing absorbs it"
            )
            avoided = routed_around(state, sl)  # this fault, and those open before it was wired (deferred pairs)
            state.degrade(sl.name, Reroute(figures["all_to_all_retained"], figures["vcs"], avoided))
            shown = {k: v for k, v in figures.items() if k != "all_to_all_kept_exactly"}  # the rounded one is shown
            return SliceImpact(sl.name, "reroute", why, reroute=shown)
        why = why_not
    elif how == "network":
        why = "opted out of fault-tolerant routing"
    else:
        why = f"{kind} fault stops its machines"
    if fault.planned:  # nothing runs on a slice not wired yet: there is nothing to notify or checkpoint
        then = "the job is notified and checkpoints before it moves" if sl.state.wired else "not wired yet, it moves"
        # a network drain moves a running slice only when rerouting cannot carry it: which test failed, as unplanned
        cause = f"; {why}" if how == "network" and sl.state.wired else ""
        why = f"planned drain of its {kind}{cause}: {then}"
    proposal = _movable(state, sl, propose_replacement(state, sl, fault.target))
    state.evict(sl.name, fault.id, proposal.alloc if proposal.ready else None)
    return SliceImpact(sl.name, "reschedule", why, replacement=proposal.to_dict())


def _movable(state: FleetState, sl: Slice, proposal: Proposal) -> Proposal:
    """The proposal, unless `reschedule` would refuse that move (rerouted where it lands, around faults still open,
    it would keep less than its floor): then pending, saying why, and no cubes reserved for it."""
    from tpufleet.movesteps import why_unmovable

    why = why_unmovable(state, sl, proposal) if proposal.ready else None
    if why is None or proposal.alloc is None:
        return proposal
    return Proposal(None, why=f"moved to {proposal.alloc.pod} {','.join(proposal.alloc.cubes)}: {why}")


def inject(state: FleetState, target: TargetId, planned: bool, reason: str, now: str) -> BlastRadius:
    """Record a fault and work out its blast radius; evicts the slices that must move. A target that already
    has an open fault changes nothing (the answer names that fault). An electrical link is recorded by its
    canonical name (`ids.canonical`), whichever end named it."""
    target = canonical(target)
    existing = state.open_fault_on(target)
    if existing is not None:
        return BlastRadius(existing.id, str(target), existing.planned, [], [], duplicate_of=existing.id)
    was_out = not isinstance(target, (OcsId, LinkId)) and not state.health().cube_ok(target.cube)
    fault = state.open_fault(target, planned, reason, now)
    cubes_out = [] if isinstance(target, (OcsId, LinkId)) or was_out else [target.cube]
    radius = BlastRadius(fault.id, str(target), planned, cubes_out)
    routed: RoutedGraphs = {}
    for sl, how in touched_slices(state, target):
        radius.slices.append(_impact(state, sl, how, fault, radius.analysis_errors, routed))
    moved = {
        m.slice: m for m in _reserved_moves_hit(state, target, {i.slice for i in radius.slices if i.action != "none"})
    }
    radius.slices = [moved.pop(i.slice, i) for i in radius.slices] + list(moved.values())  # "already evicted" told more
    return radius


def _reserved_moves_hit(state: FleetState, target: TargetId, seen: set[str]) -> list[SliceImpact]:
    """Evicted slices whose reserved move the new fault lands on (its cubes, or an OCS of its pod): the move is
    proposed again, kept if still good, else another place is reserved (or none), and the slice is in the blast
    radius; `explain` and `reschedule` would otherwise find out only later."""
    out = []
    for sl in sorted(state.slices.values(), key=lambda s: natural_key(s.name)):
        old = sl.proposal
        if sl.state is not SliceState.EVICTED or old is None or sl.name in seen or not _lands_on(target, old):
            continue
        proposal = _movable(state, sl, propose_move(state, sl))
        if proposal.ready and proposal.alloc == old:
            continue
        state.evict(sl.name, sl.evicted_by or "", proposal.alloc if proposal.ready else None)
        then = "another is reserved" if proposal.ready else "no other place is free yet"
        why = f"its reserved move to {','.join(old.cubes)} in {old.pod} is hit: {then}"
        out.append(SliceImpact(sl.name, "reschedule", why, replacement=proposal.to_dict()))
    return out


def _lands_on(target: TargetId, alloc: Allocation) -> bool:
    if isinstance(target, OcsId):
        return alloc.pod == target.pod
    return getattr(target, "cube", None) in alloc.cubes


def random_targets(fleet: Fleet, count: int, seed: int, rates: DailyRates) -> list[TargetId]:
    """Faults drawn in proportion to each kind's daily rate times how many of it the fleet has."""
    import numpy as np

    from tpufleet.constants import DIMS, FACE_LINKS, MACHINES_PER_CUBE, OCS_PER_DIM, POLARITIES

    if count < 1:
        raise BadInput(f"bad option --random: {shown(str(count))} must be at least 1")
    rng = np.random.default_rng(seed)
    cubes, pods = fleet.cubes, [p.name for p in fleet.pods]
    counts = component_counts(fleet)
    weights = np.array(
        [rates.host_per_day * counts["host"], rates.link_per_day * counts["link"], rates.ocs_per_day * counts["ocs"]]
    )
    if not weights.sum() > 0:
        raise BadInput("bad fault rates: every daily rate is zero, nothing to draw from")
    out: list[TargetId] = []
    for kind in rng.choice(3, size=count, p=weights / weights.sum()):
        if kind == 0:
            out.append(HostId(cubes[rng.integers(len(cubes))], int(rng.integers(MACHINES_PER_CUBE))))
        elif kind == 1:
            out.append(
                LinkId(
                    cubes[rng.integers(len(cubes))],
                    DIMS[rng.integers(3)],
                    int(rng.integers(FACE_LINKS)),
                    POLARITIES[rng.integers(2)],
                )
            )
        else:
            out.append(OcsId(pods[rng.integers(len(pods))], DIMS[rng.integers(3)], int(rng.integers(OCS_PER_DIM))))
    return out
