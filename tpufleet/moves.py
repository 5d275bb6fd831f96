"""Where an evicted slice goes (pure): its proposed replacement, reserved against other allocations until
`reschedule` takes it. A failed cube (or one with a port down) is swapped for a free one of the pod (the whole
slice goes to another pod of its generation when its own has none); an OCS fault
moves the slice to another pod of its generation; a slice without fault-tolerant routing goes where every OCS is
up when its pod cannot wire it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from tpufleet import allocation, xconnect
from tpufleet.allocation import ALL_MACHINES, Allocation
from tpufleet.errors import BadInput, Refused
from tpufleet.fleetstate import FleetState, Slice
from tpufleet.health import Health
from tpufleet.ids import LinkId, OcsId, TargetId

Json = dict[str, Any]
NOTHING_AVOIDED: frozenset[str] = frozenset()


def _health(state: FleetState, avoid: frozenset[str]) -> Health:
    """The state's health, the cubes `avoid` names counted as under announced maintenance: a move takes them only
    when no other fits. A copy: the state's own health is shared by every reader of the state."""
    health = state.health()
    return replace(health, maintenance=health.maintenance | avoid) if avoid else health


def _pods_to_try(state: FleetState, sl: Slice, avoid_pod: str, health: Health) -> list[str]:
    """Every pod of the slice's generation but `avoid_pod`, in the order `allocation.wirable_first` gives the
    fleet's; for a slice of a job spread across pods, the pods holding fewest of the job's other slices first (a
    sibling already moving counts where its replacement is reserved), so that the move keeps the job as spread as
    room allows."""
    pods = _generation_pods(state, sl, avoid_pod)
    job = state.jobs.get(sl.job) if sl.job is not None else None
    held = None
    if job is not None and job.spread:
        siblings = [state.slices[n] for n in job.slices if n != sl.name and n in state.slices]
        held = Counter(s.proposal.pod if s.proposal is not None else s.pod for s in siblings)  # where each is, or goes
    return allocation.wirable_first(pods, health, _wirable(sl), sl.shape, held)


def _generation_pods(state: FleetState, sl: Slice, avoid_pod: str) -> list[str]:
    """The pods of the slice's generation but `avoid_pod`: a workload runs on the chips it was built for."""
    generation = state.fleet.pod_by_name[sl.pod].generation_name
    return [p.name for p in state.fleet.pods if p.name != avoid_pod and p.generation_name == generation]


def _other_pod(
    state: FleetState, sl: Slice, avoid_pod: str, used: allocation.MachineUsage, avoid: frozenset[str] = NOTHING_AVOIDED
) -> Allocation:
    health = _health(state, avoid)
    last: Refused | None = None
    for pod in _pods_to_try(state, sl, avoid_pod, health):
        try:
            return allocation.allocate(
                sl.shape, state.fleet, used, health, pod=pod, wirable=_wirable(sl), degraded_last=True
            )
        except Refused as exc:
            last = exc
        except BadInput as exc:  # a pod of another generation that cannot hold the shape: not a place to move to
            last = Refused(f"{pod}: {exc}")
    generation = state.fleet.pod_by_name[sl.pod].generation_name or "tpu-v4 (built-in)"
    raise last or Refused(f"no other {generation} pod than {avoid_pod} to move to (a move keeps its generation)")


def _wirable(sl: Slice) -> allocation.Wirable:
    """What a slice's new cubes must allow: ports that work, and without fault-tolerant routing every OCS up."""
    return "ports" if sl.fault_tolerant_routing else "ports+ocs"


def _swap_lost_cubes(
    state: FleetState, sl: Slice, avoid_cube: str | None, used: allocation.MachineUsage, avoid: frozenset[str]
) -> Allocation:
    """Keep the slice's healthy cubes and their grid positions; put free healthy cubes of the pod in the rest
    (DEGRADED ones after the others, those under announced maintenance, or in `avoid`, last)."""
    health = _health(state, avoid)
    lost = [c for c in sl.cubes if not health.cube_wirable(c) or c == avoid_cube]  # out, or a port down
    free = [  # cubes whose every optical port works: plan-xconnect refuses a failed or drained one
        c
        for c in state.fleet.pod_by_name[sl.pod].cubes
        if c not in used and c not in sl.cubes and health.cube_wirable(c)
    ]
    free.sort(key=health.last_resort)  # stable: as allocate, DEGRADED cubes after the others, maintenance last
    held = health.held.get(sl.pod, 0)  # node pools tpufleet has not placed: their room stays free
    if len(free) - held < len(lost):
        note = f" ({held} of them held by node pools tpufleet has not placed)" if held else ""
        raise Refused(f"need {len(lost)} healthy free cube(s) in {sl.pod}, {len(free)} available{note}")
    swap = dict(zip(lost, free, strict=False))  # the first free cubes, one for each lost one
    cubes = tuple(swap.get(c, c) for c in sl.cubes)
    return Allocation(sl.pod, cubes, {swap.get(c, c): v for c, v in sl.coords.items()})


