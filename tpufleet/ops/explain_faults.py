"""Words `explain` gives about faults, shared by a slice's and a component's explanation: a fault's row, its
`clear-fault` step (or the import that closes a reservation's drain), and a maintenance drain's window."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from tpufleet.faults import machines_hit
from tpufleet.fleetstate import Fault, FleetState, Slice
from tpufleet.ids import LinkId, OcsId
from tpufleet.integrations.k8s_plan import CLOSING_IMPORT as K8S_CLOSING_IMPORT
from tpufleet.integrations.k8s_plan import REASON_PREFIX as K8S_PREFIX
from tpufleet.integrations.reservation import REASON_PREFIX as RESERVATION_PREFIX
from tpufleet.integrations.reservation import clear_step
from tpufleet.views import reservation_maintenance

Row = dict[str, Any]


def fault_meant(state: FleetState, what: str) -> Fault | None:
    """The fault `what` names: its id as `faults` lists it (`f3`), or typed in capitals or with leading zeros (`F3`,
    `f03`), as `clear-fault` takes them."""
    hit = state.fault(what)
    if hit is None and re.fullmatch(r"[fF]0*[1-9][0-9]{0,17}", what):
        hit = state.fault("f" + what[1:].lstrip("0"))
    return hit


def clear_step_of(f: Fault) -> str:
    return clear_step(f.id, f.reason)


def reservation_whys(faults: list[Fault]) -> list[str]:
    """Why a fault an import opened is closed by that import again, not `clear-fault`."""
    return [
        f"{f.id} is the reservation's drain for maintenance ({f.reason.removeprefix(RESERVATION_PREFIX)}): "
        "`tpufleet import reservation SUB-BLOCKS.json --apply` closes it once the maintenance is no longer announced"
        if f.reason.startswith(RESERVATION_PREFIX)
        else f"{f.id} was opened by `tpufleet import k8s` ({f.reason.removeprefix(K8S_PREFIX)}): "
        f"`{K8S_CLOSING_IMPORT}` closes it once the node list no longer reports it (cleared by hand before, that "
        "import opens it again)"
        for f in faults
        if f.reason.startswith((RESERVATION_PREFIX, K8S_PREFIX))
    ]


def fault_row(f: Fault) -> Row:
    return {"id": f.id, "target": str(f.target), "planned": f.planned, "since": f.opened, "reason": f.reason}


def announced_on(state: FleetState, cubes: Collection[str]) -> list[Row]:
    """The maintenance the reservation announced for a later window on these cubes (no drain open yet)."""
    return [m for m in reservation_maintenance(state) if m["cube"] in cubes and not m["drained"]]


def window_started(m: Row, now: str) -> bool:
    """Whether announced maintenance's window has started at `now`: its drain waits for the next import."""
    return m["window_start"] is not None and m["window_start"] <= now


def held_whys(state: FleetState, faults: list[Fault], now: str) -> list[str]:
    """Why the `clear-fault` step of each maintenance plan's drain among `faults` is held back, until when (the
    cube's own end where the state knows it, as `apply-maintenance` clears it)."""
    from tpufleet.maintenance import plan_drain_held

    own = state.announced_end
    return [why for f in faults if (why := plan_drain_held(f.id, f.reason, now, own(f.target))) is not None]


def plan_window_ahead_of(state: FleetState, f: Fault, now: str) -> str | None:
    from tpufleet.maintenance import plan_window_ahead

    return plan_window_ahead(f.reason, now, state.announced_end(f.target))


def faults_under(state: FleetState, sl: Slice) -> list[Fault]:
    """Open faults on what the slice uses: its cubes (for a sub-cube slice, its own machines) and, when it is
    wired through the OCS (any whole-cube slice), the optical links of its cubes and the OCS of its pod."""
    cubes, held = set(sl.cubes), set(sl.held_machines)
    out = []
    for f in state.open_faults():
        t = f.target
        if isinstance(t, (OcsId, LinkId)):  # a sub-cube slice is a mesh inside its cube: no optical link of it
            if (t.pod == sl.pod if isinstance(t, OcsId) else t.cube in cubes) and not sl.machines:
                out.append(f)
        elif t.cube in cubes and (not sl.machines or (hit := machines_hit(t)) is None or bool(hit & held)):
            out.append(f)
    return out


def in_place_whys(sl: Slice, fault: Fault | None) -> list[str]:
    """Where an OCS of its own pod evicted a slice that opted out of rerouting: rerouting would let it run again
    on its own cubes now (`moves.propose_move`), its floor permitting."""
    if fault is None or not fault.is_open or not isinstance(fault.target, OcsId) or fault.target.pod != sl.pod:
        return []
    if sl.fault_tolerant_routing or sl.shape.is_subcube:
        return []
    owner = sl.job or sl.name
    return [
        f"with fault-tolerant routing it may run again on its own cubes around {fault.target} now: "
        f"`tpufleet policy {owner} --fault-tolerant-routing`, then `tpufleet explain {sl.name}` says whether its floor "
        f"of {sl.min_throughput:g} is kept there"
    ]


def move_where(state: FleetState, sl: Slice, fault: Fault | None, proposal: Row) -> str:
    """Where `reschedule` would move an evicted slice (`proposal`, as `moves.propose_move` makes it), and why there:
    the cubes reserved for it, or its own cubes again (around the OCS of its pod that evicted it, or back in place
    once the fault that evicted it is cleared)."""
    if proposal["cubes"] == list(sl.cubes) and proposal["pod"] == sl.pod:
        if fault is not None and fault.is_open and isinstance(fault.target, OcsId):
            return f"its own cubes ({', '.join(sl.cubes)}), rerouted around {fault.target}"  # moves._in_place
        if fault is None or not fault.is_open:  # moves._back_home
            cleared = f" now that {fault.id} is cleared" if fault is not None else ""
            unreserved = " (nothing was reserved for it)" if sl.proposal is None else ""
            return f"its own cubes ({', '.join(sl.cubes)}) in {sl.pod}, back in place{cleared}{unreserved}"
    where = f"cubes {', '.join(proposal['cubes'])} in {proposal['pod']}"
    if sl.proposal is None:  # nowhere was free when the fault struck: nothing was reserved
        return f"{where} (free now; nothing was reserved for it)"
    if list(sl.proposal.cubes) == proposal["cubes"]:
        return f"{where} (reserved for it)"
    late = [c for c in sl.proposal.cubes if c in state.health().maintenance and c not in sl.cubes]
    if late:
        return (
            f"{where} (the reserved {', '.join(late)}: maintenance announced since, taken only when no other cube fits)"
        )
    return f"{where} (the reserved cubes are no longer usable)"
