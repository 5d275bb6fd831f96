"""A job's labelled timeline tallied into its account (pure, numpy): which instants it holds all its chips,
and its figures over the part reported: seconds by label, productive steps, disruptions, checkpoint saves and
interval, the restart overhead, and the steps PG counts in a part.

Apart from `timeline`, which cuts the job's time into elementary intervals and labels them: this module only
counts what the labels and the allocations say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpufleet.goodput.compiledaccount import counted_steps, searchsorted, tally
from tpufleet.goodput.events import CODE, Job
from tpufleet.goodput.jobaccount import BUCKETS, LABEL, PRODUCTIVE, JobAccount
from tpufleet.goodput.steps import Events, Steps
from tpufleet.goodput.windows import overlap

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Times = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]
    Bools = npt.NDArray[np.bool_]


# the buckets a restart costs (the "u0" of the checkpoint-interval advice)
RESTART_COST = (
    "infrastructure_recovery_from_disruption",
    "tpu_initialization",
    "training_prep",
    "program_startup",
    "checkpoint_restore",
)


def allocated(job: Job, ev: Events, bounds: Times, begin: float) -> npt.NDArray[np.bool_]:
    """Which elementary intervals have all the job's chips: from allocation events, else from the first start;
    never between a `job_end` and the next `job_start` with no allocation logged since that end (`_ended`)."""
    import numpy as np

    alloc_at = ev.where("allocation")
    if len(alloc_at):
        a_t, a_v = ev.t[alloc_at], ev.chips[alloc_at]
        idx = np.searchsorted(a_t, bounds[:-1], side="right") - 1
        held = np.where(idx >= 0, a_v[np.maximum(idx, 0)], 0)
        full: npt.NDArray[np.bool_] = held >= job.chips
    else:
        full = bounds[:-1] >= begin
    return full & ~_ended(ev, bounds[:-1])


def _ended(ev: Events, lefts: Times) -> npt.NDArray[np.bool_]:
    """Which intervals (by their left bound) lie after a `job_end` and before a later `job_start` (in log order
    at one instant) with no `allocation` logged at or after that end: a job that has ended holds nothing until
    it is allocated or started again (charging that gap as all-allocated time put it in SG and in `other`).
    Events after an end that no start follows are the job's still, as before."""
    import numpy as np

    m_t, m_end = run_marks(ev)
    out = np.zeros(len(lefts), dtype=bool)
    starts = np.flatnonzero(~m_end)
    if not len(starts) or not m_end[: starts[-1]].any():  # no end before a later start: no gap
        return out
    k = np.searchsorted(m_t, lefts, side="right") - 1
    after_end = (k >= 0) & m_end[np.maximum(k, 0)] & (k < starts[-1])
    a_t = ev.at("allocation")
    j = np.searchsorted(a_t, lefts, side="right") - 1
    reallocated = (j >= 0) & (np.append(a_t, -np.inf)[j] >= m_t[np.maximum(k, 0)])
    out[:] = after_end & ~reallocated
    return out


def run_marks(ev: Events) -> tuple[Times, npt.NDArray[np.bool_]]:
    """The times of the job's starts and ends, in log order, and which of them are ends."""
    import numpy as np

    marks = np.sort(np.concatenate([ev.where("job_start"), ev.where("job_end")]))
    is_end: npt.NDArray[np.bool_] = ev.code[marks] == CODE["job_end"]
    times: Times = ev.t[marks]
    return times, is_end


def finish(
    job: Job,
    ev: Events,
    steps: Steps,
    intervals: dict[str, list[tuple[Times, Times]]],
    bounds: Times,
    label: Ints,
    times: tuple[float, float, float],
    disrupt: Times,
    outside: int,
    inferred: Times,
    spans: list[tuple[float, float]],
) -> JobAccount:
    import numpy as np

    start, end, begin_all = times  # the part's start and end, the job's first start
    run = allocated(job, ev, bounds, begin_all)
    use, sums, all_allocated_s, whole, excluded_s = _tallied(bounds, label, run, (start, end), spans)
    ck_starts = _within(ev.at("checkpoint_start"), start, end)
    interval = _checkpoint_interval(ck_starts, np.sort(np.concatenate([ev.at("job_start"), disrupt])))
    disrupt = _within(disrupt, start, end)
    restart_cost = sum(float(sums[LABEL[b]]) for b in RESTART_COST)
    saves, save_s = _saves_inside(intervals["checkpoint_save"], start, end)
    return JobAccount(
        job=job,
        start=start,
        end=end,
        # demand from the job's start: the first of its submission, allocation and start, not `submitted` alone
        # (logged after the job held chips, by another clock, it made SG above 1)
        demand_s=max(0.0, end - start - overlap(spans, start, end)),
        all_allocated_s=all_allocated_s,
        productive_s=float(sums[PRODUCTIVE]),
        buckets={b: float(sums[i + 1]) for i, b in enumerate(BUCKETS)},
        productive_steps=_productive_steps(steps, bounds, use, end),
        disruptions=len(disrupt),
        checkpoint_saves=saves,
        checkpoint_save_s=save_s,
        checkpoint_interval_s=interval,
        restart_overhead_s=restart_cost / (len(disrupt) + 1),
        starts=bounds[:-1][use],
        ends=bounds[1:][use],
        labels=label[use],
        outside=outside,
        inferred_disruptions=len(_within(inferred, start, end)),
        disruption_times=disrupt,
        step_starts=steps.st,
        step_ends=steps.end,
        step_numbers=steps.sn,
        step_productive=steps.productive,
        excluded_s=excluded_s,
        checkpoint_starts=ck_starts,
        # a part (cut by --since/--until, or with time excluded) gets the whole run's PG, exclusions and all: a step
        # begun before an exclusion and counted whole beside only its time outside made PG above 1
        pg_steps=None
        if whole and not excluded_s
        else _steps_share(steps, bounds, run & (np.diff(bounds) > 0), label, float(sums[PRODUCTIVE])),
    )


