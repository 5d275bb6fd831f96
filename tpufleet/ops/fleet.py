"""Use case of the fleet itself: a new fleet state."""

from __future__ import annotations

from tpufleet.fleetstate import Change, FleetState
from tpufleet.journalentry import FLEET_REPLACED
from tpufleet.model import inventory_counts
from tpufleet.ops.outcome import Outcome


def init(state: FleetState, replaced: dict[str, int | bool] | None) -> Outcome:
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
    summary += f" (replaced {replaced_words(replaced)})"
    return Outcome(data, Change(summary, {FLEET_REPLACED: True}))


def replaced_words(replaced: dict[str, int | bool]) -> str:
    """'a state of 4 pods, 3 slices', or of a damaged state, which could not be read: what it held is unknown."""
    if replaced.get("damaged"):
        return "a damaged state, which could not be read: what it held is unknown"
    return f"a state of {dropped_words({k: int(v) for k, v in replaced.items()})}"


# The things a fleet's counts count (`inventory_counts`, a replaced state's), each as one of them is called.
_NOUNS = {
    "ici_links": "ICI link",
    "ocs": "OCS",
    "open_faults": "open fault",
    "cross_connects": "cross-connect",
    "route_tables": "route table",
}


def counted(n: int, key: str) -> str:
    """'1 pod', '2 open faults', '48 OCS': a count of the counts' `key`, named as the rest of the output names it.

    >>> counted(1, "pods"), counted(2, "ici_links"), counted(48, "ocs")
    ('1 pod', '2 ICI links', '48 OCS')
    """
    noun = _NOUNS.get(key, key.removesuffix("s").replace("_", " "))
    return f"{n} {noun}" if n == 1 or noun == "OCS" else f"{n} {noun}s"


def count_words(counts: dict[str, int]) -> str:
    """'1 pod, 64 cubes, ..., 48 OCS' from a fleet's counts (`inventory_counts`)."""
    return ", ".join(counted(n, k) for k, n in counts.items())


def dropped_words(counts: dict[str, int]) -> str:
    """'4 pods, 3 slices, 2 open faults' from the counts of a replaced state (zeros left out, pods always said)."""
    return ", ".join(counted(n, k) for k, n in counts.items() if n or k == "pods")
