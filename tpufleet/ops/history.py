"""Use cases of `history` and `diff`: the journal as a timeline, and the net change between two serials (read-only)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tpufleet.errors import BadInput
from tpufleet.journalentry import JournalEntry
from tpufleet.state.delta import combine, is_delta, touches_slice
from tpufleet.timeparse import parse_stamp, parse_time

Doc = dict[str, Any]
_SLICE_COMMANDS = {"allocate", "release", "policy", "apply-xconnect", "routes", "reschedule"}
_KEPT = ("serial", "time", "user", "command", "summary", "details", "delta")


def _after(since: str | None, now: datetime | None) -> tuple[int | None, datetime | None]:
    """--since as (a serial, or a moment); both None when not given."""
    if since is None:
        return None, None
    text = since.strip()
    if text.isascii() and text.isdigit() and len(text) <= 18:
        return int(text), None
    return None, parse_time(since, "--since", now)


def _names_slice(e: JournalEntry, name: str) -> bool:
    """Whether a line concerns slice `name`: from its delta, else (older lines) from what its summary names."""
    if is_delta(e.delta):
        return touches_slice(e.delta, name)
    details = e.details
    if isinstance(details, dict) and details.get("slice") == name:
        return True
    words = e.summary.split()
    return len(words) > 1 and words[0] in _SLICE_COMMANDS and words[1].rstrip(":") == name


def timeline(
    entries: list[JournalEntry], since: str | None, slice_name: str | None, now: datetime | None = None
) -> list[Doc]:
    """`history`: the committed lines from a serial or a moment on, optionally only those touching a slice."""
    serial, moment = _after(since, now)
    rows = []
    for e in entries:
        if serial is not None and e.serial < serial:
            continue
        if moment is not None and ((stamp := parse_stamp(e.time)) is None or stamp < moment):
            continue
        if slice_name is not None and not _names_slice(e, slice_name):
            continue
        rows.append({k: v for k, v in e.record().items() if k in _KEPT})
    return rows


def diff(entries: list[JournalEntry], start: int, end: int | None, now: int | None = None) -> Doc:
    """`diff`: the net change from serial `start` to `end` (default: `now`, the state's serial, else the journal's
    last), in the journal's delta form."""
    now = now if now is not None else entries[-1].serial if entries else 0
    end = now if end is None else end
    if not 0 <= start <= end <= now:
        raise BadInput(f"bad serials {start} {end}: need 0 <= SERIAL <= SERIAL <= {now} (the current serial)")
    span = [e for e in entries if start < e.serial <= end]
    recorded = [e for e in span if is_delta(e.delta)]
    # a damaged line is skipped by the reader: its serial is still a commit, one whose detail is lost
    lost = sorted(set(range(start + 1, end + 1)) - {e.serial for e in span})
    return {
        "from": start,
        "to": end,
        "commits": len(span) + len(lost),
        **combine([e.delta for e in recorded]),
        "without_detail": sorted([e.serial for e in span if not is_delta(e.delta)] + lost),
    }
