"""The accounting's compiled helpers (`accountkernel`, used once the reading of a large log has loaded Numba)
against what they stand in for: `timeline`'s numpy painting of a job's elementary intervals and
``numpy.searchsorted``. The same labels and indices exactly, and numpy wherever the kernel is not loaded."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from test_goodput_prebuilt import kernels_in_use

from tpufleet.goodput import compiledaccount, linescan, prebuilt, timeline

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="Numba is not installed (make sweep-deps): no compiled helpers"
)

# times on a coarse grid, so that ends meet, repeat and fall on the bounds as a real job's do; some outside the span
_TIME = st.integers(-3, 43).map(lambda k: k / 4)
_PAIRS = st.lists(st.tuples(_TIME, _TIME), max_size=12)


@pytest.fixture(scope="module", params=["jit", "prebuilt"])
def kernel(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The helpers as Numba's JIT compiles them, and as built ahead of time (`tpufleet.goodput.prebuilt`)."""
    with kernels_in_use(request.param) as kernel:
        yield kernel


@pytest.fixture
def loop_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linescan, "loaded", lambda: True)


def _label(monkeypatch: pytest.MonkeyPatch, compiled: bool, *args: Any) -> tuple[Any, Any]:
    monkeypatch.setattr(linescan, "loaded", lambda: compiled)
    return timeline._label(*args)


@given(
    span=st.tuples(_TIME, _TIME),
    times=st.lists(_TIME, max_size=20),
    groups=st.dictionaries(st.sampled_from(timeline.PRIORITY), st.lists(_PAIRS, max_size=3), max_size=8),
    cuts=st.lists(_TIME, max_size=3),
)
def test_the_compiled_painting_gives_numpys_labels(
    kernel: Any, span: tuple[float, float], times: list[float], groups: dict[str, Any], cuts: list[float]
) -> None:
    start, end = min(span), max(span)
    t = np.sort(np.array(times, dtype=np.float64))
    intervals: dict[str, list[tuple[Any, Any]]] = {name: [] for name in timeline.PRIORITY}
    for name, lists in groups.items():
        for pairs in lists:
            s = np.array([a for a, _ in pairs], dtype=np.float64)
            e = np.array([b for _, b in pairs], dtype=np.float64)
            intervals[name].append((s, e))
    with pytest.MonkeyPatch.context() as patch:
        bounds, expected = _label(patch, False, start, end, t, intervals, cuts)
        again, label = _label(patch, True, start, end, t, intervals, cuts)
    assert again.tolist() == bounds.tolist()
    assert label.tolist() == expected.tolist()


