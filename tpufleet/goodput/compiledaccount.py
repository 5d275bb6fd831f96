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

from tpufleet.goodput import linescan, prebuilt

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


def checkpoint_rule(
    steps: tuple[Times, Ints, Ints], marks: tuple[Times, Times, Times], saves: tuple[Times, Ints], productive: Bools
) -> bool:
    """`steps.steps_of`'s checkpoint rule by the kernel, in place, from the steps' (starts, numbers, runs), the
    job's (restarts, sorted restarts and ends, sorted explicit disruptions) and the checkpoints' (sorted times,
    steps); False, nothing changed, when the kernel is not loaded or a time is NaN or out of order (the caller
    applies the rule then)."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    (st, sn, run), (saves_t, saves_step) = steps, saves
    if kernel is None or not all(_plain(a) for a in (st, *marks, saves_t)) or not _plain(productive, np.bool_):
        return False
    if not all(_plain(a, np.int64) for a in (sn, run, saves_step)):
        return False
    return bool(kernel.checkpoint_rule(st, sn, run, *marks, saves_t, saves_step, productive))


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
    loaded or a duration is not finite (the caller finds it then: an infinite one can make numpy's median NaN,
    which its rule keeps). The medians come from one sort of the durations (numpy's, vectorized), where numpy's
    median partitions them twice."""
    import numpy as np

    kernel = _kernel() if linescan.loaded() else None
    if kernel is None or not _plain(durations) or not np.isfinite(durations).all():
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
    if len(ends) != len(starts) or len(hi) != len(lo):
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
    if len(bounds) < 2 or not len(st) == len(ends) == len(complete) == len(productive):
        return None  # (no interval to count in, or steps' columns apart: the kernel reads only what it is given)
    count = int(kernel.counted_steps(bounds, st, ends, complete, productive, use, float(end)))
    return None if count < 0 else count


def _plain(array: Any, dtype: Any = None) -> bool:
    """An array of a type the kernel is compiled for (another would be compiled on first use, a second)."""
    import numpy as np

    if not isinstance(array, np.ndarray) or array.ndim != 1:
        return False
    flags = array.flags  # (asked once: a new object each time, and this is asked eighty times a job)
    return bool(array.dtype == (np.float64 if dtype is None else dtype) and flags.c_contiguous and flags.writeable)


def prepared() -> bool:
    """Whether the compiled loop (`linescan`) and these helpers can be used, loading both now: compiling them the
    first time and caching them, which a large report would otherwise pay for (`make sweep-deps` calls this)."""
    return linescan.available() and _kernel() is not None


@functools.cache
def _kernel() -> Any:
    """The compiled helpers, compiled or loaded from their cache now; None when that fails (numpy is used then)
    or they get the check examples wrong."""
    import importlib
    import warnings

    try:
        with warnings.catch_warnings(), linescan.without_scipy_blas():  # Numba warns of a cache it cannot write:
            warnings.simplefilter("ignore")  # the kernel is compiled each time
            kernel = prebuilt.installed() or importlib.import_module("tpufleet.goodput.accountkernel")
            from tpufleet.goodput import kernelchecks

            right = kernelchecks.answers_right(kernel)
    except Exception:  # noqa: BLE001  (Numba's own failures, a compiler or cache error, have no common base)
        return None
    return kernel if right else None
