"""The accounting's compiled start-up measure (`accountkernel.startup`) and first-after search against `steps`'
numpy: the same placements and times to the bit. The run's mean step is a float sum, so the kernel adds as
``numpy.sum`` does (`pairwise_sum`): checked here against numpy on every branch of its summation."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from test_goodput_prebuilt import kernels_in_use

from tpufleet.goodput import compiledaccount, linescan, steps
from tpufleet.goodput.events import CODE

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="Numba is not installed (make sweep-deps): no compiled helpers"
)

_TIME = st.integers(-3, 43).map(lambda k: k / 4)
_ODD = st.sampled_from([float("nan"), float("inf"), float("-inf")])
# values whose sum depends on the order they are added in: magnitudes 12 decades apart, either sign
_VALUE = st.builds(lambda m, e: m * 10.0**e, st.floats(-1.0, 1.0, allow_nan=False), st.integers(-3, 9))


@pytest.fixture(scope="module", params=["jit", "prebuilt"])
def kernel(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The helpers as Numba's JIT compiles them, and as built ahead of time (`tpufleet.goodput.prebuilt`)."""
    with kernels_in_use(request.param) as kernel:
        yield kernel


@given(values=st.lists(_VALUE, max_size=300), lo=st.integers(0, 3))
def test_the_kernels_sum_is_numpys_to_the_bit(kernel: Any, values: list[float], lo: int) -> None:
    """Under 8 values, a block of up to 128 and halves above it; from any offset (numpy's sum of a slice)."""
    a = np.array(values, dtype=np.float64)
    lo = min(lo, len(a))
    assert kernel.pairwise_sum(a, lo, len(a) - lo) == np.sum(a[lo:])


@pytest.mark.parametrize("size", [127, 128, 129, 136, 255, 256, 257, 1000, 8191, 8192, 8193, 20_000, 100_003])
def test_long_sums_are_numpys_to_the_bit(kernel: Any, size: int) -> None:
    """Sizes at the edges of numpy's blocks and of its 8192-value buffer: the order of the halves is numpy's."""
    rng = np.random.default_rng(size)
    a = rng.standard_normal(size) * 10.0 ** rng.integers(-3, 9, size)
    assert kernel.pairwise_sum(a, 0, size) == np.sum(a)
    assert kernel.pairwise_sum(a, 0, size) / size == a.mean()


def _steps(rows: list[tuple[float, float, int, bool, bool]]) -> steps.Steps:
    """Steps in time order from (start, length, run, complete, productive), runs never decreasing."""
    rows = sorted(rows, key=lambda row: (row[2], row[0]))
    start = np.maximum.accumulate(np.array([r[0] for r in rows], dtype=np.float64)) if rows else np.zeros(0)
    return steps.Steps(
        st=start,
        sn=np.arange(len(rows), dtype=np.int64),
        end=start + np.array([r[1] for r in rows], dtype=np.float64),
        run=np.array([r[2] for r in rows], dtype=np.int64),
        productive=np.array([r[4] for r in rows], dtype=np.bool_),
        complete=np.array([r[3] for r in rows], dtype=np.bool_),
    )


def _startup(compiled: bool, run_steps: steps.Steps, netted: list[tuple[Any, Any]]) -> list[tuple[float, float]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: compiled)
        return steps.startup(run_steps, netted)


_STEP = st.tuples(_TIME, st.integers(0, 12).map(lambda k: k / 4), st.integers(0, 3), st.booleans(), st.booleans())
_NETTED = st.lists(st.lists(st.tuples(_TIME, _TIME), max_size=10), max_size=4)


@given(rows=st.lists(_STEP, max_size=60), netted=_NETTED)
def test_the_kernels_startup_is_numpys(kernel: Any, rows: list[Any], netted: list[list[tuple[float, float]]]) -> None:
    """Runs of complete and incomplete, productive and lost steps, netted of overlapping intervals (some empty
    or reversed): the same start-up intervals, each end to the bit."""
    pairs = [(np.array([a for a, _ in p], dtype=np.float64), np.array([b for _, b in p])) for p in netted]
    run_steps = _steps(rows)
    assert _startup(True, run_steps, pairs) == _startup(False, run_steps, pairs)


