"""Rolling windows and exclusion intervals for the goodput report (pure; the exclusions file is read by the
pipeline).

* ``--window 1h,6h,24h``: the factors over the last W of the data (what ml-goodput-measurement's monitor uploads
  as its interval goodput), one row each. Units: s, m, h, d, w.
* ``--exclude FILE``: a JSON list ``[{"start": T, "end": T, "reason": "..."}]`` (T as in the event logs: ISO
  8601 UTC or POSIX seconds) of spans the fleet owner does not want charged, planned maintenance say: every
  instant inside one counts nowhere: not in all-allocated time (so in no bucket), not in capacity, not in demand.
  ``reason`` may be left out; any other key is refused (a misspelt ``end`` must not pass unseen).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpufleet.constants import DAY, HOUR, MINUTE, WEEK
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile, shown
from tpufleet.goodput.events import MAX_TEXT
from tpufleet.goodput.times import MAX_TIME, BadRecord, parse_time
from tpufleet.timeparse import length_parts

UNITS = {"s": 1, "m": MINUTE, "h": HOUR, "d": DAY, "w": WEEK}
MAX_WINDOWS = 16  # rows of --window
MAX_EXCLUSIONS = 10_000  # entries of an --exclude file
EXCLUSION_KEYS = ("start", "end", "reason")  # an entry's keys: any other is refused, as a misspelt one would be


@dataclass(frozen=True)
class Exclusion:
    start: float
    end: float
    reason: str


def parse_windows(text: str) -> list[tuple[str, float]]:
    """``1h,6h`` as [("1h", 3600.0), ("6h", 21600.0)]; BadInput naming the option and the bad part, or a window
    given twice (``1h,60m`` too: the same rows)."""
    out: list[tuple[str, float]] = []
    seen: dict[float, str] = {}
    for part in text.split(","):
        count, unit = length_parts(part, "--window")  # as every option that takes a length reads one
        name, seconds = f"{count}{unit}", float(count * UNITS[unit])
        if seconds > MAX_TIME:  # (a log's times end at MAX_TIME)
            raise BadInput(f"bad option --window: {shown(part)} is longer than a log's times span (to the year 2200)")
        if seconds in seen:
            again = "given twice" if seen[seconds] == part.strip() else f"the window {shown(seen[seconds])} again"
            raise BadInput(f"bad option --window: {shown(part.strip())} is {again}")
        seen[seconds] = part.strip()
        out.append((name, seconds))
    if len(out) > MAX_WINDOWS:
        raise BadInput(f"bad option --window: {len(out)} windows, over the limit of {MAX_WINDOWS}")
    return out


def parse_exclusions(data: Any, file: str) -> list[Exclusion]:
    """The entries of an exclusions file; BadRecord naming the file, the entry (as its line: 1-based) and field
    (an unknown key too); BadStateFile for the file as a whole (not a list, too many entries)."""
    if not isinstance(data, list):
        raise BadStateFile(file, "<root>", data, "must be a JSON list of {start, end, reason}")
    if len(data) > MAX_EXCLUSIONS:
        raise BadStateFile(file, "<root>", len(data), f"more than {MAX_EXCLUSIONS:,} entries")
    out = []
    for i, entry in enumerate(data, start=1):
        if not isinstance(entry, dict):
            raise BadRecord(file, i, "<entry>", entry, "must be an object {start, end, reason}")
        for key in entry:
            if key not in EXCLUSION_KEYS:
                name = key if key.isidentifier() and len(key) <= 64 else shown(key)  # one line, whatever the key
                raise BadRecord(file, i, name, entry[key], f"unknown key; expected {', '.join(EXCLUSION_KEYS)}")
        start = parse_time(entry.get("start", NO_VALUE), file, i, "start")
        end = parse_time(entry.get("end", NO_VALUE), file, i, "end")
        if end <= start:
            raise BadRecord(file, i, "end", entry.get("end"), "must be after start")
        reason = entry.get("reason", "")
        if not isinstance(reason, str) or len(reason) > MAX_TEXT:
            raise BadRecord(file, i, "reason", reason, f"must be a string of at most {MAX_TEXT} characters")
        out.append(Exclusion(start, end, reason))
    return sorted(out, key=lambda x: (x.start, x.end))


def merged(exclusions: list[Exclusion]) -> list[tuple[float, float]]:
    """The union of the excluded spans, sorted and disjoint."""
    out: list[list[float]] = []
    for x in sorted(exclusions, key=lambda x: x.start):
        if out and x.start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], x.end)
        else:
            out.append([x.start, x.end])
    return [(a, b) for a, b in out]


def overlap(spans: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Seconds of [lo, hi] inside the (disjoint) spans."""
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in spans)
