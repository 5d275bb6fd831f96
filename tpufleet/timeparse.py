"""Times as operators type them: a date, an ISO time with or without a zone (UTC assumed), or an age.

>>> from datetime import datetime, timezone
>>> now = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc)
>>> str(parse_time("2026-01-06", "--since", now))
'2026-01-06 00:00:00+00:00'
>>> str(parse_time("2026-01-06T10:30+02:00", "--since", now))
'2026-01-06 08:30:00+00:00'
>>> str(parse_time("36h", "--since", now))
'2026-03-09 00:00:00+00:00'
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta
from typing import NoReturn, TypeGuard

from tpufleet.errors import BadInput, shown

_LENGTH = re.compile(r"([0-9]+)([smhdw])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_LENGTH_COUNT = 999_999  # of a unit
LENGTH_HELP = "a length of time such as 7d, 12h, 30m or 2w (a whole number and one of s, m, h, d, w)"
TIME_HELP = "a date (2026-01-06), an ISO time (2026-01-06T10:30, UTC unless it has a zone) or an age (7d, 12h, 30m)"


_DATE = re.compile(r"[0-9]{4}-?[0-9]{2}-?[0-9]{2}")  # a day, no time of it: an --until takes the whole day
STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # how the tool writes a moment
# A time as a provider writes it (a reservation's maintenance window): RFC 3339, a zone offset or Z, fractions allowed
RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})")


def parse_time(text: str, option: str, now: datetime | None = None, also: str = "", end: bool = False) -> datetime:
    """The moment `text` names, as an aware UTC datetime; BadInput naming the option and the value otherwise (and
    `also`, the option's other forms, `a serial (40), `, among what it takes). With `end` (an --until, its end
    included), a date is its day's last moment: `--since 2026-11-30 --until 2026-11-30` is that whole day.

    >>> str(parse_time("2026-01-06", "--until", end=True)), str(parse_time("9999-12-31", "--until", end=True))
    ('2026-01-06 23:59:59.999999+00:00', '9999-12-31 23:59:59.999999+00:00')
    """
    now = now or datetime.now(UTC)
    value = text.strip()
    try:
        if is_length(value):  # an age: a length back from now (999999w: the calendar's start, everything)
            return back_from(now, timedelta(seconds=parse_length(value, option, zero=True)))
        moment = datetime.fromisoformat(value.replace("z", "Z"))
        if end and _DATE.fullmatch(value):
            return datetime.combine(moment.date(), time.max, UTC)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except ValueError:
        meant = length_meant(text) or words_meant(text, now, end)
        raise BadInput(f"bad option {option}: {shown(text)} is not {also}{TIME_HELP}{meant}") from None
    except OverflowError:  # a zone that leaves the calendar (0001-01-01T00:00+01:00)
        raise BadInput(f"bad option {option}: {shown(text)} is outside the calendar") from None


# A length as people write it in words: `7 days`, `1 hour ago`, `30min`, `-2h` (as `ls -t` users count back)
_WORDY_LENGTH = re.compile(
    r"-?\s*([0-9]+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)(\s+ago)?", re.IGNORECASE
)


def length_meant(text: str, zero: bool = True) -> str:
    """`; did you mean 7d?` for a length written in words or with a sign (`7 days`, `1 hour ago`, `-2h`); else ''.

    >>> length_meant("1 hour ago"), length_meant("7days"), length_meant("-30m"), length_meant("7d"), length_meant("x")
    ('; did you mean 1h?', '; did you mean 7d?', '; did you mean 30m?', '', '')
    """
    found = _WORDY_LENGTH.fullmatch(text.strip())
    digits = (found.group(1).lstrip("0") or "0") if found is not None else ""
    too_many = len(digits) > len(str(MAX_LENGTH_COUNT)) or int(digits or 0) > MAX_LENGTH_COUNT
    if found is None or is_length(text) or (digits == "0" and not zero) or too_many:
        return ""  # `0d` where zero is refused, or a count no length takes: nothing to mean
    return f"; did you mean {digits}{found.group(2)[0].lower()}?"


def refuse_reversed(since: str, until: str) -> NoReturn:
    """BadInput for an --until that comes before --since (both given, already found so), giving the line swapped:
    an age read the wrong way round (`--since 1d --until 7d`) is the usual cause."""
    import shlex

    raise BadInput(
        f"bad options: --until {shown(until)} is before --since {shown(since)}; swap them: "
        f"--since {shlex.quote(until)} --until {shlex.quote(since)}"
    )


def refuse_empty(since: str, until: str) -> NoReturn:
    """BadInput for an --until at the very moment --since is, where a window of no time means nothing (goodput-report's
    figures are shares of the window's time), in refuse_reversed's words."""
    raise BadInput(
        f"bad options: --until {shown(until)} is the moment --since {shown(since)} is, a window of no time; "
        "give a later --until"
    )


_WORDS_BACK = {"yesterday": 1, "today": 0}  # a day named in words: its date, counted back from today
_WORDS_LENGTH = {"last hour": "1h", "last day": "1d", "last week": "7d", "last month": "30d", "now": "0s"}


def words_meant(text: str, now: datetime, end: bool = False) -> str:
    """`; did you mean 2026-03-09 (or 1d)?` for a day or a span written in words (`yesterday`, `last week`); else ''.

    >>> now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    >>> words_meant("Yesterday", now), words_meant("last week", now), words_meant("today", now), words_meant("x", now)
    ('; did you mean 2026-03-09 (its start), or 1d?', '; did you mean 7d?', '; did you mean 2026-03-10 (its start)?', '')
    >>> words_meant("yesterday", now, end=True)  # an --until
    '; did you mean 2026-03-09 (to its end)?'
    """
    said = " ".join(text.lower().split())
    if said in _WORDS_LENGTH:
        return f"; did you mean {_WORDS_LENGTH[said]}?"
    if said not in _WORDS_BACK:
        return ""
    back = _WORDS_BACK[said]
    day = (now - timedelta(days=back)).date().isoformat()
    if end:  # an --until: the date is the whole day, an age would cut it at this time of day
        return f"; did you mean {day} (to its end)?"
    return f"; did you mean {day} (its start)" + (f", or {back}d?" if back else "?")


def back_from(now: datetime, span: timedelta) -> datetime:
    """The moment `span` before `now`; a span reaching before the calendar (`999999w`) starts at its beginning, so
    everything is after it. The one reading of an age back from now (`history --since`, `suspects --window`).

    >>> back_from(datetime(2026, 3, 10, tzinfo=UTC), timedelta(weeks=999999)) == datetime.min.replace(tzinfo=UTC)
    True
    """
    try:
        return now - span
    except OverflowError:
        return datetime.min.replace(tzinfo=now.tzinfo)


def is_length(text: str) -> bool:
    """Whether `text` is written as a length of time (a number and a unit), however long."""
    return bool(_LENGTH.fullmatch(text.strip()))


def length_parts(text: str, option: str, zero: bool = False) -> tuple[int, str]:
    """A length of time as operators type one (`7d`, `12h`, `30m`, `2w`, `45s`), as (count, unit): a whole number,
    leading zeros aside, of at most MAX_LENGTH_COUNT, and one unit; zero only where `zero` allows it. BadInput
    naming the option and the value otherwise. The one reading of every option that takes a length (`suspects
    --window`, `--horizon`, `goodput-report --window`, an age in `history --since`): each once read its own way
    (`0000001h` was too long for one and not a length for another).

    >>> length_parts(" 036h", "--horizon")
    (36, 'h')
    """
    match = _LENGTH.fullmatch(text.strip())
    if match is None:
        raise BadInput(f"bad option {option}: {shown(text)} is not {LENGTH_HELP}{length_meant(text, zero)}")
    digits = match[1].lstrip("0") or "0"
    if len(digits) > len(str(MAX_LENGTH_COUNT)):
        raise BadInput(
            f"bad option {option}: {shown(text)} is longer than this tool counts ({MAX_LENGTH_COUNT} of a unit)"
        )
    if digits == "0" and not zero:
        raise BadInput(f"bad option {option}: {shown(text)} must be longer than zero")
    return int(digits), match[2]


def parse_length(text: str, option: str, zero: bool = False) -> int:
    """The seconds of a length of time (`length_parts`).

    >>> parse_length("36h", "--horizon")
    129600
    """
    count, unit = length_parts(text, option, zero)
    return count * _SECONDS[unit]


def parse_stamp(text: str) -> datetime | None:
    """A timestamp the tool wrote (``2026-01-06T10:30:00Z``) as a datetime; None if it is not one."""
    try:
        moment = datetime.fromisoformat(text)
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (TypeError, ValueError, OverflowError):  # (a zone that leaves the calendar: 0001-01-01T00:00+01:00)
        return None


def utc_stamp(text: str) -> str | None:
    """An RFC 3339 time as the tool writes times (``2026-06-16T09:00:00Z``: UTC, whole seconds), so that times
    compare as text in their order; None if `text` is not a time of the calendar.

    >>> utc_stamp("2026-06-16T10:00:00.5+05:00")
    '2026-06-16T05:00:00Z'
    >>> utc_stamp("2026-13-45T99:99:99Z") is None
    True
    """
    moment = parse_stamp(text)
    return None if moment is None else stamp_text(moment)


def stamp_text(moment: datetime) -> str:
    """`moment` as the tool writes times. The year by hand: strftime writes year 999 as "999", which would sort
    after "2026".

    >>> stamp_text(datetime(999, 7, 1, 9, tzinfo=UTC))
    '0999-07-01T09:00:00Z'
    """
    return f"{moment.year:04d}" + moment.strftime(STAMP_FORMAT.removeprefix("%Y"))


# RFC 3339's date-time (section 5.6; Go writes up to 9 digits of a second), its numbers checked by `real_time`
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]{1,20})?"
    r"(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))"
)


def real_time(value: object) -> TypeGuard[str]:
    """Whether `value` is an RFC 3339 time that exists, as Alertmanager sends an alert's startsAt: the shape, then a
    real date, time of day and offset (the startsAt is kept verbatim in the fault's mark and the state's alert
    marks, so an impossible one would be stored; Go's zero time, year 1, exists).

    >>> real_time("2026-06-16T09:00:00.123456789Z"), real_time("2026-02-30T09:00:00Z"), real_time("yesterday")
    (True, False, False)
    """
    match = _DATE_TIME.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    offset = match.group(7)
    return offset is None or (int(offset) <= 23 and int(match.group(8)) <= 59)
