"""Step-time health of one job (pure): its empirical ideal step time, how far its recent steps are from it, and
the periods in which it ran slow.

* Step times are the gaps between consecutive step numbers within one run (ml-goodput-measurement's rule: a step
  whose successor is not the next step number has no time), the step not cut by a stop.
* The empirical ideal step time is ml-goodput-measurement's (``compute_ideal_step_time``): the mean of the step
  times of at least 1 s that are at most median + 3 x MAD (MAD: the median absolute deviation, unscaled). It
  gives PG an estimate (marked ``estimated``) when a job logs no program data (``ideal_step_s`` or FLOPs). It is
  the whole run's, even in a report of part of the log (--since/--until), as a declared ideal is; the other
  figures are of the steps starting in the part.
* The trailing window is the last TRAILING_S of the job's step times: their mean over the ideal (``slowdown``)
  and their mean absolute deviation from it (the package's step deviation, averaged).
* A slow period is a run of at least SLOW_MIN_STEPS consecutive steps whose centred rolling median over
  SLOW_MIN_STEPS steps is more than SLOW_FACTOR x the ideal: a median, so one long step (a checkpoint save, a
  data-loading stall) does not make a period, and a clean slowdown is found exactly from its first slow step
  to its last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpufleet.constants import HOUR
from tpufleet.goodput.compiledaccount import ideal_step as compiled_ideal_step

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.goodput.jobaccount import JobAccount

    Times = npt.NDArray[np.float64]

MIN_STEP_S = 1.0  # step times under a second are not used for the ideal (the package's filter)
MAD_LIMIT = 3.0  # steps slower than median + 3 x MAD are anomalies, not the ideal
TRAILING_S = float(HOUR)  # the trailing window of step-time deviation: the job's last hour of steps
SLOW_FACTOR = 1.2  # a step more than 20% over the ideal is slow
SLOW_MIN_STEPS = 21  # a slow period lasts at least this many steps (also the rolling median's width; odd)


def step_times(a: JobAccount) -> tuple[Times, Times]:
    """(start, seconds) of every step with a time: the next step number follows it in the same run."""
    import numpy as np

    if a.step_starts is None or a.step_ends is None or a.step_numbers is None or len(a.step_starts) < 2:
        return np.zeros(0), np.zeros(0)
    st, end, sn = a.step_starts, a.step_ends, a.step_numbers
    ok = (sn[1:] == sn[:-1] + 1) & (end[:-1] == st[1:])
    return st[:-1][ok], (st[1:] - st[:-1])[ok]


def ideal_step(durations: Times) -> float | None:
    """ml-goodput-measurement's empirical ideal step time, or None without a step of at least a second."""
    import numpy as np

    compiled, ideal = compiled_ideal_step(durations, MIN_STEP_S, MAD_LIMIT)
    if compiled:
        return ideal
    d = durations[durations >= MIN_STEP_S]
    if not len(d):
        return None
    med = float(np.median(d))
    mad = float(np.median(np.abs(d - med)))
    normal = d[d <= med + MAD_LIMIT * mad]
    return float(normal.mean()) if len(normal) else None


def rolling_median_over(values: Times, k: int, limit: float) -> npt.NDArray[np.bool_]:
    """For each full window of `k` (odd) consecutive values, whether its median is over `limit`: exactly when
    more than half of the window is (the median is the middle of the sorted window), so a running count does
    in O(n) what sorting every window would (a median per window was 40% of a ten-million-event report)."""
    import numpy as np

    over = np.concatenate([[0], np.cumsum(values > limit)])
    above: npt.NDArray[np.bool_] = over[k:] - over[:-k] > k // 2
    return above


def slow_periods(starts: Times, durations: Times, ideal: float) -> list[dict[str, Any]]:
    """The runs of slow steps (see the module's docstring), each with its start, end, steps and slowdown."""
    import numpy as np

    k = SLOW_MIN_STEPS
    if len(durations) < k:
        return []
    slow = np.zeros(len(durations), dtype=bool)
    slow[k // 2 : len(durations) - k // 2] = rolling_median_over(durations, k, SLOW_FACTOR * ideal)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], slow.astype(np.int8), [0]])))
    out = []
    for lo, hi in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
        if hi - lo < k:
            continue
        mean = float(durations[lo:hi].mean())
        out.append(
            {
                "start": round(float(starts[lo]), 3),
                "end": round(float(starts[hi - 1] + durations[hi - 1]), 3),
                "steps": hi - lo,
                "mean_step_s": round(mean, 3),
                "slowdown": round(mean / ideal, 4),
            }
        )
    return out


def job_health(a: JobAccount) -> tuple[dict[str, Any], float | None]:
    """The step-time section of a job's row, and its empirical ideal step time unrounded (for PG, given to 6
    places: the section's ideal, rounded to 4, moved PG's fifth digit): the ideal from every step of the job's
    run, the rest from the steps starting in its account's part (all of them when the account is the whole job)."""
    starts, durations = step_times(a)
    ideal = ideal_step(durations)
    part = (starts >= a.start) & (starts <= a.end)
    if not part.all():
        starts, durations = starts[part], durations[part]
    out: dict[str, Any] = {
        "steps_timed": len(durations),
        "empirical_ideal_s": None if ideal is None else round(ideal, 4),
        "trailing_window_s": TRAILING_S,
        "trailing_mean_s": None,
        "trailing_slowdown": None,
        "trailing_deviation_s": None,
        "slow_periods": [],
    }
    if ideal is None or not len(durations):
        return out, ideal
    recent = durations[starts >= starts[-1] + durations[-1] - TRAILING_S]
    if not recent.size:  # the last step alone outlasts the window: it is the window's stepping
        recent = durations[-1:]
    out["trailing_mean_s"] = round(float(recent.mean()), 4)
    out["trailing_slowdown"] = round(float(recent.mean()) / ideal, 4)
    out["trailing_deviation_s"] = round(float(abs(recent - ideal).mean()), 4)
    out["slow_periods"] = slow_periods(starts, durations, ideal)
    return out, ideal


def slice_efficiency(counts: list[tuple[float, int, int, int]], t0: float, t1: float) -> dict[str, float] | None:
    """An elastic multislice job's time-weighted stepping (active / total) and available (available / total)
    slice efficiency over [t0, t1], each count holding until the next (ml-goodput-measurement's rule: before the
    first count nothing is known, and that time counts as 0)."""
    if not counts or t1 <= t0:
        return None
    ordered = sorted(counts)
    before = [c for c in ordered if c[0] <= t0]
    line = [(t0, *before[-1][1:])] if before else []
    line += [c for c in ordered if t0 < c[0] < t1]
    if not line:
        return None
    stepping = available = 0.0
    for i, (t, active, avail, total) in enumerate(line):
        nxt = line[i + 1][0] if i + 1 < len(line) else t1
        stepping += active / total * (nxt - t)
        available += avail / total * (nxt - t)
    return {
        "stepping_slice_efficiency": round(stepping / (t1 - t0), 6),
        "available_slice_efficiency": round(available / (t1 - t0), 6),
    }
