"""One job's time, split exactly into productive time and badput buckets (pure, vectorized per job).

Every instant of the job's *all-allocated* time (all its chips held) gets exactly one label, the highest in
PRIORITY among the activities covering it, else ``other``; so productive time plus the buckets equals the
all-allocated time by construction. Rules:

* the job runs from its first ``job_start`` (or ``submitted``/``allocation`` if earlier) to its last ``job_end``
  (else its last event); entries stamped outside that span are dropped and counted (``outside``), so one stray
  timestamp cannot stretch a job over decades;
* it is all-allocated while its allocations hold all its chips (without any, from its first start), except from
  a ``job_end`` to the next ``job_start`` with no allocation logged since that end: an ended job holds nothing;
* paired activities (``*_start`` .. ``*_end``) end at the first end that follows them *in the log* (so a save
  starting at the instant the previous one ends gets its own end), or at the next restart, disruption or job
  end if the end is missing;
* a step runs from its ``step_start`` to the next step start, restart, disruption or job end;
* a restart (``job_start``) after steps with no ``failure``/``preemption``/``eviction`` or ``job_end`` since the
  last step is a disruption too (the rule of ml-goodput-measurement's GoodputCalculator 0.2.3): it happened at the
  start of that last step when the restart redoes it, else when the step would have ended (its start plus the
  run's median step, at most the restart; at its start when the run has one step, no median); infrastructure
  recovery runs from there to the restart;
* a training step is wasted if its work is lost (its step number, or a lower one, is logged later: by a later
  run, or by its own run going back to a checkpoint), or if an explicit disruption ends its run and no checkpoint
  saved it (a ``checkpoint_end`` of a step >= its number in that run before the disruption; this rule applies
  only when the job records checkpoints);
* program start-up is the ``compile_*`` time, or, when a job records none, the excess of the first step of each
  run over the mean of that run's other complete productive steps (as ml-goodput-measurement does), both net of
  the time other labels take inside the steps;
* infrastructure recovery runs from an explicit disruption to the next sign of life (restart, init, step, ...); a
  step starting at the disruption's instant is the step it interrupts, not a sign of life;
* an account of part of the log (``since``/``until``) is the whole timeline, labelled from every event of the log,
  cut to the part: a job running when the part opens is charged from there in the state it was in, and PG counts
  the run's productive steps in the share of its productive time the part holds (as the rolling windows do).

The buckets and the account are `jobaccount`'s; the labelled intervals are tallied into the account by
`jobfigures`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpufleet.goodput.compiledaccount import compiled_paint, distinct_sorted, pair_ends, searchsorted
from tpufleet.goodput.events import CODE, DISRUPTIONS, EventColumns, EventRecord, Job
from tpufleet.goodput.jobaccount import LABEL, JobAccount
from tpufleet.goodput.jobfigures import allocated, finish, not_excluded, run_marks
from tpufleet.goodput.steps import Events, columns, first_after, inferred, startup, steps_of

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Times = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]


PRIORITY = (
    "custom_badput_events",
    "checkpoint_save",
    "elastic_reinitialization",  # holds the init, prep and restore of an elastic retry (the package discounts them)
    "tpu_initialization",
    "training_prep",  # holds a restore made while preparing: the prep's whole span is prep (the package's figure)
    "checkpoint_restore",
    "elastic_slice_down",
    "elastic_scale_up",
    # lost time: a lost step's data loading was lost with it (the whole step is wasted), and so was the data
    # loading of the step a disruption cut, which is in recovery when the log places the disruption at its start
    "wasted_progress_from_disruption",
    "infrastructure_recovery_from_disruption",
    "data_loading_sync",
    "program_startup",
    "productive",
)
LOST = ("wasted_progress_from_disruption", "infrastructure_recovery_from_disruption")
# the labels a step's time is netted of before its start-up excess is measured (lost steps are never measured)
NETTED = tuple(p for p in PRIORITY[: PRIORITY.index("program_startup")] if p not in LOST)
PAIRS = {
    "tpu_initialization": ("tpu_init_start", "tpu_init_end"),
    "training_prep": ("training_prep_start", "training_prep_end"),
    "program_startup": ("compile_start", "compile_end"),
    "data_loading_sync": ("data_loading_start", "data_loading_end"),
    "checkpoint_save": ("checkpoint_start", "checkpoint_end"),
    "checkpoint_restore": ("restore_start", "restore_end"),
    "custom_badput_events": ("custom_badput_start", "custom_badput_end"),
    "elastic_slice_down": ("elastic_slice_down_start", "elastic_slice_down_end"),
    "elastic_scale_up": ("elastic_scale_up_start", "elastic_scale_up_end"),
    "elastic_reinitialization": ("elastic_reinit_start", "elastic_reinit_end"),
}
# signs of life after an explicit disruption; a step is one only when it starts after the disruption's instant: a
# step starting at that instant is the step the disruption interrupts (it ends there), not the job back at work
RESUME = (
    "job_start",
    "tpu_init_start",
    "training_prep_start",
    "compile_start",
    "restore_start",
    "elastic_reinit_start",
    "job_end",
)
# events that may precede the first job_start without being stray: the job waits for its chips
BEFORE_START = ("submitted", "allocation")


@dataclass
class _Span:
    start: float  # of the job's part in the window
    end: float
    whole: tuple[float, float]  # the job's span in the whole log: its timeline is labelled over all of it
    begin: float  # the job's first start in the whole log: all-allocated from here when no allocation is logged
    inside: npt.NDArray[np.bool_]  # events inside the job (the rest are stray)


def job_span(ev: Events) -> tuple[float, float]:
    """The job's span in the whole log: from its first ``job_start`` (or ``submitted``/``allocation`` if earlier)
    to its last ``job_end``, else its first and last events (a stray entry must not move the start)."""
    import numpy as np

    starts = ev.at("job_start")
    early = np.concatenate([starts, *(ev.at(n) for n in BEFORE_START)])
    start = float(early.min()) if len(starts) else float(ev.t.min())
    ends = ev.at("job_end")
    end = float(ends.max()) if len(ends) else float(ev.t.max())
    return start, end


def _span(ev: Events, since: float | None, until: float | None) -> _Span:
    """The job's span, judged on the whole log, and its part in the window [since, until]."""
    start, end = job_span(ev)
    inside = (ev.t >= start) & (ev.t <= end)
    starts = ev.at("job_start")
    # without a job_start, from its first event but `submitted` (`min(initial=start)` took the submission's time
    # too, so a job held its chips while it queued: SG 1 for a job that waited most of its time)
    later = ev.t[ev.code != CODE["submitted"]] if not len(starts) else starts  # (a pass over all: only if needed)
    begin = float(starts.min()) if len(starts) else float(later.min()) if len(later) else start
    lo = start if since is None else max(start, since)
    hi = end if until is None else min(end, until)
    return _Span(lo, max(hi, lo), (start, end), begin, inside)