def test_a_long_runs_startup_is_numpys(kernel: Any) -> None:
    """Runs of hundreds of steps (their mean a pairwise sum of several blocks) and thousands of netted intervals."""
    rng = np.random.default_rng(7)
    start = np.cumsum(rng.uniform(5, 15, 4000)) + 1.7e9
    run = np.repeat(np.arange(8), 500).astype(np.int64)
    ends = np.minimum(np.append(start[1:], np.inf), start + 11)
    ends[::500] += rng.uniform(10, 300, 8)  # each run's first step is slow: a start-up to place
    run_steps = steps.Steps(start, np.arange(4000), ends, run, rng.random(4000) < 0.9, rng.random(4000) < 0.95)
    lo = start[::3] + rng.uniform(0, 2, len(start[::3]))
    netted = [(lo, lo + rng.uniform(0, 4, len(lo)))]
    placed = _startup(True, run_steps, netted)
    assert len(placed) == 8
    assert placed == _startup(False, run_steps, netted)


def test_the_startup_is_measured_by_the_kernel_when_loaded(kernel: Any) -> None:
    """(The properties above would pass with numpy measuring both: here the kernel is seen placing.)"""
    run_steps = _steps([(0.0, 10.0, 0, True, True), (10.0, 2.0, 0, True, True), (12.0, 2.0, 0, True, True)])
    calls = []
    real = kernel.startup

    def counted(*args: Any) -> int:
        calls.append(1)
        return int(real(*args))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        patch.setattr(kernel, "startup", counted)
        assert steps.startup(run_steps, []) == [(0.0, 8.0)]
        assert calls == [1]
        patch.setattr(linescan, "loaded", lambda: False)
        assert compiledaccount.compiled_startup(_columns(run_steps), []) is None


def test_a_nan_leaves_the_startup_to_numpy(kernel: Any) -> None:
    run_steps = _steps([(0.0, 10.0, 0, True, True), (10.0, 2.0, 0, True, True), (12.0, 2.0, 0, True, True)])
    netted = [(np.array([np.nan]), np.array([1.0]))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        assert compiledaccount.compiled_startup(_columns(run_steps), netted) is None
        assert steps.startup(run_steps, netted) == _startup(False, run_steps, netted)


def _columns(run_steps: steps.Steps) -> Any:
    return run_steps.st, run_steps.end, run_steps.run, run_steps.complete, run_steps.productive


@given(
    times=st.lists(st.one_of(_TIME, _TIME, _TIME, _ODD), max_size=30),
    points=st.lists(st.one_of(_TIME, _TIME, _TIME, _ODD), max_size=30),
    in_order=st.booleans(),
    inclusive=st.booleans(),
)
def test_first_after_by_the_kernel_is_numpys(
    kernel: Any, times: list[float], points: list[float], in_order: bool, inclusive: bool
) -> None:
    """Sorted or not, NaNs or not: the kernel's answer where it gives one, numpy's otherwise, the same."""
    a = np.array(sorted(times) if in_order else times, dtype=np.float64)
    v = np.array(points, dtype=np.float64)
    found = []
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            found.append(steps.first_after(a, v, inclusive))
    np.testing.assert_array_equal(found[0], found[1])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        by_kernel = compiledaccount.first_after(a, v, inclusive)
    plain = bool((a[1:] >= a[:-1]).all()) and not np.isnan(a).any() and not np.isnan(v).any()
    assert (by_kernel is not None) == plain  # the kernel answers wherever its answer is numpy's


@given(codes=st.lists(st.sampled_from(sorted(CODE.values())), max_size=60), compiled=st.booleans())
def test_a_kinds_events_are_those_of_its_code(kernel: Any, codes: list[int], compiled: bool) -> None:
    """`Events.where` and `at` (one sort of the codes, numpy's or the kernel's counting sort) against a comparison
    of the whole column, kind by kind."""
    code = np.array(codes, dtype=np.int64)
    ev = steps.Events(np.arange(len(codes), dtype=np.float64) / 2, code, np.zeros_like(code), np.zeros_like(code))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: compiled)
        for name, value in CODE.items():
            assert ev.where(name).tolist() == np.flatnonzero(code == value).tolist()
            assert ev.at(name).tolist() == ev.t[code == value].tolist()
        assert (compiledaccount.group_by_kind(code, len(CODE)) is not None) == compiled


