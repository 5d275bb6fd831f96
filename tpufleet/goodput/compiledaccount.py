"""The accounting's compiled helpers (`accountkernel`, with `sumkernel`'s), used once the reading of a large log
has loaded Numba (`linescan.loaded`), else numpy: the painting of a job's elementary intervals (`timeline._label`)
and their tally, searches of sorted times, the steps' ends, runs and rules, start-up and the empirical ideal step.
The same answers either way, to the bit: the helpers that add floats add in numpy's order; the kernel is loaded
only after check examples come out right, and each helper leaves to numpy what it does not take (a NaN, an array
out of order)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from tpufleet.goodput import linescan

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Times = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]
    Bools = npt.NDArray[np.bool_]

    Groups = Sequence[tuple[int, Sequence[tuple[Times, Times]]]]


def compiled_paint(bounds: Times, start: float, end: float, groups: Groups, label: Ints) -> bool:
    """Paint `label` (one code an interval of `bounds`) with each group's code over the intervals its pairs of
    (starts, ends) cover, clipped to [start, end], a later group over an earlier; False, with nothing painted,
    when the kernel is not loaded or a time is NaN: the caller paints then."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not _plain(bounds) or label.dtype != np.int64 or not label.flags.c_contiguous:
        return False
    codes, at = [code for code, _ in groups], np.zeros(len(groups) + 1, dtype=np.int64)
    at[1:] = np.cumsum([sum(len(s) for s, _ in pairs) for _, pairs in groups])
    s = np.concatenate([np.zeros(0), *(s for _, pairs in groups for s, _ in pairs)]).astype(np.float64, copy=False)
    e = np.concatenate([np.zeros(0), *(e for _, pairs in groups for _, e in pairs)]).astype(np.float64, copy=False)
    done = kernel.paint(bounds, float(start), float(end), s, e, at, np.array(codes, dtype=np.int64), label)
    return bool(done)


def distinct_sorted(values: Times) -> Times | None:
    """`timeline._distinct`'s pass over its sorted values by the kernel (one pass, where numpy's compare, mask and
    gather take four), or None when it is not loaded."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not _plain(values):
        return None
    out = np.empty(len(values))
    found: Times = out[: kernel.distinct_sorted(values, out)]
    return found


def searchsorted(a: Times, v: Times, side: Literal["left", "right"] = "left") -> Ints:
    """``numpy.searchsorted(a, v, side)`` for a sorted 1-D `a` and 1-D `v` of floats; by the kernel when it is
    loaded (values mostly in time order are found in a step or two each, where numpy bisects all of `a`)."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is not None and _plain(a) and _plain(v):
        out = np.empty(len(v), dtype=np.int64)
        if kernel.search_sorted(a, v, side == "right", out):
            return out
    found: Ints = np.searchsorted(a, v, side=side)
    return found


