"""Soak: writers in separate processes on one fleet state in PostgreSQL, then the state and journal checked.

    python benchmarks/soak_pg.py                          # 12 writers for 60 s
    python benchmarks/soak_pg.py --writers 4 --seconds 10 # a quick check

The server is a throwaway one (tests/pgserver.py: initdb + pg_ctl in a temporary directory); without the server
binaries or psycopg the soak says so and exits 0 having checked nothing.

Each writer is a process of its own (its own connections, one per command, as separate operators' commands are),
running the real entry point in a loop until the time is up: allocate a slice of its own (4x4x4 or 4x4x8), wire it
(plan-xconnect --apply), compute and store its routes, inject a fault on a host of its own cube and clear it,
release the slice. `routes` computes outside the lock and is refused (exit 1) when another writer committed meanwhile (as
on a directory): the writer runs it again, until it is stored or 30 s after the end (then that writer stops: a
liveness figure, printed, not a failure). Every exit code is counted; any other failure fails the soak.

Meanwhile the parent reads the state without the lock, as `tpufleet serve` does, and checks every serial it sees:
no cube in two slices, no OCS port in two cross-connects. At the end:
* serials consecutive: the journal's serials are exactly 1..the state's serial, one line each;
* journal complete: for every writer and kind of command, the journal holds as many lines as the writer counted
  commits (allocate, apply-xconnect, routes, inject-fault, clear-fault, release);
* no cube or port used twice in the final state, every slice's tables stored when indexed.
Printed: commits per second beside a single writer's in the same run (a ratio), the retries, the serials seen.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CTX = multiprocessing.get_context("fork")
KINDS = ("allocate", "apply-xconnect", "routes", "inject-fault", "clear-fault", "release")
GRACE = 30.0  # seconds past the end a writer's last `routes` may still be refused before it stops trying
FAULT_CUBE = 40  # writer w faults and clears host:c{40 + w}/1 (above the cubes the slices take)


def tpufleet(url: str, *args: str) -> int:
    from tpufleet.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(["--state", url, "--lock-timeout", "300", *args])
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 1
    return 0


def _round(url: str, worker: int, k: int, counts: dict[str, Any], give_up: float) -> str:
    """One round of a writer: "ok"; "failed" when a command failed otherwise than as the soak expects; "starved"
    when its `routes` was still refused (the state moved on each time) at `give_up`."""
    name = f"w{worker}r{k}"
    host = f"host:c{FAULT_CUBE + worker:02d}/1"
    shape = "4x4x8" if (worker + k) % 3 == 0 else "4x4x4"
    steps = [
        ("allocate", ("allocate", name, "--shape", shape, "--pod", "pod0")),
        ("apply-xconnect", ("plan-xconnect", name, "--apply")),
        ("routes", ("routes", name)),
        ("inject-fault", ("inject-fault", host)),
        ("clear-fault", ("clear-fault", host)),
        ("release", ("release", name)),
    ]
    for kind, argv in steps:
        attempts = 0
        while True:
            code = tpufleet(url, *argv)
            attempts += 1
            counts["exits"][f"{kind}:{code}"] = counts["exits"].get(f"{kind}:{code}", 0) + 1
            if code == 0 or kind != "routes" or code != 1:
                break
            if time.monotonic() > give_up:
                return "starved"
        counts["most_attempts"] = max(counts["most_attempts"], attempts)
        if code != 0:
            return "failed"
        counts["commits"][kind] += 1
    return "ok"


def _writer(url: str, worker: int, deadline: float, out: str) -> None:
    counts: dict[str, Any] = {
        "commits": dict.fromkeys(KINDS, 0),
        "exits": {},
        "rounds": 0,
        "most_attempts": 0,
        "end": "ok",
    }
    k = 0
    while counts["end"] == "ok" and time.monotonic() < deadline:
        counts["end"] = _round(url, worker, k, counts, deadline + GRACE)
        k += 1
        counts["rounds"] += counts["end"] == "ok"
    Path(out).write_text(json.dumps(counts))
    os._exit(1 if counts["end"] == "failed" else 0)


def _conflicts(state: Any) -> list[str]:
    """Cubes in two slices, OCS ports in two cross-connects: what must never be seen."""
    problems = []
    cubes = collections.Counter(c for s in state.slices.values() for c in s.cubes)
    problems += [f"cube {c} in {n} slices" for c, n in cubes.items() if n > 1]
    for ocs, pairs in state.ocs.items():
        for side in (0, 1):
            ports = collections.Counter(p[side] for p in pairs)
            problems += [f"OCS {ocs} port {p} (side {side}) used {n} times" for p, n in ports.items() if n > 1]
    return problems


def _watch(url: str, procs: list[Any]) -> tuple[set[int], list[str]]:
    """Read the state without the lock while the writers run; the serials seen and any conflict found."""
    from tpufleet.state import Store

    reads = Store(url)
    seen: set[int] = set()
    problems: list[str] = []
    while any(p.is_alive() for p in procs):
        state = reads.load()
        if state.serial not in seen:
            seen.add(state.serial)
            problems += [f"serial {state.serial}: {p}" for p in _conflicts(state)]
        time.sleep(0.2)
    return seen, problems


def _run(
    url: str, writers: int, seconds: float, folder: str
) -> tuple[list[dict[str, Any]], float, set[int], list[str]]:
    deadline = time.monotonic() + seconds
    outs = [f"{folder}/w{w}.json" for w in range(writers)]
    procs = [CTX.Process(target=_writer, args=(url, w, deadline, outs[w])) for w in range(writers)]
    start = time.monotonic()
    for p in procs:
        p.start()
    seen, problems = _watch(url, procs)
    for p in procs:
        p.join()
    took = time.monotonic() - start
    problems += [f"writer {w} exit {p.exitcode}" for w, p in enumerate(procs) if p.exitcode != 0]
    return [json.loads(Path(o).read_text()) for o in outs if Path(o).exists()], took, seen, problems


def _journal_problems(url: str, results: list[dict[str, Any]]) -> tuple[int, list[str]]:
    from tpufleet.state import Store

    store = Store(url)
    state = store.load()
    entries = store.journal()
    problems = []
    serials = [e.serial for e in entries]
    if serials != list(range(1, state.serial + 1)):
        problems.append(f"journal serials are not 1..{state.serial} ({len(serials)} lines)")
    for w, counts in enumerate(results):
        for kind in KINDS:
            pattern = re.compile(
                rf"{kind} f\d+ host:c{FAULT_CUBE + w:02d}/1$" if "fault" in kind else rf"{kind} w{w}r\d+:"
            )
            found = sum(1 for e in entries if pattern.match(e.summary))
            if found != counts["commits"][kind]:
                problems.append(f"writer {w}: {counts['commits'][kind]} {kind} committed, {found} journal lines")
    problems += [f"final state: {p}" for p in _conflicts(state)]
    missing = [n for n in state.routes if store.stored_tables(n).read() is None]
    problems += [f"slice {n}: tables indexed but not stored" for n in missing]
    return state.serial, problems


def soak(writers: int, seconds: float, baseline_seconds: float) -> int:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from pgserver import start_server

    server, why = start_server()
    if server is None:
        print(f"soak_pg: skipped ({why})")
        return 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rates = {}
            failed: list[str] = []
            for label, n, secs in (("1 writer", 1, baseline_seconds), (f"{writers} writers", writers, seconds)):
                url = server.url(server.new_database())
                assert tpufleet(url, "init") == 0
                results, took, seen, problems = _run(url, n, secs, tmp)
                serial, more = _journal_problems(url, results)
                problems += more
                commits = sum(sum(r["commits"].values()) for r in results)
                rates[label] = commits / took
                exits: collections.Counter[str] = collections.Counter()
                for r in results:
                    exits.update(r["exits"])
                print(
                    f"{label}: {took:.1f} s, {commits} commits ({rates[label]:.1f}/s), final serial {serial}, "
                    f"{sum(r['rounds'] for r in results)} rounds, {len(seen)} serials read without the lock"
                )
                refused = sum(r["exits"].get("routes:1", 0) for r in results)
                starved = sum(r["end"] == "starved" for r in results)
                print(
                    f"  routes refused because the state moved on while it computed: {refused} (run again; at most "
                    f"{max(r['most_attempts'] for r in results)} runs for one), writers still refused "
                    f"{GRACE:g} s after the end: {starved}"
                )
                print(f"  exit codes: {dict(sorted(exits.items()))}")
                print(f"  checks: {'all passed' if not problems else f'{len(problems)} FAILED'}")
                for p in problems[:20]:
                    print(f"    {p}")
                failed += problems
            ratio = rates[f"{writers} writers"] / rates["1 writer"]
            print(
                f"throughput: {writers} writers {rates[f'{writers} writers']:.1f} commits/s, 1 writer "
                f"{rates['1 writer']:.1f} commits/s: ratio {ratio:.2f}x"
            )
            return 1 if failed else 0
    finally:
        server.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--writers", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--baseline-seconds", type=float, default=15.0, help="the single writer's run")
    args = parser.parse_args()
    return soak(args.writers, args.seconds, args.baseline_seconds)


if __name__ == "__main__":
    sys.exit(main())
