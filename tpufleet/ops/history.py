"""Use cases of `history` and `diff`: the journal as a timeline, and the net change between two serials (read-only)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from tpufleet.errors import BadInput, Refused
from tpufleet.journalentry import JournalEntry
from tpufleet.ops.views import JournalRead, read_journal
from tpufleet.serials import looks_like_serial, not_past, parse_serial
from tpufleet.state.delta import combine, is_delta, jobs_of_slices, slices_named
from tpufleet.state.journal import Enough, whole_from_first
from tpufleet.state.store import Store
from tpufleet.timeparse import TIME_HELP, parse_stamp, parse_time, refuse_reversed

Doc = dict[str, Any]
_SLICE_COMMANDS = {"allocate", "release", "policy", "apply-xconnect", "routes", "reschedule"}
_KEPT = ("serial", "time", "user", "command", "summary", "details", "delta")
# `history --since TIME` reads the journal back to a line this much older than TIME: a line written by a machine
# whose clock was behind, after later ones, still shows
CLOCK_SKEW = timedelta(days=1)
MAX_LOST_LISTED = 100_000  # serials `diff` lists as recorded without detail; more means another history


Bound = tuple[int | None, datetime | None]  # --since or --until read: (a serial, or a moment), both None if not given


def history(
    store: Store, since: str | None, slice_name: str | None, until: str | None = None
) -> tuple[list[Doc], JournalRead]:
    """`history`: the timeline's rows and the journal read (its damaged lines skipped, its gap); with --since, the
    journal is read from its end back to that point only. A serial past the state's is refused, as `diff` refuses
    it, and so is an --until before --since."""
    now = datetime.now(UTC)
    first, last = _after(since, now), _after(until, now, "--until")
    _check_range(since, until, first, last)
    read = read_journal(store, enough=_since_enough(first))
    for option, value, (serial, _) in (("--since", since, first), ("--until", until, last)):
        if serial is not None and value is not None:
            not_past(serial, value, f"option {option}", read.serial)
    return timeline(read.entries, first, slice_name, last), read


def _check_range(since: str | None, until: str | None, first: Bound, last: Bound) -> None:
    """BadInput when --until comes before --since, both serials or both times (the corrected line named); a serial
    and a time are not compared: an empty timeline says they do not meet."""
    (from_serial, from_time), (to_serial, to_time) = first, last
    serials = from_serial is not None and to_serial is not None and to_serial < from_serial
    if serials or (from_time is not None and to_time is not None and to_time < from_time):
        refuse_reversed(str(since), str(until))


def changes(store: Store, start: int, end: int | None) -> tuple[Doc, JournalRead]:
    """`diff`: the net change (with `journal_gap`: the serials the journal lacks at its end, or None, and
    `journal_missing`: those lost inside it, in the range read) and the journal read; the journal is read from
    its end back to `start`."""
    read = read_journal(store, enough=lambda entries: entries[0].serial <= start and whole_from_first(entries))
    gap = read.gap
    doc = diff(read.entries, start, end, read.serial)
    last_serial = read.serial if end is None else end
    missing = [
        {"from": max(first, start + 1), "to": min(last, last_serial)}
        for first, last in read.missing
        if last > start and first <= last_serial
    ]
    return {
        **doc,
        "journal_gap": None if gap is None else {"from": gap[0], "to": gap[1]},
        "journal_missing": missing,
    }, read


def _since_enough(since: Bound) -> Enough | None:
    """When the entries read back from the journal's end cover --since (None: read it whole)."""
    serial, moment = since
    if serial is not None:
        return lambda entries: entries[0].serial < serial and whole_from_first(entries)
    if moment is None:
        return None
    try:
        edge = moment - CLOCK_SKEW
    except OverflowError:  # a moment in the first day of the calendar: everything is after it
        return None
    return lambda entries: older_than(entries[0].time, edge) and whole_from_first(entries)


def older_than(stamp: str, edge: datetime) -> bool:
    """Whether a journal line's time is before `edge` (a time that cannot be read is not)."""
    moment = parse_stamp(stamp)
    return moment is not None and moment < edge


def _after(since: str | None, now: datetime | None, option: str = "--since") -> Bound:
    """--since (or --until) as (a serial, or a moment); both None when not given."""
    if since is None:
        return None, None
    if looks_like_serial(since):  # `+1`, `1_000` and `-1` too: refused as `diff` refuses them, not "not a date"
        return parse_serial(since, f"option {option}", f"; or give {TIME_HELP}"), None
    return None, parse_time(since, option, now, also="a serial (40), ", end=option == "--until")


def _summary_names(e: JournalEntry, name: str) -> bool:
    """Whether a line's summary or details name slice or job `name` (how lines without a delta are read)."""
    details = e.details
    if isinstance(details, dict) and name in (details.get("slice"), details.get("job")):
        return True
    words = e.summary.split()
    if len(words) > 2 and words[0] in _SLICE_COMMANDS and words[1] == "job":  # "release job J: J-0, J-1"
        return words[2].rstrip(":") == name
    return len(words) > 1 and words[0] in _SLICE_COMMANDS and words[1].rstrip(":") == name


