"""The fleet state on PostgreSQL beside the same fleet in a state directory, in the same run, as ratios:
`status` (the whole command, and the load + summary in-process) and `routes` on a full pod (16x16x16, 4096 chips,
its tables stored: a 1.7 MB row, written as a binary parameter and stored uncompressed, schema version 2). Goals:
status within 1.5x of the directory, routes within 1.2x. The whole commands are run in turn on the two, so the
load of a shared machine falls on both alike.

The server is a throwaway one (tests/pgserver.py: initdb + pg_ctl in a temporary directory, on a Unix socket);
without the server binaries or psycopg the benchmark says so and records nothing.

    python benchmarks/bench_pg.py            # alone (a minute or two)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "tpufleet"]
Record = Callable[[str, float, str, str, float], None]


def _run(state: str, *args: str) -> None:
    subprocess.run([*CLI, "--state", state, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _walls(url: str, folder: str, *args: str, repeat: int = 7) -> tuple[float, float]:
    """The median wall time of the command on the database and on the directory, run in turn (one, then the
    other, `repeat` times): a shared machine's load falls on both alike."""
    times: dict[str, list[float]] = {url: [], folder: []}
    for _ in range(repeat):
        for state in (url, folder):
            start = time.perf_counter()
            _run(state, *args)
            times[state].append(time.perf_counter() - start)
    return statistics.median(times[url]), statistics.median(times[folder])


def _fleet(state: str, pods: int) -> None:
    _run(state, "init", "--pods", str(pods))
    for k in range(3):  # some history: a journal to read, faults to list
        _run(state, "inject-fault", f"host:c0{k}/1")


def bench(record: Record) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
    from pgserver import start_server

    server, why = start_server()
    if server is None:
        print(f"bench_pg: skipped ({why})")
        return
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _bench_status(record, server.url(server.new_database()), f"{tmp}/status")
            _bench_routes(record, server.url(server.new_database()), f"{tmp}/routes")
    finally:
        server.remove()


def _bench_status(record: Record, url: str, folder: str) -> None:
    from tpufleet.ops import views
    from tpufleet.state import Store

    for state in (folder, url):
        _fleet(state, 4)
    on_db, on_dir = _walls(url, folder, "status")
    record("status, 4 pods, PostgreSQL (median wall)", on_db, "<= 1.5x", "state directory", on_dir)
    in_db, in_dir = Store(url), Store(Path(folder))
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(101):  # in turn, as above: a fraction of a millisecond each
        for store, kept in ((in_db, times[0]), (in_dir, times[1])):
            start = time.perf_counter()
            views.status(store)
            kept.append(time.perf_counter() - start)
    load_db, load_dir = statistics.median(times[0]), statistics.median(times[1])
    record("status load + summary in-process, 4 pods, PostgreSQL", load_db, "<= 1.5x", "state directory", load_dir)


def _bench_routes(record: Record, url: str, folder: str) -> None:
    for state in (folder, url):
        _run(state, "init")
        _run(state, "allocate", "pod", "--shape", "16x16x16")
        _run(state, "plan-xconnect", "pod", "--apply")
    on_db, on_dir = _walls(url, folder, "routes", "pod", repeat=7)
    record("routes 16x16x16, tables stored, PostgreSQL (median wall)", on_db, "<= 1.2x", "state directory", on_dir)


def _print_record(name: str, value: float, target: str, baseline_name: str, baseline: float) -> None:
    ratio = value / baseline if baseline else float("inf")
    print(f"{name:<58} {value:8.3f} s  (target {target})   {baseline_name} {baseline:8.3f} s, ratio {ratio:.2f}x")


if __name__ == "__main__":
    bench(_print_record)