def replacement_for(
    state: FleetState, sl: Slice, cause: TargetId | None = None, avoid: frozenset[str] = NOTHING_AVOIDED
) -> Allocation:
    """Where an evicted slice would go. An open OCS fault as the cause means another pod (every cube of this
    one uses that OCS); an optical link means replacing the cube that owns the failed port; a pod with no room
    left for the swap (or room only on cubes in `avoid` or under announced maintenance, where another pod has
    clean room), the whole slice in another pod of its generation. Refused if none. Cubes held by other slices,
    or reserved for the moves of other evicted slices, are not offered; cubes in `avoid` are taken only when no
    other fits, as cubes under announced maintenance are."""
    used = state.machine_usage(excluding=sl.name)
    if isinstance(cause, OcsId):
        return _other_pod(state, sl, cause.pod, used, avoid)
    elsewhere = bool(_generation_pods(state, sl, sl.pod))  # (their order does not matter here)
    try:
        own = _in_own_pod(state, sl, cause, used, avoid)
    except Refused as own_pod_full:
        if not elsewhere:
            raise
        try:  # no room left in its own pod: the whole slice to another pod of its generation, as for an OCS
            return _other_pod(state, sl, sl.pod, used, avoid)
        except Refused as exc:
            raise Refused(f"{own_pod_full}, nor in another pod ({exc})") from None
    if not elsewhere or not _lands_on_avoided(state, sl, own, avoid):
        return own
    try:  # a cube a later wave drains would move it twice: another pod's clean room moves it once
        other = _other_pod(state, sl, sl.pod, used, avoid)
    except Refused:
        return own
    return own if _lands_on_avoided(state, sl, other, avoid) else other


def _lands_on_avoided(state: FleetState, sl: Slice, alloc: Allocation, avoid: frozenset[str]) -> bool:
    """Whether `alloc` takes a cube in `avoid` or under announced maintenance that the slice does not hold."""
    shunned = _health(state, avoid).maintenance
    return any(c in shunned and c not in sl.cubes for c in alloc.cubes)


def _in_own_pod(
    state: FleetState, sl: Slice, cause: TargetId | None, used: allocation.MachineUsage, avoid: frozenset[str]
) -> Allocation:
    """The slice kept in its pod: a sub-cube slice on another cube (or other machines), a larger one with its
    lost cubes (failed, a port down, or the cube owning the failed optical link) swapped for free ones."""
    avoid_cube = cause.cube if isinstance(cause, LinkId) else None
    if sl.shape.is_subcube:
        if avoid_cube or not state.health().cube_ok(sl.cubes[0]):
            used = {**used, sl.cubes[0]: set(ALL_MACHINES)}
        return allocation.allocate(sl.shape, state.fleet, used, _health(state, avoid), pod=sl.pod)
    return _swap_lost_cubes(state, sl, avoid_cube, used, avoid)


@dataclass
class Proposal:
    """Where an evicted slice would go and the cross-connect changes that takes; pending (with why) if nowhere."""

    alloc: Allocation | None
    plan: xconnect.Plan | None = None
    why: str | None = None

    @property
    def ready(self) -> bool:
        return self.alloc is not None and self.plan is not None and not self.plan.blocked

    def to_dict(self) -> Json:
        if self.alloc is None or self.plan is None:
            return {"status": "pending", "why": self.why}
        out: Json = {
            "status": "proposed" if self.ready else "pending",
            "pod": self.alloc.pod,
            "cubes": list(self.alloc.cubes),
            "coords": {c: list(v) for c, v in self.alloc.coords.items()},
            "xconnect_changes": self.plan.summary,
        }
        if self.alloc.machines:
            out["machines"], out["origin"] = list(self.alloc.machines), list(self.alloc.origin or (0, 0, 0))
        if self.plan.blocked:
            out["why"] = "; ".join(self.plan.blocked[:5])
        if self.plan.deferred:
            out["deferred"] = [str(o) for o in self.plan.deferred]
        return out


