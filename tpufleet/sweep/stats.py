"""Summary statistics of a point's replications: the mean and a 95% Student t interval, per figure.

The interval is mean +- t(0.975, n-1) * s / sqrt(n), with s the sample standard deviation: the usual interval
for the mean of a few independent replications (scipy.stats.t.interval gives the same). One replication has no
interval (null). Figures a run could not give (None, e.g. PG with no step run) are left out of that figure's n.
Sums run over replications in replication order, so the numbers do not depend on which run finished first.

With few seeds the t interval is wide and can run past what a figure can be (a goodput of 1.3 with 2 seeds).
The interval is then clipped to the figure's range (`bounds`): [0, 1] for shares (goodputs, availabilities), 0 and
up for the rest (counts and hours). Clipping, rather than an interval for proportions such as Wilson's, because a
point's replications give means of ratios, not successes out of trials. The range is widened to hold every value
observed, so a clipped interval always contains the mean.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

Summary = dict[str, float | int | None]
CONFIDENCE = 0.95
# Figures that are shares, by family (the name before any ".": "rg.large" is an rg): see runs.py for the names.
SHARES = frozenset(
    {"sg", "rg", "pg", "mpg", "reconfigurable_ft", "reconfigurable", "reconfigurable_ft_exact", "static"}
)
UNBOUNDED = (-math.inf, math.inf)


def t_quantile(df: int) -> float:
    """The two-sided 95% quantile of Student's t with `df` degrees of freedom."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + CONFIDENCE / 2, df))


def bounds(name: str) -> tuple[float, float]:
    """The range a figure of the sweep can take.

    >>> bounds("rg.large"), bounds("wait_hours.large")
    ((0.0, 1.0), (0.0, inf))
    """
    return (0.0, 1.0) if name.split(".", 1)[0] in SHARES else (0.0, math.inf)


def interval(values: Sequence[float], within: tuple[float, float] = UNBOUNDED) -> Summary:
    """{"mean", "low", "high", "n"} of the values (low and high None for fewer than two), the interval clipped to
    `within` (widened to hold the values)."""
    n = len(values)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    mean = math.fsum(values) / n
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": n}
    half = t_quantile(n - 1) * statistics.stdev(values, mean) / math.sqrt(n)
    floor, ceiling = min(within[0], min(values)), max(within[1], max(values))
    return {"mean": mean, "low": max(mean - half, floor), "high": min(mean + half, ceiling), "n": n}


def summarize(runs: Sequence[Mapping[str, float | None]]) -> dict[str, Summary]:
    """Per figure (every name any run gave), its interval over the runs, in replication order."""
    names = sorted({name for run in runs for name in run})
    out = {}
    for name in names:
        values = [float(v) for run in runs if (v := run.get(name)) is not None]
        out[name] = interval(values, bounds(name))
    return out
