"""`tpufleet simulate-fleet`: run the fleet under load and faults; write native events for goodput-report."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from tpufleet.cli.app import Output, OutputOpt, app
from tpufleet.cli.render import emit


class Mode(str, enum.Enum):
    static = "static"
    reconfigurable = "reconfigurable"
    reconfigurable_ft = "reconfigurable-ft"


def summarize(records: list[dict], sim) -> dict:
    from tpufleet.goodput import events
    from tpufleet.goodput.pipeline import from_log

    log = events.Log()
    for i, rec in enumerate(records):
        events.add_record(log, rec, "<simulation>", i + 1)
    report = from_log(log, by=["size"])
    f = report["fleet"]
    kinds = {"failure": 0, "eviction": 0, "preemption": 0}
    for rec in records:
        if rec.get("event") in kinds:
            kinds[rec["event"]] += 1
    return {
        "days": sim.o.days, "pods": sim.o.pods, "mode": sim.o.mode, "seed": sim.o.seed,
        "jobs_submitted": len(sim.jobs), "jobs_finished": sim.stats["jobs_finished"],
        "sg": f["sg"], "rg": f["rg"], "pg": f["pg"], "mpg": f["mpg"],
        "disruptions": kinds, "reroutes": sim.stats["reroutes"], "faults": sim.stats["faults"],
        "xconnect_changes": sim.stats["xconnect_changes"], "events": len(records),
        "segments": [{k: s[k] for k in ("value", "jobs", "sg", "rg", "pg", "mpg")} for s in report["segments"]],
    }


def _text(s: dict, out: Path) -> str:
    def f(v):
        return "-" if v is None else f"{v:.4f}"

    d = s["disruptions"]
    lines = [
        f"simulated {s['days']:g} days, {s['pods']} pod(s), mode {s['mode']}, seed {s['seed']}",
        f"  jobs: {s['jobs_submitted']} submitted, {s['jobs_finished']} finished",
        f"  SG {f(s['sg'])}  x  RG {f(s['rg'])}  x  PG {f(s['pg'])}  =  MPG {f(s['mpg'])}",
        f"  faults: {s['faults']['host']} machine, {s['faults']['link']} optical link, {s['faults']['ocs']} OCS, "
        f"{s['faults']['drain']} planned drains; rerouted {s['reroutes']} time(s)",
        f"  disruptions: {d['failure']} failures, {d['eviction']} evictions, {d['preemption']} preemptions",
        f"  {s['events']} events written to {out} (read them with `tpufleet goodput-report {out}`)",
    ]
    return "\n".join(lines)


@app.command("simulate-fleet")
def simulate_cmd(
    days: Annotated[float, typer.Option("--days", min=0.01, max=3650, help="Simulated days")],
    out: Annotated[Path, typer.Option("--out", help="Native JSONL events for goodput-report")],
    workload: Annotated[Optional[Path], typer.Option("--workload", help="Workload YAML (default fixtures/workload.yaml)")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Random seed: the same seed gives the same events")] = 0,
    pods: Annotated[int, typer.Option("--pods", min=1, max=16, help="Pods of 64 cubes")] = 1,
    fault_rates: Annotated[Optional[Path], typer.Option("--fault-rates", help="Fault-rate YAML (default fixtures/fault-rates.yaml)")] = None,
    checkpoint_interval: Annotated[float, typer.Option("--checkpoint-interval", min=0.1, help="Minutes of compute between checkpoints")] = 60.0,
    restart_overhead: Annotated[float, typer.Option("--restart-overhead", min=0.0, help="Minutes from restart to the first step")] = 10.0,
    mode: Annotated[Mode, typer.Option("--mode", help="static, reconfigurable or reconfigurable-ft")] = Mode.reconfigurable_ft,
    output: OutputOpt = Output.table,
) -> None:
    """Discrete-event simulation: jobs arrive and are placed through the OCS, faults strike and are repaired,
    fault-tolerant routing absorbs what it can, jobs checkpoint and restart. Writes the event log."""
    import sys

    from tpufleet.simspec import load_rates, load_workload
    from tpufleet.simulation import Options, Simulator
    from tpufleet.state.files import atomic_write

    sim = Simulator(load_workload(workload), load_rates(fault_rates),
                    Options(days=days, seed=seed, pods=pods, mode=mode.value,
                            checkpoint_interval_s=checkpoint_interval * 60.0, restart_overhead_s=restart_overhead * 60.0))
    if sys.stderr.isatty():
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("simulating", total=days)
            records = sim.run(progress=lambda day: bar.update(task, completed=day))
    else:
        records = sim.run()
    atomic_write(out, ("\n".join(json.dumps(r, separators=(",", ":")) for r in records) + "\n").encode())
    summary = summarize(records, sim)
    summary["out"] = str(out)
    emit(summary, output, lambda: _text(summary, out))
