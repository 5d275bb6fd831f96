"""Check examples the accounting's compiled helpers must answer right before `compiledaccount` uses them: each call
compiles the helper, or loads it from Numba's cache, and one wrong answer (a stale or broken cache, a
miscompilation) leaves every helper unused, numpy answering instead. Each expected answer is the numpy rule's that
the helper stands in for, worked out by hand."""

from __future__ import annotations

from typing import Any


def answers_right(kernel: Any) -> bool:
    """Whether every helper of `kernel` (`accountkernel`, with `sumkernel`'s) answers its example right."""
    return numpy_ties_as_assumed() and _searches_right(kernel) and _steps_right(kernel) and _sums_right(kernel)


def numpy_ties_as_assumed() -> bool:
    """Whether numpy's minimum and maximum of two equal zeros (0.0 and -0.0) give the second, as the helpers that
    stand in for them do (`sumkernel._least`, `_greatest`): so on x86-64, in numpy's scalar loop, its vectorised
    one, against a scalar and on a strided view; a build whose instructions order the zeros (aarch64's) may not.
    Where not, the helpers could give a zero of the other sign than numpy's rule: numpy answers."""
    import numpy as np

    for n in (1, 7, 64):  # (below and above a vector's width)
        pos, neg = np.zeros(2 * n), np.full(2 * n, -0.0)
        arrays = [(pos[:n], neg[:n]), (pos[::2], neg[::2])]  # contiguous and strided
        cases: list[tuple[Any, Any]] = [*arrays, *((b, a) for a, b in arrays), (pos[:n], -0.0), (neg[:n], 0.0)]
        for first, second in cases:
            wanted = bool(np.signbit(np.asarray(second).flat[0]))  # (the second's sign: every value of it alike)
            if any((np.signbit(pick(first, second)) != wanted).any() for pick in (np.minimum, np.maximum)):
                return False
    return True


def _searches_right(kernel: Any) -> bool:
    """The painting, the searches, the grouping of events by kind and the distinct values."""
    import numpy as np

    label = np.zeros(3, dtype=np.int64)
    check = (np.array([0.5, 2.0]), np.array([1.5, 9.0]), np.array([0, 1, 2]), np.array([4, 7]))
    right = kernel.paint(np.array([0.0, 1.0, 2.0, 3.0]), 0.0, 3.0, *check, label) and label.tolist() == [0, 4, 7]
    found = np.zeros(3, dtype=np.int64)
    right &= kernel.search_sorted(np.array([1.0, 2.0, 2.0]), np.array([0.5, 2.0, 3.0]), True, found)
    right &= found.tolist() == [0, 3, 3]
    after = np.zeros(2)
    right &= kernel.first_after(np.array([1.0, 3.0]), np.array([1.0, 3.0]), False, after)
    right &= after.tolist() == [3.0, np.inf]
    order, edges = np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64)
    right &= kernel.group_by_kind(np.array([2, 0, 2, 1]), order, edges)
    right &= order.tolist() == [1, 3, 0, 2] and edges.tolist() == [0, 1, 2, 4]
    once = np.zeros(5)  # (room for a wrong answer's extra values)
    right &= kernel.distinct_sorted(np.array([1.0, 1.0, 2.0, np.nan, np.nan]), once) == 3
    return bool(right and once[:2].tolist() == [1.0, 2.0] and np.isnan(once[2]))