def test_the_kernel_paints_when_the_loop_is_loaded(kernel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """(The property above would pass with numpy painting both: here the kernel is seen painting.)"""
    bounds, label = np.array([0.0, 1.0]), np.zeros(1, dtype=np.int64)
    groups = [(3, [(np.array([0.0]), np.array([1.0]))])]
    monkeypatch.setattr(linescan, "loaded", lambda: False)
    assert not compiledaccount.compiled_paint(bounds, 0.0, 1.0, groups, label)
    assert label.tolist() == [0]
    monkeypatch.setattr(linescan, "loaded", lambda: True)
    assert compiledaccount.compiled_paint(bounds, 0.0, 1.0, groups, label)
    assert label.tolist() == [3]


@given(
    a=st.lists(_TIME, max_size=40).map(sorted),
    v=_TIME,
    hint=st.integers(-5, 50),
    right=st.booleans(),
)
def test_the_search_from_a_hint_is_numpys_searchsorted(
    kernel: Any, a: list[float], v: float, hint: int, right: bool
) -> None:
    array = np.array(a, dtype=np.float64)
    side: Literal["left", "right"] = "right" if right else "left"
    assert kernel.first_index(array, v, hint, right) == int(np.searchsorted(array, v, side=side))


_ODD = st.sampled_from([float("nan"), float("inf"), float("-inf")])


@given(
    a=st.lists(st.one_of(_TIME, _TIME, _TIME, _ODD), max_size=30),
    v=st.lists(st.one_of(_TIME, _TIME, _TIME, _ODD), max_size=30),
    in_order=st.booleans(),
    right=st.booleans(),
)
@example(a=[5.0, 1.0, 2.0, 3.0], v=[2.0], in_order=False, right=False)  # unsorted: numpy bisects, the kernel would not
def test_searchsorted_is_numpys_whatever_it_is_given(
    kernel: Any, a: list[float], v: list[float], in_order: bool, right: bool
) -> None:
    """Sorted or not (numpy's answer for an unsorted array is its own), NaNs or not: numpy's indices."""
    array = np.sort(np.array(a, dtype=np.float64)) if in_order else np.array(a, dtype=np.float64)
    values = np.array(v, dtype=np.float64)
    side: Literal["left", "right"] = "right" if right else "left"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        found = compiledaccount.searchsorted(array, values, side)
    assert found.tolist() == np.searchsorted(array, values, side=side).tolist()


def test_searchsorted_takes_values_in_time_order_by_the_kernel(kernel: Any, loop_loaded: None) -> None:
    a = np.arange(0.0, 1000.0)
    values = np.array([3.5, 3.5, 10.0, 999.0, 2000.0, -1.0])
    calls = []
    real = kernel.search_sorted

    def counted(*args: Any) -> bool:
        calls.append(1)
        return bool(real(*args))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel, "search_sorted", counted)
        found = compiledaccount.searchsorted(a, values, "right")
        assert compiledaccount.searchsorted(a[::2], values).tolist() == np.searchsorted(a[::2], values).tolist()
    assert found.tolist() == [4, 4, 11, 1000, 1000, 0]
    assert calls == [1]  # the strided array went to numpy: the kernel is compiled for contiguous ones alone


@given(
    bounds=st.lists(_TIME, max_size=8).map(lambda times: sorted(set(times))),
    pairs=_PAIRS,
    span=st.tuples(_TIME, _TIME),
)
def test_the_painting_covers_what_the_intervals_cover_whatever_the_bounds(
    kernel: Any, bounds: list[float], pairs: list[tuple[float, float]], span: tuple[float, float]
) -> None:
    """Bounds that do not hold the span's ends (never so from `_label`, which puts them in): no write outside the
    arrays, and an elementary interval painted exactly when an interval's ends, found in the bounds, enclose it."""
    start, end = min(span), max(span)
    label = np.zeros(max(len(bounds) - 1, 0), dtype=np.int64)
    s, e = np.array([a for a, _ in pairs], dtype=np.float64), np.array([b for _, b in pairs], dtype=np.float64)
    at, codes = np.array([0, len(pairs)], dtype=np.int64), np.array([5], dtype=np.int64)
    assert kernel.paint(np.array(bounds, dtype=np.float64), start, end, s, e, at, codes, label)
    clip = [(min(max(a, start), end), min(max(b, start), end)) for a, b in pairs]
    ends = [(int(np.searchsorted(bounds, a)), int(np.searchsorted(bounds, b))) for a, b in clip if b > a]
    assert label.tolist() == [5 if any(lo <= x < hi for lo, hi in ends) else 0 for x in range(len(label))]


def test_a_nan_leaves_the_painting_to_numpy(kernel: Any) -> None:
    label = np.zeros(2, dtype=np.int64)
    s, e = np.array([0.0, np.nan]), np.array([1.0, 2.0])
    done = kernel.paint(np.array([0.0, 1.0, 2.0]), 0.0, 2.0, s, e, np.array([0, 2]), np.array([5]), label)
    assert not done
    assert label.tolist() == [0, 0]


def test_a_kernel_that_cannot_load_leaves_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(name: str) -> object:
        raise RuntimeError("no compiler")

    compiledaccount._kernel.cache_clear()
    monkeypatch.setattr(prebuilt, "_installed", None)  # (none built ahead of time either)
    monkeypatch.setattr(importlib, "import_module", fails)
    monkeypatch.setattr(linescan, "loaded", lambda: True)
    try:
        assert compiledaccount._kernel() is None
        label = np.zeros(1, dtype=np.int64)
        assert not compiledaccount.compiled_paint(np.array([0.0, 1.0]), 0.0, 1.0, [(3, [])], label)
        assert compiledaccount.searchsorted(np.array([1.0]), np.array([2.0])).tolist() == [1]
    finally:
        monkeypatch.undo()
        compiledaccount._kernel.cache_clear()
    assert compiledaccount._kernel() is not None