def test_a_code_out_of_range_leaves_the_grouping_to_numpy(kernel: Any) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        assert compiledaccount.group_by_kind(np.array([0, len(CODE)]), len(CODE)) is None
        assert compiledaccount.group_by_kind(np.array([-1]), len(CODE)) is None


@given(
    bounds=st.lists(_TIME, min_size=1, max_size=30).map(lambda times: sorted(set(times))),
    groups=st.lists(st.lists(st.tuples(_TIME, _TIME), max_size=40), min_size=1, max_size=4),
    in_order=st.booleans(),
)
def test_painting_straight_or_by_depth_is_numpys(
    kernel: Any, bounds: list[float], groups: list[list[tuple[float, float]]], in_order: bool
) -> None:
    """Groups of up to 40 overlapping intervals, their starts in time order (painted straight) or not (more than
    a few steps back: painted by depth): the labels numpy's painting gives, a later group over an earlier."""
    from tpufleet.goodput import timeline

    start, end = bounds[0], bounds[-1]
    names = timeline.PRIORITY[-len(groups) :]
    intervals: dict[str, list[tuple[Any, Any]]] = {name: [] for name in timeline.PRIORITY}
    for name, pairs in zip(names, groups, strict=True):
        pairs = sorted(pairs) if in_order else pairs
        intervals[name].append((np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])))
    labels = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            labels.append(timeline._label(start, end, np.array(bounds), intervals, [])[1].tolist())
    assert labels[0] == labels[1]


@given(values=st.lists(st.one_of(_TIME, _TIME, _ODD, st.sampled_from([0.0, -0.0])), max_size=40))
def test_distinct_values_by_the_kernel_are_numpys(kernel: Any, values: list[float]) -> None:
    """NaNs as one, and of equal zeros the first (the sort is stable): numpy's own pass, every bit."""
    from tpufleet.goodput import timeline

    a = np.array(values, dtype=np.float64)
    found = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            found.append(timeline._distinct(a.copy()))
    assert found[0].tobytes() == found[1].tobytes()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        assert compiledaccount.distinct_sorted(np.sort(a, kind="stable")) is not None


def _ideal(compiled: bool, durations: Any) -> float | None:
    from tpufleet.goodput import health

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: compiled)
        return health.ideal_step(durations)


# step times on a coarse grid (medians fall between two of them, distances tie) and a few wide ones
_DURATION = st.one_of(st.integers(0, 40).map(lambda k: k / 8), st.floats(0.0, 1e6, allow_nan=False))


@given(durations=st.lists(_DURATION, max_size=80))
def test_the_kernels_ideal_step_is_numpys(kernel: Any, durations: list[float]) -> None:
    """Odd and even counts, ties at the median and around it, steps under a second and slow outliers: the same
    ideal, to the bit, or None alike."""
    d = np.array(durations, dtype=np.float64)
    assert _ideal(True, d) == _ideal(False, d)


