"""The goodput figures of a run (SG, RG, PG, MPG for the fleet and by job size), worked out from the run's own
event tuples in one pass per job: the numbers `goodput-report` gives on the run's events, without writing,
re-reading or labelling every instant of them (that took half of a 16-pod run).

Each job's figures follow the accounting of `tpufleet.goodput.timeline` restricted to what the simulator writes:

* the job spans its submission to its last ``job_end`` (else its last event); its demand is that span;
* it is all-allocated while its last ``allocation`` holds all its chips;
* a step runs from its ``step_start`` to the next step start, the first restart, disruption or end after it (a
  disruption at the same instant ends it, and such a step did no work: it is no productive step), or the job's
  end; a training step is wasted if its step number is logged again later (by a later run, or its own going
  back), or if a disruption ends its run (the job recording checkpoints) and no checkpoint of that run saved it;
* productive time is the productive steps' all-allocated time outside every paired activity (start-up stages,
  checkpoint saves and restores), each of which runs from its ``*_start`` to the first matching end after it in
  the log, the first restart, disruption or end after it, or the job's end.

The times are milliseconds on 2026's POSIX seconds: every time, difference and sum of differences here is a
multiple of 2**-22 s below 2**31 s, so exact in float64 whatever the order of summing, and the per-job figures
equal the report's to the bit; the fleet's sums are then taken in the report's order. A job whose events fall
outside that shape (out of time order, stray entries, a restart with no disruption logged, steps with no compile
stage) is handed to `tpufleet.goodput.timeline.account` itself. A test compares both paths on whole runs.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise
from operator import lt, sub
from typing import Any

from tpufleet.goodput import eventrecords
from tpufleet.goodput import events as goodput_events
from tpufleet.goodput.chiptime import capacity_chip_s
from tpufleet.goodput.metrics import factors, ratio, size_class
from tpufleet.simulation.log import Entry, EventTuple

INF = math.inf
# Paired activities (start, end): all rank above productive time, so their time is never productive.
PAIR_OF_START = {
    "tpu_init_start": "tpu_init_end",
    "training_prep_start": "training_prep_end",
    "compile_start": "compile_end",
    "data_loading_start": "data_loading_end",
    "checkpoint_start": "checkpoint_end",
    "restore_start": "restore_end",
    "custom_badput_start": "custom_badput_end",
    "elastic_slice_down_start": "elastic_slice_down_end",
    "elastic_scale_up_start": "elastic_scale_up_end",
    "elastic_reinit_start": "elastic_reinit_end",
}
PAIR_ENDS = frozenset(PAIR_OF_START.values())
Interval = tuple[float, float]


@dataclass(frozen=True)
class JobFigures:
    """What the fleet and segment factors need of one job (`jobaccount.JobAccount`'s fields of the same names)."""

    start: float
    end: float
    demand_s: float
    all_allocated_s: float
    productive_s: float
    productive_steps: int


def job_figures(events: Sequence[EventTuple], chips: int, training: bool) -> JobFigures | None:
    """One job's figures from its events in log order; None if they are not in the shape the simulator writes."""
    times = [e[1] for e in events]
    if times != sorted(times):
        return None  # out of time order: the report sorts them
    st = [e[1] for e in events if e[2] == "step_start"]
    sn: list[int] = [e[3] for e in events if e[2] == "step_start"]  # type: ignore[misc]  # None: refused below
    starts, ends, explicit, allocs, saves, pairs, submitted = _collect([e for e in events if e[2] != "step_start"])
    if None in sn or (st and not pairs.get("compile_start")):
        return None  # a step without its number; or the report would infer program start-up from the steps
    if ends and starts and ends[0] < starts[-1]:
        return None  # a restart after an end: the report's restart-or-end lookups assume them in order
    start = min(starts[0], *(submitted[:1]), *(t for t, _ in allocs[:1])) if starts else times[0]
    end = max(ends[-1] if ends else times[-1], start)
    if times[0] < start or times[-1] > end:
        return None  # stray entries, dropped by the report
    drains = [e[1] for e in events if e[2] == "drain"]  # planned stops: a run ends there, no disruption
    stops = sorted({*starts, *ends, *explicit, *drains, end})
    if _restarts_without_disruption(starts, st, sorted({*ends, *explicit, *drains})):
        return None
    begin = starts[0] if starts else start  # all-allocated from here when no allocation is logged
    allocated = _allocated(allocs, chips, begin, start, end)
    steps = _Steps(st, sn, _step_ends(st, stops, sorted({*explicit, *drains}), end), training)
    cuts = sorted({*starts, *ends, *explicit, *(t for t, _ in allocs), end})
    for lo, hi in _pieces(st, cuts):
        limit = _limit(steps, lo, starts, ends, explicit, saves) if training else INF
        counts = st[lo] < end and (_held(allocs, st[lo], chips) if allocs else st[lo] >= begin)
        steps.add(lo, hi, limit, counts)
    nonfree = _minus(
        [(start, end)] if end > start else [], _minus(allocated, _merge(_pair_intervals(pairs, stops, start, end)))
    )
    submit_t = submitted[0] if submitted else start
    return JobFigures(
        start=start,
        end=end,
        demand_s=max(0.0, end - submit_t),
        all_allocated_s=sum(b - a for a, b in allocated),
        productive_s=steps.productive_s - steps.inside(nonfree),
        productive_steps=steps.counted,
    )


class _Steps:
    """A job's steps (start, number, end) taken piece by piece: within a piece every step has the same run,
    disruption ahead and allocation, so whether it is productive is one threshold on its number, and (training)
    its number below every step number logged after it (else it is done again: wasted)."""

    def __init__(self, st: list[float], sn: list[int], ends: list[float], training: bool) -> None:
        self.st, self.sn, self.ends = st, sn, ends
        lowest = list(accumulate(reversed(sn), min)) if training else []  # lowest[k]: of the last k + 1 steps
        self.after: list[float] = [*reversed(lowest[:-1]), INF] if lowest else [INF] * len(sn)
        self.piece_lo: list[int] = []
        self.piece_limit: list[float] = []  # steps numbered below it are productive
        self.productive_s = 0.0
        self.counted = 0

    def add(self, lo: int, hi: int, limit: float, counts: bool) -> None:
        self.piece_lo.append(lo)
        self.piece_limit.append(limit)
        sn, after = self.sn, self.after
        if max(sn[lo:hi]) < limit and all(map(lt, sn[lo:hi], after[lo:hi])):
            spans = list(map(sub, self.ends[lo:hi], self.st[lo:hi]))
            self.productive_s += sum(spans)
            self.counted += hi - lo - self._idle(lo, spans) if counts else 0
            return
        for i in range(lo, hi):
            if sn[i] < limit and sn[i] < after[i]:
                self.productive_s += self.ends[i] - self.st[i]
                self.counted += 1 if counts and not self._idle(i, [self.ends[i] - self.st[i]]) else 0

    def _idle(self, lo: int, spans: list[float]) -> int:
        """How many of the steps from `lo` (their `spans`) a stop ended at the instant they started: they did no
        work and are not counted, as the report does not (one at the next step's instant is a step)."""
        if 0.0 not in spans:  # (the common case, at C speed)
            return 0
        st = self.st
        return sum(1 for k, span in enumerate(spans, lo) if span == 0.0 and (k + 1 == len(st) or st[k + 1] > st[k]))

    def productive(self, i: int) -> bool:
        return self.sn[i] < min(self.after[i], self.piece_limit[bisect_right(self.piece_lo, i) - 1])

    def inside(self, spans: list[Interval]) -> float:
        """Productive step time inside the sorted disjoint spans."""
        st, ends, total = self.st, self.ends, 0.0
        for a, b in spans:
            i = max(bisect_right(st, a) - 1, 0)
            while i < len(st) and st[i] < b:
                overlap = min(b, ends[i]) - max(a, st[i])
                if overlap > 0 and self.productive(i):
                    total += overlap
                i += 1
        return total


def _pieces(st: list[float], cuts: list[float]) -> Iterator[tuple[int, int]]:
    """Index ranges of the steps between successive cut times (a step at a cut starts the next range)."""
    bounds = [0, *(bisect_left(st, x) for x in cuts), len(st)]
    for lo, hi in pairwise(bounds):
        if hi > lo:
            yield lo, hi


def _limit(
    steps: _Steps,
    lo: int,
    starts: list[float],
    ends: list[float],
    explicit: list[float],
    saves: list[tuple[float, int]],
) -> float:
    """Training: the step number from which the piece's steps are wasted when a disruption ends their run and the
    job records checkpoints, not saved in it (a step done again later is wasted too: `_Steps.after`)."""
    s0 = steps.st[lo]
    run = bisect_right(starts, s0)
    limit: float = INF
    if saves and explicit:
        cut = _first_after(explicit, s0)
        if cut < _first_after(sorted([*starts, *ends]), s0):
            run_start = starts[run - 1] if run > 0 else -INF
            saved = max((step for t, step in saves if run_start <= t <= cut), default=-1)
            limit = min(limit, saved + 1)
    return limit


def _collect(
    events: Sequence[EventTuple],
) -> tuple[
    list[float],
    list[float],
    list[float],
    list[tuple[float, int]],
    list[tuple[float, int]],
    dict[str, list[Interval]],
    list[float],
]:
    """The job's events other than steps sorted into kinds; each paired start with the time of the first matching
    end after it in the log (inf if none)."""
    starts: list[float] = []
    ends: list[float] = []
    explicit: list[float] = []
    allocs: list[tuple[float, int]] = []
    saves: list[tuple[float, int]] = []
    submitted: list[float] = []
    pairs: dict[str, list[Interval]] = {}
    open_starts: dict[str, list[float]] = {}  # end name -> starts still waiting for it
    for _, t, name, step, chips in events:
        if name in PAIR_OF_START:
            open_starts.setdefault(PAIR_OF_START[name], []).append(t)
            pairs.setdefault(name, [])
        elif name in PAIR_ENDS:
            if name == "checkpoint_end":
                saves.append((t, -1 if step is None else step))
            waiting = open_starts.pop(name, None)
            if waiting:
                pairs[_START_OF_END[name]].extend((s, t) for s in waiting)
        elif name == "allocation":
            allocs.append((t, -1 if chips is None else chips))
        elif name == "job_start":
            starts.append(t)
        elif name == "job_end":
            ends.append(t)
        elif name in goodput_events.DISRUPTIONS:
            explicit.append(t)
        elif name == "submitted":
            submitted.append(t)
    for end_name, waiting in open_starts.items():
        pairs[_START_OF_END[end_name]].extend((s, INF) for s in waiting)
    return starts, ends, explicit, allocs, saves, pairs, submitted


_START_OF_END = {end: start for start, end in PAIR_OF_START.items()}


def _first_after(times: list[float], x: float) -> float:
    i = bisect_right(times, x)
    return times[i] if i < len(times) else INF


def _restarts_without_disruption(starts: list[float], st: list[float], marks: list[float]) -> bool:
    """Whether a restart follows its run's steps with no disruption or end logged since the last of them (the
    report then infers a disruption)."""
    for k in range(1, len(starts)):
        r_t = starts[k]
        last = bisect_left(st, r_t) - 1
        if last < 0 or bisect_right(starts, st[last]) != k:
            continue
        if bisect_left(marks, st[last]) >= bisect_right(marks, r_t):
            return True
    return False


def _step_ends(st: list[float], stops: list[float], explicit: list[float], end: float) -> list[float]:
    """Each step's end: the next step, the first stop after it, a disruption at its very start, or the job's
    end. Only the steps just before a stop (or at a disruption, or at the end) end other than at the next step."""
    ends = [*st[1:], INF] if st else []
    for x in stops:
        i = bisect_left(st, x) - 1  # the last step before the stop
        if i >= 0 and ends[i] > x:
            ends[i] = x
    for x in explicit:
        for i in range(bisect_left(st, x), bisect_right(st, x)):
            ends[i] = x
    for i in range(bisect_left(st, end), len(st)):
        ends[i] = min(ends[i], end)
    return ends


def _pair_intervals(pairs: dict[str, list[Interval]], stops: list[float], start: float, end: float) -> list[Interval]:
    out = []
    for intervals in pairs.values():
        for s, matched in intervals:
            e = min(matched, _first_after(stops, s), end)
            s, e = min(max(s, start), end), min(max(e, start), end)
            if e > s:
                out.append((s, e))
    return out


def _merge(intervals: list[Interval]) -> list[Interval]:
    """The union as sorted disjoint intervals."""
    out: list[Interval] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _allocated(allocs: list[tuple[float, int]], chips: int, begin: float, lo: float, hi: float) -> list[Interval]:
    """The job's all-allocated time inside [lo, hi], as sorted disjoint intervals: from its allocation events (the
    last at an instant holds from it), or without any from `begin`, its first start."""
    if not allocs:
        return [(max(begin, lo), hi)] if hi > max(begin, lo) else []
    out: list[Interval] = []
    for i, (t, held) in enumerate(allocs):
        if held < chips:
            continue
        nxt = allocs[i + 1][0] if i + 1 < len(allocs) else INF
        s, e = max(t, lo), min(nxt, hi)
        if e > s:
            if out and out[-1][1] == s:
                out[-1] = (out[-1][0], e)
            else:
                out.append((s, e))
    return out


def _held(allocs: list[tuple[float, int]], t: float, chips: int) -> bool:
    """Whether the last allocation at or before t holds all the job's chips."""
    i = bisect_right(allocs, (t, math.inf)) - 1
    return i >= 0 and allocs[i][1] >= chips


def _minus(keep: list[Interval], drop: list[Interval]) -> list[Interval]:
    """Sorted disjoint `keep` less sorted disjoint `drop`."""
    out: list[Interval] = []
    j = 0
    for s, e in keep:
        while j < len(drop) and drop[j][1] <= s:
            j += 1
        k, cur = j, s
        while k < len(drop) and drop[k][0] < e:
            if drop[k][0] > cur:
                out.append((cur, drop[k][0]))
            cur = max(cur, drop[k][1])
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


# ---- the run's figures ----------------------------------------------------------------------------------------
def goodput(
    entries: Iterable[Entry], by_job: dict[str, list[EventTuple]] | None = None, multislice: Collection[str] = ()
) -> dict[str, Any]:
    """SG, RG, PG and MPG of the fleet, and the same by job size (``segments``), as `goodput-report --by size`
    gives them for these records; `by_job`: their events grouped by job when the caller has them so. With the ids
    of the `multislice` jobs, also their factors and the other jobs' (``kinds``)."""
    entries = list(entries)
    log = goodput_events.Log()
    group = by_job is None
    by_job = {} if by_job is None else by_job
    for line, entry in enumerate(entries, start=1):
        if isinstance(entry, dict) and entry.get("type") == "event" and entry.get("event") != "slice_counts":
            entry = (entry["job"], entry["time"], entry["event"], entry.get("step"), entry.get("chips"))
        if not isinstance(entry, tuple):
            eventrecords.add_record(log, entry, "<simulation>", line)
        elif group:
            by_job.setdefault(entry[0], []).append(entry)
    if not by_job:  # no job arrived (no load, or too short a run): the fleet stood idle, SG 0; nothing else to measure
        times = [record[0] for record in log.capacity]
        capacity = capacity_chip_s(log.capacity, None, min(times), max(times)) if times else None
        return {"fleet": _factors([], capacity), "segments": [], "kinds": None}
    jobs = [log.jobs.get(job_id) or goodput_events.Job(job_id) for job_id in sorted(by_job)]
    if not log.capacity or any(job.ideal_step_s is None for job in jobs):
        return by_the_report(entries)  # peak-allocation capacity, estimated ideal steps: not worked out here
    accounts = [(job, _figures_of(job, by_job[job.id])) for job in jobs]
    from tpufleet.goodput.pipeline import data_span

    t0, t1 = data_span([f for _, f in accounts], log.capacity)  # the report's span
    capacity = capacity_chip_s(log.capacity, None, t0, t1) if log.capacity else None
    fleet = _factors(accounts, capacity)
    groups: dict[str, list[tuple[goodput_events.Job, JobFigures]]] = {}
    for job, figures in accounts:
        groups.setdefault(size_class(job.chips), []).append((job, figures))
    segments = [{"value": value, **_factors(groups[value], None)} for value in sorted(groups)]
    kinds = {
        "multislice": _factors([(j, f) for j, f in accounts if j.id in multislice], None),
        "single_slice": _factors([(j, f) for j, f in accounts if j.id not in multislice], None),
    }
    return {"fleet": fleet, "segments": segments, "kinds": kinds}


def _figures_of(job: goodput_events.Job, events: list[EventTuple]) -> JobFigures:
    figures = job_figures(events, job.chips, job.phase == "training")
    return _account(job, events) if figures is None else figures


def _account(job: goodput_events.Job, events: list[EventTuple]) -> JobFigures:
    """The job's figures from `timeline.account` itself (events the shortcut does not vouch for)."""
    from tpufleet.goodput.timeline import account

    columns = goodput_events.EventColumns()
    code = goodput_events.CODE
    for _, t, name, step, chips in events:
        columns.append(t, code[name], -1 if step is None else step, -1 if chips is None else chips)
    a = account(job, columns)
    return JobFigures(a.start, a.end, a.demand_s, a.all_allocated_s, a.productive_s, a.productive_steps)


def _factors(accounts: list[tuple[goodput_events.Job, JobFigures]], capacity_s: float | None) -> dict[str, Any]:
    """`goodput.metrics`' fleet and segment factors, summed in the same order with the same expressions."""
    all_alloc = sum(f.all_allocated_s * j.chips for j, f in accounts)
    productive = sum(f.productive_s * j.chips for j, f in accounts)
    demand = sum(f.demand_s * j.chips for j, f in accounts)
    with_pg = [(j, f, j.ideal_step_s * f.productive_steps) for j, f in accounts if j.ideal_step_s is not None]
    ideal = sum(ideal_s * j.chips for j, _, ideal_s in with_pg)
    prod_pg = sum(f.productive_s * j.chips for j, f, _ in with_pg)
    sg = ratio(all_alloc, capacity_s if capacity_s is not None else demand)
    pg = ratio(ideal, prod_pg) if with_pg else None
    return {**factors(sg, ratio(productive, all_alloc), pg), "jobs": len(accounts)}


def by_the_report(entries: Iterable[Entry]) -> dict[str, Any]:
    """The same figures through the goodput report itself (`pipeline.from_log` on the records in memory)."""
    from tpufleet.goodput.pipeline import ReportOptions, from_log

    log = goodput_events.Log()
    code = goodput_events.CODE
    for line, entry in enumerate(entries, start=1):
        if isinstance(entry, dict):
            eventrecords.add_record(log, entry, "<simulation>", line)
            continue
        job, t, name, step, chips = entry
        log.add_event(job, t, code[name], -1 if step is None else step, -1 if chips is None else chips)
        log.records += 1
    report = from_log(log, ReportOptions(by=["size"]))
    keys = ("sg", "rg", "pg", "mpg", "jobs")
    return {
        "fleet": {k: report["fleet"][k] for k in keys},
        "segments": [{"value": s["value"], **{k: s[k] for k in keys}} for s in report["segments"]],
        "kinds": None,  # the report has no multislice segment
    }
