"""Use case of `simulate-fleet`: read the inputs, check the run's budget, run the simulation, sum it up and keep
its events (`run_fleet`); `simulate` runs given inputs (the sweep's runs use it too). On pods of a generation
(`Options.generation`) the fault rates a rates file leaves out are the generation profile's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpufleet.constants import HOUR
from tpufleet.goodput.events import DISRUPTIONS
from tpufleet.simulation import FaultRates, Options, Simulator, Workload
from tpufleet.simulation.engine import Progress
from tpufleet.simulation.log import Entry, Record
from tpufleet.simulation.policy import reserves
from tpufleet.simulation.reroute import RerouteCosts

SEGMENT_KEYS = ("value", "jobs", "sg", "rg", "pg", "mpg")


@dataclass(frozen=True)
class SimulationResult:
    entries: list[Entry]  # the native records in order, events as tuples (`simulation.log.jsonl` writes them)
    summary: dict[str, Any]  # the documented JSON summary (without "out", which the caller knows)

    @property
    def records(self) -> list[Record]:
        """The records as dicts, for goodput-report (made on each call: `jsonl(entries)` is the fast way out)."""
        from tpufleet.simulation.log import as_record

        return [as_record(e) if isinstance(e, tuple) else e for e in self.entries]


def run_fleet(
    options: Options,
    workload: Path | None = None,
    fault_rates: Path | None = None,
    fault_scale: str | None = None,
    out: Path | None = None,
    progress: Progress | None = None,
) -> SimulationResult:
    """`simulate-fleet`: the workload and fault-rate files (None: the shipped ones), the rates scaled by
    `fault_scale` (``--fault-scale``: "2", or per kind "host=2,ocs=1.5"; read after the files, as the command
    always has), the run refused before it starts if over its budget (`scale.check_budget`),
    then simulated; its events written to `out` (native JSONL; gzip-compressed when its name ends in .gz) when
    given."""
    from tpufleet.model import default_fleet
    from tpufleet.simulation.draws import components
    from tpufleet.simulation.log import jsonl
    from tpufleet.simulation.scale import check_budget
    from tpufleet.state.outputs import write_output
    from tpufleet.state.siminputs import load_rates, load_workload

    loaded, rates = load_workload(workload), load_rates(fault_rates, options.generation)
    if fault_scale is not None:
        rates = _scaled(rates, fault_scale)
    fleet = default_fleet(options.pods, options.cubes_per_pod, options.generation)
    check_budget(loaded, rates, options, components(fleet))
    result = simulate(loaded, rates, options, progress)
    if out is not None:
        write_output(out, events_file(out, jsonl(result.entries)))
    return result


def _scaled(rates: FaultRates, text: str) -> FaultRates:
    """The rates scaled by ``--fault-scale`` `text`; BadInput naming the option and its value (a kind or a factor
    `scale_rates` refuses is named in the words of the rates, which a plain factor such as -1 never gave)."""
    from tpufleet.errors import BadInput, shown
    from tpufleet.simulation.scale import parse_factors, scale_rates

    try:
        return scale_rates(rates, parse_factors(text))
    except BadInput as exc:
        if str(exc).startswith("bad option --fault-scale"):
            raise
        raise BadInput(f"bad option --fault-scale {shown(text)}: {exc}") from None


def events_file(out: Path, data: bytes) -> bytes:
    """The bytes of an events file named `out`: gzip-compressed when the name says so (``.jsonl.gz``, as `sweep
    --keep-events` writes them; no timestamp, so one run gives the same bytes), else plain JSON lines."""
    import gzip

    return gzip.compress(data, mtime=0) if out.name.lower().endswith(".gz") else data


def simulate(
    workload: Workload,
    rates: FaultRates,
    options: Options,
    progress: Progress | None = None,
    reroute_costs: RerouteCosts | None = None,
) -> SimulationResult:
    """Run the simulation; its records (for the caller to write) and their summary. `reroute_costs`: the
    shipped reroute-cost table as a sweep's task carries it (None: read here, `state.reroutecosts`)."""
    from tpufleet.state.reroutecosts import shipped_costs

    costs = shipped_costs() if reroute_costs is None else reroute_costs
    simulator = Simulator(workload, rates, options, reroute_costs=costs)
    simulator.simulate(progress)
    return SimulationResult(simulator.log.entries, summarize(simulator.log.entries, simulator))