def _tallied(
    bounds: Times, label: Ints, run: Bools, part: tuple[float, float], spans: list[tuple[float, float]]
) -> tuple[Bools, Times, float, bool, float]:
    """The elementary intervals counted (all-allocated, not excluded, of some length, in the `part`), their
    seconds by label and in all, whether every interval is in the part, and the all-allocated seconds the
    exclusions (`spans`) take from it."""
    import numpy as np

    bins = len(BUCKETS) + 1
    tallied = None if spans else tally(bounds, label, run, part, bins)
    if tallied is not None:
        use, sums, total, whole = tallied
        return use, sums, total, whole, 0.0
    inside = (bounds[:-1] >= part[0]) & (bounds[1:] <= part[1])  # the elementary intervals inside the part
    full, excluded_s = not_excluded(run, bounds, spans, inside)
    dur = np.diff(bounds)
    use = full & (dur > 0) & inside  # (full & dur > 0: the whole timeline's all-allocated intervals)
    by_label: Times = np.bincount(label[use], weights=dur[use], minlength=bins).astype(np.float64, copy=False)
    return use, by_label, float(dur[use].sum()), bool(inside.all()), excluded_s


def _saves_inside(saves: list[tuple[Times, Times]], lo: float, hi: float) -> tuple[int, float]:
    """How many checkpoint saves start in [lo, hi], and their seconds: the same saves for both, so that the
    advice's mean write cost is theirs (saves counted by their end but timed by their start gave a part that a
    save straddles a mean of 0 s, or twice the cost)."""
    count, seconds = 0, 0.0
    for s, e in saves:
        inside = (s >= lo) & (s <= hi)
        count += int(inside.sum())
        seconds += float((e - s)[inside].sum())
    return count, seconds


def _checkpoint_interval(ck_starts: Times, breaks: Times) -> float | None:
    """The mean time between consecutive checkpoint starts of one run: a gap holding a restart or a disruption
    also holds the time the job was down or waiting to be placed again, which is not the interval it saves at."""
    import numpy as np

    if len(ck_starts) < 2:
        return None
    a, b = ck_starts[:-1], ck_starts[1:]
    same_run = np.searchsorted(breaks, b, side="right") == np.searchsorted(breaks, a, side="right")
    return float((b - a)[same_run].mean()) if same_run.any() else None


def _within(times: Times, lo: float, hi: float) -> Times:
    """The times in [lo, hi] (all of a job's events when the part is the whole job)."""
    inside: Times = times[(times >= lo) & (times <= hi)]
    return inside


def _steps_share(steps: Steps, bounds: Times, held: npt.NDArray[np.bool_], label: Ints, productive_s: float) -> float:
    """A part's productive steps for PG: the whole run's, in the share of its productive time the part holds, as
    period and window rows share a job's ideal time out (`chiptime._scaled`): the part's PG is the whole run's."""
    import numpy as np

    dur = np.diff(bounds)
    whole = float(np.bincount(label[held], weights=dur[held], minlength=len(BUCKETS) + 1)[PRODUCTIVE])
    counted = _productive_steps(steps, bounds, held, float(bounds[-1]))
    return counted * productive_s / whole if whole > 0 else 0.0


def not_excluded(
    full: npt.NDArray[np.bool_], bounds: Times, spans: list[tuple[float, float]], part: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.bool_], float]:
    """`full` without the intervals inside exclusions (their instants count nowhere; their boundaries are among
    the bounds), and the all-allocated seconds so left out in the `part`."""
    import numpy as np

    if not spans:
        return full, 0.0
    lo, hi = np.array([a for a, _ in spans]), np.array([b for _, b in spans])
    k = np.searchsorted(lo, bounds[:-1], side="right") - 1
    inside = (k >= 0) & (bounds[:-1] < hi[np.maximum(k, 0)])
    return full & ~inside, float(np.diff(bounds)[full & inside & part].sum())


def _productive_steps(steps: Steps, bounds: Times, use: npt.NDArray[np.bool_], end: float) -> int:
    """Productive steps starting in a counted interval before the end. A step a disruption or restart stops at the
    instant it starts did no work: it is not counted (each one added an ideal step with no time, PG 1.5 where it
    was 1.0); steps logged at one instant, by a clock coarser than the steps, each have a next step and count."""
    import numpy as np

    m = len(bounds) - 1
    if not len(steps.st) or not m:
        return 0
    counted = counted_steps(bounds, (steps.st, steps.end, steps.complete, steps.productive), use, end)
    if counted is not None:
        return counted
    pos = np.clip(searchsorted(bounds, steps.st, "right") - 1, 0, m - 1)
    ran = (steps.end > steps.st) | steps.complete
    return int(np.count_nonzero(steps.productive & ran & use[pos] & (steps.st < end)))
