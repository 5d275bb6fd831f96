"""`tpufleet simulate-fleet`: run the fleet under load and faults; write native events for goodput-report."""

import enum
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples, shipped_yaml_option
from tpufleet.cli.render import emit
from tpufleet.constants import CUBES_PER_POD, MAX_SIM_DAYS, MIN_SIM_DAYS
from tpufleet.text import printable

if TYPE_CHECKING:
    from tpufleet.generations import Generation


class Mode(str, enum.Enum):
    static = "static"
    reconfigurable = "reconfigurable"
    reconfigurable_ft = "reconfigurable-ft"


class SchedulerOpt(str, enum.Enum):
    priority = "priority"
    extra_large_first = "extra-large-first"
    reserve = "reserve"
    extra_large_first_reserve = "extra-large-first-reserve"


def _text(s: dict, out: Path | None) -> str:
    def f(v):
        return "-" if v is None else f"{v:.4f}"

    d = s["disruptions"]
    lines = [
        f"simulated {s['days']:g} day{'' if s['days'] == 1 else 's'}, {s['pods']} {s['generation']} pod(s), mode {s['mode']}, seed {s['seed']}"
        + ("" if s["scheduler"] == "priority" else f", scheduler {s['scheduler']}"),
        f"  jobs: {s['jobs_submitted']} submitted, {s['jobs_finished']} finished",
        f"  SG {f(s['sg'])}  x  RG {f(s['rg'])}  x  PG {f(s['pg'])}  =  MPG {f(s['mpg'])}",
        f"  faults: {s['faults']['host']} machine, {s['faults']['link']} optical link, {s['faults']['ocs']} OCS, "
        f"{s['faults']['drain']} planned drains; rerouted {s['reroutes']} time(s)",
        f"  disruptions: {d['failure']} failures, {d['eviction']} evictions, {d['preemption']} preemptions; "
        f"{s['drain_moves']} job(s) moved by planned drains (no disruption)",
        *_multislice_lines(s.get("multislice"), f),
        *_reservation_lines(s.get("reservations")),
        f"  {s['events']} events written to {printable(str(out))} (read them with `tpufleet goodput-report "
        f"{printable(str(out))}`)"
        if out is not None
        else f"  {s['events']} events, not written (--out FILE keeps them for goodput-report)",
    ]
    return "\n".join(lines)


def _multislice_lines(m: dict | None, f) -> list[str]:
    if m is None:
        return []
    lines = [
        f"  multislice: {m['jobs']} jobs ({m['elastic_jobs']} elastic); elastic jobs lost {m['slices_lost']} "
        f"slice(s), got {m['slices_regained']} back"
    ]
    for kind in ("multislice", "single_slice"):
        k = m.get(kind)
        if k is not None:
            label = kind.replace("_", "-")
            lines.append(
                f"    {label:<13} SG {f(k['sg'])}  x  RG {f(k['rg'])}  x  PG {f(k['pg'])}  =  MPG {f(k['mpg'])}"
                f"  ({k['jobs']} jobs)"
            )
    return lines


def _reservation_lines(r: dict | None) -> list[str]:
    if r is None:
        return []
    return [
        f"  reservations: {r['made']} made at the head of the queue, {r['late']} started after their shadow time "
        f"(a fault or a job ranked ahead intervened); {r['backfilled']} job(s) backfilled"
    ]


def _generation(name: str | None, mode: str) -> "Generation | None":
    """The shipped profile of `--generation` (None: the built-in TPU v4 pod of 64 cubes)."""
    from tpufleet.errors import BadInput
    from tpufleet.state.generations import named_by_option

    if name is None:
        return None
    gen = named_by_option(name)
    if mode == "static" and gen.pod_cubes != CUBES_PER_POD:
        raise BadInput(
            f"bad option --mode static: a static pod is a 4x4x4 grid of cubes, a {name} pod has {gen.pod_cubes}"
        )
    return gen


