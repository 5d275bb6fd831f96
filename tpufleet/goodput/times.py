"""Times in goodput logs and options (pure): POSIX seconds or ISO 8601 with a zone, from 1970 to 2200, and the
one-line error naming file, line, field and value that every bad record raises."""

from __future__ import annotations

import datetime as dt

from tpufleet.errors import NO_VALUE, BadInput, shown
from tpufleet.text import plain_float, underflows

MIN_TIME = 0.0  # 1970-01-01T00:00:00Z
MAX_TIME = 7258118400.0  # 2200-01-01T00:00:00Z
# Times other than 0 start a microsecond after the epoch: two distinct times then differ by at least ~2e-22 s,
# so a ratio over a duration (PG over productive time) stays finite; 5e-324 and 1e-323 made PG infinite.
SMALLEST_TIME = 1e-6


class BadRecord(BadInput):
    def __init__(self, file: str, line: int, field_name: str, value: object, problem: str) -> None:
        self.problem = problem
        self.value = None if value is NO_VALUE else value
        tail = "" if value is NO_VALUE else f" (value {shown(value)})"
        super().__init__(f"{file}:{line}: field {field_name}: {problem}{tail}")


_TIME_RANGE = "outside 1970-01-01 .. 2200-01-01 (POSIX seconds 0 .. 7258118400)"
_TOO_CLOSE = "between 0 and a microsecond after the epoch (POSIX seconds 0, or 0.000001 .. 7258118400)"


def in_range(seconds: float | int, value: object, file: str, line: int, name: str) -> float:
    """POSIX seconds inside MIN_TIME..MAX_TIME (NaN and infinities are outside), 0 or at least SMALLEST_TIME, as
    a float."""
    if not MIN_TIME <= seconds <= MAX_TIME:  # an int is compared before float() could overflow on it
        raise BadRecord(file, line, name, value, _TIME_RANGE)
    if 0 < seconds < SMALLEST_TIME:
        raise BadRecord(file, line, name, value, _TOO_CLOSE)
    return float(seconds)


def parse_time(value: object, file: str, line: int, name: str = "time") -> float:
    if type(value) is float and SMALLEST_TIME <= value <= MAX_TIME:  # the common case first
        return value
    if value is NO_VALUE:  # the field is absent (a record passes `rec.get(name, NO_VALUE)`)
        raise BadRecord(file, line, name, value, "is required")
    if isinstance(value, bool):
        raise BadRecord(file, line, name, value, "not a time")
    if isinstance(value, (int, float)):
        return in_range(value, value, file, line, name)
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 64:
            raise BadRecord(file, line, name, value, "not an ISO 8601 time or POSIX seconds")
        seconds = plain_float(text)  # ASCII digits only: float() reads other scripts' digits and digit groups
        if seconds is not None and underflows(text):  # 1e-400 would be read as 0, the epoch
            raise BadRecord(file, line, name, value, _TOO_CLOSE)
        if seconds is not None:
            return in_range(seconds, value, file, line, name)
        try:
            stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise BadRecord(file, line, name, value, "not an ISO 8601 time or POSIX seconds") from None
        if stamp.tzinfo is None:
            raise BadRecord(file, line, name, value, "time has no zone; use UTC (…Z)")
        try:
            seconds = stamp.timestamp()
        except (OverflowError, ValueError):  # a zone offset taking year 1 or 9999 out of datetime's range
            raise BadRecord(file, line, name, value, _TIME_RANGE) from None
        return in_range(seconds, value, file, line, name)
    raise BadRecord(file, line, name, value, "not a time")


def option_time(value: str, option: str, end: bool = False, now: dt.datetime | None = None) -> float:
    """A time given as a command-line option, as POSIX seconds: POSIX seconds or an ISO time with its zone (as in
    the logs), or what operators type elsewhere (a date, an ISO time in UTC, an age such as 7d;
    tpufleet.timeparse). With `end` (an --until), a date runs to its day's end (its last moment, 23:59:59.999999,
    as `history` and `faults` read it; 2200-01-01, the bounds' last day, to their end). The logs' bounds apply to
    every form. `now`: the moment an age counts back from (one for both ends of a window). BadInput naming the
    option."""
    _refuse_compact_date(value, option)
    try:
        return parse_time(value, option, 0, "value")
    except BadRecord as exc:
        first = exc
    from tpufleet.timeparse import parse_time as operator_time

    if first.problem.startswith("outside") or _looks_numeric(value):  # the form was right, the value is not
        raise BadInput(f"bad option {option} {shown(value)}: {first.problem}") from None
    moment = operator_time(value, option, now, end=end).timestamp()
    if end and moment > MAX_TIME >= operator_time(value, option, now).timestamp():  # the bounds' own last day
        return MAX_TIME
    try:
        return parse_time(moment, option, 0, "value")  # the same bounds as a time in the logs
    except BadRecord as exc:
        raise BadInput(f"bad option {option} {shown(value)}: {exc.problem}") from None


def _refuse_compact_date(value: str, option: str) -> None:
    """Eight digits that are also a date (`20260105`) are refused as ambiguous: POSIX seconds in 1970, or the date
    an operator typed without its dashes? Seconds with a point (`20260105.0`) stay seconds."""
    text = value.strip()
    if len(text) != 8 or not text.isascii() or not text.isdigit():
        return
    try:
        day = dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
    except ValueError:
        return
    if day.year < 1971:
        return
    seconds = dt.datetime.fromtimestamp(int(text), dt.UTC).date()
    raise BadInput(
        f"bad option {option} {shown(value)}: POSIX seconds ({seconds}) or the date {day}? give the date as "
        f"{day} (or the seconds as {text}.0)"
    )


def _looks_numeric(value: str) -> bool:
    return plain_float(value) is not None


def option_window(since: str | None, until: str | None) -> tuple[float | None, float | None]:
    """--since and --until as POSIX seconds (None: not given), a date given to --until to its day's end, as `history`
    and `faults` read them. An --until before --since is refused with the line swapped, as they refuse it; one at
    the very moment --since is, too (they list that moment's lines): a window of no time has no figures."""
    from tpufleet.timeparse import refuse_empty, refuse_reversed

    now = dt.datetime.now(dt.UTC)  # one moment for both: `--since 1d --until 1d` is a window of no time
    t0 = None if since is None else option_time(since, "--since", now=now)
    t1 = None if until is None else option_time(until, "--until", end=True, now=now)
    if since is None or until is None or t0 is None or t1 is None or t1 > t0:
        return t0, t1
    if t1 < t0:
        refuse_reversed(since, until)
    refuse_empty(since, until)