def propose_replacement(
    state: FleetState, sl: Slice, cause: TargetId | None = None, avoid: frozenset[str] = NOTHING_AVOIDED
) -> Proposal:
    """The slice's reserved proposal while it is still good (none of its new cubes in `avoid`), else a new one."""
    if sl.proposal is not None and _still_good(state, sl, sl.proposal, cause, avoid):
        kept = _planned(state, sl, sl.proposal)
        if kept.ready:
            return kept
    try:
        alloc = replacement_for(state, sl, cause, avoid)
    except (Refused, BadInput) as exc:  # no place to move to is an answer: the fault is recorded regardless
        return Proposal(None, why=str(exc))
    proposal = _planned(state, sl, alloc)
    if proposal.ready or sl.fault_tolerant_routing or all(o.pod != alloc.pod for o in state.health().ocs_down):
        return proposal
    try:  # a slice without fault-tolerant routing cannot be wired in a pod with an OCS down: another pod can
        used = state.machine_usage(excluding=sl.name)
        elsewhere = _planned(state, sl, _other_pod(state, sl, alloc.pod, used, avoid))
    except Refused:
        return proposal
    return elsewhere if elsewhere.ready else proposal


def propose_move(state: FleetState, sl: Slice, avoid: frozenset[str] = NOTHING_AVOIDED) -> Proposal:
    """An evicted slice's move as it stands: away from the fault that evicted it while that fault is open
    (`reschedule`, `explain`, and a later fault that lands on the reserved move); cubes in `avoid` (`reschedule
    --avoid`: a maintenance plan's later drains) only when no other fits."""
    evicting = state.fault(sl.evicted_by)
    cause = evicting.target if evicting is not None and evicting.is_open else None
    back = _back_home(state, sl, avoid) if cause is None else None
    if back is not None:
        return back
    proposal = propose_replacement(state, sl, cause, avoid)
    if proposal.ready or not isinstance(cause, OcsId):
        return proposal
    in_place = _in_place(state, sl, cause)
    return in_place if in_place is not None and in_place.ready else proposal


def _back_home(state: FleetState, sl: Slice, avoid: frozenset[str]) -> Proposal | None:
    """The slice back on its own cubes once the fault that evicted it is cleared (a host alert that fired and
    resolved, say), rather than on the replacement reserved while it was open: its cubes are still its own and its
    cross-connects still in place, so the move changes none. Only while each of its cubes is healthy, free of other
    slices, clear of announced maintenance and of `avoid`, and every pair it needs can be programmed now."""
    if sl.machines or sl.shape.is_subcube:
        return None
    health, used = _health(state, avoid), state.machine_usage(excluding=sl.name)
    if not all(health.cube_wirable(c) and c not in used and c not in health.maintenance for c in sl.cubes):
        return None
    home = _planned(state, sl, Allocation(sl.pod, sl.cubes, dict(sl.coords)))
    return home if home.ready and home.plan is not None and not home.plan.deferred else None


def _in_place(state: FleetState, sl: Slice, cause: OcsId) -> Proposal | None:
    """The slice back on its own cubes, wired around the OCS of its pod that evicted it, when no other pod takes
    it: what turning fault-tolerant routing on (or lowering its floor) after the eviction lets it do.
    `reschedule` judges the reroute there against its floor, as for any move that lands among faults."""
    if cause.pod != sl.pod or not sl.fault_tolerant_routing or sl.shape.is_subcube:
        return None
    health, used = state.health(), state.machine_usage(excluding=sl.name)
    if not all(health.cube_wirable(c) and c not in used for c in sl.cubes):
        return None
    return _planned(state, sl, Allocation(sl.pod, sl.cubes, dict(sl.coords)))


def _planned(state: FleetState, sl: Slice, alloc: Allocation) -> Proposal:
    plan = xconnect.plan(sl.shape, state.fleet, alloc.coords, state.ocs, state.health(), sl.fault_tolerant_routing)
    return Proposal(alloc, plan)


def _still_good(state: FleetState, sl: Slice, alloc: Allocation, cause: TargetId | None, avoid: frozenset[str]) -> bool:
    """A reserved proposal can still be taken: healthy, free, clear of the fault that caused the move, and of
    cubes under announced maintenance or in `avoid` that it does not hold already."""
    health = _health(state, avoid)
    used = state.machine_usage(excluding=sl.name)
    if isinstance(cause, OcsId) and alloc.pod == cause.pod:
        return False
    if isinstance(cause, LinkId) and cause.cube in alloc.cubes:
        return False
    wanted = set(alloc.machines or ALL_MACHINES)
    if any(c in health.maintenance and c not in sl.cubes for c in alloc.cubes):
        return False  # maintenance announced since it was reserved (or avoided): proposed again, such a cube last
    return all(health.cube_ok(c) and not (used.get(c, set()) & wanted) for c in alloc.cubes)
