"""Summary statistics of a point's replications: the mean and a 95% Student t interval, per figure.

The interval is mean +- t(0.975, n-1) * s / sqrt(n), with s the sample standard deviation: the usual interval
for the mean of a few independent replications (scipy.stats.t.interval gives the same). One replication has no
interval (null). Figures a run could not give (None, e.g. PG with no step run) are left out of that figure's n.
Sums run over replications in replication order, so the numbers do not depend on which run finished first.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

Summary = dict[str, float | int | None]
CONFIDENCE = 0.95


def t_quantile(df: int) -> float:
    """The two-sided 95% quantile of Student's t with `df` degrees of freedom."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + CONFIDENCE / 2, df))


def interval(values: Sequence[float]) -> Summary:
    """{"mean", "low", "high", "n"} of the values (low and high None for fewer than two)."""
    n = len(values)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    mean = math.fsum(values) / n
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": n}
    half = t_quantile(n - 1) * statistics.stdev(values, mean) / math.sqrt(n)
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def summarize(runs: Sequence[Mapping[str, float | None]]) -> dict[str, Summary]:
    """Per figure (every name any run gave), its interval over the runs, in replication order."""
    names = sorted({name for run in runs for name in run})
    out = {}
    for name in names:
        values = [float(v) for run in runs if (v := run.get(name)) is not None]
        out[name] = interval(values)
    return out
