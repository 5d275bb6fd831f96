"""Use case of the fleet itself: a new fleet state."""

from __future__ import annotations

from tpufleet.fleetstate import Change, FleetState
from tpufleet.journalentry import FLEET_REPLACED
from tpufleet.model import inventory_counts
from tpufleet.ops.outcome import Outcome


def init(state: FleetState, replaced: dict[str, int] | None) -> Outcome:
    """Describe the fleet a new state starts with (the caller's `Store.creation` made it), and what the state it
    replaces held (`replaced`: counts, None when there was none); a fleet of a generation says which."""
    pods = state.fleet.pods
    data: dict[str, object] = {"serial": state.next_serial, "inventory": inventory_counts(state.fleet)}
    summary = f"init: {len(pods)} pod(s) x {len(pods[0].cubes)} cubes"
    names = list(dict.fromkeys(p.generation_name for p in pods if p.generation_name))
    if names:  # only when set: an init of the built-in v4 model says what it always said
        data["generation"] = names[0] if len(names) == 1 else names
        summary += f" of {', '.join(names)}"
    if replaced is None:
        return Outcome(data, Change(summary))
    data["replaced"] = replaced
    summary += f" (replaced a state of {dropped_words(replaced)})"
    return Outcome(data, Change(summary, {FLEET_REPLACED: True}))


def dropped_words(counts: dict[str, int]) -> str:
    """'4 pods, 3 slices, 2 open faults' from the counts of a replaced state (zeros left out, pods always said)."""
    return ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n or k == "pods")
