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

import bisect
import math
from typing import Any, Literal, get_args

from tpufleet.constants import DAY, HOUR, WEEK
from tpufleet.errors import BadInput
from tpufleet.goodput.health import job_health
from tpufleet.goodput.timeline import BUCKETS, LABEL, PRODUCTIVE, JobAccount

Capacity = list[tuple[float, str, int]]  # (from time, accelerator, chips) steps
Report = dict[str, Any]  # the goodput report (JSON-shaped): fleet, segments, periods, jobs

SIZE_CLASSES = ((64, "small"), (512, "medium"), (2048, "large"), (math.inf, "extra-large"))
DIMENSIONS = ("accelerator", "size", "phase", "framework", "slices")
Period = Literal["day", "week"]  # --period: UTC days or ISO weeks
PERIODS: tuple[Period, ...] = get_args(Period)
MAX_PERIODS = 100_000  # rows of --period (1970..2200 is 83,950 days)


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
        for t, acc, chips in capacity:
            self.steps.setdefault(acc, []).append((t, chips))
        for steps in self.steps.values():
            steps.sort()
        self.times = {acc: [t for t, _ in steps] for acc, steps in self.steps.items()}

    def integral(self, accelerator: str | None, t0: float, t1: float) -> float:
        """Chip-seconds over [t0, t1] outside the excluded spans."""
        total = self._integral(accelerator, t0, t1)
        for a, b in self.excluded:
            if b > t0 and a < t1:
                total -= self._integral(accelerator, max(a, t0), min(b, t1))
        return max(0.0, total)

    def _integral(self, accelerator: str | None, t0: float, t1: float) -> float:
        """Chip-seconds over [t0, t1]: each step holds until the next one (the last until t1)."""
        total = 0.0
        for acc in sorted(self.steps) if accelerator is None else [accelerator]:
            steps, times = self.steps.get(acc, []), self.times.get(acc, [])
            i = max(bisect.bisect_right(times, t0) - 1, 0)  # steps before it end before t0: they add nothing
            while i < len(steps) and steps[i][0] < t1:
                t, c = steps[i]
                nxt = steps[i + 1][0] if i + 1 < len(steps) else t1
                lo, hi = max(t, t0), min(nxt, t1)
                if hi > lo:
                    total += c * (hi - lo)
                i += 1
        return total


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


def _period_row(
    accounts: list[JobAccount], capacity: CapacitySteps | None, lo: float, hi: float, label: str
) -> dict[str, Any]:
    import numpy as np

    alloc = prod = ideal = prod_pg = 0.0
    buckets = dict.fromkeys(BUCKETS, 0.0)
    for a in accounts:
        if a.ends is None or a.starts is None or a.labels is None or not len(a.ends) or a.end <= lo or a.start >= hi:
            continue
        first, last = np.searchsorted(a.ends, lo, side="right"), np.searchsorted(a.starts, hi, side="left")
        ends, starts, labels = a.ends[first:last], a.starts[first:last], a.labels[first:last]  # the overlapping
        overlap = np.clip(np.minimum(ends, hi) - np.maximum(starts, lo), 0, None)
        sums = np.bincount(labels, weights=overlap, minlength=len(BUCKETS) + 1)
        c = a.job.chips
        alloc += float(overlap.sum()) * c
        prod += float(sums[PRODUCTIVE]) * c
        for b in BUCKETS:
            buckets[b] += float(sums[LABEL[b]]) * c
        if a.ideal_s is not None and a.productive_s > 0:
            ideal += float(sums[PRODUCTIVE]) * c * a.ideal_s / a.productive_s
            prod_pg += float(sums[PRODUCTIVE]) * c
    cap = capacity.integral(None, lo, hi) if capacity else None
    sg, rg = _ratio(alloc, cap) if cap else None, _ratio(prod, alloc)
    pg = _ratio(ideal, prod_pg) if prod_pg else None
    return {
        "period": label,
        "start": lo,
        "end": hi,
        "sg": sg,
        "rg": rg,
        "pg": pg,
        "mpg": _mpg(sg, rg, pg),
        "productive_chip_s": round(prod, 3),
        "all_allocated_chip_s": round(alloc, 3),
        "badput_chip_s": {b: round(v, 3) for b, v in buckets.items()},
    }


def _periods(
    accounts: list[JobAccount], steps: CapacitySteps | None, t0: float, t1: float, period: str
) -> list[dict[str, Any]]:
    """One row per period; each period looks only at the jobs whose time reaches into it."""
    import datetime as dt

    bounds = period_bounds(t0, t1, period)
    if not bounds:
        return []
    first, step = bounds[0][0], bounds[0][1] - bounds[0][0]
    members: list[list[JobAccount]] = [[] for _ in bounds]
    for a in accounts:
        k_lo = max(0, math.floor((a.start - first) / step) - 1)  # a period of margin each side: float rounding
        k_hi = min(len(bounds), math.floor((a.end - first) / step) + 2)
        for k in range(k_lo, k_hi):
            members[k].append(a)
    rows = []
    for (lo, hi), group in zip(bounds, members, strict=True):
        label = dt.datetime.fromtimestamp(lo, dt.UTC).strftime("%Y-%m-%d")
        row = _period_row(group, steps, max(lo, t0), min(hi, t1), label)
        row["partial"] = row["end"] - row["start"] < hi - lo  # the window cuts it: not a whole day or week
        rows.append(row)
    return rows


def windows_rows(
    accounts: list[JobAccount], steps: CapacitySteps | None, t0: float, t1: float, windows: list[tuple[str, float]]
) -> list[dict[str, Any]]:
    """The factors over the last W of the data, for each window W (a window longer than the data is all of it)."""
    rows = []
    for label, seconds in windows:
        row = _period_row(accounts, steps, max(t0, t1 - seconds), t1, label)
        rows.append({"window": row.pop("period"), "seconds": seconds, **row})
    return rows


def with_health(a: JobAccount) -> JobAccount:
    """The job's step-time health in its account, and PG's empirical ideal step from it."""
    a.extra["step_time"] = health = job_health(a)
    a.estimated_ideal_step_s = health["empirical_ideal_s"]
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
) -> Report:
    for a in accounts:
        if "step_time" not in a.extra:  # (done already where jobs are accounted in worker processes)
            with_health(a)
    steps = CapacitySteps(capacity, excluded) if capacity else None
    fleet_capacity = steps.integral(None, t0, t1) if steps else None
    fleet = _factors(accounts, fleet_capacity)
    fleet["window"] = {"start": t0, "end": t1}
    fleet["checkpoint_advice"] = advice(accounts)
    slow = [a for a in accounts if a.extra["step_time"]["slow_periods"]]
    fleet["slow_periods"] = sum(len(a.extra["step_time"]["slow_periods"]) for a in slow)
    fleet["jobs_with_slow_periods"] = len(slow)
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
    fleet["excluded_chip_s"] = round(sum(a.excluded_s * a.job.chips for a in accounts), 3)
    return {
        "schema_version": 1,
        "fleet": fleet,
        "segments": segments,
        "periods": _periods(accounts, steps, t0, t1, period) if period else [],
        "windows": windows_rows(accounts, steps, t0, t1, windows or []),
        "jobs": [job_row(a) for a in accounts],
    }