_KINDS = (
    "job_start",
    "job_end",
    "step_start",
    "step_start",
    "step_start",
    "checkpoint_start",
    "checkpoint_end",
    "failure",
    "preemption",
    "data_loading_start",
    "data_loading_end",
    "drain",
)


@given(
    entries=st.lists(
        st.tuples(st.integers(0, 60), st.sampled_from(_KINDS), st.integers(0, 12)), min_size=1, max_size=40
    ),
    phase=st.sampled_from(["training", "serving"]),
)
def test_a_jobs_account_is_the_same_with_the_kernel_and_without(
    kernel: Any, entries: list[tuple[int, str, int]], phase: str
) -> None:
    """The whole account (labels, steps and which are productive, figures) of a job of random events, restarts,
    disruptions and checkpoints, with the compiled helpers and with numpy alone: equal, every float to the bit."""
    from tpufleet.goodput.events import CODE, Job
    from tpufleet.goodput.steps import Events

    entries = sorted(entries, key=lambda entry: entry[0])
    t = np.array([when / 2 for when, _, _ in entries], dtype=np.float64)
    code = np.array([CODE[kind] for _, kind, _ in entries], dtype=np.int64)
    step = np.array([n if kind.startswith(("step", "checkpoint")) else -1 for _, kind, n in entries], dtype=np.int64)
    job = Job("j", chips=8, phase=phase, ideal_step_s=1.0)
    accounts = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(linescan, "loaded", lambda compiled=compiled: compiled)
            events = Events(t.copy(), code.copy(), step.copy(), np.full(len(t), -1, dtype=np.int64))
            accounts.append(timeline.account(job, events))
    numpy_alone, with_kernel = accounts
    for name in ("labels", "starts", "ends", "step_starts", "step_ends", "step_numbers", "step_productive"):
        a, b = getattr(numpy_alone, name), getattr(with_kernel, name)
        assert (a is None) == (b is None) and (a is None or a.tolist() == b.tolist()), name
    assert numpy_alone.buckets == with_kernel.buckets
    figures = ("productive_s", "all_allocated_s", "productive_steps", "disruptions", "restart_overhead_s")
    assert [getattr(numpy_alone, f) for f in figures] == [getattr(with_kernel, f) for f in figures]


_SORTED = st.lists(_TIME, max_size=6).map(sorted)


@given(
    saves=st.lists(st.tuples(_TIME, st.integers(0, 12)), max_size=12),
    steps=st.lists(st.tuples(_TIME, st.integers(0, 12)), max_size=20),
    restarts=_SORTED,
    ends=_SORTED,
    explicit=_SORTED,
)
def test_the_checkpoint_rule_by_the_kernel_is_the_rule(
    kernel: Any,
    saves: list[tuple[float, int]],
    steps: list[tuple[float, int]],
    restarts: list[float],
    ends: list[float],
    explicit: list[float],
) -> None:
    """Steps, restarts, job ends, disruptions and checkpoints at random: a step whose run a disruption ends (the
    first disruption after it before the first restart or end after it) stays productive exactly when a
    checkpoint between its run's start and that disruption saved its number (checked one step at a time here)."""
    saves, steps = sorted(saves), sorted(steps)
    saves_t, saves_step = np.array([t for t, _ in saves]), np.array([n for _, n in saves], dtype=np.int64)
    st_ = np.array([t for t, _ in steps], dtype=np.float64)
    sn = np.array([n for _, n in steps], dtype=np.int64)
    starts, cuts = np.array(restarts, dtype=np.float64), np.array(explicit, dtype=np.float64)
    run_ends = np.sort(np.concatenate([starts, np.array(ends, dtype=np.float64)]))
    run = np.searchsorted(starts, st_, side="right").astype(np.int64)
    productive = np.ones(len(steps), dtype=np.bool_)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linescan, "loaded", lambda: True)
        marks = (starts, run_ends, cuts)
        assert compiledaccount.checkpoint_rule((st_, sn, run), marks, (saves_t, saves_step), productive)
    for k, t in enumerate(st_.tolist()):
        cut = min([x for x in explicit if x > t], default=np.inf)
        if not cut < min([x for x in run_ends.tolist() if x > t], default=np.inf):
            assert productive[k]
            continue
        lo = max([x for x in restarts if x <= t], default=-np.inf)
        inside = saves_step[(saves_t >= lo) & (saves_t <= cut)]
        assert productive[k] == (sn[k] <= (inside.max() if len(inside) else -1))


