"""Sweep speed: a 24-point sweep on a 2-worker local Dask cluster beside the same sweep run serially in the same
process, as a ratio (cluster start-up included); the two must give identical summaries.

    python benchmarks/bench_sweep.py            # a minute or two (`--sweep` is accepted and the same)

The 16-pod simulation's speed is benchmarks/bench_simulate.py.
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
fixed: {days: 20}
grid:
  checkpoint_interval_min: [20, 40, 60, 90, 120, 240]
  spare_cubes: [0, 2, 4, 8]
"""


def row(name: str, seconds: float, baseline_name: str, baseline: float) -> None:
    ratio = baseline / seconds if seconds else float("inf")
    print(f"{name:<52} {seconds:8.2f} s   baseline {baseline:8.2f} s ({baseline_name}), ratio {ratio:.2f}x", flush=True)


def _sweep(spec: Any, out: Path, executor: Any) -> tuple[float, dict[int, Any]]:
    from tpufleet.state import sweepstore
    from tpufleet.sweep import driver

    t = time.perf_counter()
    try:
        outcome = driver.run(spec, sweepstore.prepare(out, False), executor)
    finally:
        executor.close()
    return time.perf_counter() - t, outcome.points


def bench_sweep(tmp: Path) -> None:
    from tpufleet.ops.sweep import run_task
    from tpufleet.state import sweepstore
    from tpufleet.sweep import backends

    if not backends.dask_available():
        print("sweep on a local cluster: SKIPPED, Dask is not installed (`make sweep-deps` installs it)", flush=True)
        return
    path = tmp / "bench.yaml"
    path.write_text(SPEC)
    sweep = sweepstore.load_spec(path)
    serial_s, serial = _sweep(sweep, tmp / "serial", backends.Serial(run_task))
    t = time.perf_counter()
    executor = backends.Dask(run_task, workers=2)
    startup = time.perf_counter() - t
    dask_s, on_dask = _sweep(sweep, tmp / "dask", executor)
    same = json.dumps(serial, sort_keys=True) == json.dumps(on_dask, sort_keys=True)
    row(
        f"sweep of {len(sweep.points)} points, 2-worker local cluster (+start-up)", dask_s + startup, "serial", serial_s
    )
    print(f"  cluster start-up {startup:.2f} s; summaries identical: {same}", flush=True)
    if not same:
        sys.exit("serial and Dask summaries differ")


def main() -> None:
    import os

    sys.path[:0] = [str(ROOT)]
    # A parallel speed-up needs idle cores: on a shared machine the ratio says more with the load beside it.
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        bench_sweep(Path(tmp))


if __name__ == "__main__":
    main()
