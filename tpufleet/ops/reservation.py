"""Use case of `import reservation`: a Compute Engine reservation's sub-blocks against the state, as a plan, and
applied with `--apply` (sub-blocks named as cubes, degraded cubes recorded, maintenance drains opened once due
and cleared through the same transitions as `inject-fault` and `clear-fault`; maintenance announced for later is
kept with its sub-block and listed, the cube serving until its window)."""

from __future__ import annotations

from typing import Any

from tpufleet.fleetstate import Fault, FleetState
from tpufleet.ids import CubeId, natural_key
from tpufleet.integrations.reservation import REASON_PREFIX, Drain, ReservationPlan, plan
from tpufleet.integrations.reservation_document import ReservationInput
from tpufleet.ops import faults as fault_ops
from tpufleet.ops.outcome import Outcome


def import_reservation(
    state: FleetState, given: ReservationInput, pod: str | None, source: str, now: str, apply: bool = False
) -> Outcome:
    """The diff of the reservation against the state; with `apply`, record the sub-blocks and open and clear
    the maintenance drains."""
    diff = plan(state, given, pod, now)
    data = _record(state, given, diff, source)
    state.reservation_after(diff.blocks, diff.changes)  # a refusal is the plan's as much as the apply's
    requests = [fault_ops.FaultRequest(CubeId(d.cube), True, d.reason) for d in diff.open]
    clear_ids = [f.id for f in diff.clear]
    if not apply or not data["has_changes"]:
        data["slices_hit"] = fault_ops.import_preview(state, clear_ids, requests, now)
        return Outcome(data)
    state.record_reservation(diff.blocks, diff.changes)
    for fault, drain in diff.moved:
        state.set_fault_window(fault.id, drain.window.start, drain.window.end, drain.reason)
    return fault_ops.apply_import(state, data, clear_ids, requests, data["drains_opened"], now, _summary(data, source))


def _cleared_row(fault: Fault, diff: ReservationPlan) -> dict[str, Any]:
    """A drain an import opened that its sub-block's maintenance no longer asks for, with that sub-block."""
    sub_block = next((n for n, r in diff.mapped.items() if str(fault.target) == f"cube:{r.cube}"), None)
    return {"id": fault.id, "target": str(fault.target), "sub_block": sub_block, "reason": fault.reason}


def _record(state: FleetState, given: ReservationInput, diff: ReservationPlan, source: str) -> dict[str, Any]:
    """The documented JSON of the plan (README, "JSON contract")."""
    mapped = diff.mapped

    def cube_row(name: str) -> dict[str, Any]:
        r = mapped[name]
        return {"sub_block": name, "cube": r.cube, "pod": diff.pods[name], "block": r.block}

    def degraded_row(name: str) -> dict[str, Any]:
        r = mapped[name]
        return {**cube_row(name), "healthy_hosts": r.healthy_hosts, "degraded_hosts": r.degraded_hosts}

    def in_cube_order(names: Any) -> list[str]:  # c17 before c121, pod2's before pod10's: not the ids' text order
        return sorted(names, key=lambda n: natural_key(mapped[n].cube))

    data: dict[str, Any] = {
        "source": source,
        "sub_blocks": len(given.sub_blocks),
        "mapped": len(mapped),
        "blocks_named": [{"block": b, "pod": p} for b, p in sorted(diff.blocks.items())],
        "sub_blocks_new": [cube_row(n) for n in in_cube_order(diff.new)],
        "sub_blocks_known": len(mapped) - len(diff.new),
        "sub_blocks_updated": sorted(diff.updated),
        "degraded": [degraded_row(n) for n in in_cube_order(mapped) if mapped[n].degraded],
        "degraded_new": [degraded_row(n) for n in diff.degraded_new],
        "degraded_cleared": [cube_row(n) for n in diff.degraded_cleared],
        "drains_opened": [d.record() for d in diff.open],
        "drains_cleared": [_cleared_row(f, diff) for f in diff.clear],
        "drains_rescheduled": [{"id": f.id, **d.record()} for f, d in diff.moved],
        "maintenance_announced": [
            _announced_row(state, d, diff.pods[d.sub_block], {f.id for f in diff.clear}) for d in diff.announced
        ],
        "unchanged_drains": diff.kept,
        "unplaced": [{"sub_block": n, "reason": why} for n, why in diff.unplaced],
        "applied": False,
        "serial": state.serial,
    }
    data["has_changes"] = bool(diff.blocks or diff.new or diff.updated or diff.open or diff.clear or diff.moved)
    data["warning"] = _empty_list_warning(state, given, source)
    return data


def _announced_row(state: FleetState, drain: Drain, pod: str, cleared: set[str]) -> dict[str, Any]:
    """Maintenance whose window starts later: the cube serves until then; the slices on it now are the ones
    `plan-maintenance` moves first. Out of the pool when a fault holds it that this import leaves open (its own
    drain, for a window moved later, it clears)."""
    w = drain.window
    held = state.open_fault_on(CubeId(drain.cube))
    # drained ahead of the window (a maintenance wave, by hand): out of service now, whatever the window says
    ahead = held is not None and held.planned and not held.reason.startswith(REASON_PREFIX)
    on = state.slices_holding(drain.cube)
    return {
        "sub_block": drain.sub_block,
        "cube": drain.cube,
        "pod": pod,
        "type": w.kind,
        "status": w.status,
        "window_start": w.start,
        "window_end": w.end,
        "out_of_pool": bool(set(state.health().cubes_out.get(drain.cube, ())) - cleared),  # it serves nothing now
        "drained_by": held.id if ahead and held is not None else None,
        "slices": on,
        "jobs": sorted({j for n in on if (j := state.slices[n].job) is not None}, key=natural_key),
    }


def _empty_list_warning(state: FleetState, given: ReservationInput, source: str) -> str | None:
    """An empty list against a reservation the state maps: nothing to import, but what gcloud prints for a
    reservation or block name it does not find either, so a mistyped query must not pass for "no changes"."""
    known = state.reservation.sub_blocks
    if given.sub_blocks or not known:
        return None
    blocks = sorted({r.block for r in known.values() if r.block})
    of = f" of block(s) {', '.join(blocks[:3])}{', ...' if len(blocks) > 3 else ''}" if blocks else ""
    return (
        f"{source}: no sub-blocks in the list, while the state maps {len(known)} sub-block(s){of}: check the "
        "reservation, --block-name and --zone given to gcloud"
    )


# What the journal's summary of an applied import counts, in its order: (the plan's list, what its items are).
_SUMMARY_COUNTS = (
    ("sub_blocks_new", "sub-block(s) named"),
    ("sub_blocks_updated", "updated"),
    ("degraded", "degraded"),
    ("drains_opened", "drain(s) opened"),
    ("drains_cleared", "cleared"),
)


def _summary(data: dict[str, Any], source: str) -> str:
    counts = ", ".join(f"{len(data[key])} {what}" for key, what in _SUMMARY_COUNTS)
    moved = f", {len(data['drains_rescheduled'])} rescheduled" if data["drains_rescheduled"] else ""
    return f"import reservation {source}: {counts}{moved}"
