"""Today's pods at full size: a TPU7x superpod slice (16x24x24, 9,216 chips) and the fleet commands on 144-cube pods,
each beside a baseline in the same run, printed as a ratio.

    python benchmarks/bench_generations.py

1. Routing tables for 9,216 chips in-process, healthy and with one OCS down, against a scipy all-pairs BFS of the
   same graph (what any routing must at least do once); peak memory measured from outside (benchmarks/peak.py).
2. `routes` end to end for the superpod slice, healthy and with one OCS down; `status` on four fully wired TPU7x
   superpods; `plan-spares` and `capacity --after 3` on a 144-cube pod: each against `tpufleet --version`.
3. `plan-maintenance` of 20 notices and `apply-maintenance` of one wave (drain, move, wire, route, clear) on the
   TPU7x fixture reservation (144 sub-blocks) with a 12x12x24 and a 16x16x16 running: each against `status` on the
   same state.

4. `simulate-fleet` of two TPU7x superpods (3 days, faults x10) against the same run on two TPU v4 pods.

    python benchmarks/bench_generations.py maintenance    # section 3 only
    python benchmarks/bench_generations.py simulation     # section 4 only
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import peak

ROOT = Path(__file__).resolve().parents[1]

IN_PROCESS = """
import json, sys, time
sys.path.insert(0, {bench!r})
import numpy as np
from bench_routing_fast import one_ocs_failure
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path
from tpufleet.routing.candidates import candidates
from tpufleet.shapes import parse_shape
from tpufleet.state.generations import shipped

shape = parse_shape("16x24x24", False, shipped("tpu7x"))
exp, alive = one_ocs_failure(shape)
t = time.perf_counter(); candidates(shape, exp, exp, "auto", 3); healthy = time.perf_counter() - t
t = time.perf_counter(); candidates(shape, exp, alive, "auto", 3); faulty = time.perf_counter() - t
n = len(exp)
rows = np.repeat(np.arange(n), 6); cols = exp.reshape(-1); ok = cols >= 0
graph = csr_matrix((np.ones(ok.sum(), dtype=np.int8), (rows[ok], cols[ok])), shape=(n, n))
t = time.perf_counter()
for start in range(0, n, 1024):
    shortest_path(graph, unweighted=True, indices=np.arange(start, min(n, start + 1024)))
