"""Everyday commands on a routed TPU7x superpod state (one 16x24x24 slice: 144 cubes, 9,216 chips) and at start,
each beside a baseline in the same run, printed as a ratio (the baseline's time over this one's).

    python benchmarks/bench_everyday.py

1. Whether the slice's stored tables are kept, as `status`, `show slices`, `explain`, `report`, `metrics` and `serve`
   ask: in-process (CPU), the file's bytes known whole (remembered by `routes` as it wrote them: hashed whole, the
   members' headers read) against reading every member through for the zip's CRC-32 (what every such command did);
   then `status` end to end with the list of tables known whole (`cache/whole-tables`) against `status` with the
   list removed before each run (tables never remembered, as those stored by an earlier version).
2. Start: `tpufleet --help` and `status` on a state without tables against the same commands in a process that
   first imports the modules they import no longer (what each process paid for them).

Each command runs with tpufleet's bytecode cached (`bench_compound.installed_env`); medians of 9 runs.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_compound import installed_env

ROOT = Path(__file__).resolve().parents[1]
RUNS = 9
# What `tpufleet --help` imported at start before, and `status` on a state without tables too
HELP_NO_LONGER = (
    "logging",
    "socket",
    "tpufleet.ids",
    "tpufleet.ops.fleet",
    "tpufleet.ops.routes",
    "tpufleet.goodput.events",
    "tpufleet.goodput.metrics",
)
STATUS_NO_LONGER = (
    *HELP_NO_LONGER,
    "zipfile",
    "concurrent.futures",
    "tpufleet.fleetmap",
    "tpufleet.state.tablesindex",
    "tpufleet.collectives.tables",
)


def row(name: str, seconds: float, baseline_name: str, baseline: float) -> None:
    print(
        f"{name:<52} {seconds:7.3f} s   baseline {baseline:7.3f} s ({baseline_name}): {baseline / seconds:4.1f}x",
        flush=True,
    )


def median_cpu(fn: Callable[[], object], runs: int = RUNS) -> float:
    """The median CPU time (this process's, every thread) of `fn`."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def command(argv: list[str], env: dict[str, str], before: Callable[[], object] = lambda: None) -> tuple[float, float]:
    """Median wall and CPU time (user + system) of a fresh process running `argv`, `before` called before each."""
    walls, cpus = [], []
    for _ in range(RUNS):
        before()
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def tpufleet(state: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "tpufleet", "--state", str(state), *args]


def preloaded(modules: tuple[str, ...], *args: str) -> list[str]:
    """`tpufleet ARGS` in a process that imports `modules` first."""
    code = f"import runpy, sys\nfor m in {modules!r}: __import__(m)\nsys.argv = ['tpufleet', *sys.argv[1:]]\n"
    return [sys.executable, "-c", code + "runpy.run_module('tpufleet', run_name='__main__')", *args]


def tables(tmp: Path, env: dict[str, str]) -> None:
    from tpufleet.state.filebackend import DirectoryBackend
    from tpufleet.state.store import Store
    from tpufleet.state.tablesindex import files_holding_indexed

    state = tmp / "superpod"
    for args in (["init", "--generation", "tpu7x"], ["allocate", "big", "--shape", "16x24x24"]):
        subprocess.run(tpufleet(state, *args), cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    for args in (["plan-xconnect", "big", "--apply"], ["routes", "big"]):
        subprocess.run(tpufleet(state, *args), cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    store = Store(state)
    indexed, backend = store.load().routes, store.backend
    assert isinstance(backend, DirectoryBackend)
    assert store.tables_present(indexed) == {"big"} == files_holding_indexed(backend.table_place, indexed)
    row(
        "tables kept? one superpod's, in-process CPU",
        median_cpu(lambda: store.tables_present(indexed)),
        "read through",
        median_cpu(lambda: files_holding_indexed(backend.table_place, indexed)),
    )
    listed = state / "cache" / "whole-tables"
    kept = command(tpufleet(state, "status"), env)
    through = command(tpufleet(state, "status"), env, lambda: listed.unlink(missing_ok=True))
    row("status, one routed superpod (median wall)", kept[0], "read through", through[0])
    row("status, one routed superpod (median CPU)", kept[1], "read through", through[1])


def start(tmp: Path, env: dict[str, str]) -> None:
    state = tmp / "small"
    subprocess.run(tpufleet(state, "init"), cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    floor = command([sys.executable, "-c", "import typer"], env)
    print(f"  python -c 'import typer': {floor[0]:.3f} s wall, {floor[1]:.3f} s CPU")
    for name, argv, modules in (
        ("tpufleet --help", ["--help"], HELP_NO_LONGER),
        ("status, a state without tables", ["--state", str(state), "status"], STATUS_NO_LONGER),
    ):
        now = command([sys.executable, "-m", "tpufleet", *argv], env)
        before = command(preloaded(modules, *argv), env)
        row(f"{name} (median wall)", now[0], "imports as before", before[0])
        row(f"{name} (median CPU)", now[1], "imports as before", before[1])


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        env = installed_env(name)
        tables(Path(name), env)
        start(Path(name), env)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
