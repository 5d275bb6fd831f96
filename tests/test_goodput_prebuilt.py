"""The kernels built ahead of time (`tpufleet.goodput.prebuilt`, cached by `tpufleet.state.prebuiltcache`): the
loop's columns and a report exactly as Numba's JIT gives them, arguments of other types handed to the JIT (a built
function would misread them), a report of a large log that never imports Numba, and the cache: built once, under a
lock, into place whole, a failure remembered, nothing built where switched off. (The helpers' own answers against
numpy, JIT and prebuilt alike: tests/test_goodput_compiledaccount.py, test_goodput_accountkernel_sums.py.)"""

from __future__ import annotations

import collections
import importlib
import importlib.machinery
import importlib.util
import os
import random
import shutil
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpufleet.goodput import compiledaccount, kernelchecks, linescan, prebuilt
from tpufleet.state import goodputpool, prebuiltcache

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="Numba is not installed (make sweep-deps): nothing to build"
)


@contextmanager
def kernels_in_use(kind: str) -> Iterator[Any]:
    """The accounting's helpers as Numba's JIT compiles them ("jit") or as built ahead of time ("prebuilt"), and
    the loop and the accounting using those meanwhile."""
    if kind == "prebuilt" and not prebuiltcache.install():
        pytest.skip("the prebuilt kernels could not be built here (a C compiler is needed: see NAME.failed)")
    saved = prebuilt.installed()
    prebuilt.use(saved if kind == "prebuilt" else None)
    handed_on = sum(prebuilt.FALLBACKS.values())
    try:
        kernel = compiledaccount._kernel()
        assert kernel is not None, "the compiled helpers did not load"
        assert isinstance(kernel, type(sys)) == (kind == "jit")
        yield kernel
        # (what was asked of the built functions was answered by them: none handed to the JIT's)
        assert sum(prebuilt.FALLBACKS.values()) == handed_on, f"calls handed to the JIT: {prebuilt.FALLBACKS}"
    finally:
        prebuilt.use(saved)


@pytest.fixture(scope="module")
def built() -> Iterator[Any]:
    with kernels_in_use("prebuilt") as kernel:
        yield kernel


@pytest.fixture
def jit_only() -> Iterator[Any]:
    """Numba's JIT for the test (the prebuilt kernels used again after it)."""
    with kernels_in_use("jit") as kernel:
        yield kernel


