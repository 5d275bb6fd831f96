"""Use case of `import slices`: GKE's Slice objects against tpufleet's slices, as a plan (the drift, named), and
applied with `--apply`: each Slice tpufleet does not know whose cubes it holds free becomes a slice of its shape
on those cubes (allocated, through the same transition as `allocate --cubes`). Nothing else is changed: a slice
with no Slice is exported (`export slices`), and a shape, cube or state disagreement is for the operator to settle
(tpufleet's slice states follow its own faults)."""

from __future__ import annotations

from typing import Any

from tpufleet.fleetstate import Change, FleetState
from tpufleet.integrations.gke_slice_list import SliceListInput
from tpufleet.integrations.gke_slices import SlicePlan, plan
from tpufleet.ops import slices as slice_ops
from tpufleet.ops.outcome import Outcome


def import_slices(state: FleetState, given: SliceListInput, source: str, now: str, apply: bool = False) -> Outcome:
    """The drift of the Slice list against the state; with `apply`, record the Slices tpufleet can hold."""
    diff = plan(state, given, now)
    data = record(state, given, diff, source)
    if not apply or not data["has_changes"]:
        return Outcome(data)
    for new in diff.new:
        slice_ops.allocate(state, new.name, new.shape, now, pod=new.pod, cubes=new.cubes, running=True)
    data["applied"], data["serial"] = True, state.next_serial
    summary = f"import slices {source}: {len(diff.new)} slice(s) recorded from Slices"
    return Outcome(data, Change(summary, {"slices": [n.name for n in diff.new]}))


def record(state: FleetState, given: SliceListInput, diff: SlicePlan, source: str) -> dict[str, Any]:
    """The documented JSON of the plan (README, "JSON contract")."""
    data: dict[str, Any] = {
        "source": source,
        "slices": len(given.slices),
        "matched": len(diff.matched),
        "in_sync": diff.in_sync,
        "slices_new": [n.record() for n in diff.new],
        "drift": [d.record() for d in diff.drift],
        "drift_counts": diff.counts(),
        "ignored": [{"slice": n, "state": st, "reason": why} for n, st, why in diff.ignored],
        "activating": [{"slice": n, "tpufleet_slice": sl, "since": t} for n, sl, t in diff.activating],
        "has_changes": bool(diff.new),
        "applied": False,
        "serial": state.serial,
    }
    return data