bfs = time.perf_counter() - t
print(json.dumps({{"healthy": healthy, "faulty": faulty, "bfs": bfs}}))
"""


def median_of(fn: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def row(name: str, seconds: float, goal: str, baseline_name: str, baseline: float) -> None:
    print(f"{name:<58} {seconds:7.2f} s (goal {goal})  {baseline_name} {baseline:6.2f} s: {seconds / baseline:5.1f}x")


def in_process() -> None:
    import json

    child = peak.run([sys.executable, "-c", IN_PROCESS.format(bench=str(ROOT / "benchmarks"))], cwd=ROOT)
    figures = json.loads(child.stdout.strip().splitlines()[-1])
    row(
        "healthy tables, 9,216 chips, in-process", figures["healthy"], "<= 1.5 s", "scipy all-pairs BFS", figures["bfs"]
    )
    row("tables with one OCS down, in-process", figures["faulty"], "-", "scipy all-pairs BFS", figures["bfs"])
    print(f"  peak of that process (BFS included) {child.peak_mib:.0f} MiB (goal <= 3 GB)")


def end_to_end(tmp: Path) -> None:
    def tpufleet(state: Path, *args: str) -> peak.Child:
        return peak.run([sys.executable, "-m", "tpufleet", "--state", str(state), *args], cwd=ROOT)

    version = median_of(lambda: peak.run([sys.executable, "-m", "tpufleet", "--version"], cwd=ROOT))
    big = tmp / "big"
    for args in (["init", "--generation", "tpu7x"], ["allocate", "big", "--shape", "16x24x24"]):
        tpufleet(big, *args)
    tpufleet(big, "plan-xconnect", "big", "--apply")
    row(
        "routes 16x24x24 end to end, healthy",
        median_of(lambda: tpufleet(big, "routes", "big")),
        "-",
        "--version",
        version,
    )
    tpufleet(big, "inject-fault", "ocs:pod0/x/5")
    row(
        "routes 16x24x24 end to end, one OCS down",
        median_of(lambda: tpufleet(big, "routes", "big")),
        "<= 6 s",
        "--version",
        version,
    )
    four = tmp / "four"
    tpufleet(four, "init", "--generation", "tpu7x", "--pods", "4")
    for pod in range(4):
        tpufleet(four, "allocate", f"s{pod}", "--shape", "16x24x24", "--pod", f"pod{pod}")
        tpufleet(four, "plan-xconnect", f"s{pod}", "--apply")
    row(
        "status, four fully wired TPU7x superpods",
        median_of(lambda: tpufleet(four, "status")),
        "<= 0.5 s",
        "--version",
        version,
    )
    spares = tmp / "spares"
    for args in (
        ["init", "--generation", "tpu7x"],
        ["allocate", "a", "--shape", "12x12x24"],
        ["inject-fault", "host:c100/3"],
    ):
        tpufleet(spares, *args)
    row(
        "plan-spares, one 144-cube pod",
        median_of(lambda: tpufleet(spares, "plan-spares")),
        "<= 1 s",
        "--version",
        version,
    )
    row(
        "capacity --after 3, one 144-cube pod",
        median_of(lambda: tpufleet(spares, "capacity", "--after", "3")),
        "<= 2 s",
        "--version",
        version,
    )


def maintenance(tmp: Path) -> None:
    import json
    import shutil

    def tpufleet(state: Path, *args: str) -> peak.Child:
        return peak.run([sys.executable, "-m", "tpufleet", "--state", str(state), *args], cwd=ROOT)

    fixture = ROOT / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"
    state = tmp / "maintenance"
    for args in (
        ["init", "--generation", "tpu7x"],
        ["import", "reservation", str(fixture), "--apply"],
        ["allocate", "a", "--shape", "12x12x24"],
        ["allocate", "b", "--shape", "16x16x16"],
    ):
        tpufleet(state, *args)
    cubes = [f"c{i:02d}" for i in range(10)] + [f"c{i}" for i in range(55, 65)]  # 10 of each slice's cubes
    notices = [
        {
            "target": f"cube:{c}",
            "window_start": f"2026-07-{i + 1:02d}T09:00:00Z",
            "window_end": f"2026-07-{i + 1:02d}T13:00:00Z",
        }
        for i, c in enumerate(cubes)
    ]
    (tmp / "notices.json").write_text(json.dumps(notices))
    plan = tmp / "plan.json"
    status = median_of(lambda: tpufleet(state, "status"))
    row(
        "plan-maintenance, 144 sub-blocks, 20 notices",
        median_of(
            lambda: tpufleet(state, "plan-maintenance", "--notices", str(tmp / "notices.json"), "--out", str(plan))
        ),
        "<= 5 s",
        "status",
        status,
    )
    times = []
    for run in range(3):  # each on a fresh copy of the planned state: a wave is applied once
        copy = tmp / f"apply{run}"
        shutil.copytree(state, copy)
        t = time.perf_counter()
        done = tpufleet(copy, "apply-maintenance", str(plan), "--wave", "1")
        times.append(time.perf_counter() - t)
        assert done.returncode == 0, done.stdout
    row("apply-maintenance --wave 1 (one 12x12x24 moved and routed)", statistics.median(times), "-", "status", status)


def simulation() -> None:
    """`simulate-fleet` of two TPU7x superpods (its step model and reroute costs modelled on TPU7x figures, not
    looked up) against the same run on two built-in TPU v4 pods."""

    def simulate(*args: str) -> peak.Child:
        days = ["simulate-fleet", "--days", "3", "--pods", "2", "--seed", "3", "--fault-scale", "10"]
        return peak.run([sys.executable, "-m", "tpufleet", *days, *args], cwd=ROOT)

    row(
        "simulate-fleet 3 days, two TPU7x superpods",
        median_of(lambda: simulate("--generation", "tpu7x")),
        "-",
        "two TPU v4 pods",
        median_of(lambda: simulate()),
    )


def main() -> None:
    only = sys.argv[1:]
    if only not in ([], ["maintenance"], ["simulation"]):
        sys.exit("usage: python benchmarks/bench_generations.py [maintenance|simulation]")
    with tempfile.TemporaryDirectory() as name:
        if not only:
            in_process()
            end_to_end(Path(name))
        if only != ["simulation"]:
            maintenance(Path(name))
        if only != ["maintenance"]:
            simulation()


if __name__ == "__main__":
    main()