class _NameFilter:
    """`history --slice NAME`: the lines that touched slice NAME or, NAME being a job's, any of its slices (those
    since released too). A line from 0.3 on names each slice's job in its delta; for an older line, a job's slices
    are those added by a line whose summary names the job, until a line removes them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.members: set[str] = set()  # the job's slices as of the line being read (older lines only)

    def touches(self, e: JournalEntry) -> bool:
        if not is_delta(e.delta):
            return _summary_names(e, self.name)
        named, jobs, slices = slices_named(e.delta), jobs_of_slices(e.delta), e.delta["slices"]
        if jobs is not None:
            hit = self.name in named or self.name in jobs.values()
        else:
            said = _summary_names(e, self.name)
            if said:
                self.members.update(slices["added"])
            hit = said or self.name in named or not self.members.isdisjoint(named)
        self.members.difference_update(slices["removed"])  # a name released is free for another slice
        return hit


def timeline(entries: list[JournalEntry], since: Bound, slice_name: str | None, until: Bound) -> list[Doc]:
    """`history`: the committed lines from a serial or a moment on (up to another, both included), optionally only
    those touching a slice or job."""
    (serial, moment), (last, end) = since, until
    wanted = _NameFilter(slice_name) if slice_name is not None else None
    rows = []
    for e in entries:
        if wanted is not None and not wanted.touches(e):  # read before --since too: it learns a job's slices
            continue
        if (serial is not None and e.serial < serial) or (last is not None and e.serial > last):
            continue
        if (moment is not None or end is not None) and not _within(parse_stamp(e.time), moment, end):
            continue
        rows.append({k: v for k, v in e.record().items() if k in _KEPT})
    return rows


def _within(stamp: datetime | None, start: datetime | None, end: datetime | None) -> bool:
    """Whether a line's time is inside [start, end] (a bound None is open; a time that cannot be read is not)."""
    return stamp is not None and (start is None or stamp >= start) and (end is None or stamp <= end)


def diff(entries: list[JournalEntry], start: int, end: int | None, now: int | None = None) -> Doc:
    """`diff`: the net change from serial `start` to `end` (default: `now`, the state's serial, else the journal's
    last), in the journal's delta form."""
    now = now if now is not None else entries[-1].serial if entries else 0
    end = now if end is None else end
    if not 0 <= start <= end <= now:
        swapped = f"; swap them: `tpufleet diff {end} {start}`" if 0 <= end < start <= now else ""
        raise BadInput(f"bad serials {start} {end}: need 0 <= SERIAL <= SERIAL <= {now} (the current serial){swapped}")
    first: dict[int, JournalEntry] = {}
    for e in entries:  # a serial twice (a line copied by hand) is one commit
        if start < e.serial <= end:
            first.setdefault(e.serial, e)
    span = list(first.values())
    recorded = [e for e in span if is_delta(e.delta)]
    # a damaged line is skipped by the reader: its serial is still a commit, one whose detail is lost
    missing = end - start - len(span)
    if missing > MAX_LOST_LISTED:
        raise Refused(
            f"serials {start + 1}..{end}: {missing} commits have no journal line (the journal does not match the "
            "state); diff a span the journal records"
        )
    lost = sorted(set(range(start + 1, end + 1)) - {e.serial for e in span})
    return {
        "from": start,
        "to": end,
        "commits": len(span) + len(lost),
        **combine([e.delta for e in recorded]),
        "without_detail": sorted([e.serial for e in span if not is_delta(e.delta)] + lost),
    }


def _removes(entry: JournalEntry, name: str) -> bool:
    """Whether the journal line removed slice or job `name` (a release, an `init --force`, an import)."""
    delta = entry.delta if is_delta(entry.delta) else {}
    removed = delta.get("slices", {}).get("removed", []) if isinstance(delta, dict) else []
    return name in removed or entry.summary.startswith((f"release {name}:", f"release job {name}:"))


def released_earlier(store: Store, name: str) -> Refused | None:
    """For `release` of a slice or job the state lacks: the refusal saying which commit removed it (`release`
    run twice), or None when the state has it or the journal never removed it (a typo: the command's own refusal
    says what it may mean). The journal is read back from its end to that commit only."""
    state = store.load()
    if name in state.slices or name in state.jobs:
        return None
    read = read_journal(store, enough=lambda entries: any(_removes(e, name) for e in entries))
    last = next((e for e in reversed(read.entries) if _removes(e, name)), None)
    if last is None:
        return None
    return Refused(
        f"{name!r} is already released: serial {last.serial} removed it ({last.time}, `{last.command}`); nothing to "
        "release (`tpufleet show slices` lists the slices)"
    )


def never_named(store: Store, name: str, entries: Sequence[JournalEntry] = ()) -> str:
    """What `history --slice NAME` says when no change in the journal touched NAME: the slice or job it may mean,
    of the state's or of those the journal's `entries` name (released ones too: their history is what is asked)."""
    from tpufleet.text import closest

    state = store.load()
    known = dict.fromkeys([*state.slices, *state.jobs])
    for e in entries:
        if is_delta(e.delta):
            known.update(dict.fromkeys([*slices_named(e.delta), *(jobs_of_slices(e.delta) or {}).values()]))
    near = closest(name, list(known))
    meant = f" (did you mean {near}? `tpufleet history --slice {near}`)" if near else ""
    return f"no change in the journal touched a slice or job named {name!r}{meant}"
