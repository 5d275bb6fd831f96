"""Sweep and multi-pod simulation speed, each figure beside a baseline run in the same process, as a ratio.

    python benchmarks/bench_sweep.py            # both (a few minutes)
    python benchmarks/bench_sweep.py --sweep    # only the 24-point sweep, serial vs a 2-worker local cluster
    python benchmarks/bench_sweep.py --fleet    # only simulate-fleet 16 pods x 30 days vs 1 pod x 30 days

The sweep figure is the whole sweep on a local Dask cluster of 2 worker processes, cluster start-up included,
against the same sweep run serially; the two must give identical summaries. The fleet figure splits the 16-pod
run into simulation, goodput summary and writing the events as JSON lines, and compares it with 16 times the
one-pod run at the same load per pod (a ratio near 1 means the cost grows with the fleet, not faster).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPEC = """schema_version: 1
simulation: fleet
name: bench
seeds: 1
fixed: {days: 6}
grid:
  checkpoint_interval_min: [20, 40, 60, 90, 120, 240]
  spare_cubes: [0, 2, 4, 8]
"""


def row(name: str, seconds: float, baseline_name: str, baseline: float) -> None:
    ratio = baseline / seconds if seconds else float("inf")
    print(f"{name:<52} {seconds:8.2f} s   baseline {baseline:8.2f} s ({baseline_name}), ratio {ratio:.2f}x", flush=True)


def _sweep(spec: Any, out: Path, executor: Any) -> tuple[float, dict[int, Any]]:
    from tpufleet.sweep import driver

    t = time.perf_counter()
    try:
        outcome = driver.run(spec, out, executor)
    finally:
        executor.close()
    return time.perf_counter() - t, outcome.points


def bench_sweep(tmp: Path) -> None:
    from tpufleet.sweep import backends, spec

    if not backends.dask_available():
        print("sweep on a local cluster: skipped, Dask is not installed (make sweep-deps)", flush=True)
        return
    path = tmp / "bench.yaml"
    path.write_text(SPEC)
    sweep = spec.load(path)
    serial_s, serial = _sweep(sweep, tmp / "serial", backends.Serial())
    t = time.perf_counter()
    executor = backends.Dask(workers=2)
    startup = time.perf_counter() - t
    dask_s, on_dask = _sweep(sweep, tmp / "dask", executor)
    same = json.dumps(serial, sort_keys=True) == json.dumps(on_dask, sort_keys=True)
    row(
        f"sweep of {len(sweep.points)} points, 2-worker local cluster (+start-up)", dask_s + startup, "serial", serial_s
    )
    print(f"  cluster start-up {startup:.2f} s; summaries identical: {same}", flush=True)
    if not same:
        sys.exit("serial and Dask summaries differ")


def _fleet_run(pods: int) -> dict[str, float]:
    from tpufleet.ops.simulate import summarize
    from tpufleet.simulation import Options, Simulator, load_rates, load_workload
    from tpufleet.simulation.log import jsonl

    t = time.perf_counter()
    sim = Simulator(load_workload(None), load_rates(None), Options(days=30, seed=0, pods=pods))
    records = sim.run()
    t1 = time.perf_counter()
    summarize(records, sim)
    t2 = time.perf_counter()
    jsonl(records)
    t3 = time.perf_counter()
    return {"simulate": t1 - t, "summary": t2 - t1, "write": t3 - t2, "total": t3 - t, "events": len(records)}


def bench_fleet() -> None:
    one = _fleet_run(1)
    sixteen = _fleet_run(16)
    print(f"  16 pods: {sixteen['events']:,.0f} events; " + ", ".join(
        f"{k} {sixteen[k]:.1f} s" for k in ("simulate", "summary", "write")))  # fmt: skip
    print(
        f"  1 pod:   {one['events']:,.0f} events; "
        + ", ".join(f"{k} {one[k]:.1f} s" for k in ("simulate", "summary", "write"))
    )
    row(
        "simulate-fleet 16 pods x 30 days (target <= 60 s)",
        sixteen["total"],
        "16 x one pod x 30 days",
        16 * one["total"],
    )


def main() -> None:
    import os

    sys.path[:0] = [str(ROOT)]
    # A parallel speed-up needs idle cores: on a shared machine the ratio says more with the load beside it.
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    which = set(sys.argv[1:]) or {"--sweep", "--fleet"}
    with tempfile.TemporaryDirectory() as tmp:
        if "--sweep" in which:
            bench_sweep(Path(tmp))
        if "--fleet" in which:
            bench_fleet()


if __name__ == "__main__":
    main()
