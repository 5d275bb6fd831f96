"""The accounting's compiled helpers that compare and pick, used by `compiledaccount` once the reading of a large
log has loaded Numba: the painting of a job's elementary intervals (`timeline._label`), searches of sorted times,
the steps' ends and runs, and the checkpoint and done-again rules. Compiled when first imported (cached as
`linekernel` is). They add no floats, so their answers are numpy's exactly, not merely close
(tests/test_goodput_compiledaccount.py and test_goodput_accountkernel_sums.py check both on random input). They
are faster for two reasons: a job's dozen labels are painted in one call, not a dozen numpy calls each, and times
mostly in order are found by a search that starts where the last one ended, where ``numpy.searchsorted`` bisects
the whole array for each. The helpers that add floats are `sumkernel`'s, given here too (one kernel to load).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tpufleet.goodput.linekernel import _jit
from tpufleet.goodput.sumkernel import by_slices as by_slices
from tpufleet.goodput.sumkernel import ideal_step as ideal_step
from tpufleet.goodput.sumkernel import median_and_mad as median_and_mad
from tpufleet.goodput.sumkernel import pair_ends as pair_ends
from tpufleet.goodput.sumkernel import pairwise_sum as pairwise_sum
from tpufleet.goodput.sumkernel import startup as startup
from tpufleet.goodput.sumkernel import step_ends as step_ends
from tpufleet.goodput.sumkernel import tally as tally


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
def checkpoint_rule(
    st: Any,
    sn: Any,
    run: Any,
    restarts: Any,
    run_ends: Any,
    explicit: Any,
    saves: Any,
    saved_steps: Any,
    productive: Any,
) -> bool:
    """`steps.steps_of`'s checkpoint rule, in place: a step whose run a disruption ends (the first of `explicit`
    after the step's start comes before the first of `run_ends`, its restarts and job ends) is not productive
    unless a checkpoint saved between its run's start (the `run`-th of `restarts`) and that disruption holds its
    step number (checkpoints at sorted times `saves`: such checkpoints are one stretch of them, found once for the
    steps that share the run and the disruption). False, nothing changed, unless the times are numbers in order."""
    for a in (st, restarts, run_ends, explicit, saves):
        for k in range(len(a)):
            if a[k] != a[k] or (k and a[k] < a[k - 1]):
                return False
    last_lo, last_hi, saved = np.nan, np.nan, -1
    lo_at = hi_at = cut_at = end_at = 0
    for k in range(len(st)):
        while cut_at < len(explicit) and explicit[cut_at] <= st[k]:
            cut_at += 1
        while end_at < len(run_ends) and run_ends[end_at] <= st[k]:
            end_at += 1
        hi = explicit[cut_at] if cut_at < len(explicit) else np.inf
        if not hi < (run_ends[end_at] if end_at < len(run_ends) else np.inf):
            continue  # (its run ends by a restart or an end first, or nothing ends it)
        lo = restarts[run[k] - 1] if run[k] > 0 else -np.inf
        if lo != last_lo or hi != last_hi:
            lo_at = first_index(saves, lo, lo_at, False)
            hi_at = first_index(saves, hi, hi_at, True)
            saved = -1
            for i in range(lo_at, hi_at):
                saved = saved_steps[i] if i == lo_at else max(saved, saved_steps[i])
            last_lo, last_hi = lo, hi
        if sn[k] > saved:
            productive[k] = False
    return True


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
def not_done_again(sn: Any, productive: Any) -> None:
    """`steps._done_again_from`'s rule, in place: a step whose number is at or past the lowest logged after it
    was done again (its work lost): not productive."""
    lowest = np.iinfo(np.int64).max
    for k in range(len(sn) - 1, -1, -1):
        if sn[k] >= lowest:
            productive[k] = False
        lowest = min(lowest, sn[k])


@_jit
def group_by_kind(code: Any, order: Any, edges: Any) -> bool:
    """`steps.Events`'s events by kind, by a counting sort: order[edges[c]:edges[c + 1]] are the positions of
    the events of code c, in order (a stable sort of the codes); False, unfinished, for a code out of range."""
    kinds = len(edges) - 1
    edges[:] = 0
    for c in code:
        if c < 0 or c >= kinds:
            return False
        edges[c + 1] += 1
    for c in range(kinds):
        edges[c + 1] += edges[c]
    place = edges[:-1].copy()
    for i in range(len(code)):
        order[place[code[i]]] = i
        place[code[i]] += 1
    return True


@_jit
def counted_steps(bounds: Any, st: Any, ends: Any, complete: Any, productive: Any, use: Any, end: float) -> int:
    """`jobfigures._productive_steps`: the productive steps that ran (of some length, or complete), started in a
    counted elementary interval (`use`) and before `end`; -1 unless the times are numbers in order."""
    m = len(bounds) - 1
    for a in (bounds, st):
        for k in range(len(a)):
            if a[k] != a[k] or (k and a[k] < a[k - 1]):
                return -1
    count, at = 0, 0  # at: the bounds at or before the step's start
    for k in range(len(st)):
        while at < len(bounds) and bounds[at] <= st[k]:
            at += 1
        where = min(max(at - 1, 0), m - 1)
        if productive[k] and (ends[k] > st[k] or complete[k]) and use[where] and st[k] < end:
            count += 1
    return count
