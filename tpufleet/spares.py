"""Spare cubes and suspect components: how many healthy cubes a pod can count on, and who fails too often (pure).

The model of `plan-spares` (the cube-level framework of Google Cloud's "Cluster-level reliability for
trillion-parameter models on TPUs", May 2026: every chip and ICI link of a cube must be up for the cube to count,
and the count of healthy cubes is binomial):

1. Each component fails as a Poisson process at its daily rate lambda (host, optical link, OCS) and a failure keeps
   it down for its repair time R. A component of unknown state is up for the whole horizon H iff no failure falls
   in the window [-R, H] (one that fell in [-R, 0] is still being repaired at the start): probability
   exp(-lambda (H + R)). One the state shows up now is under no repair, so only [0, H] counts: exp(-lambda H)
   (`up_now`, what `plan-spares` and `capacity` use for every cube without an open fault).
2. A cube is *fully healthy over the horizon* iff every one of its hosts (16 of 4 chips; a host's failure stands
   for its chips and the electrical ICI links on its board) and every one of its optical links (96) is:
   p_cube = exp(-(hosts lambda_host (H + R_host) + links lambda_link (H + R_link))).
3. A cube with an open fault (any kind, a planned drain included) is down now: p = 0. A cube with h faults in its
   recorded history has its intensity multiplied by 1 + h (the mean of a Gamma(1, 1/lambda) prior updated by h
   failures over a short exposure; conservative: it never makes a clean cube look better than the fleet).
4. Cubes fail independently, so the healthy count is binomial when the cubes are alike and Poisson-binomial
   (exact, by convolution) when they differ.
5. The running slices need K = the sum of their cubes healthy cubes (a sub-cube slice needs its one cube, which
   slices sharing it count once). With s spares held back they keep a placement iff at least K of their own cubes
   and the s spares are healthy; a slice without fault-tolerant routing also needs every OCS of its pod up,
   exp(-ocs lambda_ocs (H + R_ocs)), while fault-tolerant slices ride through OCS failures.

Assumptions: failures independent across components and cubes (no shared power or cooling domain), constant
rates (no infant mortality or wear-out), repair times fixed, a repaired cube re-qualified instantly, the horizon
counted from now. With the TPUv4 rates (hosts 0.08 %/day, 8 h; optical links 0.005 %/day, 4 h) a cube is fully
healthy over 7 days with probability 0.8796; at the blog's operating point the whole superpod has 130 of 144
healthy cubes at 95 % confidence when p_cube = 0.94 (any p_cube in [0.93469, 0.94026) gives 130; the blog states
the count, not the per-cube figure, so 0.94 is derived here):

>>> cubes_at_confidence([BLOG_CUBE_AVAILABILITY] * 144, 0.95)
130
>>> round(cube_healthy(TPU_V4_RATES, 7.0), 4)
0.8796

`suspects` is a one-sided Poisson test of each unit's fault count against the rest of the fleet's rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from tpufleet.constants import MACHINES_PER_CUBE, OCS_PER_POD, OPTICAL_LINKS_PER_CUBE
from tpufleet.ids import natural_key
from tpufleet.tails import binom_sf

__all__ = [
    "BLOG_CUBES",
    "BLOG_CUBE_AVAILABILITY",
    "TPU_V4_RATES",
    "ComponentRates",
    "SpareCurve",
    "Suspect",
    "at_least",
    "cube_healthy",
    "cubes_at_confidence",
    "failures_at_confidence",
    "joint_spares",
    "ocs_all_up",
    "parse_days",
    "poisson_binomial",
    "spare_curve",
    "suspects",
]

HOURS_PER_DAY: Final = 24.0
BLOG_CUBES: Final = 144
# ASSUMPTION: the blog gives "130 of 144 cubes at 95 % confidence" from a binomial model, not the per-cube
# availability; 0.94 is the round figure in the interval [0.93469, 0.94026) that reproduces it.
BLOG_CUBE_AVAILABILITY: Final = 0.94


@dataclass(frozen=True)
class ComponentRates:
    """Failures per component per day and hours to repair: hosts, optical links, OCS."""

    host_per_day: float
    link_per_day: float
    ocs_per_day: float
    host_repair_hours: float
    link_repair_hours: float
    ocs_repair_hours: float


TPU_V4_RATES: Final = ComponentRates(0.0008, 0.00005, 0.0004, 8.0, 4.0, 2.0)  # "Resiliency at Scale", tpufleet's


def _exposure(per_day: float, repair_hours: float, horizon_days: float, up_now: bool) -> float:
    """Expected failures of one component in the window [-R, H], or [0, H] when it is known to be up now (step 1
    of the module docstring)."""
    return per_day * (horizon_days + (0.0 if up_now else repair_hours / HOURS_PER_DAY))


def cube_healthy(
    rates: ComponentRates,
    horizon_days: float,
    hosts: int = MACHINES_PER_CUBE,
    links: int = OPTICAL_LINKS_PER_CUBE,
    history: int = 0,
    up_now: bool = False,
) -> float:
    """Probability that every host and optical link of a cube stays up over the horizon (steps 1-3); `up_now`: the
    cube is known to be up as the horizon starts (no open fault), so no failure before it counts.

    >>> round(cube_healthy(TPU_V4_RATES, 0.0), 6)  # now: a cube's steady-state availability
    0.994946
    >>> round(cube_healthy(TPU_V4_RATES, 7.0, history=1), 4)  # one fault in its history: twice the intensity
    0.7737
    >>> cube_healthy(TPU_V4_RATES, 0.0, up_now=True), round(cube_healthy(TPU_V4_RATES, 7.0, up_now=True), 4)
    (1.0, 0.8841)
    """
    load = hosts * _exposure(rates.host_per_day, rates.host_repair_hours, horizon_days, up_now)
    load += links * _exposure(rates.link_per_day, rates.link_repair_hours, horizon_days, up_now)
    return math.exp(-(1 + history) * load)


def ocs_all_up(rates: ComponentRates, horizon_days: float, ocs: int = OCS_PER_POD, up_now: bool = False) -> float:
    """Probability that every OCS of a pod stays up over the horizon (what a slice without fault-tolerant routing
    needs, step 5); `up_now`: every one is known to be up as the horizon starts.

    >>> round(ocs_all_up(TPU_V4_RATES, 7.0), 4), round(ocs_all_up(TPU_V4_RATES, 7.0, up_now=True), 4)
    (0.8728, 0.8742)
    """
    return math.exp(-ocs * _exposure(rates.ocs_per_day, rates.ocs_repair_hours, horizon_days, up_now))


def poisson_binomial(ps: Sequence[float]) -> list[float]:
    """The distribution of the number of successes of independent trials with these probabilities: pmf[k], k = 0..n,
    by direct convolution (exact up to rounding; O(n^2)).

    >>> [round(v, 4) for v in poisson_binomial([0.5, 0.9])]
    [0.05, 0.5, 0.45]
    """
    import numpy as np

    pmf = np.zeros(len(ps) + 1)
    pmf[0] = 1.0
    for i, p in enumerate(ps):
        head = pmf[: i + 2].copy()
        pmf[: i + 2] *= 1.0 - p
        pmf[1 : i + 2] += head[: i + 1] * p
    return [float(v) for v in pmf]


def _alike(ps: Sequence[float]) -> bool:
    return len(set(ps)) <= 1


def at_least(ps: Sequence[float], k: int) -> float:
    """P(at least k of the trials succeed): the exact binomial tail when all ps are equal (scipy), else the
    Poisson-binomial one.

    >>> round(at_least([0.99 ** 16] * 64, 50), 4)  # the TPUv4 paper's Fig. 1 point: 50 of 64 cubes, p = 0.99
    0.9544
    """
    if k <= 0:
        return 1.0
    if k > len(ps):
        return 0.0
    if _alike(ps):
        return binom_sf(k - 1, len(ps), ps[0])
    return min(1.0, sum(poisson_binomial(ps)[k:]))


def cubes_at_confidence(ps: Sequence[float], confidence: float) -> int:
    """The largest k with P(at least k cubes healthy) >= confidence: the cubes one can count on (the blog's 130).

    >>> cubes_at_confidence([0.9] * 10, 0.9)
    8
    """
    if _alike(ps) and ps:
        tails = [binom_sf(k - 1, len(ps), ps[0]) for k in range(len(ps) + 1)]
    else:
        pmf = poisson_binomial(ps)
        tails = [sum(pmf[k:]) for k in range(len(ps) + 1)]
    return max(k for k, tail in enumerate(tails) if tail >= confidence or k == 0)


def failures_at_confidence(ps: Sequence[float], confidence: float) -> int:
    """The smallest K with P(at most K of these cubes fail) >= confidence, each cube healthy with its p (the
    expected case of `capacity`): the cubes minus `cubes_at_confidence`.

    >>> failures_at_confidence([0.9] * 10, 0.9)
    2
    """
    return len(ps) - cubes_at_confidence(ps, confidence)


@dataclass(frozen=True)
class SpareCurve:
    """For s = 0, 1, ... spares (in the order given), P(the slices keep a healthy placement); the smallest s that
    meets the confidence (None: no number of the candidates does) and the probability there (or at `best`)."""

    needed: int
    probabilities: tuple[float, ...]
    spares: int | None
    probability: float
    best: int  # = spares when met; else the fewest spares reaching the curve's highest value


def spare_curve(
    own: Sequence[float], candidates: Sequence[float], needed: int, ocs: float, confidence: float
) -> SpareCurve:
    """P(at least `needed` of the slices' own cubes and the first s candidate spares are healthy) x the OCS term,
    for s = 0 .. len(candidates) (step 5 of the module docstring).

    >>> curve = spare_curve([0.9] * 4, [0.9] * 3, 4, 1.0, 0.95)
    >>> curve.spares, round(curve.probability, 4), [round(p, 4) for p in curve.probabilities]
    (2, 0.9841, [0.6561, 0.9185, 0.9841, 0.9973])
    """
    if _alike([*own, *candidates]) and own:
        probs = [binom_sf(needed - 1, len(own) + s, own[0]) * ocs for s in range(len(candidates) + 1)]
    else:
        probs = _incremental_tails(own, candidates, needed, ocs)
    meets = next((s for s, p in enumerate(probs) if p >= confidence), None)
    if meets is None:  # out of reach: the fewest spares past which more no longer help (the OCS term caps it)
        best = next(s for s, p in enumerate(probs) if p >= max(probs) * (1.0 - 1e-9))
        return SpareCurve(needed, tuple(probs), None, probs[best], best)
    return SpareCurve(needed, tuple(probs), meets, probs[meets], meets)


def joint_spares(curves: Sequence[Sequence[float]], confidence: float) -> tuple[int, ...] | None:
    """The fewest spares in all, one count per pod, at which the product of the pods' curves (each pod's
    probability at 0, 1, ... spares, as `spare_curve` gives it) reaches the confidence: what a job across pods needs,
    pods being independent in the model; among equal totals, the highest product. None when holding every candidate
    of every pod does not reach it.

    Exact: the best product at each total, pod by pod (a pod's curve rises with its spares, but not always by less
    each time, so holding the next spare where it helps most could miss the fewest).

    >>> joint_spares([[0.5, 0.9, 0.96, 0.99], [0.5, 0.9, 0.96, 0.99]], 0.95)
    (3, 2)
    >>> joint_spares([[0.5, 0.9], [0.99]], 0.95) is None
    True
    """
    import numpy as np

    best = np.ones(1)  # the best product of the pods so far at each total of their spares
    choices: list[np.ndarray] = []  # per pod: at each total, the spares that pod holds in that best product
    for curve in curves:
        values = np.asarray(curve, dtype=float)
        merged = np.full(len(best) + len(values) - 1, -1.0)
        pick = np.zeros(len(merged), dtype=np.int64)
        for held, p in enumerate(values):
            window = merged[held : held + len(best)]
            better = best * p > window
            window[better] = (best * p)[better]
            pick[held : held + len(best)][better] = held
        best = merged
        choices.append(pick)
    reached = np.flatnonzero(best >= confidence)
    if not len(reached):
        return None
    total, held_by_pod = int(reached[0]), []
    for pick in reversed(choices):
        held_by_pod.append(int(pick[total]))
        total -= held_by_pod[-1]
    return tuple(reversed(held_by_pod))


def _incremental_tails(own: Sequence[float], candidates: Sequence[float], needed: int, ocs: float) -> list[float]:
    """The curve of `spare_curve` by one convolution, adding one candidate at a time (O(n^2) in all)."""
    import numpy as np

    pmf = np.array(poisson_binomial(own) + [0.0] * len(candidates))
    n = len(own)
    out = [float(pmf[needed:].sum()) * ocs if needed > 0 else ocs]
    for p in candidates:
        head = pmf[: n + 1].copy()
        pmf[: n + 1] *= 1.0 - p
        pmf[1 : n + 2] += head * p
        n += 1
        out.append(min(1.0, float(pmf[needed:].sum())) * ocs if needed > 0 else ocs)
    return out


# ---- suspects ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Suspect:
    """A unit (host or cube) whose fault count in the window is improbably high for the rest of the fleet's rate."""

    unit: str
    faults: int
    expected: float
    p_value: float


def suspects(counts: Mapping[str, int], units: int, p_value: float, min_faults: int = 2) -> list[Suspect]:
    """Units whose count n is too many for units that fail alike, most surprising first: the one-sided exact test
    conditional on the fleet's count, p = P(X >= n) for X ~ Binomial(total, 1 / units), the chance that at least n
    of the `total` faults of the kind fall on one given unit. Where the rest of the fleet had none it is
    (1 / units) ** n: two faults on one of two cubes are no surprise (0.25), on one of 1,024 hosts they are
    (9.5e-07); and it only rises as the rest of the fleet has more (a Poisson test against the rest's rate fell
    from that value when one fault came elsewhere, flagging a unit for a fault on another).

    `expected` is the rest of the fleet's count per unit (leave-one-out), as reported. A unit with fewer than
    `min_faults` faults is never a suspect (in a quiet fleet one fault alone would be surprising), nor is the only
    unit of its kind: there is no rest of the fleet to compare with (a fleet of one cube).

    >>> [(s.unit, s.faults, f"{s.p_value:.2e}") for s in suspects({"host:c01/3": 4, "host:c02/0": 1}, 1024, 0.01)]
    [('host:c01/3', 4, '4.54e-12')]
    """
    if units < 2:
        return []
    total = sum(counts.values())
    out = []
    for unit, n in counts.items():
        value = binom_sf(n - 1, total, 1.0 / units)
        if n >= min_faults and value < p_value:
            out.append(Suspect(unit, n, (total - n) / (units - 1), value))
    return sorted(out, key=lambda s: (s.p_value, -s.faults, natural_key(s.unit)))


# ---- options ---------------------------------------------------------------------------------------------------
def parse_days(text: str, option: str) -> float:
    """A length of time as operators type an age (7d, 12h, 30m, 2w), in days; BadInput naming the option otherwise.
    Zero is refused: a window or horizon of no time holds no fault (the answer would be trivially "none").

    >>> parse_days("36h", "--horizon")
    1.5
    """
    from tpufleet.timeparse import parse_length

    return parse_length(text, option) / 86400.0
