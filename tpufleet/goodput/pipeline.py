"""The goodput report of records already read: each job's account, the capacity, the figures and the timelines.

Pure: `tpufleet.state.goodputlogs` reads the logs (files, standard input, gzip, worker processes) into an
`events.Log`; `from_log` turns it into the report (`goodput-report` through `tpufleet.ops.goodput`, and
`simulate-fleet`'s summary on the records in memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tpufleet.constants import DAY, WEEK
from tpufleet.errors import BadInput
from tpufleet.goodput import capacityfit, chiptime, eventrecords, events, metrics
from tpufleet.goodput.health import slice_efficiency
from tpufleet.goodput.jobaccount import JobAccount
from tpufleet.goodput.steps import columns
from tpufleet.goodput.timeline import account, job_span, outside_part
from tpufleet.goodput.windows import Exclusion, merged

__all__ = ["ReportOptions", "account_log", "from_accounts", "from_log", "timelines", "travelling"]

MAX_SEGMENTS = 3000  # drawn pieces of one job's timeline on the HTML page

# How the jobs are accounted: `map` (one after another), or an executor's map (``ThreadPoolExecutor.map``) that runs
# them side by side and gives the accounts in job order. Each job's account depends on its own records alone, so
# the accounts are the same either way.
Mapper = Callable[[Callable[[str], JobAccount], Iterable[str]], Iterator[JobAccount]]
# (the --period of a report that reads no job's intervals, the fewest a job's intervals must be to leave: see
# `travelling`), or None: the accounts keep them
Travel = tuple[str | None, int] | None


@dataclass(frozen=True)
class ReportOptions:
    """What the report is asked for, beyond the records: segments `by` these dimensions, rows per `period`,
    only the time `since`..`until`, `capacity` as (accelerator, chips) pairs that override the logs' capacity
    records, the last `windows` (label, seconds), the `exclusions` charged nowhere, and (key ``timelines``, for
    the HTML page only) the drill-down timelines of `keep_timelines` jobs, the lowest MPG first."""

    by: Sequence[str] = ()
    period: str | None = None
    since: float | None = None
    until: float | None = None
    capacity: Sequence[tuple[str, int]] = ()
    windows: Sequence[tuple[str, float]] = ()
    exclusions: Sequence[Exclusion] = ()
    keep_timelines: int = 0
    # (accelerator of `capacity`, another name logs give it): a generation's GKE label (--capacity state)
    capacity_aliases: Sequence[tuple[str, str]] = ()

    @property
    def spans(self) -> list[tuple[float, float]]:
        """The excluded spans, merged: sorted and disjoint."""
        return merged(list(self.exclusions))


def timelines(accounts: list[JobAccount], rows: list[dict[str, Any]], keep: int) -> dict[str, Any]:
    """Per job (the `keep` with the lowest MPG): its labelled segments (adjacent equal labels merged; at most
    MAX_SEGMENTS, sampled evenly beyond that), disruptions, checkpoint starts and badput seconds."""
    import numpy as np

    from tpufleet.goodput.jobaccount import BUCKETS

    names = np.array(["productive", *BUCKETS])
    worst = {r["job"] for r in sorted(rows, key=lambda r: (r["mpg"] is None, r["mpg"] or 0, r["job"]))[:keep]}
    out: dict[str, Any] = {}
    for a in accounts:
        if a.job.id not in worst or a.starts is None or a.ends is None or a.labels is None:
            continue
        s, t, lab = a.starts, a.ends, a.labels
        if not len(s):  # a job with no time in the window (submitted only, cut off, excluded): no segment to draw
            out[a.job.id] = _timeline(a, [])
            continue
        new = np.ones(len(s), dtype=bool)
        new[1:] = (lab[1:] != lab[:-1]) | (s[1:] != t[:-1])
        first = np.flatnonzero(new)
        last = np.append(first[1:], len(s)) - 1
        pick = np.linspace(0, len(first) - 1, MAX_SEGMENTS).astype(int) if len(first) > MAX_SEGMENTS else None
        idx = first if pick is None else first[np.unique(pick)]
        ends = t[last] if pick is None else np.append(s[idx[1:]], t[-1])
        segments = [[float(x), float(y), str(n)] for x, y, n in zip(s[idx], ends, names[lab[idx]], strict=True)]
        out[a.job.id] = _timeline(a, segments)
    return out


def _timeline(a: JobAccount, segments: list[list[Any]]) -> dict[str, Any]:
    return {
        "start": a.start,
        "end": a.end,
        "segments": segments,
        "disruptions": [] if a.disruption_times is None else a.disruption_times.tolist(),
        "checkpoints": [] if a.checkpoint_starts is None else a.checkpoint_starts.tolist(),
        "badput": {b: round(v, 3) for b, v in a.buckets.items()},
    }


def _compact(a: JobAccount, timelines: bool) -> JobAccount:
    """The account without what the report no longer reads: the steps (read for the step-time health, done),
    and unless the HTML page draws timelines, the disruption and checkpoint times; labels as bytes."""
    a.step_starts = a.step_ends = a.step_numbers = a.step_productive = None
    if not timelines:
        a.disruption_times = a.checkpoint_starts = None
    if a.labels is not None:
        a.labels = a.labels.astype("int8")  # label codes are 0..13; an interval costs 17 bytes, not 24
    return a


def _account_job(
    log: events.Log,
    records: events.EventColumns,
    job_id: str,
    since: float | None,
    until: float | None,
    spans: list[tuple[float, float]],
) -> JobAccount:
    import numpy as np

    ev = columns(records)
    start, end = job_span(ev)
    # a job that starts at --until, or ends at --since, has no time in the window: outside it, as one after it
    if not (start < (np.inf if until is None else until) and end > (-np.inf if since is None else since)):
        return outside_part(log.jobs[job_id], ev, spans)  # wholly outside the window: the chips it holds alone
    a = account(log.jobs[job_id], ev, until=until, since=since, exclude=spans)
    counts = log.slices.get(job_id, [])
    # from when the job first holds chips or starts, as the package counts from the job's start: time queued is
    # SG's, not slices lost (counted from its submission, a job never short of slices showed 0.5)
    held = np.concatenate([ev.at("allocation"), ev.at("job_start")])
    a.extra["slices"] = slice_efficiency(counts, max(a.start, float(held.min())) if len(held) else a.start, a.end)
    if counts and a.job.slices == 1:  # a job record that does not say: its slice counts do
        a.job.slices = max(c[3] for c in counts)
    return metrics.with_health(a)


class Spanned(Protocol):
    """A job's part of the report: a JobAccount, or the simulator's own figures of a job."""

    @property
    def start(self) -> float: ...

    @property
    def end(self) -> float: ...


def data_span(accounts: Sequence[Spanned], capacity: Sequence[events.CapacityRecord]) -> tuple[float, float]:
    """From the first to the last time the data gives: the jobs' spans and the capacity records (a fleet that
    holds capacity before its first job, or after its last, is idle then: its SG says so)."""
    times = [record[0] for record in capacity]
    return min([a.start for a in accounts] + times), max([a.end for a in accounts] + times)


def _capacity(
    log: events.Log, given: Sequence[tuple[str, int]], accounts: list[JobAccount], t0: float
) -> tuple[chiptime.Capacity, str]:
    """The capacity and its basis: `given` (--capacity: an option on the command line wins over the logs'
    capacity records), else the records, else the whole log's busiest moment's all-allocated chips (`accounts`:
    every job's, those outside --since/--until too)."""
    if given:
        return [(t0, acc, chips, capacityfit.CAPACITY_OPTION) for acc, chips in given], "flag"
    if log.capacity:
        return list(log.capacity), "events"
    return capacityfit.peak(accounts, t0), "peak-allocation"


def _named_as_logged(
    given: Sequence[tuple[str, int]], aliases: Sequence[tuple[str, str]], accounts: list[JobAccount]
) -> Sequence[tuple[str, int]]:
    """The capacity pairs under the names the jobs give their accelerators: an accelerator no job names, under
    its other name (a generation's GKE label, tpu-v5p-slice for tpu-v5p) when jobs name that one."""
    if not aliases:
        return given
    used, other = {a.job.accelerator for a in accounts}, dict(aliases)
    return [(other[acc] if acc not in used and other.get(acc) in used else acc, chips) for acc, chips in given]


def _covered(accounts: list[JobAccount], capacity: chiptime.Capacity) -> tuple[list[JobAccount], list[str]]:
    """The jobs on an accelerator a given capacity names (those the fleet's SG, and so its other factors, count:
    the chip-time of the others over this capacity made SG above 1), and the accelerators of the others."""
    named = {step[1] for step in capacity}
    left_out = sorted({a.job.accelerator for a in accounts} - named)
    return (accounts, []) if not left_out else ([a for a in accounts if a.job.accelerator in named], left_out)


def from_log(log: events.Log, options: ReportOptions = ReportOptions(), mapper: Mapper = map) -> metrics.Report:
    """The report of the records in `log` (read by `state.goodputlogs`, or a simulation's in memory); the log's
    events are consumed (each job's leave it as it is accounted); the jobs are accounted by `mapper`. A report
    without --window rows or timelines reads no job's intervals once its account is made: each leaves them there
    (`travelling`), so they are never all held at once (about 17 bytes an event)."""
    reads_intervals = options.windows or options.keep_timelines
    travel = None if reads_intervals else (options.period, TRAVEL_MIN_INTERVALS)
    timelines = options.keep_timelines > 0
    accounts = account_log(log, options.since, options.until, options.spans, timelines, mapper, travel)
    return from_accounts(accounts, log, options)


def account_log(
    log: events.Log,
    since: float | None,
    until: float | None,
    spans: list[tuple[float, float]],
    timelines: bool,
    mapper: Mapper = map,
    travel: Travel = None,
) -> list[JobAccount]:
    """Each job's account, in job order (the log's events consumed): the part of a report that can be made of
    any set of whole jobs apart (`from_accounts` takes the accounts of all of them, in job order). A job that ran
    wholly outside --since/--until has an account too (`in_part` False), for the whole log's busiest moment.
    With `travel` (the report's --period and the fewest intervals worth it), each job's intervals leave its account
    once it is made (`travelling`). Each job's events leave the log once accounted, so the two are not held at once
    (those of jobs a `mapper` accounts in other processes stay here until the end: about half, forked)."""
    eventrecords.fold_slices(log)
    for job, job_events in log.events.items():
        if job not in log.jobs:  # (a job with events was admitted with them)
            log.jobs[job] = events.Job(job, chips=_largest_allocation(job_events), inferred=True)

    def accounted(job_id: str) -> JobAccount:
        a = _compact(_account_job(log, log.events.pop(job_id), job_id, since, until, spans), timelines)
        return a if travel is None else travelling([a], *travel)[0]

    accounts = list(mapper(accounted, sorted(log.events)))
    log.events.clear()  # (those a mapper accounted in other processes are still here)
    return accounts


def travelling(accounts: list[JobAccount], period: str | None, fewest: int = 0) -> list[JobAccount]:
    """The accounts as a cluster's worker hands them back for a report without --window rows or timelines: each
    job's intervals (17 bytes each, about one a step) replaced by all the report reads of them, its all-allocated
    runs (the capacity check's) and with a `period` its TERMS in each period (`JobAccount.part_held`). A job with
    fewer intervals than the periods it spans keeps them: they are the smaller, and its TERMS would cost a Python
    step a period (a job submitted years before it ran, say); so does one with fewer than `fewest` (the report made
    here keeps small jobs' intervals: dropping them saves little and costs a third of a millisecond a job)."""
    import numpy as np

    for a in accounts:
        if a.starts is None or len(a.starts) < max(fewest, _periods_spanned(a, period)):
            continue
        if period is not None:
            try:
                bounds = metrics.period_bounds(a.start, a.end, period)
            except BadInput:  # too many periods: the report refuses them, from the intervals as before
                continue
            # (a job of one instant lies in no period: no bounds, no terms)
            lo, hi = (np.array([edges[k] for edges in bounds], dtype=float) for k in (0, 1))
            a.window_terms = chiptime.job_window_terms(a, lo, hi)
        a.part_held = capacityfit.held_runs(a)
        a.starts = a.ends = a.labels = None
    return accounts


TRAVEL_MIN_INTERVALS = 1024  # 17 KiB of intervals: a job with fewer keeps them in a report made here (`from_log`)


def _periods_spanned(a: JobAccount, period: str | None) -> float:
    """About how many --period rows the job's span touches (one more than fit in it); 0 without --period."""
    return 0.0 if period is None else (a.end - a.start) / (WEEK if period == "week" else DAY) + 1


def _largest_allocation(columns: events.EventColumns) -> int:
    """The chips of a job that has no record: the most its allocation events give it (it is all-allocated while
    it holds them), else 1. Counting it as 1 chip undercounted its chip-time by the size of its allocations."""
    import numpy as np

    chips = np.frombuffer(columns.chips, dtype=np.int64)[np.frombuffer(columns.code, dtype=np.int8) == _ALLOCATION]
    return max(1, int(chips.max())) if len(chips) else 1


_ALLOCATION = events.CODE["allocation"]


class NoJobEvents(BadInput):
    """Nothing to report: no job has events (in the window); the caller names the input."""


def from_accounts(accounts: list[JobAccount], log: events.Log, options: ReportOptions) -> metrics.Report:
    """The report of every job's account (in job order); `log` gives the capacity records and the counts."""
    everyone, accounts = accounts, [a for a in accounts if a.in_part]
    since, until, keep_timelines = options.since, options.until, options.keep_timelines
    windowed = since is not None or until is not None
    if not everyone and (options.capacity or not log.capacity):
        raise NoJobEvents("no job events in the input" + (" inside --since/--until" if windowed else ""))
    records = [] if options.capacity else log.capacity  # (--capacity: the records are not used)
    # the window's part of the time the data spans (jobs and records): the logs say nothing of the time past
    # them, so a --since/--until reaching beyond them charged capacity there (SG of a day's span of an hour's
    # logs a 24th of its --period row's)
    t0, t1 = data_span(everyone, records)
    t0, t1 = max(t0, since if since is not None else t0), min(t1, until if until is not None else t1)
    # no job in the window, nor any time of the data; or a window meeting the data at one instant alone (--since
    # at the logs' last time): it reported every job touching that instant with no figure, exit 0
    if (not accounts or windowed) and t1 <= t0:
        where = " inside --since/--until" if windowed else ""
        spans = "the logs span" if everyone else "its capacity records span"
        raise NoJobEvents(f"no job events in the input{where}, and {spans} no time there")
    if t1 < t0:  # every job outside the window, seen in it only by events outside its own span
        raise NoJobEvents("no job events in the input inside --since/--until")
    given = _named_as_logged(options.capacity, options.capacity_aliases, everyone)
    fleet_capacity, basis = _capacity(log, given, everyone, t0)
    counted, left_out = accounts, list[str]()
    if basis != "peak-allocation":  # (the busiest moment's chips fit, and name every accelerator holding any)
        capacityfit.check(accounts, fleet_capacity)
        counted, left_out = _covered(accounts, fleet_capacity)
    windows, by = list(options.windows), list(options.by)
    result = metrics.report(accounts, fleet_capacity, t0, t1, by, options.period, windows, options.spans, counted)
    result["exclusions"] = [{"start": x.start, "end": x.end, "reason": x.reason} for x in options.exclusions]
    result["fleet"]["capacity_basis"] = basis
    result["fleet"]["accelerators_without_capacity"] = left_out
    if keep_timelines:
        result["timelines"] = timelines(accounts, result["jobs"], keep_timelines)
    outside = sum(a.outside for a in accounts)
    result["input"] = {
        "records": log.records,
        "skipped": log.skipped,
        "cut_off": [{"file": name, "line": line} for name, line in log.cut_off],
        "events_outside_jobs": outside,
        "events_repeated": sum(a.repeated for a in accounts),
        "capacity_records": len(log.capacity),  # read; `capacity_basis` says whether they were used
        "jobs_without_record": [a.job.id for a in accounts if a.job.inferred],
    }
    return result