def first_after(times: Times, points: Times, inclusive: bool) -> Times | None:
    """`steps.first_after` by the kernel (one pass, no index array), or None when it is not loaded or leaves the
    search to numpy (a NaN, times out of order)."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not (_plain(times) and _plain(points)):
        return None
    out = np.empty(len(points))
    return out if kernel.first_after(times, points, inclusive, out) else None


def unsaved_steps(
    ks: Ints, run_start: Times, cut: Times, saves: tuple[Times, Ints], sn: Ints, productive: Bools
) -> bool:
    """`steps.steps_of`'s checkpoint rule by the kernel, in place: step k of `ks` (its run ended by a disruption at
    cut[k]) stays productive only if a checkpoint saved between run_start[k] and cut[k] holds its step number
    (`saves`: the checkpoints' sorted times and step numbers); False, nothing changed, when the kernel is not
    loaded or the times are not in order or hold a NaN: the caller applies the rule then."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    saves_t, saves_step = saves
    if kernel is None or not all(_plain(a) for a in (run_start, cut, saves_t)):
        return False
    if not all(_plain(a, np.int64) for a in (ks, saves_step, sn)) or not _plain(productive, np.bool_):
        return False
    if np.isnan(run_start).any() or np.isnan(cut).any() or not (saves_t[1:] >= saves_t[:-1]).all():
        return False  # (a NaN in saves_t fails the order)
    kernel.unsaved_steps(ks, run_start, cut, saves_t, saves_step, sn, productive)
    return True


def compiled_startup(
    steps: tuple[Times, Times, Ints, Bools, Bools], netted: Sequence[tuple[Times, Times]]
) -> list[tuple[float, float]] | None:
    """`steps.startup` by the kernel: each run's start-up excess as (start, end), from the steps' (starts, ends,
    runs, complete, productive) and the intervals their time is netted of; None when the kernel is not loaded or
    a time is NaN (the caller measures then). The run's mean is numpy's sum, in numpy's order, to the bit."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    st, end, run, complete, productive = steps
    if kernel is None or not (_plain(st) and _plain(end) and _plain(run, np.int64)):
        return None
    if not (_plain(complete, np.bool_) and _plain(productive, np.bool_)):
        return None
    s = np.concatenate([np.zeros(0), *(s for s, _ in netted)]).astype(np.float64, copy=False)
    e = np.concatenate([np.zeros(0), *(e for _, e in netted)]).astype(np.float64, copy=False)
    out_s, out_e = np.empty(len(st)), np.empty(len(st))
    placed = kernel.startup(st, end, run, complete, productive, s, e, out_s, out_e)
    if placed < 0:
        return None
    return list(zip(out_s[:placed].tolist(), out_e[:placed].tolist(), strict=True))


def ideal_step(durations: Times, limit: float, mad_limit: float) -> tuple[bool, float | None]:
    """`health.ideal_step` by the kernel: (True, the ideal or None), or (False, None) when the kernel is not
    loaded or a duration is NaN (the caller finds it then). The medians come from one sort of the durations
    (numpy's, vectorized), where numpy's median partitions them twice."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not _plain(durations) or np.isnan(durations).any():
        return False, None
    ideal = float(kernel.ideal_step(durations, np.sort(durations[durations >= limit]), limit, mad_limit))
    return True, None if np.isnan(ideal) else ideal


def tally(
    bounds: Times, label: Ints, full: Bools, part: tuple[float, float], bins: int
) -> tuple[Bools, Times, float, bool] | None:
    """`jobfigures.finish`'s tally by the kernel: which intervals it counts (all-allocated, of some length, in
    the `part`), their seconds by label (`bins` of them), their total, and whether every interval is in the part;
    None when the kernel is not loaded (the caller tallies then)."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not (_plain(bounds) and _plain(label, np.int64) and _plain(full, np.bool_)):
        return None
    if (
        len(label) != len(bounds) - 1
        or len(full) != len(label)
        or (len(label) and not 0 <= label.min() <= label.max() < bins)
    ):
        return None
    use, sums, durations = np.empty(len(label), dtype=np.bool_), np.zeros(bins), np.empty(len(label))
    _, total, inside_all = kernel.tally(bounds, label, full, float(part[0]), float(part[1]), sums, use, durations)
    return use, sums, float(total), bool(inside_all)


def step_ends(st: Times, stops: Times, disrupt: Times, end: float, restarts: Times) -> tuple[Times, Ints, Bools] | None:
    """`steps.steps_of`'s step ends, runs and whether each is complete, by the kernel in one pass; None when it is
    not loaded or a time is NaN or out of order (the caller finds them then)."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not all(_plain(a) for a in (st, stops, disrupt, restarts)):
        return None
    out, run, complete = np.empty(len(st)), np.empty(len(st), dtype=np.int64), np.empty(len(st), dtype=np.bool_)
    return (
        (out, run, complete) if kernel.step_ends(st, stops, disrupt, float(end), restarts, out, run, complete) else None
    )


def not_done_again(sn: Ints, productive: Bools) -> bool:
    """`steps._done_again_from`'s rule by the kernel, in place; False, nothing changed, when it is not loaded."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not (_plain(sn, np.int64) and _plain(productive, np.bool_)):
        return False
    kernel.not_done_again(sn, productive)
    return True


def group_by_kind(code: Ints, kinds: int) -> tuple[Ints, Ints] | None:
    """The events' positions grouped by kind (in order within one) and where each of the `kinds` begins, by the
    kernel's counting sort; None when it is not loaded or a code is out of range."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not _plain(code, np.int64):
        return None
    order, edges = np.empty(len(code), dtype=np.int64), np.empty(kinds + 1, dtype=np.int64)
    return (order, edges) if kernel.group_by_kind(code, order, edges) else None


def by_slices(own: tuple[Times, Times, Ints], lo: Times, hi: Times, width: int) -> tuple[Times, Times] | None:
    """`chiptime._by_slices` by the kernel: a job's seconds in each window, all and by label (`width` of them);
    None when it is not loaded or a time is NaN or out of order (the caller finds them then)."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    starts, ends, labels = own
    if kernel is None or not (_plain(starts) and _plain(ends) and _plain(lo) and _plain(hi)):
        return None
    if (
        not isinstance(labels, np.ndarray)
        or labels.ndim != 1
        or labels.dtype.kind not in "iu"
        or len(labels) != len(starts)
    ):
        return None
    seconds, by_label = np.zeros(len(lo)), np.zeros((len(lo), width))
    done = kernel.by_slices(starts, ends, np.ascontiguousarray(labels), lo, hi, seconds, by_label)
    return (seconds, by_label) if done else None


def pair_ends(t: Times, starts: Ints, ends: Ints, stops: Times, end: float) -> tuple[Times, Times] | None:
    """`timeline._paired` by the kernel: the starts' times and their ends; None when it is not loaded or a time is
    NaN or out of order (the caller pairs them then)."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not (_plain(t) and _plain(stops) and _plain(starts, np.int64) and _plain(ends, np.int64)):
        return None
    out_s, out_e = np.empty(len(starts)), np.empty(len(starts))
    return (out_s, out_e) if kernel.pair_ends(t, starts, ends, stops, float(end), out_s, out_e) else None


def counted_steps(bounds: Times, steps: tuple[Times, Times, Bools, Bools], use: Bools, end: float) -> int | None:
    """`jobfigures._productive_steps` by the kernel, from the steps' (starts, ends, complete, productive); None when
    it is not loaded or a time is NaN or out of order (the caller counts them then)."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    st, ends, complete, productive = steps
    if kernel is None or not (_plain(bounds) and _plain(st) and _plain(ends)):
        return None
    if not all(_plain(a, np.bool_) for a in (complete, productive, use)) or len(use) != len(bounds) - 1:
        return None
    count = int(kernel.counted_steps(bounds, st, ends, complete, productive, use, float(end)))
    return None if count < 0 else count


def _plain(array: Any, dtype: Any = None) -> bool:
    """An array of a type the kernel is compiled for (another would be compiled on first use, a second)."""
    import numpy as np

    return (
        isinstance(array, np.ndarray)
        and array.dtype == (np.float64 if dtype is None else dtype)
        and array.ndim == 1
        and array.flags.c_contiguous
        and array.flags.writeable
    )


@functools.cache
def _kernel() -> Any:
    """The compiled helpers, compiled or loaded from their cache now; None when that fails (numpy is used then)
    or they get the check examples wrong."""
    import importlib
    import warnings

    try:
        with warnings.catch_warnings(), linescan.without_scipy_blas():  # Numba warns of a cache it cannot write:
            warnings.simplefilter("ignore")  # the kernel is compiled each time
            kernel = importlib.import_module("tpufleet.goodput.accountkernel")
            right = _answers_right(kernel)
    except Exception:  # noqa: BLE001  (Numba's own failures, a compiler or cache error, have no common base)
        return None
    return kernel if right else None


def _answers_right(kernel: Any) -> bool:
    """Whether each helper answers a check example right (each is compiled, or loaded, on its first call)."""
    import numpy as np

    label = np.zeros(3, dtype=np.int64)
    check = (np.array([0.5, 2.0]), np.array([1.5, 9.0]), np.array([0, 1, 2]), np.array([4, 7]))
    right = kernel.paint(np.array([0.0, 1.0, 2.0, 3.0]), 0.0, 3.0, *check, label) and label.tolist() == [0, 4, 7]
    found = np.zeros(3, dtype=np.int64)
    right &= kernel.search_sorted(np.array([1.0, 2.0, 2.0]), np.array([0.5, 2.0, 3.0]), True, found)
    right &= found.tolist() == [0, 3, 3]
    productive = np.ones(3, dtype=np.bool_)
    starts, cuts, saved = np.array([0.0, 0.0, 5.0]), np.array([4.0, 4.0, 9.0]), np.array([2.0, 6.0])
    kernel.unsaved_steps(np.arange(3), starts, cuts, saved, np.array([7, 9]), np.array([7, 8, 9]), productive)
    right &= productive.tolist() == [True, False, True]
    after = np.zeros(2)
    right &= kernel.first_after(np.array([1.0, 3.0]), np.array([1.0, 3.0]), False, after)
    right &= after.tolist() == [3.0, np.inf]
    st, placed, flags = np.array([0.0, 10.0, 12.0, 14.0]), (np.zeros(1), np.zeros(1)), np.ones(4, dtype=np.bool_)
    runs = np.zeros(4, dtype=np.int64)
    right &= kernel.startup(st, st + 2 + 8 * (st == 0), runs, flags, flags, np.ones(1), np.full(1, 2.0), *placed) == 1
    right &= [placed[0][0], placed[1][0]] == [0.0, 8.0]
    durations = np.array([3.0, 1.0, 2.0, 100.0, 2.5, 0.5])  # median 2.5, MAD 0.5: 100 s is no ideal step
    right &= kernel.ideal_step(durations, np.sort(durations[durations >= 1.0]), 1.0, 3.0) == 2.125
    use, sums, spans = np.zeros(3, dtype=np.bool_), np.zeros(4), np.zeros(3)
    bounds, full = np.array([0.0, 1.0, 3.0, 6.0]), np.array([True, True, False])
    right &= kernel.tally(bounds, np.array([1, 3, 3]), full, 0.0, 6.0, sums, use, spans)[:2] == (2, 3.0)
    right &= sums.tolist() == [0.0, 1.0, 0.0, 2.0] and use.tolist() == [True, True, False]
    ends, runs, complete = np.zeros(3), np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.bool_)
    right &= kernel.step_ends(
        np.array([0.0, 1.0, 5.0]), np.array([2.0]), np.array([5.0]), 9.0, np.array([0.0, 4.0]), ends, runs, complete
    )
    right &= (
        ends.tolist() == [1.0, 2.0, 5.0] and runs.tolist() == [1, 1, 2] and complete.tolist() == [True, False, False]
    )
    done_again = np.ones(3, dtype=np.bool_)
    kernel.not_done_again(np.array([1, 2, 2]), done_again)
    right &= done_again.tolist() == [True, False, True]
    order, edges = np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64)
    right &= kernel.group_by_kind(np.array([2, 0, 2, 1]), order, edges)
    right &= order.tolist() == [1, 3, 0, 2] and edges.tolist() == [0, 1, 2, 4]
    seconds, by_label = np.zeros(1), np.zeros((1, 3))
    right &= kernel.by_slices(
        np.array([0.0, 2.0]),
        np.array([2.0, 5.0]),
        np.array([1, 2]),
        np.array([1.0]),
        np.array([4.0]),
        seconds,
        by_label,
    )
    right &= seconds.tolist() == [3.0] and by_label.tolist() == [[0.0, 1.0, 2.0]]
    paired = np.zeros(2), np.zeros(2)
    times, stops = np.array([0.0, 1.0, 2.0, 3.0]), np.array([2.5])
    right &= kernel.pair_ends(times, np.array([0, 2]), np.array([1, 3]), stops, 9.0, *paired)
    right &= paired[0].tolist() == [0.0, 2.0] and paired[1].tolist() == [1.0, 2.5]
    flags, use = np.ones(3, dtype=np.bool_), np.array([True, False])
    st = np.array([0.0, 1.0, 1.5])
    right &= kernel.counted_steps(np.array([0.0, 1.0, 2.0]), st, st + 0.5, flags, flags, use, 9.0) == 1
    once = np.zeros(5)
    right &= kernel.distinct_sorted(np.array([1.0, 1.0, 2.0, np.nan, np.nan]), once) == 3
    return bool(right and once[:2].tolist() == [1.0, 2.0] and np.isnan(once[2]))
