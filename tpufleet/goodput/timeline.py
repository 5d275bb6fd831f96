"""One job's time, split exactly into productive time and badput buckets (pure, vectorized per job).

Every instant of the job's *all-allocated* time (all its chips held) gets exactly one label, the highest in
PRIORITY among the activities covering it, else ``other``; so productive time plus the buckets equals the
all-allocated time by construction. Rules:

* paired activities (``*_start`` .. ``*_end``) end at their matching end, or at the next restart, disruption or
  job end if the end is missing;
* a step runs from its ``step_start`` to the next step start, restart, disruption or job end;
* a training step is wasted if its work is redone after a restart (a later run starts at or before its step
  number), or if a disruption ends its run and no checkpoint saved it (a ``checkpoint_end`` of a step >= its
  number in that run before the disruption; this rule applies only when the job records checkpoints);
* program start-up is the ``compile_*`` time, or, when a job records none, the excess of the first step of each
  run over the mean of that run's other complete steps (as ml-goodput-measurement does);
* infrastructure recovery runs from a disruption to the next sign of life (restart, init, step, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tpufleet.goodput.events import CODE, DISRUPTIONS, EventRecord, Job

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Times = npt.NDArray[np.float64]

BUCKETS = (
    "tpu_initialization",
    "training_prep",
    "program_startup",
    "data_loading_sync",
    "checkpoint_save",
    "checkpoint_restore",
    "wasted_progress_from_disruption",
    "infrastructure_recovery_from_disruption",
    "custom_badput_events",
    "other",
)
# label codes: 0 productive, 1.. buckets in BUCKETS order
PRODUCTIVE = 0
LABEL = {"productive": 0, **{b: i + 1 for i, b in enumerate(BUCKETS)}}
PRIORITY = (
    "custom_badput_events",
    "checkpoint_save",
    "checkpoint_restore",
    "tpu_initialization",
    "training_prep",
    "program_startup",
    "data_loading_sync",
    "productive",
    "wasted_progress_from_disruption",
    "infrastructure_recovery_from_disruption",
)
PAIRS = {
    "tpu_initialization": ("tpu_init_start", "tpu_init_end"),
    "training_prep": ("training_prep_start", "training_prep_end"),
    "program_startup": ("compile_start", "compile_end"),
    "data_loading_sync": ("data_loading_start", "data_loading_end"),
    "checkpoint_save": ("checkpoint_start", "checkpoint_end"),
    "checkpoint_restore": ("restore_start", "restore_end"),
    "custom_badput_events": ("custom_badput_start", "custom_badput_end"),
}
RESUME = (
    "job_start",
    "tpu_init_start",
    "training_prep_start",
    "compile_start",
    "restore_start",
    "step_start",
    "job_end",
)


@dataclass
class JobAccount:
    job: Job
    start: float
    end: float
    demand_s: float
    all_allocated_s: float
    productive_s: float
    buckets: dict[str, float]
    productive_steps: int
    disruptions: int
    checkpoint_saves: int
    checkpoint_save_s: float
    checkpoint_interval_s: float | None
    restart_overhead_s: float
    starts: Times | None = None  # elementary intervals, all-allocated only: start times
    ends: Times | None = None
    labels: npt.NDArray[np.int64] | None = None  # LABEL code of each interval
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ideal_s(self) -> float | None:
        if self.job.ideal_step_s is None:
            return None
        return self.job.ideal_step_s * self.productive_steps


def _first_after(times: Times, points: Times, inclusive: bool = False) -> Times:
    """For each point, the first time in sorted `times` after it (>= with inclusive), or +inf."""
    import numpy as np

    side: Literal["left", "right"] = "left" if inclusive else "right"
    idx = np.searchsorted(times, points, side=side)
    padded = np.append(times, np.inf)
    return padded[np.minimum(idx, len(times))]


def account(
    job: Job, records: Sequence[EventRecord], until: float | None = None, since: float | None = None
) -> JobAccount:
    """Split one job's events (list of (t, code, step, chips, label)) into productive time and buckets."""
    import numpy as np

    arr = np.array([(r[0], r[1], r[2], r[3]) for r in records], dtype=np.float64).reshape(-1, 4)
    order = np.argsort(arr[:, 0], kind="stable")
    t: Times
    code: npt.NDArray[np.int64]
    step: npt.NDArray[np.int64]
    chips_v: npt.NDArray[np.int64]
    t, code, step, chips_v = (
        arr[order, 0],
        arr[order, 1].astype(np.int64),
        arr[order, 2].astype(np.int64),
        arr[order, 3].astype(np.int64),
    )

    def at(name: str) -> Times:
        times: Times = t[code == CODE[name]]
        return times

    start = float(t.min())
    ends = at("job_end")
    end = float(ends.max()) if len(ends) else float(t.max())
    if until is not None:
        end = min(end, until)
    submitted = at("submitted")
    submit_t = float(submitted.min()) if len(submitted) else start
    disrupt = np.sort(np.concatenate([at(d) for d in DISRUPTIONS]))
    restarts = at("job_start")
    stops = np.unique(np.concatenate([restarts, ends, disrupt, [end]]))

    intervals: dict[str, list[tuple[Times, Times]]] = {name: [] for name in PRIORITY}
    for bucket, (s_name, e_name) in PAIRS.items():
        s, e = at(s_name), at(e_name)
        if not len(s):
            continue
        matched = _first_after(e, s, inclusive=True)
        close = np.minimum(matched, _first_after(stops, s))
        intervals[bucket].append((s, np.minimum(close, end)))

    # steps and whether their work survived
    sel = code == CODE["step_start"]
    st, sn = t[sel], step[sel]
    saves_t, saves_step = at("checkpoint_end"), step[code == CODE["checkpoint_end"]]
    if len(st):
        nxt = np.append(st[1:], np.inf)
        step_end = np.minimum(np.minimum(nxt, _first_after(stops, st)), end)
        run = np.searchsorted(restarts, st, side="right")  # which (re)start each step belongs to
        productive = np.ones(len(st), dtype=bool)
        if job.phase == "training":
            later = np.searchsorted(run, run, side="right")
            has_next = later < len(st)
            first_of_next = np.where(has_next, sn[np.minimum(later, len(st) - 1)], np.iinfo(np.int64).max)
            productive &= sn < first_of_next
            if len(saves_t):
                run_start = np.append([-np.inf], restarts)[run]
                cut = _first_after(disrupt, st)
                ends_run = cut < _first_after(np.append(restarts, ends), st)
                for k in np.flatnonzero(ends_run):
                    ok = (saves_t >= run_start[k]) & (saves_t <= cut[k])
                    saved = saves_step[ok].max() if ok.any() else -1
                    productive[k] &= sn[k] <= saved
        intervals["productive"].append((st[productive], step_end[productive]))
        intervals["wasted_progress_from_disruption"].append((st[~productive], step_end[~productive]))
        if not (code == CODE["compile_start"]).any():
            complete = nxt <= _first_after(stops, st)
            for r in np.unique(run):
                idx = np.flatnonzero(run == r)
                if len(idx) < 2 or not complete[idx[0]]:
                    continue
                durations = (step_end - st)[idx]
                others = durations[1:][complete[idx[1:]]]
                if not len(others):
                    continue
                excess = durations[0] - others.mean()
                if excess > 0:
                    s0 = st[idx[0]]
                    intervals["program_startup"].append((np.array([s0]), np.array([s0 + excess])))
    if len(disrupt):
        resume = np.sort(np.concatenate([at(n) for n in RESUME]))
        back = np.minimum(_first_after(resume, disrupt, inclusive=True), end)
        intervals["infrastructure_recovery_from_disruption"].append((disrupt, back))

    # elementary intervals over every boundary, labelled by the highest-priority cover
    pieces: list[npt.ArrayLike] = [t, [start, end], *(x for lst in intervals.values() for pair in lst for x in pair)]
    bounds = np.unique(np.clip(np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in pieces]), start, end))
    m = len(bounds) - 1
    cover = np.zeros((len(PRIORITY) + 1, m + 1), dtype=np.int64)
    for row, name in enumerate(PRIORITY):
        for s, e in intervals[name]:
            s, e = np.clip(s, start, end), np.clip(e, start, end)
            keep = e > s
            np.add.at(cover[row], np.searchsorted(bounds, s[keep]), 1)
            np.add.at(cover[row], np.searchsorted(bounds, e[keep]), -1)
    active = np.cumsum(cover, axis=1)[:, :m] > 0
    active[-1] = True  # "other"
    first = np.argmax(active, axis=0)
    names = [*PRIORITY, "other"]
    label = np.array([LABEL[n] for n in names])[first]

    # all-allocated mask
    alloc_sel = code == CODE["allocation"]
    if alloc_sel.any():
        a_t, a_v = t[alloc_sel], chips_v[alloc_sel]
        idx = np.searchsorted(a_t, bounds[:-1], side="right") - 1
        held = np.where(idx >= 0, a_v[np.maximum(idx, 0)], 0)
        full = held >= job.chips
    else:
        begin = restarts.min() if len(restarts) else float(t[code != CODE["submitted"]].min(initial=start))
        full = bounds[:-1] >= begin
    if since is not None:
        full &= bounds[:-1] >= since
    dur = np.diff(bounds)
    use = full & (dur > 0)
    sums = np.bincount(label[use], weights=dur[use], minlength=len(BUCKETS) + 1)
    productive_steps = 0
    if len(st) and m:
        pos = np.clip(np.searchsorted(bounds, st, side="right") - 1, 0, m - 1)
        productive_steps = int(np.count_nonzero(productive & use[pos] & (st < end)))
    saves_s = sum(float((e - s).sum()) for s, e in intervals["checkpoint_save"])
    ck_starts = at("checkpoint_start")
    interval = float(np.diff(ck_starts).mean()) if len(ck_starts) >= 2 else None
    restart_cost = sum(
        float(sums[LABEL[b]])
        for b in (
            "infrastructure_recovery_from_disruption",
            "tpu_initialization",
            "training_prep",
            "program_startup",
            "checkpoint_restore",
        )
    )
    return JobAccount(
        job=job,
        start=start,
        end=end,
        demand_s=max(0.0, end - (submit_t if since is None else max(submit_t, since))),
        all_allocated_s=float(dur[use].sum()),
        productive_s=float(sums[PRODUCTIVE]),
        buckets={b: float(sums[i + 1]) for i, b in enumerate(BUCKETS)},
        productive_steps=productive_steps,
        disruptions=len(disrupt),
        checkpoint_saves=len(saves_t),
        checkpoint_save_s=saves_s,
        checkpoint_interval_s=interval,
        restart_overhead_s=restart_cost / (len(disrupt) + 1),
        starts=bounds[:-1][use],
        ends=bounds[1:][use],
        labels=label[use],
    )