def _paired(ev: Events, s_name: str, e_name: str, stops: Times, end: float) -> tuple[Times, Times]:
    """Each start with the first end after it in log order (not merely at or after its time), cut at the next
    restart, disruption or job end (`stops`, after it) and at the job's `end`."""
    import numpy as np

    s_pos, e_pos = ev.where(s_name), ev.where(e_name)
    compiled = pair_ends(ev.t, s_pos, e_pos, stops, end)
    if compiled is not None:
        return compiled
    j = np.searchsorted(e_pos, s_pos, side="right")
    ends = np.append(ev.t[e_pos], np.inf)[j]
    starts: Times = ev.t[s_pos]
    return starts, np.minimum(np.minimum(ends, first_after(stops, starts)), end)


def _distinct(values: Times) -> Times:
    """``np.unique(values)`` (NaNs as one), by a stable sort: the pieces `_label` joins are each in time order,
    which a merge sort takes in a few passes (3 M boundaries of a 1 M-entry log: 0.01 s, against 0.2 s)."""
    import numpy as np

    aux = np.sort(values, kind="stable")
    once = distinct_sorted(aux)
    if once is not None:
        return once
    keep = np.empty(len(aux), dtype=bool)
    keep[:1] = True
    np.not_equal(aux[1:], aux[:-1], out=keep[1:])
    if len(aux) and np.isnan(aux[-1]):
        first_nan = int(np.searchsorted(aux, aux[-1], side="left"))
        keep[first_nan] = True
        keep[first_nan + 1 :] = False
    distinct: Times = aux[keep]
    return distinct


def _label(
    start: float, end: float, t: Times, intervals: dict[str, list[tuple[Times, Times]]], cuts: list[float]
) -> tuple[Times, Ints]:
    """Elementary intervals over every boundary, labelled by the highest-priority cover."""
    import numpy as np

    pieces: list[npt.ArrayLike] = [
        t,
        [start, end],
        cuts,
        *(x for lst in intervals.values() for pair in lst for x in pair),
    ]
    bounds = _distinct(np.clip(np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in pieces]), start, end))
    m = len(bounds) - 1
    label: Ints = np.full(m, LABEL["other"], dtype=np.int64)
    if compiled_paint(bounds, start, end, [(LABEL[name], intervals[name]) for name in reversed(PRIORITY)], label):
        return bounds, label
    for name in reversed(PRIORITY):  # each label painted over the lower ones: the highest cover wins
        pairs = intervals[name]
        if not pairs:
            continue
        s = np.clip(np.concatenate([s for s, _ in pairs]), start, end)
        e = np.clip(np.concatenate([e for _, e in pairs]), start, end)
        keep = e > s
        depth = np.bincount(np.searchsorted(bounds, s[keep]), minlength=m + 1)
        depth -= np.bincount(np.searchsorted(bounds, e[keep]), minlength=m + 1)
        label[np.cumsum(depth[:m]) > 0] = LABEL[name]
    return bounds, label


