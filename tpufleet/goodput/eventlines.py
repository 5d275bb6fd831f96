"""A native JSON-lines goodput log read line by line: the lines as text files have them (never cut at the other
breaks str.splitlines() takes), each parsed and its record added, a plain event by a short path that checks the same
bounds, and with --skip-bad a bad line counted instead of raised. Kept apart from checking a record
(`eventrecords`), which every form shares, and from the schema (`events`): this is the standard per-line reader that
the fast readers (`fastread`, `columnar`) fall back to and must match.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tpufleet.goodput.eventrecords import add_guarded
from tpufleet.goodput.events import (
    _ALLOCATION,
    _SLICE_COUNTS,
    _STEP_START,
    CODE,
    MAX_CHIPS,
    MAX_STEP,
    MAX_TEXT,
    Log,
    record_of,
)
from tpufleet.goodput.times import MAX_TIME, SMALLEST_TIME, BadRecord
from tpufleet.jsontext import parse_json_line

# What str.splitlines() takes for a line break beyond \r and \n: no JSON-lines writer ends a line with one, and
# U+0085, U+2028 and U+2029 may stand raw inside a JSON string (a job named with one, as json.dumps writes it with
# ensure_ascii=False): splitting there cut a valid record in two.
_NOT_LINE_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def log_lines(text: str) -> list[str]:
    """The lines of a JSON-lines log: each ended by a line feed, CR LF or a lone CR (as text files are read), never
    cut inside a record at another character str.splitlines() breaks at."""
    if not any(c in text for c in _NOT_LINE_BREAKS):
        return text.splitlines()  # (the common case, at C speed)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def read_native(text: str, file: str, log: Log, skip_bad: bool = False, csv_format: bool = False) -> Log:
    if csv_format:
        from tpufleet.goodput.csvlog import read_csv

        return read_csv(text, file, log, skip_bad)
    return read_native_lines(enumerate(log_lines(text), start=1), file, log, skip_bad)


_EVENT_KEYS = frozenset(("type", "job", "time", "event", "step", "chips"))


def _plain_count(value: Any, optional: bool, limit: int) -> int | None:
    """A record's step or chip count for `_fast_event`: -1 where absent (if `optional`), None where not plain."""
    if value is None:
        return -1 if optional else None
    return value if type(value) is int and 0 <= value <= limit else None


def _fast_event(log: Log, rec: dict[str, Any]) -> bool:
    """Add a plain event record (float time, known name, in-range step/chips, no label) without the general
    checks; False (nothing added) for anything else, which `eventrecords.add_record` then judges."""
    job, t, name = rec.get("job"), rec.get("time"), rec.get("event")
    if type(job) is not str or not 0 < len(job) <= MAX_TEXT or type(name) is not str or type(t) is not float:
        return False
    code = CODE.get(name)
    if code is None or code == _SLICE_COUNTS or not SMALLEST_TIME <= t <= MAX_TIME or not _EVENT_KEYS.issuperset(rec):
        return False
    step = _plain_count(rec.get("step"), code != _STEP_START, MAX_STEP)
    chips = _plain_count(rec.get("chips"), code != _ALLOCATION, MAX_CHIPS)
    if step is None or chips is None:
        return False
    if code == _ALLOCATION and chips >= 0 and (known := record_of(log, job)) is not None and chips > known.chips:
        return False  # add_record names the line
    log.add_event(job, t, code, step, chips)
    log.records += 1
    return True


def read_native_lines(lines: Iterable[tuple[int, str]], file: str, log: Log, skip_bad: bool = False) -> Log:
    """JSON lines given as (line number, text): the streaming form of `read_native`."""
    for i, raw in lines:
        if not raw or raw.isspace():  # a blank line holds no record: skipped before a parse that would raise
            continue
        try:
            rec = parse_json_line(raw)  # every number used is range-checked by add_record
        except ValueError as exc:
            if skip_bad:
                log.skipped += 1
                continue
            raise BadRecord(file, i, "<line>", raw[:40], str(exc)) from None
        if type(rec) is dict and rec.get("type") == "event" and _fast_event(log, rec):
            continue
        add_guarded(log, skip_bad, rec, file, i)
    return log
