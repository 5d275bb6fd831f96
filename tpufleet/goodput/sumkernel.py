"""The accounting's compiled helpers whose floats must be numpy's to the last bit (`compiledaccount` uses them once
Numba is loaded): sums added in numpy's order (``numpy.sum`` and ``mean`` of a contiguous float64 array add
pairwise, `pairwise_sum`; ``numpy.bincount``'s weights one after another), a median as numpy takes it (the middle
value of the sorted values, or the mean of the middle two), and of two equal numbers (0.0 and -0.0) the one
``numpy.minimum`` and ``maximum`` give.

Kept apart from `accountkernel` and calling nothing of it: Numba's cache of a function is renewed when its own file
changes, not when a function of another file it calls does (tests/test_goodput_accountkernel_sums.py checks these
against numpy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpufleet.goodput.linekernel import _jit

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
    return 0.0 + float(sums[0])  # numpy's sum starts from 0.0, adding the pairwise sum: one of -0.0s is 0.0


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


_WALK = 8  # a time is mostly a step or two on from the last one's place: walked that far, then searched


@_jit
def at_or_before(a: Any, x: float, at: int) -> int:
    """``numpy.searchsorted(a, x, "right")`` for a sorted, NaN-free `a`: walked from `at` (the last answer, near
    this one for times in order), else searched."""
    for _ in range(_WALK):
        if at < len(a) and a[at] <= x:
            at += 1
        elif at > 0 and a[at - 1] > x:
            at -= 1
        else:
            return at
    return int(np.searchsorted(a, x, side="right"))


@_jit
def covered_upto(a: Any, b: Any, before: Any, x: float, k: int) -> float:
    """`steps._covered_upto` of one time x: the covered length up to it (k: the last interval starting at or
    before it, `at_or_before` less one; -1 for none)."""
    return before[k] + min(max(x - a[k], 0.0), b[k] - a[k]) if k >= 0 else 0.0


@_jit
def free_until(a: Any, b: Any, s0: float, amount: float) -> float:
    """`steps._free_until`: the first time at which [s0, then] holds `amount` seconds the union (a, b) leaves."""
    t, left = s0, amount
    for i in range(int(np.searchsorted(b, s0, side="right")), len(a)):
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
        at_end, at_start = at_or_before(a, end[k], at_end), at_or_before(a, st[k], at_start)
        upto = covered_upto(a, b, before, end[k], at_end - 1) - covered_upto(a, b, before, st[k], at_start - 1)
        net[k] = (end[k] - st[k]) - upto
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


@_jit
def step_ends(st: Any, stops: Any, disrupt: Any, end: float, restarts: Any, out: Any, run: Any, complete: Any) -> bool:
    """`steps.steps_of`'s ends of the steps starting at `st`: the next step's start, or the first of `stops` after
    the start, of `disrupt` at or after it and `end`, if sooner (`complete` when the next step came first); and each
    step's run, the number of `restarts` at or before its start. False, nothing finished, unless every time is a
    number and every array in order (numpy's minimum and search answer then)."""
    for a in (st, stops, disrupt, restarts):
        for k in range(len(a)):
            if a[k] != a[k] or (k and a[k] < a[k - 1]):
                return False
    if end != end:
        return False
    after_stop = at_disrupt = started = 0
    for k in range(len(st)):
        t = st[k]
        while after_stop < len(stops) and stops[after_stop] <= t:
            after_stop += 1
        while at_disrupt < len(disrupt) and disrupt[at_disrupt] < t:
            at_disrupt += 1
        while started < len(restarts) and restarts[started] <= t:
            started += 1
        stop = _least(
            stops[after_stop] if after_stop < len(stops) else np.inf,
            disrupt[at_disrupt] if at_disrupt < len(disrupt) else np.inf,
        )
        stop = _least(stop, end)
        following = st[k + 1] if k + 1 < len(st) else np.inf
        out[k], complete[k], run[k] = _least(following, stop), following <= stop, started
    return True


@_jit
def _least(a: float, b: float) -> float:
    """``numpy.minimum`` of two numbers: of equal ones (0.0 and -0.0), the second, where Python's `min` takes the first."""
    return a if a < b else b


@_jit
def _greatest(a: float, b: float) -> float:
    """``numpy.maximum`` of two numbers: of equal ones, the second, as `_least`."""
    return a if a > b else b


@_jit
def by_slices(starts: Any, ends: Any, labels: Any, lo: Any, hi: Any, seconds: Any, by_label: Any) -> bool:
    """`chiptime._by_slices` into `seconds` and `by_label` (zeros): a job's seconds in each window [lo[k], hi[k]]
    of its intervals, all (a numpy sum) and by label (bincount's order); False, unfinished, unless the times are
    numbers in order and the labels within by_label's columns (numpy answers then)."""
    for a in (starts, ends, lo, hi):
        for k in range(len(a)):
            if a[k] != a[k] or (k and a[k] < a[k - 1]):
                return False
    for code in labels:
        if code < 0 or code >= by_label.shape[1]:
            return False
    inside = np.empty(len(starts))
    for k in range(len(lo)):
        first, last = np.searchsorted(ends, lo[k], side="right"), np.searchsorted(starts, hi[k], side="left")
        for i in range(first, last):
            piece = _least(ends[i], hi[k]) - _greatest(starts[i], lo[k])
            inside[i - first] = _greatest(piece, 0.0)
            by_label[k, labels[i]] += inside[i - first]
        seconds[k] = pairwise_sum(inside, 0, max(last - first, 0))
    return True


@_jit
def pair_ends(t: Any, starts: Any, ends: Any, stops: Any, end: float, out_s: Any, out_e: Any) -> bool:
    """`timeline.account`'s paired activities: each start (positions `starts` into the sorted times `t`) with the
    first end after it in log order (positions `ends`), else +inf, cut at the first of `stops` after its time and
    at `end` (numpy's minimum, in that order); False, unfinished, unless the times are numbers in order."""
    for k in range(len(stops)):
        if stops[k] != stops[k] or (k and stops[k] < stops[k - 1]):
            return False
    if end != end:
        return False
    matched = after = 0
    for k in range(len(starts)):
        while matched < len(ends) and ends[matched] <= starts[k]:
            matched += 1
        at = t[starts[k]]
        if at != at or (k and at < t[starts[k - 1]]) or (matched < len(ends) and t[ends[matched]] != t[ends[matched]]):
            return False  # (only the times it reads: a pass over all of them for each kind cost more than numpy)
        while after < len(stops) and stops[after] <= at:
            after += 1
        paired = t[ends[matched]] if matched < len(ends) else np.inf
        cut = stops[after] if after < len(stops) else np.inf
        out_s[k], out_e[k] = at, _least(_least(paired, cut), end)
    return True