def account(
    job: Job,
    records: Sequence[EventRecord] | EventColumns | Events,
    until: float | None = None,
    since: float | None = None,
    exclude: list[tuple[float, float]] | None = None,
) -> JobAccount:
    """Split one job's events into productive time and buckets: its whole timeline, labelled from every event
    of the log, then cut to [since, until] when given (a job running when the window opens is charged from
    `since` in the state it was in; figures as the rolling windows give them for the same span)."""
    import numpy as np

    ev = records if isinstance(records, Events) else columns(records)
    ev, repeated = ev.without_repeats()
    span = _span(ev, since, until)
    start, end = span.whole
    outside = int(len(span.inside) - np.count_nonzero(span.inside))
    if not span.inside.all():
        ev = ev.keep(span.inside)
    explicit = np.sort(np.concatenate([ev.at(d) for d in DISRUPTIONS]))
    sel = ev.where("step_start")
    run0 = searchsorted(ev.at("job_start"), ev.t[sel], "right")
    inf_d, inf_r = inferred(ev, ev.t[sel], ev.step[sel], run0)
    disrupt = np.sort(np.concatenate([explicit, inf_d]))
    stops = np.unique(np.concatenate([ev.at("job_start"), ev.at("job_end"), ev.at("drain"), disrupt, [end]]))

    intervals: dict[str, list[tuple[Times, Times]]] = {name: [] for name in PRIORITY}
    for bucket, (s_name, e_name) in PAIRS.items():
        s, e = _paired(ev, s_name, e_name, stops, end)
        if len(s):
            intervals[bucket].append((s, e))
    # a step logged at the very instant of a drain ends there, as at a disruption (the run restarts from it)
    steps = steps_of(job, ev, np.sort(np.concatenate([disrupt, ev.at("drain")])), explicit, stops, end)
    intervals["productive"].append((steps.st[steps.productive], steps.end[steps.productive]))
    intervals["wasted_progress_from_disruption"].append((steps.st[~steps.productive], steps.end[~steps.productive]))
    if len(steps.st) and not len(ev.where("compile_start")):
        for s0, e0 in startup(steps, [pair for name in NETTED for pair in intervals[name]]):
            intervals["program_startup"].append((np.array([s0]), np.array([e0])))
    if len(explicit):
        resume = np.sort(np.concatenate([ev.at(n) for n in RESUME]))
        back = np.minimum(first_after(resume, explicit, inclusive=True), first_after(ev.at("step_start"), explicit))
        back = np.minimum(back, end)
        intervals["infrastructure_recovery_from_disruption"].append((explicit, back))
    if len(inf_d):
        intervals["infrastructure_recovery_from_disruption"].append((inf_d, np.minimum(inf_r, end)))
    excl = exclude or []
    cuts = [span.start, span.end, *(x for pair in excl for x in pair)]  # the part's edges cut the timeline
    bounds, label = _label(start, end, ev.t, intervals, cuts)
    times = (span.start, span.end, span.begin)
    done = finish(job, ev, steps, intervals, bounds, label, times, disrupt, outside, inf_d, excl)
    done.repeated = repeated
    done.whole_held = _whole_held(job, ev, span, excl)
    return done


def outside_part(job: Job, records: Events, exclude: list[tuple[float, float]]) -> JobAccount:
    """The account of a job that ran wholly outside the part of the log reported: no figure, its `whole_held`
    alone (the chips it holds count in the whole log's busiest moment)."""
    ev = records  # (an event repeated exactly moves no allocation: its repeats are left in)
    span = _span(ev, None, None)
    if not span.inside.all():
        ev = ev.keep(span.inside)
    account = JobAccount(job, span.start, span.end, 0.0, 0.0, 0.0, {}, 0, 0, 0, 0.0, None, 0.0, in_part=False)
    account.whole_held = _whole_held(job, ev, span, exclude)
    return account


def _whole_held(job: Job, ev: Events, span: _Span, exclude: list[tuple[float, float]]) -> tuple[Times, Times]:
    """The job's all-allocated runs over its whole span, as `jobfigures.finish` finds them (the same `allocated`
    and `not_excluded`), on the only bounds they change at: its span's ends, first start, allocations and exclusions."""
    import numpy as np

    start, end = span.whole
    allocations = ev.at("allocation")
    runs, is_end = run_marks(ev)  # an end before a later start releases the chips until then (`jobfigures._ended`)
    if not len(allocations) and not exclude and not is_end[:-1].any():  # (common: held from the first start)
        lo = max(start, span.begin)
        run = [lo, end] if lo < end else []
        return np.array(run[:1], dtype=np.float64), np.array(run[1:], dtype=np.float64)
    edges = [start, end, span.begin, *(x for pair in exclude for x in pair)]
    marks = np.concatenate([allocations, runs, np.asarray(edges, dtype=np.float64)])
    bounds = _distinct(np.clip(marks, start, end))
    everywhere = np.ones(max(len(bounds) - 1, 0), dtype=bool)
    full, _excluded_s = not_excluded(allocated(job, ev, bounds, span.begin), bounds, exclude, everywhere)
    held = full & (np.diff(bounds) > 0)
    starts, ends = bounds[:-1][held], bounds[1:][held]
    if not len(starts):
        return starts, ends
    new_run = np.flatnonzero(starts[1:] != ends[:-1]) + 1  # touching intervals joined
    return starts[np.r_[0, new_run]], ends[np.r_[new_run - 1, len(ends) - 1]]
