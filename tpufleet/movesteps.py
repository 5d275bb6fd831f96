"""The steps that bring evicted slices back, each command working when run in order (pure): the faults to clear
first, then the slices `reschedule` moves (`explain`, `inject-fault`'s job `next`), and where a move lands among
network faults, judged as the fault path judges a wired slice (`reschedule`).

Worked out on copies of the state with faults cleared and earlier moves in place; the landing of a slice over
STEP_JUDGED_CHIPS is not routed (`reschedule` alone spends the seconds that takes), only bounded: a move no routing
there keeps above the slice's floor is known refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from tpufleet import faults, xconnect
from tpufleet.constants import HARDWARE_VCS
from tpufleet.errors import Refused
from tpufleet.fleetstate import Fault, FleetState, Slice, SliceState
from tpufleet.ids import LinkId, OcsId
from tpufleet.moves import Proposal, propose_move

Json = dict[str, Any]

# chips: the largest slice whose landing the step search (`steps_to_move`: explain, inject-fault's job `next`)
# routes to judge its floor (8x8x16 with an OCS down: a tenth of a second); a larger one takes seconds (a TPU v4
# pod, 16x16x16: about 6 s), which `reschedule` alone spends: the steps then take its move as it stands
STEP_JUDGED_CHIPS = 1024


def landing_faults(state: FleetState, pod: str, cubes: tuple[str, ...]) -> tuple[Fault, ...]:
    """The open network faults a whole-cube slice on these cubes routes around: the OCS of its pod, optical links
    of its cubes."""
    return tuple(
        f
        for f in state.open_faults()
        if (isinstance(f.target, OcsId) and f.target.pod == pod)
        or (isinstance(f.target, LinkId) and f.target.cube in cubes)
    )


def landing(state: FleetState, sl: Slice, proposal: Proposal) -> tuple[Json | None, str | None]:
    """An evicted slice moved onto its (ready) proposal and wired, as the fault path would judge it: the reroute
    figures where it lands among network faults (None: it lands on none, or it does not reroute: its plan then
    refuses a failed OCS), and why it could not run there (None: it can, degraded with those figures)."""
    landed = _landed(state, sl, proposal)
    if landed is None:
        return None, None
    wired, moved = landed
    figures = faults.reroute_figures(wired, moved)
    return figures, faults.reroute_verdict(figures, moved, HARDWARE_VCS)


def _landed(state: FleetState, sl: Slice, proposal: Proposal) -> tuple[FleetState, Slice] | None:
    """The state with the slice moved onto its (ready) proposal and wired there, when it lands among network
    faults and reroutes around them (else None)."""
    alloc, plan = proposal.alloc, proposal.plan
    if alloc is None or plan is None or not sl.fault_tolerant_routing or sl.shape.is_subcube:
        return None
    if not landing_faults(state, alloc.pod, alloc.cubes):
        return None
    moved = replace(sl, pod=alloc.pod, cubes=alloc.cubes, coords=dict(alloc.coords), state=SliceState.CONNECTED)
    return replace(state, ocs=xconnect.apply(state.ocs, plan.changes)), moved


def bounded_landing(state: FleetState, sl: Slice, proposal: Proposal) -> str | None:
    """Why `reschedule` refuses a move, known without routing the landing: no routing of the live links there
    keeps the slice's floor (`optimum.kept_at_most`, a cut of its rings; a tenth of the routing's seconds on a
    4096-chip slice). None: it lands on no fault, or the bound does not settle it (`reschedule` works it out)."""
    from tpufleet import wiring
    from tpufleet.routing.healthy import healthy_loads
    from tpufleet.routing.optimum import kept_at_most

    landed = _landed(state, sl, proposal)
    if landed is None:
        return None
    wired, moved = landed
    graph = wiring.build(moved, wired.fleet, wired.ocs, wired.health())
    healthy = healthy_loads(sl.shape, graph.expected, ("all-to-all",))["all-to-all"]
    bound = kept_at_most(sl.shape, graph.nbr, healthy)
    if bound is None or bound >= sl.min_throughput:
        return None
    return (
        f"rerouted, it would keep at most {bound:.6g} of its all-to-all throughput (the links left across a cut "
        f"of its rings), below its floor of {sl.min_throughput:g}"
    )


@dataclass
class MoveSteps:
    """What brings evicted slices back, each command working when run in order: the faults to clear first, then
    the slices `reschedule` moves. `waits`: why a slice cannot move now; `stuck`: why not even once cleared."""

    clears: list[Fault] = field(default_factory=list)
    moves: list[str] = field(default_factory=list)
    waits: dict[str, str] = field(default_factory=dict)
    stuck: dict[str, str] = field(default_factory=dict)
    needs: dict[str, list[str]] = field(default_factory=dict)  # slice -> the faults (ids) its move waits for
    # slice -> the faults (ids) its move routes around, not judged here (over STEP_JUDGED_CHIPS): `reschedule` does
    unjudged: dict[str, list[str]] = field(default_factory=dict)


def steps_to_move(state: FleetState, slices: list[Slice]) -> MoveSteps:
    """For evicted slices, in order: move each as it stands; else once the fault that evicted it is cleared, or
    those its move would route around; else once every fault on its own cubes (and its pod's OCS) is cleared,
    when it goes back where it was. Worked out on copies of the state with those faults cleared and the slices
    moved before it in place (they take cubes)."""
    out, trial = MoveSteps(), state
    for sl in slices:
        attempt, proposal, why = _attempt(trial, sl, [])
        if why is not None:
            out.waits[sl.name] = why
            for stage in _repair_stages(state, sl, proposal):
                attempt, proposal, why = _attempt(trial, sl, [f for f in stage if f not in out.clears])
                if why is None:
                    stage, attempt, proposal = _fewest(trial, sl, stage, out.clears, (attempt, proposal))
                    out.needs[sl.name] = [f.id for f in stage]
                    out.clears += [f for f in stage if f not in out.clears]
                    break
        if why is not None or proposal.alloc is None:
            out.stuck[sl.name] = why or "no replacement"
            continue
        out.moves.append(sl.name)
        alloc = proposal.alloc
        if not _judged(sl) and (around := landing_faults(attempt, alloc.pod, alloc.cubes)):
            out.unjudged[sl.name] = [f.id for f in around]
        moved = replace(sl, pod=alloc.pod, cubes=alloc.cubes, machines=alloc.machines, proposal=None)
        trial = replace(attempt, slices={**attempt.slices, sl.name: moved})
    return out


def _attempt(state: FleetState, sl: Slice, clear: list[Fault]) -> tuple[FleetState, Proposal, str | None]:
    attempt = _cleared(state, clear)
    proposal = propose_move(attempt, attempt.slices[sl.name])
    return attempt, proposal, why_unmovable(attempt, attempt.slices[sl.name], proposal)


# faults of a stage whose need is tried one by one (each try a move proposal, routed if the slice reroutes);
# a larger stage, rare, is named whole
MAX_PRUNED_STAGE = 8


def _fewest(
    state: FleetState, sl: Slice, stage: list[Fault], cleared: list[Fault], moved: tuple[FleetState, Proposal]
) -> tuple[list[Fault], FleetState, Proposal]:
    """The faults of a stage whose clearing the move needs, each dropped that the move does without (an OCS
    down under a slice that opted out of rerouting: clearing it alone lets the reserved move go, and the host
    fault that evicted the slice need not be repaired first), with the trial state and proposal of that set."""
    if len(stage) < 2 or len(stage) > MAX_PRUNED_STAGE:
        return stage, *moved
    kept = list(stage)
    for f in stage:
        fewer = [g for g in kept if g is not f]
        attempt, proposal, why = _attempt(state, sl, [g for g in fewer if g not in cleared])
        if why is None and proposal.alloc is not None:
            kept, moved = fewer, (attempt, proposal)
    return kept, *moved


def _repair_stages(state: FleetState, sl: Slice, proposal: Proposal) -> list[list[Fault]]:
    """The sets of faults to try clearing, fewest first: the one that evicted it, those its move would route
    around, every one on its own cubes and its pod's OCS (then it goes back where it was)."""
    evicting = state.fault(sl.evicted_by)
    first = [evicting] if evicting is not None and evicting.is_open else []
    alloc = proposal.alloc if proposal.ready else None
    around = list(landing_faults(state, alloc.pod, alloc.cubes)) if alloc is not None else []
    own = [
        f
        for f in state.open_faults()
        if (f.target.pod == sl.pod and not sl.machines if isinstance(f.target, OcsId) else f.target.cube in sl.cubes)
    ]
    every = [*first, *(f for f in own if f not in first)]
    stages = [first, around, every]
    return [stage for i, stage in enumerate(stages) if stage and stage not in stages[:i]]


def _cleared(state: FleetState, gone: list[Fault]) -> FleetState:
    """A copy of the state with these faults cleared (the state itself is not changed)."""
    if not gone:
        return state
    ids = {f.id for f in gone}
    return replace(state, faults=[replace(f, cleared="(cleared)") if f.id in ids else f for f in state.faults])


def why_unmovable(state: FleetState, sl: Slice, proposal: Proposal) -> str | None:
    """Why `reschedule` would refuse the slice's move (None: it moves)."""
    if not proposal.ready:
        return str(proposal.to_dict().get("why") or "no replacement")
    try:
        return landing(state, sl, proposal)[1] if _judged(sl) else bounded_landing(state, sl, proposal)
    except Exception:  # noqa: BLE001 - the move's analysis is reschedule's: a bug there is reported by it (exit 70)
        return None


def _judged(sl: Slice) -> bool:
    """Whether the step search routes the slice's landing (else `reschedule` alone judges it: STEP_JUDGED_CHIPS)."""
    return sl.shape.chips <= STEP_JUDGED_CHIPS or not sl.fault_tolerant_routing


def unjudged_note(sl: Slice, faults: list[str]) -> str:
    """What `explain` says of a move `steps_to_move` did not judge: `reschedule` does."""
    bounded = "; no cut of its rings rules it out" if sl.shape.wraps and not sl.shape.twisted else ""
    return (
        f"there it routes around {', '.join(faults)}, not checked here against its floor of {sl.min_throughput:g} "
        f"(routing {sl.shape.chips} chips takes seconds{bounded}): `reschedule` works it out, and refuses, "
        "changing nothing, if it would keep less"
    )


def stopped_by_a_wave(state: FleetState, sl: Slice) -> bool:
    """Whether an open drain of a maintenance plan's wave evicted the slice (`maintenance.a_plans_drain`)."""
    from tpufleet.maintenance import a_plans_drain

    fault = state.fault(sl.evicted_by)
    return fault is not None and fault.is_open and a_plans_drain(fault.reason)


def move_steps(state: FleetState, sl: Slice) -> list[str]:
    """The commands that move an evicted slice that can move now: `reschedule`; where a maintenance plan's wave
    stopped it, the wave's own (`maintenance.move_commands`: `reschedule`, `plan-xconnect --apply`, `routes`), in
    `explain SLICE`, `explain JOB` and `inject-fault`'s `jobs[].next` alike."""
    from tpufleet.maintenance import move_commands

    return move_commands(sl.name) if stopped_by_a_wave(state, sl) else [f"tpufleet reschedule {sl.name}"]


def evicted_refusal(name: str, what: str = "", also: str = "") -> Refused:
    """The refusal of a command that needs the slice placed (`routes`, `plan-xconnect`, `collective`): `reschedule`
    brings it back, though it may refuse until a repair (no place to move to yet), which `explain` says."""
    return Refused(
        f"slice {name!r} is evicted{what}; run `tpufleet reschedule {name}` first (`tpufleet explain {name}` says "
        f"what it waits for when it cannot move yet){also}"
    )


def move_to(state: FleetState, sl: Slice) -> str:
    """Where `reschedule` moves an evicted slice with a reserved move (`explain JOB`): there, or back onto its own
    cubes once the fault that evicted it is cleared (`propose_move`), as `explain SLICE` says."""
    assert sl.proposal is not None
    fault = state.fault(sl.evicted_by)
    if fault is None or not fault.is_open:
        alloc = propose_move(state, sl).alloc
        if alloc is not None and alloc.pod == sl.pod and tuple(alloc.cubes) == tuple(sl.cubes):
            cleared = f" now that {fault.id} is cleared" if fault is not None else ""
            return f"back onto its own cubes{cleared}"
    return f"to {sl.proposal.pod} {','.join(sl.proposal.cubes)} (reserved)"