def _lines(seed: int, count: int) -> bytes:
    """Event lines in tpufleet's form, some in other forms or defective (the loop leaves those to the caller)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        time = f"{rng.randrange(1767571200, 1767671200)}.{rng.randrange(1000):03d}"
        extra = rng.choice(["", f',"step":{rng.randrange(10**6)}', f',"chips":{rng.randrange(1, 9000)}', ',"step":-1'])
        line = f'{{"type":"event","job":"j{rng.randrange(4)}","time":{time},"event":"step_start"{extra}}}'
        if rng.random() < 0.1:
            line = rng.choice([line.replace(":", ": "), line[:-3], '{"type":"capacity"}', "", line.replace("j", "é")])
        out.append(line)
    return ("\n".join(out) + rng.choice(["", "\n"])).encode()


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 400))
def test_the_prebuilt_loop_reads_a_piece_as_the_jits(built: Any, seed: int, count: int) -> None:
    """Every column the loop fills, bit for bit (times as their bytes), and what it returns; its count of lines."""
    from tpufleet.goodput import linekernel

    piece = _lines(seed, count)
    rows = max(len(piece), 32) // 32
    results = []
    for kernel in (built, linekernel):
        t, cols = np.zeros(rows, dtype=np.float64), np.zeros((9, rows), dtype=np.int64)
        returned = kernel.scan(np.frombuffer(piece, dtype=np.uint8), *linescan._tables(), t, cols)
        results.append((returned, t.view(np.int64).tolist(), cols.tolist()))
        results.append(kernel.line_count(np.frombuffer(piece, dtype=np.uint8)))
    assert results[0] == results[2] and results[1] == results[3]
    assert results[0][0][0] > 0 or count == 0 or b'"time"' not in piece  # (the loop took lines: the case is real)


def _report(paths: list[Path], skip_bad: bool) -> Any:
    from tpufleet.errors import BadInput
    from tpufleet.goodput import render
    from tpufleet.ops.goodput import build

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputpool, "COMPILED_MIN_BYTES", 0)
        try:
            r = build(paths, by=["accelerator", "phase"], period="day", windows=[("1h", 3600.0)], skip_bad=skip_bad)
        except BadInput as exc:
            return "error", str(exc)
    return r, render.to_table(r, top=50)


@pytest.mark.parametrize("seed", range(4))
def test_a_report_is_the_same_with_the_prebuilt_kernels_and_the_jits(built: Any, tmp_path: Path, seed: int) -> None:
    """Jobs with restarts, checkpoints and failures, defects among them: the same report and table (or the same
    first error), with --skip-bad and without."""
    from test_goodput_columnar import with_defects

    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(with_defects(seed, 6, seed % 3)) + "\n")
    prebuilt_reports = [_report([path], skip_bad) for skip_bad in (False, True)]
    assert linescan._kernel() is built
    with kernels_in_use("jit"):
        assert isinstance(linescan._kernel(), type(sys))  # (Numba's JIT: the kernel modules themselves)
        assert [_report([path], skip_bad) for skip_bad in (False, True)] == prebuilt_reports


_NO_NUMBA = """
import sys
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tpufleet.state import goodputpool
goodputpool.COMPILED_MIN_BYTES = 0
from tpufleet.ops.goodput import build
from tpufleet.goodput import linescan, prebuilt
build([Path(sys.argv[1])], by=["accelerator"], period="day")
print(prebuilt.installed() is not None, linescan.loaded(), "numba" in sys.modules)
"""


def test_a_report_of_a_large_log_with_the_prebuilt_kernels_never_imports_numba(built: Any, tmp_path: Path) -> None:
    """Every call the loop and the accounting make fits a function built (one that did not would load the JIT's)."""
    from test_goodput_compiledaccount import _busy_job

    path = tmp_path / "jobs.jsonl"
    path.write_text("\n".join(_busy_job("big", 1200) + _busy_job("small", 30)) + "\n")
    out = subprocess.run([sys.executable, "-c", _NO_NUMBA, str(path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False"]


def test_arguments_a_built_function_was_not_built_for_go_to_the_jits(
    built: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another dtype, a strided or read-only array, another dimension, an int for a float, a missing argument:
    each is the JIT's call (which compiles for it), never the built function's (which would misread it)."""
    from tpufleet.goodput import accountkernel, linekernel, sumkernel

    calls: list[str] = []
    monkeypatch.setattr(prebuilt, "FALLBACKS", collections.Counter())  # (its own count: these are handed on)

    def jits(name: str, answer: float) -> Any:
        def called(*args: Any) -> float:
            calls.append(name)
            return answer

        return called

    monkeypatch.setattr(linekernel, "line_count", jits("line_count", -1))
    monkeypatch.setattr(accountkernel, "distinct_sorted", jits("distinct_sorted", -1))
    monkeypatch.setattr(sumkernel, "ideal_step", jits("ideal_step", -1.0))
    values, out = np.array([1.0, 1.0, 2.0, 3.0]), np.zeros(4)
    assert built.line_count(np.frombuffer(b"a\nb\n", dtype=np.uint8)) == 2  # (bytes are read-only: the loop's own)
    assert built.distinct_sorted(values, out) == 3
    assert built.ideal_step(values, values, 1.0, 3.0) == 1.75
    assert calls == []
    others = [
        (built.line_count, (np.zeros(4, dtype=np.int64),)),
        (built.line_count, (np.zeros(8, dtype=np.uint8)[::2],)),
        (built.line_count, (np.zeros((2, 2), dtype=np.uint8),)),
        (built.line_count, ([10, 10],)),
        (built.distinct_sorted, (values.astype(np.float32), out)),
        (built.distinct_sorted, (np.frombuffer(values.tobytes()), out)),  # read-only: the built one would not know
        (built.distinct_sorted, (values, out[::2])),
        (built.distinct_sorted, (values,)),
        (built.ideal_step, (values, values, 1, 3.0)),
        (built.ideal_step, (values, values, 1.0, "3")),
    ]
    assert [call(*args) for call, args in others] == [-1, -1, -1, -1, -1, -1, -1, -1, -1.0, -1.0]
    assert calls == ["line_count"] * 4 + ["distinct_sorted"] * 4 + ["ideal_step"] * 2
    assert prebuilt.FALLBACKS == {"line_count": 4, "distinct_sorted": 4, "ideal_step": 2}


def test_a_helper_not_built_ahead_is_the_jits(built: Any) -> None:
    from tpufleet.goodput import accountkernel

    assert built.first_index is accountkernel.first_index
    with pytest.raises(AttributeError):
        built.no_such_helper  # noqa: B018
    with pytest.raises(AttributeError):
        built.__deepcopy__  # noqa: B018  (asked by copy: answered without importing the JIT's kernels)


# The cache (`prebuiltcache`), in a directory of the test's own ($NUMBA_CACHE_DIR): a builder that copies the module
# the session built stands in for the compiler (8 s), but in the one test that runs it.


@pytest.fixture
def cache(built: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(prebuiltcache.SWITCH, raising=False)
    return tmp_path / "tpufleet"


@pytest.fixture(scope="module")
def made(built: Any) -> Path:
    """The module the session built (or found built) and installed."""
    assert built.origin is not None
    return Path(built.origin)


def _copying_builder(made: Path, runs: list[str], monkeypatch: pytest.MonkeyPatch, failure: str | None = None) -> None:

    def run(scratch: Path, name: str) -> str | None:
        runs.append(name)
        if failure is None:
            shutil.copy(made, scratch / made.name)
        return failure

    monkeypatch.setattr(prebuiltcache, "_run_builder", run)


def test_the_module_is_built_once_into_place_and_imported_after(
    cache: Path, made: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []
    _copying_builder(made, runs, monkeypatch)
    cache.mkdir()
    stale = cache / f"{prebuiltcache.PREFIX}0123{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    stale.write_bytes(b"built for other sources")
    long_ago = time.time() - prebuiltcache.STALE_S - 60
    os.utime(stale, (long_ago, long_ago))  # (not imported for that long)
    first = prebuiltcache._loaded()
    assert first is not None and kernelchecks.answers_right(prebuilt.guarded(first))
    second = prebuiltcache._loaded()
    assert second is not None and runs == [prebuiltcache.module_name()]
    assert sorted(p.name for p in cache.iterdir()) == sorted([made.name, f"{runs[0]}.lock"])
    assert not stale.exists()


def test_a_failed_build_is_remembered_and_the_jit_is_used(
    cache: Path, made: Path, monkeypatch: pytest.MonkeyPatch, jit_only: Any
) -> None:
    runs: list[str] = []
    _copying_builder(made, runs, monkeypatch, failure="gcc: command not found\n")
    assert prebuiltcache._loaded() is None
    assert prebuiltcache._loaded() is None
    assert len(runs) == 1  # (not tried again: each large report would pay for the attempt)
    assert (cache / f"{runs[0]}.failed").read_text() == "gcc: command not found\n"
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # (the scratch directory removed)
    assert not prebuiltcache.install.__wrapped__()  # (its cache bypassed: the session's answer is its own)
    assert prebuilt.installed() is None and linescan.available() and isinstance(linescan._kernel(), type(sys))
    assert len(runs) == 1


def test_a_module_found_once_the_lock_is_taken_is_not_built_again(
    cache: Path, made: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []
    _copying_builder(made, runs, monkeypatch)
    cache.mkdir()
    name = prebuiltcache.module_name()
    shutil.copy(made, cache / made.name)  # (as another process's build, finished while this one awaited the lock)
    assert prebuiltcache._built(cache, name) == cache / made.name
    assert runs == []


@pytest.mark.parametrize("switch", [(prebuiltcache.SWITCH, "0"), ("NUMBA_DISABLE_JIT", "1")])
def test_switched_off_nothing_is_built_or_looked_for(
    cache: Path, monkeypatch: pytest.MonkeyPatch, switch: tuple[str, str]
) -> None:
    monkeypatch.setenv(*switch)
    monkeypatch.setattr(prebuiltcache, "_directories", lambda: pytest.fail("looked for a module"))
    assert prebuiltcache._loaded() is None


def test_an_unwritable_cache_builds_nothing(
    cache: Path, made: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runs: list[str] = []
    _copying_builder(made, runs, monkeypatch)
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(prebuiltcache, "_directories", lambda: [tmp_path / "a-file" / "tpufleet"])
    assert prebuiltcache._loaded() is None and runs == []


def test_the_name_is_the_sources_and_the_versions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    name = prebuiltcache.module_name()
    assert name == prebuiltcache.module_name() and name.startswith(prebuiltcache.PREFIX)
    real = prebuiltcache._installed
    with monkeypatch.context() as other:
        other.setattr(
            prebuiltcache, "_installed", lambda p: real(p).replace("numpy-", "numpy-0.") if p == "numpy" else real(p)
        )
        assert prebuiltcache.module_name() != name
    for module in ("tpufleet.goodput.sumkernel", "tpufleet.state.prebuiltbuild", "numba"):  # sources, an install
        changed = tmp_path / f"{module}.py"
        changed.write_bytes(Path(prebuiltcache._origin(module)).read_bytes() + b"\n")
        origin = prebuiltcache._origin
        with monkeypatch.context() as other:
            other.setattr(prebuiltcache, "_origin", lambda m, c=changed, o=origin, x=module: str(c) if m == x else o(m))
            assert prebuiltcache.module_name() not in (name, None)
    assert prebuiltcache.module_name() == name


def test_the_builder_builds_a_module_that_answers_its_checks(built: Any, tmp_path: Path) -> None:
    """The real compiler, once (about 8 s): the module it writes, imported, answers the checks the JIT's do."""
    name = prebuiltcache.module_name()
    made = prebuiltcache._build(tmp_path, name)
    assert made is not None and made.parent == tmp_path
    module = prebuiltcache._imported(name, made)
    assert module is not None and kernelchecks.answers_right(prebuilt.guarded(module))
    assert sorted(p.name for p in tmp_path.iterdir()) == [made.name]


def test_a_killed_build_leaves_no_failure_and_is_tried_again(cache: Path, made: Path, monkeypatch: pytest.MonkeyPatch):
    runs: list[str] = []
    _copying_builder(made, runs, monkeypatch, failure=prebuiltcache._INTERRUPTED)
    assert prebuiltcache._loaded() is None and prebuiltcache._loaded() is None
    assert len(runs) == 2 and not (cache / f"{runs[0]}.failed").exists()


def test_a_killed_builds_scratch_is_removed_before_the_next(cache: Path, made: Path, monkeypatch: pytest.MonkeyPatch):
    runs: list[str] = []
    _copying_builder(made, runs, monkeypatch)
    name = prebuiltcache.module_name()
    (cache / f".{name}-orphan").mkdir(parents=True)
    (cache / f".{name}-orphan" / made.name).write_bytes(b"half a module")
    assert prebuiltcache._loaded() is not None and runs == [name]
    assert not (cache / f".{name}-orphan").exists()


def test_other_versions_modules_are_kept_while_used_and_removed_once_not(
    cache: Path, made: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two installs sharing a cache (two Pythons, two versions) each keep theirs: one not imported for
    STALE_S is removed with the next build; one imported is marked used (once a day at most)."""
    runs: list[str] = []
    _copying_builder(made, runs, monkeypatch)
    cache.mkdir()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    recent, old = cache / f"{prebuiltcache.PREFIX}recent{suffix}", cache / f"{prebuiltcache.PREFIX}old{suffix}"
    lock = cache / f"{prebuiltcache.PREFIX}old.lock"  # (its process may hold it still: a lock is never removed)
    for path in (recent, old, lock):
        path.write_bytes(b"another version's")
    long_ago = time.time() - prebuiltcache.STALE_S - 60
    os.utime(old, (long_ago, long_ago))
    os.utime(lock, (long_ago, long_ago))
    assert prebuiltcache._loaded() is not None and len(runs) == 1
    assert recent.exists() and lock.exists() and not old.exists()
    built_now = prebuiltcache._module_file(cache, runs[0])
    assert built_now is not None
    os.utime(built_now, (long_ago, long_ago))
    assert prebuiltcache._loaded() is not None and len(runs) == 1  # (found: imported, not built)
    assert time.time() - built_now.stat().st_mtime < 3600


def test_the_builder_refuses_to_build_other_sources_under_this_name(tmp_path: Path) -> None:
    """The builder imports the tpufleet first on its path: one whose sources are not those the name says (another
    checkout in its working directory, say) would cache the wrong kernels under this version's name."""
    from tpufleet.state import prebuiltbuild

    assert prebuiltbuild.main(str(tmp_path), prebuiltcache.PREFIX + "0" * 20) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_module_without_a_function_it_should_have_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = prebuilt.installed()
    monkeypatch.setattr(prebuiltcache, "_loaded", lambda: types.ModuleType(prebuiltcache.PREFIX + "empty"))
    assert not prebuiltcache.install.__wrapped__()
    assert prebuilt.installed() is saved


def test_a_cache_whose_name_cannot_be_told_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel source or an install's files unreadable: no module, no error (the JIT then, as before)."""

    def unreadable(package: str) -> str:
        raise PermissionError(13, "Permission denied", package)

    saved = prebuilt.installed()
    monkeypatch.setattr(prebuiltcache, "_installed", unreadable)
    assert not prebuiltcache.install.__wrapped__()
    assert prebuilt.installed() is saved