def _steps_right(kernel: Any) -> bool:
    """The steps' ends and runs, the checkpoint and done-again rules, the count of productive steps."""
    import numpy as np

    ends, runs, complete = np.zeros(3), np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.bool_)
    starts, stops, disrupt, restarts = np.array([0.0, 1.0, 5.0]), np.array([2.0]), np.array([5.0]), np.array([0.0, 4.0])
    right = kernel.step_ends(starts, stops, disrupt, 9.0, restarts, ends, runs, complete)
    right &= ends.tolist() == [1.0, 2.0, 5.0] and runs.tolist() == [1, 1, 2]
    right &= complete.tolist() == [True, False, False]
    # steps at 1, 2 and 6 (numbers 7, 8, 9), restarted at 0 and 5, ended at 10, disrupted at 4 and 9, saved at 2
    # (step 7) and 6 (step 9): step 8's run ends at 4 with step 7 saved alone
    productive, st = np.ones(3, dtype=np.bool_), np.array([1.0, 2.0, 6.0])
    marks, saves = (np.array([0.0, 5.0, 10.0]), np.array([4.0, 9.0])), (np.array([2.0, 6.0]), np.array([7, 9]))
    runs = np.array([1, 1, 2])
    right &= kernel.checkpoint_rule(st, np.array([7, 8, 9]), runs, np.array([0.0, 5.0]), *marks, *saves, productive)
    right &= productive.tolist() == [True, False, True]
    done_again = np.ones(3, dtype=np.bool_)
    kernel.not_done_again(np.array([1, 2, 2]), done_again)
    right &= done_again.tolist() == [True, False, True]
    flags, use, st = np.ones(3, dtype=np.bool_), np.array([True, False]), np.array([0.0, 1.0, 1.5])
    right &= kernel.counted_steps(np.array([0.0, 1.0, 2.0]), st, st + 0.5, flags, flags, use, 9.0) == 1
    return bool(right)


def _sums_right(kernel: Any) -> bool:
    """The helpers that add floats or pick between equal ones: start-up, the ideal step, the tally, a job's
    seconds in windows and its paired activities."""
    import numpy as np

    st, placed, flags = np.array([0.0, 10.0, 12.0, 14.0]), (np.zeros(1), np.zeros(1)), np.ones(4, dtype=np.bool_)
    runs = np.zeros(4, dtype=np.int64)  # a first step of 10 s against 2 s: 8 s placed on the free time from 0
    right = kernel.startup(st, st + 2 + 8 * (st == 0), runs, flags, flags, np.ones(1), np.full(1, 2.0), *placed) == 1
    right &= [placed[0][0], placed[1][0]] == [0.0, 8.0]
    durations = np.array([3.0, 1.0, 2.0, 100.0, 2.5, 0.5])  # median 2.5, MAD 0.5: 100 s is no ideal step
    right &= kernel.ideal_step(durations, np.sort(durations[durations >= 1.0]), 1.0, 3.0) == 2.125
    use, sums, spans = np.zeros(3, dtype=np.bool_), np.zeros(4), np.zeros(3)
    bounds, full = np.array([0.0, 1.0, 3.0, 6.0]), np.array([True, True, False])
    right &= kernel.tally(bounds, np.array([1, 3, 3]), full, 0.0, 6.0, sums, use, spans)[:2] == (2, 3.0)
    right &= sums.tolist() == [0.0, 1.0, 0.0, 2.0] and use.tolist() == [True, True, False]
    for label_type in (np.int64, np.int8):  # a fresh account's labels and a compacted one's: each compiled now
        seconds, by_label = np.zeros(1), np.zeros((1, 3))
        own = (np.array([0.0, 2.0]), np.array([2.0, 5.0]), np.array([1, 2], dtype=label_type))
        right &= kernel.by_slices(*own, np.array([1.0]), np.array([4.0]), seconds, by_label)
        right &= seconds.tolist() == [3.0] and by_label.tolist() == [[0.0, 1.0, 2.0]]
    paired = np.zeros(2), np.zeros(2)
    times, stops = np.array([0.0, 1.0, 2.0, 3.0]), np.array([2.5])
    right &= kernel.pair_ends(times, np.array([0, 2]), np.array([1, 3]), stops, 9.0, *paired)
    return bool(right and paired[0].tolist() == [0.0, 2.0] and paired[1].tolist() == [1.0, 2.5])
