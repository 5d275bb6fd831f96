"""One line of the state's journal, typed: who changed what, when, at which serial, and what it changed.

The state layer writes one per commit (`tpufleet.state.journal`) and reads them back through `JournalEntry.from_doc`,
which is also where a line is judged damaged: a line whose fields have the wrong types is skipped and reported like
one that is not JSON, so no reader meets a number where it expects a time.

>>> e = JournalEntry.from_doc({"serial": 3, "time": "2026-11-25T17:00:00Z", "user": "ops", "summary": "init"})
>>> e.serial, e.summary, e.record()["command"]
(3, 'init', '')
>>> JournalEntry.from_doc({"serial": 3, "time": 17}) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpufleet.constants import MAX_FAULT_ID_CHARS
from tpufleet.errors import BadInput
from tpufleet.ids import parse_target
from tpufleet.text import printable

__all__ = ["FLEET_REPLACED", "MOVED_FAULTS", "JournalEntry", "fault_number", "fault_numbers_used"]

MOVED_FAULTS = "moved_faults"  # records of cleared faults a commit moved out of state.json
FLEET_REPLACED = "fleet_replaced"  # details key of an `init --force`: the faults it moved are another fleet's
_TEXT = ("time", "user", "command", "summary")


@dataclass(frozen=True)
class JournalEntry:
    """A committed change. `delta` is kept as written (`tpufleet.state.delta.is_delta` says whether it has the
    recorded form; lines written before deltas existed have none); `moved_faults` are fault records."""

    serial: int
    time: str = ""
    user: str = ""
    command: str = ""
    summary: str = ""
    pid: int | None = None
    details: dict[str, Any] | None = None
    delta: Any = None
    moved_faults: tuple[dict[str, Any], ...] = ()

    @property
    def new_fleet(self) -> bool:
        """The line of an `init`: what came before was another fleet (lines before the details key was kept say
        so by their summary)."""
        return bool((self.details or {}).get(FLEET_REPLACED)) or self.summary.startswith("init: ")

    @classmethod
    def from_doc(cls, doc: object) -> JournalEntry | None:
        """The entry a decoded line holds, or None when it is damaged (no serial, a field of the wrong type)."""
        if not isinstance(doc, dict):
            return None
        serial, pid, details = doc.get("serial"), doc.get("pid"), doc.get("details")
        moved = doc.get(MOVED_FAULTS, [])
        if type(serial) is not int or serial < 0 or (pid is not None and type(pid) is not int):
            return None
        if any(not isinstance(doc.get(k, ""), str) for k in _TEXT) or not isinstance(details, dict | None):
            return None
        if not isinstance(moved, list) or not all(_fault_record(f) for f in moved):
            return None
        texts = {k: doc.get(k, "") for k in _TEXT}
        texts["user"] = printable(texts["user"])  # a login name with a newline or escape never shapes the output
        return cls(serial, **texts, pid=pid, details=details, delta=doc.get("delta"), moved_faults=tuple(moved))

    def record(self) -> dict[str, Any]:
        """Its JSON form, as the journal line holds it (keys sorted; optional fields only when set)."""
        out: dict[str, Any] = {"serial": self.serial, "time": self.time, "user": self.user}
        out.update(command=self.command, summary=self.summary)
        optional = {"pid": self.pid, "details": self.details, "delta": self.delta}
        out.update({k: v for k, v in optional.items() if v is not None})
        if self.moved_faults:
            out[MOVED_FAULTS] = list(self.moved_faults)
        return dict(sorted(out.items()))


def _fault_record(record: object) -> bool:
    """A moved fault's record has the state file's fault form (`tpufleet.state.records.fault_doc`): typed fields
    and a target that parses; readers (`faults --all`, `suspects`) take it as such."""
    if not isinstance(record, dict) or not isinstance(record.get("planned"), bool):
        return False
    if any(not isinstance(record.get(k), str) for k in ("id", "target", "reason", "opened")):
        return False
    if not isinstance(record.get("cleared"), str | None):
        return False
    try:
        parse_target(record["target"])
    except BadInput:
        return False
    return True


def fault_numbers_used(entries: list[JournalEntry]) -> int:
    """The highest fault number (`f7` -> 7) the journal names: faults opened (in a delta) or moved out of the
    state; 0 for none. A replaced fleet's new faults are numbered after it, so no id names two faults.

    >>> opened = {"faults": {"opened": [{"id": "f7", "target": "cube:c01"}], "cleared": []}}
    >>> fault_numbers_used([JournalEntry(4, delta=opened), JournalEntry(5, moved_faults=({"id": "f3"},))])
    7
    """
    highest = 0
    for entry in entries:
        faults = entry.delta.get("faults") if isinstance(entry.delta, dict) else None
        opened = faults.get("opened") if isinstance(faults, dict) else None
        records = [*(opened if isinstance(opened, list) else []), *entry.moved_faults]
        for record in records:
            number = fault_number(record.get("id") if isinstance(record, dict) else None)
            highest = max(highest, number)
    return highest


def fault_number(fault_id: object) -> int:
    """The number of a fault id (`f7` -> 7); 0 for anything that is not one (a damaged record's id)."""
    text = fault_id[1:] if isinstance(fault_id, str) and fault_id.startswith("f") else ""
    return int(text) if text.isascii() and text.isdigit() and len(text) < MAX_FAULT_ID_CHARS else 0
