"""Upper tails of the binomial distribution, as `scipy.stats` computes them (the same special
functions, so the same floats), without importing `scipy.stats`: that import alone took 0.5 s of CPU and 60 MB,
most of `suspects`' and `plan-spares`' time."""

from __future__ import annotations

import math


def binom_sf(k: int, n: int, p: float) -> float:
    """`scipy.stats.binom.sf(k, n, p)`: P(more than k of n trials succeed, each with probability p), for n >= 0 and
    0 <= p <= 1.

    >>> binom_sf(7, 10, 0.9), binom_sf(-1, 10, 0.9), binom_sf(10, 10, 0.9)
    (0.9298091736, 1.0, 0.0)
    """
    k = math.floor(k)
    if k < 0:
        return 1.0
    if k >= n:
        return 0.0
    try:  # where scipy.stats' binom takes it from (scipy 1.13 on); earlier versions keep it elsewhere
        from scipy.special._ufuncs import _binom_sf
    except ImportError:
        from scipy.stats import binom

        return float(binom.sf(k, n, p))
    return float(_binom_sf(k, n, p))
