"""Aggregating job accounts into the report: fleet, segments, periods, jobs; checkpoint advice (pure).

* SG: all-allocated chip-time over capacity chip-time (fleet, per accelerator, per period). For jobs and for
  segments by size, phase or framework, which own no capacity, the denominator is their demand: chips x time
  from submission to end.
* RG: productive chip-time over all-allocated chip-time.
* PG: ideal chip-time (productive steps x ideal step time) over productive chip-time, over jobs with program
  data; null where no job has any.
* MPG = SG x RG x PG (null when a factor is).

The period and window rows' chip-seconds, all windows at once, are `chiptime`'s.
"""

from __future__ import annotations

import math
from typing import Any

from tpufleet.constants import DAY, HOUR, WEEK
from tpufleet.errors import BadInput
from tpufleet.goodput.chiptime import Capacity, CapacitySteps, rounded, window_sums
from tpufleet.goodput.health import job_health
from tpufleet.goodput.jobaccount import BUCKETS, JobAccount

Report = dict[str, Any]  # the goodput report (JSON-shaped): fleet, segments, periods, jobs

SIZE_CLASSES = ((64, "small"), (512, "medium"), (2048, "large"), (math.inf, "extra-large"))
DIMENSIONS = ("accelerator", "size", "phase", "framework", "slices")
MAX_PERIODS = 100_000  # rows of --period (1970..2200 is 83,950 days)


def size_class(chips: int) -> str:
    for limit, name in SIZE_CLASSES:
        if chips < limit:
            return name
    return "extra-large"


def ratio(a: float, b: float) -> float | None:
    """a / b, unrounded (`factors` rounds it), or None without b."""
    return a / b if b > 0 else None


def factors(sg: float | None, rg: float | None, pg: float | None) -> dict[str, float | None]:
    """SG, RG, PG and MPG, each rounded to 6 places, MPG the product of the unrounded factors (the product of the
    rounded ones was off in the 6th place: SG 2/3, RG 1, PG 0.5 gave MPG 0.333334). A factor of 0 makes MPG 0
    even beside one not known (PG has no figure without productive time): every job stuck in its TPU's start
    gave no MPG, and the alert on MPG stayed silent when goodput was at its worst.

    >>> factors(0.5, 0.0, None)["mpg"], factors(0.5, 1.0, None)["mpg"]
    (0.0, None)
    """
    known = [f for f in (sg, rg, pg) if f is not None]
    mpg = None if len(known) < 3 and 0 not in known else math.prod(known)
    return {"sg": _round(sg), "rg": _round(rg), "pg": _round(pg), "mpg": _round(mpg)}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


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
    sg = ratio(all_alloc, capacity_s if capacity_s is not None else demand)
    pg = ratio(ideal, prod_pg) if with_pg else None
    bases = {a.pg_basis for a, _ in with_pg}
    buckets = {b: round(sum(a.buckets[b] * a.job.chips for a in accounts), 3) for b in BUCKETS}
    disruptions = sum(a.disruptions for a in accounts)
    return {
        **factors(sg, ratio(productive, all_alloc), pg),
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
    sg = ratio(a.all_allocated_s * a.job.chips, a.demand_s * a.job.chips)
    pg = ratio(a.ideal_s, a.productive_s) if a.ideal_s is not None else None
    return {
        "job": a.job.id,
        "accelerator": a.job.accelerator,
        "chips": a.job.chips,
        "size": size_class(a.job.chips),
        "phase": a.job.phase,
        "framework": a.job.framework,
        "job_slices": a.job.slices,
        **factors(sg, ratio(a.productive_s, a.all_allocated_s), pg),
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


def _window_rows(
    accounts: list[JobAccount],
    capacity: CapacitySteps | None,
    lo: list[float],
    hi: list[float],
    labels: list[str],
    grid: list[float] | None = None,
) -> list[dict[str, Any]]:
    """The factors of each window [lo[k], hi[k]] (lo and hi ascending), labelled labels[k]; `grid`: the period
    start of each (see `chiptime.window_sums`)."""
    import numpy as np

    lo_s, hi_s = np.array(lo, dtype=float), np.array(hi, dtype=float)
    sums = window_sums(accounts, lo_s, hi_s, None if grid is None else np.array(grid, dtype=float))
    caps = capacity.integrals(None, lo_s, hi_s).tolist() if capacity else [None] * len(lo)
    rows = []
    for label, start, end, exact, shown, cap in zip(labels, lo, hi, sums.tolist(), rounded(sums), caps, strict=True):
        alloc, prod, ideal, prod_pg = exact[:4]
        sg, rg = ratio(alloc, cap) if cap else None, ratio(prod, alloc)
        pg = ratio(ideal, prod_pg) if prod_pg else None
        rows.append(
            {
                "period": label,
                "start": start,
                "end": end,
                **factors(sg, rg, pg),
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
    rows = _window_rows(accounts, steps, lo, hi, labels, [lo for lo, _ in bounds])
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
