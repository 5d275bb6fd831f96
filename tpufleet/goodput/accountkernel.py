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
    depth = np.zeros(len(bounds) + 1, dtype=np.int64)  # an end past bounds[-1] lands at m + 1 (`_label`'s hold end)
    for g in range(len(codes)):
        if at[g] < at[g + 1] and not _painted_in_order(bounds, start, end, s, e, at[g], at[g + 1], codes[g], label):
            _painted_by_depth(bounds, start, end, s, e, at[g], at[g + 1], codes[g], label, depth)
    return True


_RESTARTS = 8  # a group whose starts go back in time more often than this is painted by depth (`_painted_by_depth`)


@_jit
def _painted_in_order(
    bounds: Any, start: float, end: float, s: Any, e: Any, lo: int, hi: int, code: int, label: Any
) -> bool:
    """Paint one group's intervals s[lo:hi], e[lo:hi] straight onto `label`, each elementary interval once: the
    starts come in time order (a group is a few arrays, each in order), so what lies before the furthest end
    painted is painted already. False, with what was painted left (the caller paints it all again), once the
    starts have gone back in time more than _RESTARTS times: overlapping stretches would be painted again each."""
    low = high = reach = 0
    restarts, last = 0, -np.inf
    for k in range(lo, hi):
        a, b = min(max(s[k], start), end), min(max(e[k], start), end)
        if a < last:
            restarts, reach = restarts + 1, 0
            if restarts > _RESTARTS:
                return False
        last = a
        if b > a:
            low = first_index(bounds, a, low, False)
            high = first_index(bounds, b, high, False)
            for x in range(max(low, reach), min(high, len(label))):
                label[x] = code
            reach = max(reach, high)
    return True


@_jit
def _painted_by_depth(
    bounds: Any, start: float, end: float, s: Any, e: Any, lo: int, hi: int, code: int, label: Any, depth: Any
) -> None:
    """Paint one group's intervals by the depth of cover of each elementary interval: a pass over all of them."""
    depth[:] = 0
    low = high = 0
    for k in range(lo, hi):
        a, b = min(max(s[k], start), end), min(max(e[k], start), end)
        if b > a:
            low = first_index(bounds, a, low, False)
            high = first_index(bounds, b, high, False)
            depth[low] += 1
            depth[high] -= 1
    covered = 0
    for x in range(len(label)):
        covered += depth[x]
        if covered > 0:
            label[x] = code


@_jit
def distinct_sorted(values: Any, out: Any) -> int:
    """`timeline._distinct`'s pass over its sorted `values`: each value once (the first of equal ones), NaNs
    (sorted last) as one, into out[:n]; n returned."""
    n = 0
    for k in range(len(values)):
        x = values[k]
        if k == 0 or (x != values[k - 1] and not (x != x and values[k - 1] != values[k - 1])):
            out[n] = x
            n += 1
    return n


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


_PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE: a sum of up to this many values is 8 running sums, then added up


@_jit
def block_sum(a: Any, lo: int, n: int) -> float:
    """numpy's sum of a block of a[lo:lo + n] (n at most 128): in turn under 8 values, else 8 running sums."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0, r1, r2, r3 = r0 + a[lo + i], r1 + a[lo + i + 1], r2 + a[lo + i + 2], r3 + a[lo + i + 3]
        r4, r5, r6, r7 = r4 + a[lo + i + 4], r5 + a[lo + i + 5], r6 + a[lo + i + 6], r7 + a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return float(res)


@_jit
def pairwise_sum(a: Any, lo: int, n: int) -> float:
    """The sum of a[lo:lo + n] as ``numpy.sum`` adds a contiguous float64 array, in its order (its pairwise
    summation: blocks of at most 128 summed by `block_sum`, the halves of a longer stretch added), so to the last
    bit. A loop over a stack of halves, not a recursion: Numba's cache loads a recursive function wrongly."""
    starts, sizes, stage = np.empty(128, np.int64), np.empty(128, np.int64), np.empty(128, np.int64)
    sums, held = np.empty(128), 0
    starts[0], sizes[0], stage[0], depth = lo, n, 0, 1
    while depth:
        top = depth - 1
        first, size = starts[top], sizes[top]
        half = size // 2 - (size // 2) % 8
        if size <= _PAIRWISE_BLOCK or stage[top] == 2:  # a block, or both halves summed: this stretch's sum
            if size <= _PAIRWISE_BLOCK:
                sums[held], held = block_sum(a, first, size), held + 1
            else:
                sums[held - 2], held = sums[held - 2] + sums[held - 1], held - 1
            depth -= 1
            continue
        stage[top] += 1  # its first half, then its second
        starts[depth] = first if stage[top] == 1 else first + half
        sizes[depth] = half if stage[top] == 1 else size - half
        stage[depth], depth = 0, depth + 1
    return float(sums[0])


@_jit
def covered(s: Any, e: Any) -> Any:
    """`steps._covered`: the union of the intervals [s, e) (those with e > s) as disjoint sorted [a, b), with the
    covered length before each a; b is at least 0 (numpy's is the largest end of its group, or 0)."""
    keep = np.flatnonzero(e > s)
    starts, ends = s[keep], e[keep]
    order = np.argsort(starts, kind="mergesort")
    a, b = np.empty(len(keep)), np.empty(len(keep))
    groups, reach = 0, -np.inf
    for j in range(len(order)):
        x, y = starts[order[j]], ends[order[j]]
        if j == 0 or x > reach:
            a[groups], b[groups] = x, 0.0
            groups += 1
        b[groups - 1] = max(b[groups - 1], y)
        reach = max(reach, y)
    before = np.zeros(groups)
    for g in range(1, groups):
        before[g] = before[g - 1] + (b[g - 1] - a[g - 1])
    return a[:groups], b[:groups], before


