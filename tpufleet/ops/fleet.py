"""Use case of the fleet itself: a new fleet state."""

from __future__ import annotations

from tpufleet.fleetstate import Change, FleetState
from tpufleet.model import inventory_counts
from tpufleet.ops.outcome import Outcome


def init(state: FleetState, pods: int, cubes_per_pod: int, replaced: bool) -> Outcome:
    """Describe the fleet a new state starts with (the caller's `Store.creation` made it)."""
    data = {"serial": state.next_serial, "inventory": inventory_counts(state.fleet)}
    summary = f"init: {pods} pod(s) x {cubes_per_pod} cubes" + (" (replaced)" if replaced else "")
    return Outcome(data, Change(summary))
