"""Cross-connects a slice's wiring or move would defer (an OCS down under it) in `explain`'s steps: the slice runs
routed around the OCS, and once it is repaired and cleared `plan-xconnect --apply` programs them and `routes` runs
again."""

from __future__ import annotations

from collections.abc import Collection

from tpufleet.errors import Refused
from tpufleet.fleetstate import Fault, FleetState, Slice, SliceState
from tpufleet.ids import OcsId
from tpufleet.maintenance import move_commands
from tpufleet.ops.explain_faults import clear_step_of


def deferred_rewiring(state: FleetState, name: str, steps: list[str], now: str, why: list[str] | None) -> list[str]:
    """`steps` with, for each slice they wire or move (`plan-xconnect JOB|S --apply`, `reschedule S`) whose
    cross-connects on a down OCS would be deferred, what `explain SLICE` gives it: its `routes` around the OCS right
    after that step (a maintenance wave's move, `movesteps.move_steps`, has its own), then the clears, then its own
    wiring again (`then_routes` adds its `routes` again)."""
    out, later, routed = list(steps), [], []
    for sl in state.job_slices(name):
        step, deferred = _deferring_step(state, name, sl, out, now)
        before = out[: out.index(step)] if step is not None else []  # an OCS cleared before it is up by then
        deferred = [o for o in deferred if not any(clear_step_of(f) in before for f in _down(state, [o]))]
        if step is None or not deferred:
            continue
        own = deferred_steps(state, sl.name, deferred)
        at = out.index(step) + 1
        if out[at : at + 2] != move_commands(sl.name)[1:]:  # a wave's move is wired and routed by its own steps
            while at < len(out) and out[at] in routed:  # after the other slices' routes this step is followed by
                at += 1
            out.insert(at, own[0])  # its `routes` around the OCS
            routed.append(own[0])
        later += own[1:]
        if why is not None:
            why.append(f"slice {sl.name}: {deferred_why(deferred)}")
    clears = [s for s in later if s.startswith("tpufleet clear-fault ")]
    return [*out, *dict.fromkeys(clears), *(s for s in later if s not in clears)]


def _deferring_step(
    state: FleetState, job: str, sl: Slice, steps: list[str], now: str
) -> tuple[str | None, list[OcsId]]:
    """The step of `steps` that moves or wires `sl`, and the down OCS its cross-connects would be deferred on."""
    from tpufleet.moves import propose_move
    from tpufleet.ops.xconnect import make_plan

    move = f"tpufleet reschedule {sl.name}"
    if sl.state is SliceState.EVICTED and move in steps:
        proposal = propose_move(state, sl)
        return move, list(proposal.plan.deferred) if proposal.ready and proposal.plan is not None else []
    wire = next((w for w in (f"tpufleet plan-xconnect {s} --apply" for s in (sl.name, job)) if w in steps), None)
    if sl.state is not SliceState.ALLOCATED or sl.machines or wire is None:
        return None, []
    try:
        _, plan = make_plan(state, sl.name, now)
    except Refused:
        return None, []
    return wire, list(plan.deferred)


def deferred_steps(state: FleetState, name: str, deferred: Collection[OcsId]) -> list[str]:
    """After a wiring or move whose cross-connects on the down OCS `deferred` wait: the slice's `routes` around
    them, their clears, its wiring again (`then_routes` routes it again after)."""
    down = dict.fromkeys(map(clear_step_of, _down(state, deferred)))
    return [f"tpufleet routes {name}", *down, f"tpufleet plan-xconnect {name} --apply"] if deferred else []


def deferred_why(deferred: Collection[OcsId]) -> str:
    return (
        f"cross-connects on {', '.join(map(str, deferred))} would be deferred (OCS down): it runs rerouted "
        "around them, and once they are repaired and cleared `plan-xconnect --apply` programs them"
    )


def _down(state: FleetState, ocs: Collection[OcsId]) -> list[Fault]:
    return [f for f in state.open_faults() if f.target in ocs]
