"""Aggregating job accounts into the report: fleet, segments, periods, jobs; checkpoint advice (pure).

* SG: all-allocated chip-time over capacity chip-time (fleet, per accelerator, per period). For jobs and for
  segments by size, phase or framework, which own no capacity, the denominator is their demand: chips x time
  from submission to end.
* RG: productive chip-time over all-allocated chip-time.
* PG: ideal chip-time (productive steps x ideal step time) over productive chip-time, over jobs with program
  data; null where no job has any.
* MPG = SG x RG x PG (null when a factor is).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, get_args

from tpufleet.constants import DAY, HOUR, WEEK
from tpufleet.errors import BadInput
from tpufleet.goodput.events import CapacityRecord
from tpufleet.goodput.health import job_health
from tpufleet.goodput.timeline import BUCKETS, LABEL, PRODUCTIVE, JobAccount

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Times = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]
    Intervals = tuple[Times, Times, Ints]  # a job's elementary intervals: starts, ends, label codes

Capacity = list[CapacityRecord]  # (from time, accelerator, chips, where it is said) steps
Report = dict[str, Any]  # the goodput report (JSON-shaped): fleet, segments, periods, jobs

SIZE_CLASSES = ((64, "small"), (512, "medium"), (2048, "large"), (math.inf, "extra-large"))
DIMENSIONS = ("accelerator", "size", "phase", "framework", "slices")
Period = Literal["day", "week"]  # --period: UTC days or ISO weeks
PERIODS: tuple[Period, ...] = get_args(Period)
MAX_PERIODS = 100_000  # rows of --period (1970..2200 is 83,950 days)
# the running sums of a period or window over the jobs: chip-seconds all-allocated, productive, ideal and
# productive of the jobs with program data (PG's), then of each badput bucket
TERMS = ("all_allocated", "productive", "ideal", "productive_with_pg", *BUCKETS)
_PAIRWISE_FROM = 8  # numpy's sum adds this many numbers or more pairwise (fewer one by one)
# The period (and window) rows are computed for all periods at once, and bit for bit as adding job after job in
# each period gives them: the report's figures do not depend on how they are computed.
_DENSE = 1024  # intervals a period from which a job is taken period by period, as slices (faster then; measured)
_BATCH = 1 << 18  # intervals accounted at once in the periods: bounds the memory of their pieces


def size_class(chips: int) -> str:
    for limit, name in SIZE_CLASSES:
        if chips < limit:
            return name
    return "extra-large"


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 6) if b > 0 else None


def _mpg(sg: float | None, rg: float | None, pg: float | None) -> float | None:
    if sg is None or rg is None or pg is None:
        return None
    return round(sg * rg * pg, 6)


class CapacitySteps:
    """The capacity step functions, sorted once per accelerator, for integrals over many windows (periods)."""

    def __init__(self, capacity: Capacity, excluded: list[tuple[float, float]] | None = None) -> None:
        self.excluded = excluded or []  # spans that count nowhere: not in capacity either
        self.steps: dict[str, list[tuple[float, int]]] = {}
        for t, acc, chips, _where in capacity:
            self.steps.setdefault(acc, []).append((t, chips))
        for steps in self.steps.values():
            steps.sort()
        self.arrays = {acc: _step_arrays(steps) for acc, steps in self.steps.items()}  # (times, chips)

    def integral(self, accelerator: str | None, t0: float, t1: float) -> float:
        """Chip-seconds over [t0, t1] outside the excluded spans."""
        import numpy as np

        return float(self.integrals(accelerator, np.array([t0], dtype=float), np.array([t1], dtype=float))[0])

    def integrals(self, accelerator: str | None, t0: Times, t1: Times) -> Times:
        """Chip-seconds over each window [t0[k], t1[k]] outside the excluded spans, at least 0."""
        import numpy as np

        total = self._integrals(accelerator, t0, t1)
        for a, b in self.excluded:
            cut = np.flatnonzero((t0 < b) & (t1 > a))
            total[cut] -= self._integrals(accelerator, np.maximum(t0[cut], a), np.minimum(t1[cut], b))
        return np.where(total > 0.0, total, 0.0)

    def _integrals(self, accelerator: str | None, t0: Times, t1: Times) -> Times:
        """Chip-seconds over each window: each step holds until the next one (the last until the window's end).
        Each window's steps are added one by one, accelerator by accelerator, as a running sum would."""
        import numpy as np

        windows, amounts = [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
        for acc in sorted(self.steps) if accelerator is None else [accelerator]:
            times, chips = self.arrays.get(acc) or _step_arrays([])
            first = np.maximum(np.searchsorted(times, t0, side="right") - 1, 0)  # earlier steps end before t0
            window, step = _ranges(first, np.searchsorted(times, t1, side="left"))  # steps from t1 on add nothing
            lo = np.maximum(times[step], t0[window])
            hi = np.minimum(np.append(times[1:], np.inf)[step], t1[window])
            held = hi > lo
            windows.append(window[held])
            amounts.append(chips[step[held]] * (hi - lo)[held])
        return _added(np.concatenate(windows), np.concatenate(amounts), len(t0))


def _step_arrays(steps: list[tuple[float, int]]) -> tuple[Times, Times]:
    """The times and chips of capacity steps as arrays (chips as the floats they multiply as)."""
    import numpy as np

    return np.array([t for t, _ in steps], dtype=float), np.array([float(c) for _, c in steps])


def _added(cells: Ints, values: Times, count: int) -> Times:
    """values[i] added into cells[i] of `count` zeros, one by one in array order: each cell as a running sum."""
    import numpy as np

    return np.bincount(cells, weights=values, minlength=count).astype(np.float64, copy=False)


def _ranges(first: Ints, stop: Ints) -> tuple[Ints, Ints]:
    """The pairs (i, j) for each j in first[i] .. stop[i] - 1, in order of i, then j: as two arrays."""
    import numpy as np

    counts = np.maximum(stop - first, 0)
    owner = np.repeat(np.arange(len(first)), counts)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, first[owner] + offset


def capacity_chip_s(
    capacity: Capacity, accelerator: str | None, t0: float, t1: float, excluded: list[tuple[float, float]] | None = None
) -> float:
    """Integral of the capacity step function(s) over [t0, t1], the excluded spans left out."""
    return CapacitySteps(capacity, excluded).integral(accelerator, t0, t1)


def young(w: float, mtbf: float) -> float:
    return math.sqrt(2 * w * mtbf)


def daly(w: float, mtbf: float) -> float:
    if w >= 2 * mtbf:
        return mtbf
    x = w / (2 * mtbf)
    return math.sqrt(2 * w * mtbf) * (1 + math.sqrt(x) / 3 + x / 9) - w


def predicted_rg(interval: float, w: float, u0: float, mtbf: float) -> float:
    """Meta's ETTR model: (1 - (u0 + T/2) / MTBF) / (1 + w / T)."""
    if interval <= 0 or mtbf <= 0:  # no time between checkpoints or failures: nothing runs
        return 0.0
    return max(0.0, (1 - (u0 + interval / 2) / mtbf)) / (1 + w / interval)


def advice(accounts: list[JobAccount]) -> dict[str, float | None] | None:
    disruptions = sum(a.disruptions for a in accounts)
    saves = sum(a.checkpoint_saves for a in accounts)
    allocated = sum(a.all_allocated_s for a in accounts)
    if not disruptions or not saves or allocated <= 0:  # no MTBF without all-allocated time (it divided by 0)
        return None
    mtbf = allocated / disruptions
    w = sum(a.checkpoint_save_s for a in accounts) / saves
    u0 = sum(a.restart_overhead_s for a in accounts) / len(accounts)
    intervals = [a.checkpoint_interval_s for a in accounts if a.checkpoint_interval_s]
    current = sum(intervals) / len(intervals) if intervals else None
    out: dict[str, float | None] = {
        "mtbf_s": round(mtbf, 3),
        "checkpoint_write_s": round(w, 3),
        "restart_overhead_s": round(u0, 3),
        "current_interval_s": round(current, 3) if current else None,
        "young_interval_s": round(young(w, mtbf), 3),
        "daly_interval_s": round(daly(w, mtbf), 3),
    }
    if w > 0:
        out["rg_at_young"] = round(predicted_rg(young(w, mtbf), w, u0, mtbf), 4)
        out["rg_at_daly"] = round(predicted_rg(daly(w, mtbf), w, u0, mtbf), 4)
        if current:
            out["rg_at_current"] = round(predicted_rg(current, w, u0, mtbf), 4)
    return out


def _factors(accounts: list[JobAccount], capacity_s: float | None) -> dict[str, Any]:
    all_alloc = sum(a.all_allocated_s * a.job.chips for a in accounts)
    productive = sum(a.productive_s * a.job.chips for a in accounts)
    demand = sum(a.demand_s * a.job.chips for a in accounts)
    with_pg = [(a, a.ideal_s) for a in accounts if a.ideal_s is not None]
    ideal = sum(ideal_s * a.job.chips for a, ideal_s in with_pg)
    prod_pg = sum(a.productive_s * a.job.chips for a, _ in with_pg)
    sg = _ratio(all_alloc, capacity_s if capacity_s is not None else demand)
    rg = _ratio(productive, all_alloc)
    pg = _ratio(ideal, prod_pg) if with_pg else None
    bases = {a.pg_basis for a, _ in with_pg}
    buckets = {b: round(sum(a.buckets[b] * a.job.chips for a in accounts), 3) for b in BUCKETS}
    disruptions = sum(a.disruptions for a in accounts)
    return {
        "sg": sg,
        "rg": rg,
        "pg": pg,
        "mpg": _mpg(sg, rg, pg),
        "pg_basis": None if not bases else bases.pop() if len(bases) == 1 else "mixed",
        "jobs": len(accounts),
        "productive_chip_s": round(productive, 3),
        "all_allocated_chip_s": round(all_alloc, 3),
        "capacity_chip_s": round(capacity_s, 3) if capacity_s is not None else None,
        "demand_chip_s": round(demand, 3),
        "badput_chip_s": buckets,
        "badput_pct": {b: (round(100 * v / all_alloc, 3) if all_alloc else 0.0) for b, v in buckets.items()},
        "disruptions": disruptions,
        "mtbf_h": round(sum(a.all_allocated_s for a in accounts) / disruptions / HOUR, 3) if disruptions else None,
    }


def job_row(a: JobAccount) -> dict[str, Any]:
    sg = _ratio(a.all_allocated_s * a.job.chips, a.demand_s * a.job.chips)
    rg = _ratio(a.productive_s, a.all_allocated_s)
    pg = _ratio(a.ideal_s, a.productive_s) if a.ideal_s is not None else None
    return {
        "job": a.job.id,
        "accelerator": a.job.accelerator,
        "chips": a.job.chips,
        "size": size_class(a.job.chips),
        "phase": a.job.phase,
        "framework": a.job.framework,
        "job_slices": a.job.slices,
        "sg": sg,
        "rg": rg,
        "pg": pg,
        "mpg": _mpg(sg, rg, pg),
        "pg_basis": a.pg_basis if pg is not None else None,
        "productive_s": round(a.productive_s, 3),
        "all_allocated_s": round(a.all_allocated_s, 3),
        "demand_s": round(a.demand_s, 3),
        "badput_s": {b: round(v, 3) for b, v in a.buckets.items()},
        "productive_steps": a.productive_steps,
        "disruptions": a.disruptions,
        "disruptions_inferred": a.inferred_disruptions,
        "mtbf_h": round(a.all_allocated_s / a.disruptions / HOUR, 3) if a.disruptions else None,
        "checkpoint_advice": advice([a]),
        "events_outside_job": a.outside,
        "events_repeated": a.repeated,
        "step_time": a.extra.get("step_time"),
        "slices": a.extra.get("slices"),
    }


def _slice_efficiency(accounts: list[JobAccount]) -> dict[str, float] | None:
    """The stepping and available slice efficiency of the jobs that logged slice counts, weighted by how long
    each ran (None when none did)."""
    rows = [(a.extra["slices"], a.end - a.start) for a in accounts if a.extra.get("slices") and a.end > a.start]
    span = sum(w for _, w in rows)
    if not span:
        return None
    return {
        key: round(sum(r[key] * w for r, w in rows) / span, 6)
        for key in ("stepping_slice_efficiency", "available_slice_efficiency")
    }


def _key(a: JobAccount, dim: str) -> str:
    if dim == "size":
        return size_class(a.job.chips)
    if dim == "slices":
        return "multislice" if a.job.slices > 1 else "single-slice"
    value: str = getattr(a.job, dim)  # accelerator, phase or framework
    return value


def period_bounds(t0: float, t1: float, period: str) -> list[tuple[float, float]]:
    """The days (UTC) or ISO weeks covering [t0, t1); BadInput if there would be more than MAX_PERIODS."""
    import datetime as dt

    start = dt.datetime.fromtimestamp(t0, dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "week":
        start -= dt.timedelta(days=start.weekday())  # ISO weeks start on Monday
    step = float(WEEK if period == "week" else DAY)
    first = start.timestamp()
    count = max(0, math.ceil((t1 - first) / step))  # counted before any is made
    if count > MAX_PERIODS:
        raise BadInput(
            f"too many periods: the window spans {count:,} {period}s, over the limit of {MAX_PERIODS:,} "
            "(narrow it with --since/--until, or use --period week)"
        )
    out, lo = [], first
    while lo < t1:
        out.append((lo, lo + step))
        lo += step
    return out


def _intervals(a: JobAccount) -> Intervals | None:
    if a.starts is None or a.ends is None or a.labels is None or not len(a.ends):
        return None
    return a.starts, a.ends, a.labels


class _Part:
    """Jobs accounted together in the windows (periods), in job order: a job with _DENSE intervals a window or
    more window by window (a few calls of numpy a window), the others all at once (a few calls of numpy a part).
    Each (job, window) gives a row: its seconds all-allocated and by label."""

    def __init__(self, lo: Times, hi: Times) -> None:
        self.lo, self.hi = lo, hi
        self.jobs: list[JobAccount] = []
        self.dense: list[tuple[Ints, Ints, Times, Times]] = []  # (job, window, seconds, by label) rows
        self.sparse: list[tuple[int, Intervals, int, int]] = []  # (job, intervals, first window, window after)
        self.size = 0  # intervals

    def add(self, a: JobAccount, own: Intervals, first: int, stop: int) -> None:
        """The job `a` (its intervals `own`) in the windows first .. stop - 1, those it reaches into."""
        import numpy as np

        job = len(self.jobs)
        self.jobs.append(a)
        self.size += len(own[1])
        if len(own[1]) >= _DENSE * (stop - first):
            windows = np.arange(first, stop)
            self.dense.append(
                (np.full(len(windows), job), windows, *_by_slices(own, self.lo[windows], self.hi[windows]))
            )
        else:
            self.sparse.append((job, own, first, stop))

    def added_to(self, sums: Times) -> Times:
        """`sums` (TERMS by window) with the part's jobs added one after the other, in job order."""
        import numpy as np

        rows = [*self.dense, _by_pieces(self.sparse, self.lo, self.hi)] if self.sparse else self.dense
        if not rows:
            return sums
        job, window, seconds, by_label = (np.concatenate(column) for column in zip(*rows, strict=True))
        order = np.argsort(job, kind="stable")  # job order (each job's rows are in window order already)
        return _with_terms(sums, window[order], _scaled(self.jobs, job[order], seconds[order], by_label[order]))


def _by_slices(own: Intervals, lo: Times, hi: Times) -> tuple[Times, Times]:
    """A job's seconds in each window [lo[k], hi[k]], all and by label, each window's intervals a slice."""
    import numpy as np

    starts, ends, labels = own
    seconds, by_label = np.zeros(len(lo)), np.zeros((len(lo), len(BUCKETS) + 1))
    for k in range(len(lo)):
        first, last = np.searchsorted(ends, lo[k], side="right"), np.searchsorted(starts, hi[k], side="left")
        inside = np.clip(np.minimum(ends[first:last], hi[k]) - np.maximum(starts[first:last], lo[k]), 0, None)
        seconds[k] = inside.sum()
        by_label[k] = np.bincount(labels[first:last], weights=inside, minlength=len(BUCKETS) + 1)
    return seconds, by_label


def _by_pieces(sparse: list[tuple[int, Intervals, int, int]], lo: Times, hi: Times) -> tuple[Ints, Ints, Times, Times]:
    """The jobs' (job, window, seconds, seconds by label) rows, in job, then window order, all at once."""
    import numpy as np

    owner, window, labels, inside = _pieces(sparse, lo, hi)
    starting = np.diff(owner * len(lo) + window, prepend=-1) != 0  # the first piece of each (job, window)
    row, first = np.cumsum(starting) - 1, np.flatnonzero(starting)
    width = len(BUCKETS) + 1
    by_label = _added(row * width + labels, inside, len(first) * width).reshape(-1, width)
    job = np.array([job for job, _, _, _ in sparse], dtype=np.int64)[owner[first]]
    return job, window[first], _sums(inside, first), by_label


def _pieces(sparse: list[tuple[int, Intervals, int, int]], lo: Times, hi: Times) -> tuple[Ints, Ints, Ints, Times]:
    """The pieces of the jobs' intervals inside the windows each reaches into, ordered by job, then window, then
    time: (job (an index into `sparse`), window, label, seconds)."""
    import numpy as np

    starts, ends, labels = (np.concatenate(column) for column in zip(*(own for _, own, _, _ in sparse), strict=True))
    owner = np.repeat(np.arange(len(sparse)), [len(own[1]) for _, own, _, _ in sparse])
    reach = np.array([(first, stop) for _, _, first, stop in sparse], dtype=np.int64)
    first = np.maximum(np.searchsorted(hi, starts, side="right"), reach[owner, 0])
    stop = np.minimum(np.searchsorted(lo, ends, side="left"), reach[owner, 1])
    interval, window = _ranges(first, stop)  # in job, interval, window order
    job = owner[interval]
    key = job * len(lo) + window
    if len(key) > 1 and bool((key[1:] < key[:-1]).any()):  # only if a job's intervals overlapped: never made so
        order = np.argsort(key, kind="stable")
        job, window, interval = job[order], window[order], interval[order]
    inside = np.minimum(ends[interval], hi[window]) - np.maximum(starts[interval], lo[window])
    return job, window, labels[interval], np.clip(inside, 0, None)


def _sums(values: Times, first: Ints) -> Times:
    """The sum of each run values[first[i]:first[i + 1]] (the last to the end), bit for bit numpy's sum of the
    run: numpy adds fewer than _PAIRWISE_FROM numbers one by one, as bincount does, and more pairwise."""
    import numpy as np

    lengths = np.diff(np.append(first, len(values)))
    out = _added(np.repeat(np.arange(len(first)), lengths), values, len(first))
    for i in np.flatnonzero(lengths >= _PAIRWISE_FROM).tolist():
        out[i] = values[first[i] : first[i] + lengths[i]].sum()
    return out


def _scaled(jobs: list[JobAccount], of: Ints, seconds: Times, by_label: Times) -> Times:
    """The TERMS of (job, window) rows (`of`: the job of each) from their seconds, all and by label."""
    import numpy as np

    has_pg = [a.ideal_s is not None and a.productive_s > 0 for a in jobs]
    ideal = np.array([float(a.ideal_s or 0.0) if pg else 0.0 for a, pg in zip(jobs, has_pg, strict=True)])[of]
    productive_s = np.array([float(a.productive_s) if pg else 1.0 for a, pg in zip(jobs, has_pg, strict=True)])[of]
    chips, pg = np.array([float(a.job.chips) for a in jobs])[of], np.array(has_pg, dtype=bool)[of]
    productive = by_label[:, PRODUCTIVE] * chips
    terms = np.empty((len(of), len(TERMS)))
    terms[:, 0] = seconds * chips
    terms[:, 1] = productive
    terms[:, 2] = np.where(pg, productive * ideal / productive_s, 0.0)  # as (seconds x chips) x ideal / productive
    terms[:, 3] = np.where(pg, productive, 0.0)
    terms[:, 4:] = by_label[:, [LABEL[name] for name in BUCKETS]] * chips[:, None]
    return terms


def _with_terms(sums: Times, windows: Ints, terms: Times) -> Times:
    """The sums with terms[i] added to the sums of windows[i], one after the other: bincount adds in array order,
    each window's sums so far first (0 + x is x)."""
    import numpy as np

    count, width = sums.shape
    cells = (np.append(np.arange(count), windows)[:, None] * width + np.arange(width)).ravel()
    return _added(cells, np.concatenate([sums, terms]).ravel(), count * width).reshape(count, width)


def _window_sums(accounts: list[JobAccount], lo: Times, hi: Times) -> Times:
    """TERMS of each window [lo[k], hi[k]] (lo and hi ascending), each a running sum over the jobs that reach
    into it (their end after its start, their start before its end), in job order, as adding job after job gives
    it; about _BATCH intervals at a time (the memory stays bounded however long the log)."""
    import bisect

    import numpy as np

    lo_s, hi_s = lo.tolist(), hi.tolist()
    sums, part = np.zeros((len(lo), len(TERMS))), _Part(lo, hi)
    for a in accounts:
        own = _intervals(a)
        first, stop = bisect.bisect_right(hi_s, a.start), bisect.bisect_left(lo_s, a.end)
        if own is not None and first < stop:
            part.add(a, own, first, stop)
        if part.size >= _BATCH:
            sums, part = part.added_to(sums), _Part(lo, hi)
    return part.added_to(sums)


def _rounded(values: Times) -> list[list[float]]:
    """round(x, 3) of each value, as lists; Python rounds only the fractional ones (a whole number is its own
    rounding, and most of a period's figures are 0)."""
    import numpy as np

    out: list[list[float]] = values.tolist()
    for i, j in np.argwhere(values != np.floor(values)).tolist():
        out[i][j] = round(out[i][j], 3)
    return out


def _window_rows(
    accounts: list[JobAccount], capacity: CapacitySteps | None, lo: list[float], hi: list[float], labels: list[str]
) -> list[dict[str, Any]]:
    """The factors of each window [lo[k], hi[k]] (lo and hi ascending), labelled labels[k]."""
    import numpy as np

    lo_s, hi_s = np.array(lo, dtype=float), np.array(hi, dtype=float)
    sums = _window_sums(accounts, lo_s, hi_s)
    caps = capacity.integrals(None, lo_s, hi_s).tolist() if capacity else [None] * len(lo)
    rows = []
    for label, start, end, exact, shown, cap in zip(labels, lo, hi, sums.tolist(), _rounded(sums), caps, strict=True):
        alloc, prod, ideal, prod_pg = exact[:4]
        sg, rg = _ratio(alloc, cap) if cap else None, _ratio(prod, alloc)
        pg = _ratio(ideal, prod_pg) if prod_pg else None
        rows.append(
            {
                "period": label,
                "start": start,
                "end": end,
                "sg": sg,
                "rg": rg,
                "pg": pg,
                "mpg": _mpg(sg, rg, pg),
                "productive_chip_s": shown[1],
                "all_allocated_chip_s": shown[0],
                "badput_chip_s": dict(zip(BUCKETS, shown[4:], strict=True)),
            }
        )
    return rows


def _periods(
    accounts: list[JobAccount], steps: CapacitySteps | None, t0: float, t1: float, period: str
) -> list[dict[str, Any]]:
    """One row per period of the window [t0, t1], all computed at once."""
    import numpy as np

    bounds = period_bounds(t0, t1, period)
    if not bounds:
        return []
    days = np.array([lo for lo, _ in bounds], dtype=float).astype(np.int64).astype("datetime64[s]")
    labels: list[str] = np.datetime_as_string(days, unit="D").tolist()  # UTC dates, as %Y-%m-%d
    lo, hi = [max(lo, t0) for lo, _ in bounds], [min(hi, t1) for _, hi in bounds]
    rows = _window_rows(accounts, steps, lo, hi, labels)
    for row, (whole_lo, whole_hi) in zip(rows, bounds, strict=True):
        row["partial"] = row["end"] - row["start"] < whole_hi - whole_lo  # the window cuts it: not a whole period
    return rows


def windows_rows(
    accounts: list[JobAccount], steps: CapacitySteps | None, t0: float, t1: float, windows: list[tuple[str, float]]
) -> list[dict[str, Any]]:
    """The factors over the last W of the data, for each window W (a window longer than the data is all of it)."""
    rows = []
    for label, seconds in windows:
        row = _window_rows(accounts, steps, [max(t0, t1 - seconds)], [t1], [label])[0]
        rows.append({"window": row.pop("period"), "seconds": seconds, **row})
    return rows


def with_health(a: JobAccount) -> JobAccount:
    """The job's step-time health in its account, and PG's empirical ideal step from it."""
    a.extra["step_time"], a.estimated_ideal_step_s = job_health(a)
    return a


def report(
    accounts: list[JobAccount],
    capacity: Capacity,
    t0: float,
    t1: float,
    by: list[str],
    period: str | None,
    windows: list[tuple[str, float]] | None = None,
    excluded: list[tuple[float, float]] | None = None,
    fleet_jobs: list[JobAccount] | None = None,
) -> Report:
    """The report of the accounts. The fleet, period and window rows, whose SG is over the capacity, count the
    `fleet_jobs` (default: all): the jobs on an accelerator the capacity covers, so that no chip-time is divided
    by a capacity that is not its own."""
    for a in accounts:
        if "step_time" not in a.extra:  # (done already where jobs are accounted in worker processes)
            with_health(a)
    steps = CapacitySteps(capacity, excluded) if capacity else None
    counted = accounts if fleet_jobs is None else fleet_jobs
    return {
        "schema_version": 1,
        "fleet": _fleet(counted, steps, t0, t1),
        "segments": _segments(accounts, by, steps, t0, t1),
        "periods": _periods(counted, steps, t0, t1, period) if period else [],
        "windows": windows_rows(counted, steps, t0, t1, windows or []),
        "jobs": [job_row(a) for a in accounts],
    }


def _fleet(accounts: list[JobAccount], steps: CapacitySteps | None, t0: float, t1: float) -> dict[str, Any]:
    """The fleet row: the factors, checkpoint advice and slow periods of the jobs, over [t0, t1]."""
    fleet = _factors(accounts, steps.integral(None, t0, t1) if steps else None)
    fleet["window"] = {"start": t0, "end": t1}
    fleet["checkpoint_advice"] = advice(accounts)
    slow = [a for a in accounts if a.extra["step_time"]["slow_periods"]]
    fleet["slow_periods"] = sum(len(a.extra["step_time"]["slow_periods"]) for a in slow)
    fleet["jobs_with_slow_periods"] = len(slow)
    fleet["excluded_chip_s"] = round(sum(a.excluded_s * a.job.chips for a in accounts), 3)
    return fleet


def _segments(
    accounts: list[JobAccount], by: list[str], steps: CapacitySteps | None, t0: float, t1: float
) -> list[dict[str, Any]]:
    """A row per value of each dimension `by`: SG over the capacity for an accelerator, else over demand."""
    segments = []
    for dim in by:
        groups: dict[str, list[JobAccount]] = {}
        for a in accounts:
            groups.setdefault(_key(a, dim), []).append(a)
        for value in sorted(groups):
            cap = steps.integral(value, t0, t1) if dim == "accelerator" and steps else None
            row = {"dimension": dim, "value": value, **_factors(groups[value], cap)}
            row["sg_basis"] = "capacity" if cap is not None else "demand"
            row["slices"] = _slice_efficiency(groups[value])
            segments.append(row)
    return segments