@_jit
def covered_upto(a: Any, b: Any, before: Any, x: float, hint: int) -> Any:
    """`steps._covered_upto` of one time: the covered length up to x, and where x was found (the next hint)."""
    k = first_index(a, x, hint, True) - 1
    if k < 0:
        return 0.0, 0
    return before[k] + min(max(x - a[k], 0.0), b[k] - a[k]), k


@_jit
def free_until(a: Any, b: Any, s0: float, amount: float) -> float:
    """`steps._free_until`: the first time at which [s0, then] holds `amount` seconds the union (a, b) leaves."""
    t, left = s0, amount
    for i in range(first_index(b, s0, 0, True), len(a)):
        gap = max(0.0, a[i] - t)
        if gap >= left:
            return t + left
        left -= gap
        t = max(t, b[i])
    return t + left


@_jit
def startup(st: Any, end: Any, run: Any, complete: Any, productive: Any, s: Any, e: Any, out_s: Any, out_e: Any) -> int:
    """`steps.startup`, in place: the first step of each run, when complete, measured against the mean of the
    run's other complete productive steps, all net of the intervals (s, e); its excess placed from its start on
    the time they leave free: out_s[:n], out_e[:n], n returned. -1, nothing placed, when a time is NaN."""
    for x in (st, end, s, e):
        for k in range(len(x)):
            if x[k] != x[k]:
                return -1
    a, b, before = covered(s, e)
    net = np.empty(len(st))
    at_start = at_end = 0
    for k in range(len(st)):
        upto_end, at_end = covered_upto(a, b, before, end[k], at_end) if len(a) else (0.0, 0)
        upto_start, at_start = covered_upto(a, b, before, st[k], at_start) if len(a) else (0.0, 0)
        net[k] = (end[k] - st[k]) - (upto_end - upto_start)
    placed, lo, others = 0, 0, np.empty(len(st))
    while lo < len(st):
        hi = lo + 1
        while hi < len(st) and run[hi] == run[lo]:
            hi += 1
        used = 0
        for k in range(lo + 1, hi):
            if complete[k] and productive[k]:
                others[used] = net[k]
                used += 1
        if hi - lo >= 2 and complete[lo] and used:
            excess = net[lo] - pairwise_sum(others, 0, used) / used
            if excess > 0:
                out_s[placed], out_e[placed] = st[lo], free_until(a, b, st[lo], excess)
                placed += 1
        lo = hi
    return placed


@_jit
def first_after(times: Any, points: Any, inclusive: bool, out: Any) -> bool:
    """`steps.first_after` into `out`: for each point, the first of the sorted `times` after it (at or after it
    when `inclusive`), else +inf; False, `out` unfinished, where `search_sorted` leaves the search to numpy."""
    at = np.empty(len(points), dtype=np.int64)
    if not search_sorted(times, points, not inclusive, at):
        return False
    for k in range(len(points)):
        out[k] = times[at[k]] if at[k] < len(times) else np.inf
    return True


@_jit
def median_and_mad(ordered: Any) -> Any:
    """``numpy.median`` of the sorted, NaN-free `ordered` (not empty), and the median of their distances from it
    (the MAD), each as numpy takes it: the middle value, or the mean of the middle two (their sum from 0.0,
    halved). The distances fall on each side of the median, the smallest nearest it: one walk outwards."""
    n = len(ordered)
    med = (0.0 + ordered[n // 2]) / 1.0 if n % 2 else (0.0 + ordered[n // 2 - 1] + ordered[n // 2]) / 2.0
    below = np.searchsorted(ordered, med) - 1  # the distances below the median grow leftwards from here
    above = below + 1  # and those above it rightwards from here; the smallest n // 2 + 1 are walked
    nearest, previous = 0.0, 0.0
    for _ in range(n // 2 + 1):
        left = abs(ordered[below] - med) if below >= 0 else np.inf
        right = abs(ordered[above] - med) if above < n else np.inf
        previous = nearest
        if left <= right:
            nearest, below = left, below - 1
        else:
            nearest, above = right, above + 1
    return med, (0.0 + nearest) / 1.0 if n % 2 else (0.0 + previous + nearest) / 2.0


@_jit
def ideal_step(durations: Any, ordered: Any, limit: float, mad_limit: float) -> float:
    """`health.ideal_step` of `durations` (NaN-free) with `ordered`, the sorted durations of at least `limit`:
    the mean of those at most median + mad_limit x MAD, in the durations' order as numpy sums them; NaN for
    none."""
    if len(ordered) == 0:
        return np.nan
    med, mad = median_and_mad(ordered)
    bound = med + mad_limit * mad
    normal, count = np.empty(len(ordered)), 0
    for x in durations:
        if x >= limit and x <= bound:
            normal[count] = x
            count += 1
    return pairwise_sum(normal, 0, count) / count if count else np.nan


@_jit
def tally(bounds: Any, label: Any, full: Any, start: float, end: float, sums: Any, use: Any, durations: Any) -> Any:
    """`jobfigures.finish`'s tally of the elementary intervals: those all-allocated (`full`), of some length and
    inside [start, end] are marked in `use`, their lengths added into sums[label] in order (``numpy.bincount``'s
    weights) and kept in durations[:n]; (n, their total as numpy sums them, whether every interval is inside)."""
    count, inside_all = 0, True
    for x in range(len(label)):
        d = bounds[x + 1] - bounds[x]
        inside = bounds[x] >= start and bounds[x + 1] <= end
        inside_all &= inside
        use[x] = full[x] and d > 0 and inside
        if use[x]:
            sums[label[x]] += d
            durations[count] = d
            count += 1
    return count, pairwise_sum(durations, 0, count), inside_all
