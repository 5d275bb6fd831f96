"""`simulate-fleet` at fleet scale: 16 pods x 30 days beside 1 pod x 30 days in the same process.

    python benchmarks/bench_simulate.py             # the summary only, as `simulate-fleet` runs without --out
    python benchmarks/bench_simulate.py --events    # also the events written as JSON lines (what --out adds)
    python benchmarks/bench_simulate.py --pods 4    # another fleet size

Both runs use the default workload, whose load scales per pod, so the 16-pod run simulates 16 times the jobs.
Each is split into simulation, goodput summary and (with --events) writing the events, with wall and CPU seconds
(the machine is shared: CPU seconds are the steadier figure) and the machine load. The ratio per pod is the
16-pod time over 16 times the one-pod time: near 1 means the cost grows with the fleet, not faster. Each run is a
fresh process whose peak RSS is measured from outside (benchmarks/peak.py), printed beside the one-pod run's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DAYS = 30.0
ROOT = Path(__file__).resolve().parents[1]


def timed(step: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = step()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def run(pods: int, events: bool) -> dict[str, Any]:
    """One `simulate-fleet` run in pieces: {piece: (wall s, CPU s)}, the event count and the summary."""
    from tpufleet.ops.simulate import summarize
    from tpufleet.simulation import Options, Simulator
    from tpufleet.simulation.log import jsonl
    from tpufleet.state.siminputs import load_rates, load_workload

    sim = Simulator(load_workload(None), load_rates(None), Options(days=DAYS, pods=pods))
    pieces: dict[str, tuple[float, float]] = {}
    _, *pieces["simulate"] = timed(sim.simulate)  # type: ignore[assignment]  # (wall, CPU)
    summary, *pieces["summary"] = timed(lambda: summarize(sim.log.entries, sim))  # type: ignore[assignment]
    if events:

        def write() -> int:
            with open(os.devnull, "wb") as sink:
                return sink.write(jsonl(sim.log.entries))

        _, *pieces["events"] = timed(write)  # type: ignore[assignment]
    total = (sum(w for w, _ in pieces.values()), sum(c for _, c in pieces.values()))
    keep = ("sg", "rg", "pg", "mpg", "jobs_submitted")
    return {"pieces": pieces, "total": total, "events": summary["events"], "summary": {k: summary[k] for k in keep}}


def measured(pods: int, events: bool) -> dict[str, Any]:
    """`run` in a fresh process (this script with --child), its peak RSS measured from outside."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import peak

    argv = [sys.executable, __file__, "--child", "--pods", str(pods), *(["--events"] if events else [])]
    child = peak.run(argv, cwd=ROOT)
    result: dict[str, Any] = json.loads(child.stdout)
    result["peak_mib"] = child.peak_mib
    return result


def show(name: str, result: dict[str, Any]) -> None:
    parts = ", ".join(f"{k} {w:.1f} s ({c:.1f} s CPU)" for k, (w, c) in result["pieces"].items())
    wall, cpu = result["total"]
    print(
        f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak {result['peak_mib']:.0f} MiB, {result['events']:,} events;"
        f" {parts}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=16)
    parser.add_argument("--events", action="store_true", help="also write the events as JSON lines")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # one run, its figures as JSON
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(run(args.pods, args.events)))
        return
    print(f"machine load at start {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)", flush=True)
    one = measured(1, args.events)
    show(f"1 pod x {DAYS:g} days (baseline)", one)
    fleet = measured(args.pods, args.events)
    show(f"{args.pods} pods x {DAYS:g} days", fleet)
    s = fleet["summary"]
    print(f"  SG {s['sg']}  RG {s['rg']}  PG {s['pg']}  MPG {s['mpg']}, {s['jobs_submitted']:,} jobs", flush=True)
    for i, kind in enumerate(("wall", "CPU")):
        per_pod = fleet["total"][i] / (args.pods * one["total"][i])
        print(f"  {kind}: {args.pods} pods / ({args.pods} x 1 pod) = {per_pod:.2f} per pod", flush=True)
    ratio = fleet["peak_mib"] / one["peak_mib"]
    print(f"  peak: {args.pods} pods / 1 pod = {ratio:.2f}x ({ratio / args.pods:.2f} per pod)", flush=True)
    print(f"machine load at end {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