_SIGNATURES = """
import json, sys
from pathlib import Path
from tpufleet.goodput import compiledaccount
assert compiledaccount.prepared()
from tpufleet.goodput import accountkernel, linekernel, sumkernel
def signatures():
    return {f"{m.__name__}.{n}": len(f.signatures) for m in (accountkernel, linekernel, sumkernel)
            for n, f in vars(m).items() if hasattr(f, "signatures") and hasattr(f, "py_func")}
before = signatures()
from tpufleet.state import goodputpool
goodputpool.COMPILED_MIN_BYTES = 0
from tpufleet.ops.goodput import build
build([Path(sys.argv[1])], by=["accelerator"], period="day", windows=[("1h", 3600.0)], keep_timelines=1)
build([Path(sys.argv[1])], by=[], period=None)
print(json.dumps({name: [before.get(name), count] for name, count in signatures().items() if before.get(name) != count}))
"""


def _busy_job(job: str, steps: int) -> list[str]:
    """A job's events as tpufleet writes them: steps (some 2000 intervals), a checkpoint every 100, one failure."""
    t, out = 1767571200.0, []

    def ev(name: str, extra: str = "") -> None:
        out.append(f'{{"type":"event","job":"{job}","time":{t:.3f},"event":"{name}"{extra}}}')

    ev("job_start")
    for step in range(steps):
        ev("step_start", f',"step":{step}')
        t += 1.5
        if step % 100 == 99:
            ev("checkpoint_start")
            t += 0.25
            ev("checkpoint_end")
        if step == steps // 2:
            ev("failure")
            t += 30.0
            ev("job_start")
    ev("job_end")
    return out


def test_prepared_compiles_every_helper_a_report_calls(tmp_path):
    """`compiledaccount.prepared` (what `make sweep-deps` runs) leaves nothing for a report to compile: a helper
    called with argument types its check examples did not use (int8 labels) was compiled again on each new install's
    first large report. Run in a fresh interpreter: this one's helpers may have been compiled for anything."""
    import os
    import subprocess
    import sys

    path = tmp_path / "jobs.jsonl"
    path.write_text("\n".join(_busy_job("big", 1200) + _busy_job("small", 30)) + "\n")
    with path.open("a", newline="") as log:  # a log written with CR LF: its lines counted apart, not by a decoder
        log.write("".join(f"{line}\r\n" for line in _busy_job("windows", 30)))
    out = subprocess.run(
        [sys.executable, "-c", _SIGNATURES, str(path)],
        env={**os.environ, "TPUFLEET_PREBUILT": "0"},  # (the JIT's helpers: the prebuilt ones compile nothing)
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    assert out.stdout.strip() == "{}", f"compiled during the report (before, after): {out.stdout}"


def test_every_module_importing_numba_is_left_out_of_the_doctests_without_it():
    """A module that imports Numba at its top, itself or through another compiled module, is in the goodput
    package's `collect_ignore` where Numba is not installed: `make test-latest` (no extras) failed collecting
    `sumkernel`, left out of the list when it was split from `accountkernel`."""
    import ast
    from pathlib import Path

    from tpufleet.goodput import conftest

    package = Path(conftest.__file__).parent
    compiled = {"numba", *(f"tpufleet.goodput.{name.removesuffix('.py')}" for name in conftest.COMPILED)}
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)}
        if imported & compiled:
            assert path.name in conftest.COMPILED, f"{path.name} imports Numba at its top, and is collected without it"
