"""Use case of `simulate-fleet`: run the simulation and sum it up (writes no file; the caller writes the events)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpufleet.simulation import FaultRates, Options, Simulator, Workload
from tpufleet.simulation.engine import Progress
from tpufleet.simulation.log import Record

DISRUPTIONS = ("failure", "eviction", "preemption")
SEGMENT_KEYS = ("value", "jobs", "sg", "rg", "pg", "mpg")


@dataclass(frozen=True)
class SimulationResult:
    records: list[Record]  # the native events, in order, for goodput-report
    summary: dict[str, Any]  # the documented JSON summary (without "out", which the caller knows)


def simulate(
    workload: Workload, rates: FaultRates, options: Options, progress: Progress | None = None
) -> SimulationResult:
    """Run the simulation; its records (for the caller to write) and their summary."""
    simulator = Simulator(workload, rates, options)
    records = simulator.run(progress)
    return SimulationResult(records, summarize(records, simulator))


def summarize(records: list[Record], simulator: Simulator) -> dict[str, Any]:
    """Goodput of the run (fleet, and by size), its disruptions, faults and cross-connect changes."""
    from tpufleet.goodput import events
    from tpufleet.goodput.pipeline import from_log

    log = events.Log()
    code = events.CODE
    for i, record in enumerate(records):
        if record["type"] == "event":  # the simulator's own events are well formed: skip the reader's checks
            log.add_event(
                record["job"], record["time"], code[record["event"]], record.get("step", -1), record.get("chips", -1)
            )
            log.records += 1
        else:
            events.add_record(log, record, "<simulation>", i + 1)
    report = from_log(log, by=["size"])
    fleet = report["fleet"]
    disruptions = dict.fromkeys(DISRUPTIONS, 0)
    for record in records:
        if record.get("event") in disruptions:
            disruptions[record["event"]] += 1
    options, stats = simulator.options, simulator.stats
    return {
        "days": options.days,
        "pods": options.pods,
        "mode": options.mode,
        "seed": options.seed,
        "load_per_pod": options.load_per_pod,
        "spare_cubes": options.spare_cubes,
        "jobs_submitted": len(simulator.jobs),
        "jobs_finished": stats.jobs_finished,
        "sg": fleet["sg"],
        "rg": fleet["rg"],
        "pg": fleet["pg"],
        "mpg": fleet["mpg"],
        "disruptions": disruptions,
        "reroutes": stats.reroutes,
        "faults": dict(stats.faults),
        "xconnect_changes": stats.xconnect_changes,
        "events": len(records),
        "segments": [{k: segment[k] for k in SEGMENT_KEYS} for segment in report["segments"]],
        **waits(simulator),
    }


def waits(simulator: Simulator) -> dict[str, dict[str, float]]:
    """Mean hours, by job size, from submission to the first start (a job still waiting at the end counts up to
    the end), and from being displaced by a fault to the restart."""
    first: dict[str, list[float]] = {}
    for job in simulator.jobs:
        start = simulator.end if job.first_start is None else job.first_start
        first.setdefault(job.size, []).append(start - job.submitted)
    restart = simulator.stats.restart_waits
    return {
        "wait_hours": {size: sum(w) / len(w) / 3600.0 for size, w in sorted(first.items())},
        "restart_wait_hours": {size: sum(w) / len(w) / 3600.0 for size, w in sorted(restart.items())},
    }