def summarize(records: Iterable[Entry], simulator: Simulator) -> dict[str, Any]:
    """Goodput of the run (fleet, and by size: the figures `goodput-report --by size` gives on its events), its
    disruptions, faults and cross-connect changes."""
    from tpufleet.simulation.summary import goodput

    grouped = records is simulator.log.entries  # then the log has them by job already
    records = records if isinstance(records, list) else list(records)
    multislice = {job.id for job in simulator.jobs if job.slices > 1}
    report = goodput(records, simulator.log.by_job if grouped else None, multislice)
    fleet = report["fleet"]
    disruptions = dict.fromkeys(DISRUPTIONS, 0)
    for record in records:
        name = record[2] if isinstance(record, tuple) else record.get("event")
        if name in disruptions:
            disruptions[name] += 1
    options, stats = simulator.options, simulator.stats
    return {
        "days": options.days,
        "pods": options.pods,
        "generation": simulator.log.accelerator,  # the pods' (`--generation`), as the events name it
        "mode": options.mode,
        "scheduler": options.scheduler,
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
        "drain_moves": stats.drain_moves,
        "reroutes": stats.reroutes,
        "faults": dict(stats.faults),
        "xconnect_changes": stats.xconnect_changes,
        "events": len(records),
        "segments": [{k: segment[k] for k in SEGMENT_KEYS} for segment in report["segments"]],
        "multislice": _multislice(simulator, report, multislice),
        "reservations": _reservations(simulator),
        **waits(simulator),
    }


def _multislice(simulator: Simulator, report: dict[str, Any], ids: set[str]) -> dict[str, Any] | None:
    """Multislice jobs apart from the others (SG, RG, PG, MPG of each kind), and the slices elastic jobs lost
    and got back; None without multislice jobs."""
    if not ids:
        return None
    kinds = report.get("kinds") or {}
    elastic = sum(1 for job in simulator.jobs if job.slices > 1 and job.elastic_min is not None)
    return {
        "jobs": len(ids),
        "elastic_jobs": elastic,
        "slices_lost": simulator.fault_response.slices_lost,
        "slices_regained": simulator.scheduler.slices_regained,
        "multislice": kinds.get("multislice"),
        "single_slice": kinds.get("single_slice"),
    }


def _reservations(simulator: Simulator) -> dict[str, int] | None:
    """Under a reserving policy: the runs of jobs given a reservation at the head of the queue, how many of them
    started after their shadow time (a fault, or a job ranked ahead, intervened), and the jobs that started
    behind a reserved head; None under the others."""
    if not reserves(simulator.options.scheduler):
        return None
    return simulator.stats.reservation_counts()


def waits(simulator: Simulator) -> dict[str, dict[str, float]]:
    """Mean hours, by job size, from submission to the first start, and from being displaced by a fault to the
    restart (in a static pod, waiting on its block for the repair); a job still waiting at the end counts up to
    the end."""
    first: dict[str, list[float]] = {}
    restart = {size: list(waits) for size, waits in simulator.stats.restart_waits.items()}
    for job in simulator.jobs:
        start = simulator.end if job.first_start is None else job.first_start
        first.setdefault(job.size, []).append(start - job.submitted)
        if job.displaced:  # displaced and not restarted by the end (a restart clears it)
            restart.setdefault(job.size, []).append(simulator.end - job.stopped_at)
    return {
        "wait_hours": {size: sum(w) / len(w) / HOUR for size, w in sorted(first.items())},
        "restart_wait_hours": {size: sum(w) / len(w) / HOUR for size, w in sorted(restart.items())},
    }
