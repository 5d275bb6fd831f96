"""The compiled painting of a job's elementary intervals (`timeline._label`), for large logs once Numba is loaded.

Compiled by Numba when first imported (cached as `linekernel` is). Integers only: which label covers each interval,
so its answer is `timeline`'s numpy painting exactly, not merely close (tests/test_goodput_paint.py checks both on
random intervals). It is faster for two reasons: a job's dozen labels are painted in one call, not a dozen numpy
calls each, and an interval's ends are found by a search that starts where the last one ended (the ends come
mostly in time order), where ``numpy.searchsorted`` bisects the whole array for each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpufleet.goodput.linekernel import _jit


@_jit
def first_index(a: Any, v: float, hint: int, right: bool) -> int:
    """``numpy.searchsorted(a, v, side)`` (side "right" when `right`, else "left") for a sorted `a` and a `v`
    without NaN, searched outwards from `hint` (any index: near the answer, it takes a few steps)."""
    n = len(a)
    lo, hi = 0, n  # the answer is in [lo, hi]: a[:lo] is before v, a[hi:] is not
    probe, step = min(max(hint, 0), n), 1
    if probe < n and (a[probe] <= v if right else a[probe] < v):
        while probe < n and (a[probe] <= v if right else a[probe] < v):
            lo, probe, step = probe + 1, probe + step, step * 2
        hi = min(probe, n)
    else:
        hi, probe = probe, probe - 1
        while probe >= 0 and not (a[probe] <= v if right else a[probe] < v):
            hi, probe, step = probe, probe - step, step * 2
        lo = max(probe + 1, 0)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] <= v if right else a[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def paint(bounds: Any, start: float, end: float, s: Any, e: Any, at: Any, codes: Any, label: Any) -> bool:
    """Paint `label` (one code an elementary interval of `bounds`, filled with the lowest already) with each group
    of intervals in turn, a later group over an earlier: group g is s[at[g]:at[g + 1]], e[...], clipped to
    [start, end], with code codes[g]. False, nothing painted, when a time is NaN (the caller paints then)."""
    for k in range(len(s)):
        if s[k] != s[k] or e[k] != e[k]:
            return False
    m = len(bounds) - 1
    depth = np.zeros(m + 2, dtype=np.int64)  # an end past bounds[-1] lands at m + 1 (`_label`'s bounds hold end)
    for g in range(len(codes)):
        if at[g] == at[g + 1]:
            continue
        depth[:] = 0
        low = high = 0
        for k in range(at[g], at[g + 1]):
            a, b = min(max(s[k], start), end), min(max(e[k], start), end)
            if b > a:
                low = first_index(bounds, a, low, False)
                high = first_index(bounds, b, high, False)
                depth[low] += 1
                depth[high] -= 1
        covered = 0
        for x in range(m):
            covered += depth[x]
            if covered > 0:
                label[x] = codes[g]
    return True


_WALK = 8  # values in time order are mostly a step or two on from the last one's answer: walked that far, then searched


@_jit
def search_sorted(a: Any, v: Any, right: bool, out: Any) -> bool:
    """``numpy.searchsorted(a, v, side)`` into `out`, each value searched from the last one's answer (values in
    time order take a step or two each); False, `out` unfinished, unless `a` is sorted and nothing is NaN (the
    caller asks numpy then: its order of NaNs is its own, and for an unsorted `a` any answer is its own)."""
    ordered = len(a) == 0 or a[0] == a[0]
    for k in range(1, len(a)):  # no early return: a loop the compiler vectorizes (a NaN fails every comparison)
        ordered &= a[k - 1] <= a[k]
    if not ordered:
        return False
    at, n = 0, len(a)
    for k in range(len(v)):
        x = v[k]
        if x != x:
            return False
        if at == 0 or (a[at - 1] <= x if right else a[at - 1] < x):  # the answer is at or after the last one's
            step = at  # a few steps on (values in time order): walked, else searched from there
            while step < n and step < at + _WALK and (a[step] <= x if right else a[step] < x):
                step += 1
            at = step if step < at + _WALK or step == n else first_index(a, x, step, right)
        else:
            at = first_index(a, x, at, right)
        out[k] = at
    return True


@_jit
def unsaved_steps(ks: Any, run_start: Any, cut: Any, saves_t: Any, saves_step: Any, sn: Any, productive: Any) -> None:
    """`steps.steps_of`'s checkpoint rule, in place: step k of `ks` (steps whose run a disruption ends, at cut[k])
    is not productive unless a checkpoint in [run_start[k], cut[k]] saved its step number (sorted `saves_t`: such
    checkpoints are one stretch of them, found once for the steps that share the run and the disruption)."""
    last_lo, last_hi, saved = np.nan, np.nan, -1
    lo_at = hi_at = 0
    for k in ks:
        lo, hi = run_start[k], cut[k]
        if lo != last_lo or hi != last_hi:
            lo_at = first_index(saves_t, lo, lo_at, False)
            hi_at = first_index(saves_t, hi, hi_at, True)
            saved = -1
            for i in range(lo_at, hi_at):
                saved = saves_step[i] if i == lo_at else max(saved, saves_step[i])
            last_lo, last_hi = lo, hi
        if sn[k] > saved:
            productive[k] = False