@app.command(
    "simulate-fleet",
    epilog=examples(
        "tpufleet simulate-fleet --days 30 --out month.jsonl && tpufleet goodput-report month.jsonl",
        "tpufleet simulate-fleet --days 30 --pods 16                  # the summary only, no events written",
        "tpufleet simulate-fleet --days 30 --pods 4 --spare-cubes 2 --fault-scale host=2 --out month.jsonl",
        "tpufleet simulate-fleet --days 7 --mode static --seed 3 --out static.jsonl -o json",
    ),
)
def simulate_cmd(
    days: Annotated[
        float,
        typer.Option("--days", min=MIN_SIM_DAYS, max=MAX_SIM_DAYS, help=f"Simulated days (up to {MAX_SIM_DAYS:g})"),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write the native JSONL events for goodput-report here, gzip-compressed if the name ends in .gz "
            "(default: not written)",
        ),
    ] = None,
    workload: Annotated[Path | None, shipped_yaml_option("--workload", "Workload", "workload")] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed", min=0, max=2**63 - 1, help="Random seed, 0 or more: the same seed gives the same events"
        ),
    ] = 0,
    pods: Annotated[
        int,
        typer.Option("--pods", min=1, max=16, help=f"Pods of {CUBES_PER_POD} cubes (or of the --generation's size)"),
    ] = 1,
    fault_rates: Annotated[
        Path | None, shipped_yaml_option("--fault-rates", "Fault-rate", "rates", or_shipped=True)
    ] = None,
    checkpoint_interval: Annotated[
        float,
        typer.Option(
            "--checkpoint-interval", min=1.0, max=10080, help="Minutes of compute between checkpoints (1 to 10080)"
        ),
    ] = 60.0,
    restart_overhead: Annotated[
        float,
        typer.Option(
            "--restart-overhead", min=0.0, max=1440, help="Minutes from restart to the first step (0 to 1440)"
        ),
    ] = 10.0,
    mode: Annotated[
        Mode, typer.Option("--mode", help="static, reconfigurable or reconfigurable-ft")
    ] = Mode.reconfigurable_ft,
    load_per_pod: Annotated[
        float,
        typer.Option(
            "--load-per-pod",
            min=0.0,
            max=100.0,
            help="Job arrivals per pod as a multiple of the workload's rate: each pod gets the workload's job "
            "stream times this, so a larger fleet is as busy as one pod",
        ),
    ] = 1.0,
    spare_cubes: Annotated[
        int,
        typer.Option(
            "--spare-cubes",
            min=0,
            help="Healthy free cubes per pod kept back for jobs a fault displaced (fewer than a pod's cubes)",
        ),
    ] = 0,
    scheduler: Annotated[
        SchedulerOpt,
        typer.Option(
            "--scheduler",
            help="priority: the queue and preemption by priority; extra-large-first: extra-large jobs also go "
            "first, may preempt any smaller job and are never preempted; reserve, extra-large-first-reserve: as "
            "those, and the first job that cannot start holds a reservation at the time running jobs' known ends "
            "free room for it, which later jobs may only backfill around (EASY backfill)",
        ),
    ] = SchedulerOpt.priority,
    fault_scale: Annotated[
        str | None,
        typer.Option(
            "--fault-scale",
            metavar="FACTOR|KIND=FACTOR,...",
            help="Multiply the fault rates: one factor for every kind (2) or per kind (host=2,ocs=1.5; "
            "kinds host, link, ocs, drain)",
        ),
    ] = None,
    generation: Annotated[
        str | None,
        typer.Option(
            "--generation",
            help="Pods of this generation (tpu-v4, tpu-v5p, tpu7x): its pod size, shape rule, default fault rates "
            "and repair times, chips per host, and its FLOP/s, ICI and DCN bandwidth in the step-time model",
        ),
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """Discrete-event simulation: jobs arrive and are placed through the OCS, faults strike and are repaired,
    fault-tolerant routing absorbs what it can, jobs checkpoint and restart. Prints the goodput summary; writes the
    event log with --out.

    A run expected to log more than 3,000,000 events, or to queue more work than the fleet can run for so long
    that the scheduler would visit waiting jobs more than 50,000,000 times, is refused before it starts (exit 2).
    A run in which no job arrives is a result (zero jobs, no goodput), not an error."""
    from tpufleet.cli.progress import progress
    from tpufleet.errors import BadInput, shown
    from tpufleet.ops.simulate import run_fleet
    from tpufleet.simulation import Options

    for option, value in (
        ("--days", days),
        ("--checkpoint-interval", checkpoint_interval),
        ("--restart-overhead", restart_overhead),
        ("--load-per-pod", load_per_pod),
    ):
        if not math.isfinite(value):  # the option ranges let NaN through
            raise BadInput(f"bad option {option} {value!r}: must be a finite number")
    if fault_rates is not None and str(fault_rates) == "shipped":  # as plan-spares, capacity, simulate-availability
        fault_rates = None
    if out is not None:
        _check_events_out(out, [workload, fault_rates])
    gen = _generation(generation, mode.value)
    pod_cubes = gen.pod_cubes if gen is not None else CUBES_PER_POD
    if spare_cubes >= pod_cubes:
        raise BadInput(
            f"bad option --spare-cubes: {shown(str(spare_cubes))} is above {pod_cubes - 1} (a pod has {pod_cubes} cubes)"
        )
    options = Options(
        generation=gen,
        cubes_per_pod=pod_cubes,
        days=days,
        seed=seed,
        pods=pods,
        mode=mode.value,
        checkpoint_interval_s=checkpoint_interval * 60.0,
        restart_overhead_s=restart_overhead * 60.0,
        load_per_pod=load_per_pod,
        spare_cubes=spare_cubes,
        scheduler=scheduler.value,
    )
    with progress("simulating days", days) as bar:
        result = run_fleet(options, workload, fault_rates, fault_scale, out, progress=bar.set)
    summary = {**result.summary, "out": None if out is None else str(out)}
    emit(summary, output, lambda: _text(summary, out))


def _check_events_out(out: Path, inputs: list[Path | None]) -> None:
    """Before the run: a typo must not cost the whole simulation, nor the events replace a file the run reads;
    and a name goodput-report would read as CSV (the events are JSON lines) is refused."""
    from tpufleet.errors import BadInput
    from tpufleet.state.goodputlogs import is_csv
    from tpufleet.state.outputs import check_output_path

    check_output_path(out, "--out", inputs)
    if is_csv(out):
        raise BadInput(
            f"bad option --out {str(out)!r}: goodput-report reads a log named *.csv or *.csv.gz as CSV, "
            "and the events are JSON lines: name it *.jsonl (or *.jsonl.gz)"
        )
