"""The cross-connect plan a slice had when a saved plan was made, worked back from the state and the journal.

Once a plan is applied, the plan the state gives now has nothing left to do, so it cannot show an edit of what the
plan removes (a pair sharing one of the slice's ports) or defers (an OCS that was up). The journal's lines after
the plan's serial record every cross-connect added and removed and every fault opened and cleared (`delta`):
undone from the state as it is now, they give the OCS wiring and the OCS down at the plan's serial, and the plan
made there is the one the saved plan must be. Pure: the caller reads the journal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tpufleet import xconnect
from tpufleet.errors import BadInput
from tpufleet.fleetstate import FleetState
from tpufleet.health import Health
from tpufleet.ids import OcsId, parse_target
from tpufleet.journalentry import JournalEntry
from tpufleet.state.delta import is_delta
from tpufleet.state.planfile import SavedPlan

Pair = tuple[int, int]


def plan_when_made(state: FleetState, saved: SavedPlan, entries: Sequence[JournalEntry]) -> xconnect.Plan | None:
    """The plan of the saved plan's slice at its serial, or None when the journal cannot tell: a serial after it
    without a recorded change (a damaged line, or one written before changes were recorded), or a fault cleared
    since whose record is nowhere to be read."""
    later = sorted((e for e in entries if e.serial > saved.serial), key=lambda e: e.serial, reverse=True)
    if [e.serial for e in later] != list(range(state.serial, saved.serial, -1)):
        return None
    if not all(is_delta(e.delta) for e in later):
        return None
    ocs = {key.key: set(pairs) for key, pairs in state.ocs.items()}
    down = {f.id: f.target for f in state.open_faults() if isinstance(f.target, OcsId)}
    targets = _fault_targets(state, later)
    sl = state.slice(saved.slice)
    tolerant = sl.fault_tolerant_routing
    for entry in later:  # newest first: each line undone from the state after it gives the state before it
        delta: dict[str, Any] = entry.delta
        for key, change in delta["ocs"].items():
            pairs = ocs.setdefault(key, set())
            pairs.difference_update(tuple(p) for p in change["add"])
            pairs.update(tuple(p) for p in change["remove"])
        for fid in delta["faults"]["cleared"]:  # undone before the line's opens: a fault may be both
            if fid not in targets:
                return None
            target = targets[fid]
            if isinstance(target, OcsId):
                down[fid] = target
        for opened in delta["faults"]["opened"]:
            down.pop(opened["id"], None)
        policy = delta["slices"]["changed"].get(saved.slice, {}).get("fault_tolerant_routing")
        if isinstance(policy, list) and isinstance(policy[0], bool):
            tolerant = policy[0]
    wiring = {OcsId.from_key(k): frozenset(v) for k, v in ocs.items() if v and _is_key(k)}
    health = Health()
    for fid, target in down.items():
        health.ocs_down.setdefault(target, []).append(fid)
    return xconnect.plan(sl.shape, state.fleet, sl.coords, wiring, health, tolerant)


def _fault_targets(state: FleetState, later: Iterable[JournalEntry]) -> dict[str, object]:
    """Fault id -> its target, for every fault the state or the lines read name (a fault cleared after the plan's
    serial is in the state's records, or moved to the journal by one of those lines)."""
    out: dict[str, object] = {f.id: f.target for f in state.faults}
    for entry in later:
        records = [*entry.moved_faults, *entry.delta["faults"]["opened"]]
        for record in records:
            fid, text = record.get("id"), record.get("target")
            if isinstance(fid, str) and isinstance(text, str) and fid not in out:
                try:
                    out[fid] = parse_target(text)
                except BadInput:
                    continue
    return out


def _is_key(key: str) -> bool:
    try:
        return isinstance(parse_target(f"ocs:{key}"), OcsId)
    except BadInput:
        return False
