"""The times of a state document checked as times: the schema only says they are text, and a time that is not one
reached `export slices` (a Slice's `lastTransitionTime`, which Kubernetes refuses) and the commands comparing times.

The tool writes its own moments as ``2026-01-06T10:30:00Z`` (UTC, whole seconds: `store.utc_now`,
`timeparse.stamp_text`), and every version of it did. Maintenance windows came from a reservation or a notice, and
earlier versions kept them as given: any RFC 3339 time, with a zone offset or fractions of a second.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from tpufleet.errors import BadStateFile
from tpufleet.timeparse import RFC3339, parse_stamp, real_time, utc_stamp

__all__ = ["check_times"]

_STAMP_PROBLEM = "must be a UTC time to the second as tpufleet writes it (2026-01-06T10:30:00Z)"
_WINDOW_PROBLEM = "must be an RFC 3339 time of the calendar (2026-06-16T09:00:00Z)"
_ALERT_PROBLEM = "must be an RFC 3339 time of the calendar, as Alertmanager sends startsAt (2026-06-16T09:00:00.5Z)"


def check_times(doc: dict[str, Any], file: str) -> None:
    """BadStateFile naming the first time field of `doc` that is not a time in its field's form."""
    for field, value in _stamps(doc):
        if utc_stamp(value) != value:
            raise BadStateFile(file, field, value, _STAMP_PROBLEM)
    for i, mark in enumerate(doc.get("alert_marks", [])):  # kept as the alert gave it: its repeats compare the text
        if not real_time(mark["starts_at"]):
            raise BadStateFile(file, f"alert_marks.{i}.starts_at", mark["starts_at"], _ALERT_PROBLEM)
    starts: dict[str, tuple[str, datetime]] = {}  # each window's start, by the path of its record
    for field, value in _windows(doc):
        moment = parse_stamp(value) if RFC3339.fullmatch(value) else None
        if moment is None:
            raise BadStateFile(file, field, value, _WINDOW_PROBLEM)
        at, _, end = field.rpartition(".")
        if end == "window_start":
            starts[at] = (value, moment)
        elif at in starts and moment < starts[at][1]:  # as `import reservation` refuses it
            raise BadStateFile(file, field, value, f"it must not be before window_start {starts[at][0]}")


def _stamps(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field path, value) of each moment the tool wrote: creations, route tables made, faults opened and cleared."""
    if "created" in doc:
        yield "created", doc["created"]
    for key, stamp in (("slices", "created"), ("jobs", "created"), ("routes", "made")):
        for name, record in doc.get(key, {}).items():
            if stamp in record:
                yield f"{key}.{name}.{stamp}", record[stamp]
    for i, fault in enumerate(doc["faults"]):
        yield f"faults.{i}.opened", fault["opened"]
        if fault["cleared"] is not None:
            yield f"faults.{i}.cleared", fault["cleared"]


def _windows(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field path, value) of each maintenance window's start and end: of the drains and of the reservation."""
    ends = ("window_start", "window_end")
    for i, fault in enumerate(doc["faults"]):
        yield from ((f"faults.{i}.{end}", fault[end]) for end in ends if end in fault)
    for name, sub_block in doc.get("reservation", {}).get("sub_blocks", {}).items():
        window = sub_block.get("maintenance", {})
        yield from ((f"reservation.sub_blocks.{name}.maintenance.{end}", window[end]) for end in ends if end in window)