@pytest.mark.parametrize("size", [2, 3, 1000, 13_163, 13_164])
def test_a_long_runs_ideal_step_is_numpys(kernel: Any, size: int) -> None:
    rng = np.random.default_rng(size)
    d = np.round(rng.normal(10.0, 0.3, size), 3)
    d[rng.integers(0, size, size // 20)] *= 8  # checkpoint saves and stalls: the anomalies the MAD leaves out
    ideal = _ideal(True, d)
    assert ideal is not None and ideal == _ideal(False, d)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        assert compiledaccount.ideal_step(d, 1.0, 3.0) == (True, ideal)  # (the kernel's, not numpy's)
        assert compiledaccount.ideal_step(np.append(d, np.nan), 1.0, 3.0) == (False, None)


@given(durations=st.lists(_DURATION, min_size=1, max_size=60))
def test_the_kernels_median_and_mad_are_numpys(kernel: Any, durations: list[float]) -> None:
    d = np.array(durations, dtype=np.float64)
    median = np.median(d)
    assert kernel.median_and_mad(np.sort(d)) == (median, np.median(np.abs(d - median)))


@given(
    bounds=st.lists(st.one_of(_TIME, _TIME, _TIME, _ODD), min_size=1, max_size=40).map(sorted),
    labels=st.lists(st.integers(0, 13), max_size=40),
    full=st.lists(st.booleans(), max_size=40),
    part=st.tuples(_TIME, _TIME),
)
def test_the_kernels_tally_is_numpys(
    kernel: Any, bounds: list[float], labels: list[int], full: list[bool], part: tuple[float, float]
) -> None:
    """Intervals in and out of the part, all-allocated or not, of no length or NaN: the same intervals counted,
    the same seconds by label and in all (numpy's bincount and sum), to the bit."""
    from tpufleet.goodput import jobfigures

    m = len(bounds) - 1
    b = np.array(bounds, dtype=np.float64)
    label = np.array((labels * (m + 1))[:m] if labels else [0] * m, dtype=np.int64)
    run = np.array((full * (m + 1))[:m] if full else [True] * m, dtype=np.bool_)
    found = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as patch, np.errstate(invalid="ignore"):  # (inf - inf)
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            use, sums, total, whole, excluded = jobfigures._tallied(b, label, run, (min(part), max(part)), [])
            found.append((use.tolist(), sums.tobytes(), np.float64(total).tobytes(), whole, excluded))
    assert found[0] == found[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        assert compiledaccount.tally(b, label, run, (min(part), max(part)), 14) is not None


_SORTED_TIMES = st.lists(st.one_of(_TIME, _TIME, _TIME, _TIME, _TIME, _ODD, st.sampled_from([0.0, -0.0])), max_size=20)


@given(
    st_=_SORTED_TIMES, stops=_SORTED_TIMES, disrupt=_SORTED_TIMES, restarts=_SORTED_TIMES, end=st.one_of(_TIME, _ODD)
)
@example(st_=[0.0, 1.0], stops=[1.0], disrupt=[], restarts=[], end=5.0)  # the next step at the stop: complete
@example(st_=[0.0, 1.0], stops=[], disrupt=[0.0, 1.0], restarts=[0.0], end=1.0)  # a disruption at its start
@example(st_=[-1.0, 0.0], stops=[-0.0], disrupt=[], restarts=[], end=5.0)  # equal zeros: numpy's minimum's
def test_the_kernels_step_ends_are_numpys(
    kernel: Any, st_: list[float], stops: list[float], disrupt: list[float], restarts: list[float], end: float
) -> None:
    """Steps cut by the next step, a stop after them, a disruption at or after them or the end; their runs: the
    same ends, runs and completeness (numpy's answer wherever the kernel leaves one: a NaN, an array unsorted)."""
    starts, stop_at, disrupt_at = (np.sort(np.array(a, dtype=np.float64)) for a in (st_, stops, disrupt))
    found = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            ends, run, complete = steps._ends_and_runs(starts, stop_at, disrupt_at, end, np.sort(np.array(restarts)))
            found.append((ends.tobytes(), run.tolist(), complete.tolist()))
    assert found[0] == found[1]


@given(numbers=st.lists(st.integers(-3, 12), max_size=40))
def test_steps_done_again_by_the_kernel_are_numpys(kernel: Any, numbers: list[int]) -> None:
    sn = np.array(numbers, dtype=np.int64)
    productive = np.ones(len(sn), dtype=np.bool_)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        assert compiledaccount.not_done_again(sn, productive)
    assert productive.tolist() == (sn < steps._done_again_from(sn)).tolist()


@given(
    cuts=st.lists(st.one_of(_TIME, st.sampled_from([0.0, -0.0])), min_size=1, max_size=40).map(sorted),
    labels=st.lists(st.integers(0, 13), min_size=1, max_size=40),
    windows=st.lists(st.tuples(_TIME, st.integers(0, 20).map(lambda k: k / 4)), max_size=6),
)
def test_a_jobs_seconds_in_windows_by_the_kernel_are_numpys(
    kernel: Any, cuts: list[float], labels: list[int], windows: list[tuple[float, float]]
) -> None:
    """A job's intervals end to end (some of no length, an equal zero of either sign) cut by windows that start
    and end anywhere, overlap or lie apart: the seconds in each, all and by label, to the bit."""
    from tpufleet.goodput import chiptime

    bounds = np.array(cuts, dtype=np.float64)
    own = (bounds[:-1].copy(), bounds[1:].copy(), np.array((labels * len(cuts))[: len(cuts) - 1], dtype=np.int64))
    windows = sorted(windows)
    lo = np.array([a for a, _ in windows], dtype=np.float64)
    hi = np.maximum.accumulate(lo + np.array([w for _, w in windows])) if windows else np.zeros(0)
    found = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            seconds, by_label = chiptime._by_slices(own, lo, hi)
            found.append((seconds.tobytes(), by_label.tobytes()))
    assert found[0] == found[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        assert compiledaccount.by_slices(own, lo, hi, 14) is not None


@given(
    kinds=st.lists(st.sampled_from(["checkpoint_start", "checkpoint_end", "step_start"]), max_size=40),
    times=st.lists(st.one_of(_TIME, st.sampled_from([0.0, -0.0])), max_size=40),
    stops=_SORTED_TIMES,
    end=st.one_of(_TIME, _ODD),
)
@example(kinds=["checkpoint_start", "checkpoint_end"], times=[-1.0, 0.0], stops=[-0.0], end=5.0)  # equal zeros
def test_paired_activities_by_the_kernel_are_numpys(
    kernel: Any, kinds: list[str], times: list[float], stops: list[float], end: float
) -> None:
    """Starts and ends in any order of the log (an end before any start, two starts before an end, none), cut at
    stops and the end: each start's end as numpy's searches and minimum give it, to the sign of a zero."""
    from tpufleet.goodput import timeline

    n = min(len(kinds), len(times))
    t = np.sort(np.array(times[:n], dtype=np.float64), kind="stable")
    code = np.array([CODE[kind] for kind in kinds[:n]], dtype=np.int64)
    ev = steps.Events(t, code, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
    cut = np.sort(np.array(stops, dtype=np.float64))
    found = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            s, e = timeline._paired(ev, "checkpoint_start", "checkpoint_end", cut, end)
            found.append((s.tobytes(), e.tobytes()))
    assert found[0] == found[1]


@given(
    bounds=st.lists(_TIME, min_size=1, max_size=30).map(sorted),
    rows=st.lists(_STEP, max_size=40),
    counted=st.lists(st.booleans(), min_size=1, max_size=30),
    end=_TIME,
)
def test_productive_steps_counted_by_the_kernel_are_numpys(
    kernel: Any, bounds: list[float], rows: list[Any], counted: list[bool], end: float
) -> None:
    """Steps before, inside and after the bounds, of no length or complete, productive or lost, in counted
    intervals or not, before the end or not: the same count."""
    from tpufleet.goodput import jobfigures

    b = np.array(bounds, dtype=np.float64)
    use = np.array((counted * len(bounds))[: len(bounds) - 1], dtype=np.bool_)
    run_steps = _steps(rows)
    found = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            found.append(jobfigures._productive_steps(run_steps, b, use, end))
    assert found[0] == found[1]


@given(values=st.lists(st.one_of(_VALUE, st.sampled_from([0.0, -0.0])), max_size=300))
@example(values=[-0.0] * 8)  # a block of -0.0s: numpy's sum starts from 0.0, so it is 0.0
@example(values=[-0.0] * 129)
def test_the_kernels_sum_has_numpys_sign_of_zero(kernel: Any, values: list[float]) -> None:
    """The sum to the bit, a zero's sign included (`==` takes -0.0 for 0.0)."""
    a = np.array(values, dtype=np.float64)
    assert np.float64(kernel.pairwise_sum(a, 0, len(a))).tobytes() == np.sum(a).tobytes()


def test_an_infinite_step_leaves_the_ideal_step_to_numpy(kernel: Any) -> None:
    """Two middle durations whose sum overflows make numpy's median infinite and its MAD NaN: no ideal. The kernel's
    walk of the distances went on past the NaN; a duration that is not finite is numpy's to judge."""
    d = np.array([1.0, np.inf, 1e308, 1e308])
    with np.errstate(invalid="ignore", over="ignore"):  # (numpy's rule meets inf - inf; no log holds such times)
        assert _ideal(False, d) is None
        assert _ideal(True, d) is None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        assert compiledaccount.ideal_step(d, 1.0, 3.0) == (False, None)


def test_columns_of_other_lengths_are_left_to_numpy(kernel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels read only the rows they are given: columns whose lengths disagree (no report gives them) are
    not handed to them, where a kernel read past the shorter one."""
    monkeypatch.setattr(linescan, "loaded", lambda: True)
    st_, flags = np.array([0.5]), np.array([True])
    assert compiledaccount.counted_steps(np.array([0.0]), (st_, st_ + 1, flags, flags), np.zeros(0, bool), 9.0) is None
    own = (np.array([0.0, 2.0]), np.array([2.0]), np.array([1, 2]))
    assert compiledaccount.by_slices(own, np.array([1.0]), np.array([4.0]), 3) is None
    assert compiledaccount.by_slices((own[0], np.array([2.0, 5.0]), own[2]), np.array([1.0]), np.array([4.0]), 3)


def test_the_helpers_take_equal_zeros_as_numpy_does_here(kernel: Any) -> None:
    """`sumkernel._least` and `_greatest` give the second of two equal zeros, as numpy's minimum and maximum do on
    this machine (checked before the helpers are used, `kernelchecks.numpy_ties_as_assumed`)."""
    from tpufleet.goodput import kernelchecks, sumkernel

    assert kernelchecks.numpy_ties_as_assumed()
    for a, b in ((0.0, -0.0), (-0.0, 0.0)):
        pair = np.array([a]), np.array([b])
        assert np.signbit(sumkernel._least(a, b)) == np.signbit(np.minimum(*pair))[0]
        assert np.signbit(sumkernel._greatest(a, b)) == np.signbit(np.maximum(*pair))[0]


def test_a_numpy_ordering_equal_zeros_otherwise_leaves_the_accounting_to_numpy(monkeypatch: pytest.MonkeyPatch):
    """A numpy whose minimum of 0.0 and -0.0 does not give the second (an aarch64 build may order them): the
    helpers would give the other zero; they are not used."""
    from tpufleet.goodput import kernelchecks

    monkeypatch.setattr(kernelchecks, "numpy_ties_as_assumed", lambda: False)
    compiledaccount._kernel.cache_clear()
    try:
        assert compiledaccount._kernel() is None
    finally:
        compiledaccount._kernel.cache_clear()  # (loaded again, checked as usual, by the next test that asks)
