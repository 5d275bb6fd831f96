"""`tpufleet sweep SPEC.yaml`: grids of fleet and availability simulations, serially or on a Dask cluster."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, app, dask_cluster_option, dask_workers_option, examples
from tpufleet.cli.render import emit
from tpufleet.constants import HOUR

EPILOG = examples(
    "tpufleet sweep fixtures/sweeps/checkpoint-interval.yaml --out ckpt",
    "tpufleet sweep fixtures/sweeps/spare-cubes.yaml --out spares --workers 2",
    "tpufleet sweep spec.yaml --out run1 --cluster tcp://scheduler:8786 -o json",
    "tpufleet sweep spec.yaml --out run1 --resume",
)


def _text(doc: dict[str, Any]) -> str:
    from tpufleet.cli.render import grid
    from tpufleet.sweep.report import label
    from tpufleet.text import printable
    from tpufleet.text import probability_text as number  # four decimals, but 0.99995 not as 1.0000

    metric = doc["metric"]
    rows = []
    for point in doc["points"]:
        figure = point["metrics"].get(metric, {})
        band = "-" if figure.get("low") is None else f"[{number(figure['low'])}, {number(figure['high'])}]"
        mean = "-" if figure.get("mean") is None else number(figure["mean"])
        # a value from the spec (an input file's name) on one line: a newline in it broke the row
        rows.append([point["index"], *(printable(label(point["params"][s])) for s in doc["swept"]), mean, band])
    lines = [
        f"sweep {printable(doc['name'])}: {doc['points_finished']} of {doc['points_total']} points finished "
        f"({doc['points_resumed']} resumed, {doc['points_failed']} failed), {len(doc['seeds'])} seed(s) each, "
        f"on {doc['executor']['kind']} ({doc['executor']['workers']} worker(s))",
        grid(rows, ["point", *doc["swept"], f"{metric} mean", "95% interval"]),
    ]
    for failed in doc["failed"]:
        lines.append(f"FAILED point {failed['index']} {failed['params']}: {failed['error']}")
    if doc.get("events_absent"):
        lines.append(
            f"events: {doc['events_absent']} resumed point(s) without their events in events/ (--resume does not run "
            "a finished point again; run the sweep into a new --out to write them)"
        )
    lines.append("written: " + ", ".join(map(printable, doc["files"].values())))
    return "\n".join(lines)


def _executor(serial: bool, address: str | None, workers: int | None, timeout: float | None, tasks: int) -> Any:
    """Serial, a local Dask cluster (of no more workers than the sweep has `tasks`: each worker is a process, and
    200 of them for one run took minutes to start) or the scheduler at `address` (checked by
    `backends.scheduler_address`)."""
    from tpufleet.errors import BadInput
    from tpufleet.ops.sweep import run_task
    from tpufleet.sweep import backends

    if serial and (address is not None or workers):
        raise BadInput("bad options --serial and --cluster/--workers: give one of them, not both")
    if address is not None and workers:
        raise BadInput(
            "bad options --workers and --cluster: --workers sizes the local cluster; a --cluster is sized by its own "
            "workers"
        )
    if serial:
        return backends.Serial(run_task)
    if address is None and not backends.dask_available():
        print(f"tpufleet: Dask is not installed, running serially ({backends.INSTALL_HINT})", file=sys.stderr)
        return backends.Serial(run_task)
    local = None if address is not None else min(workers or backends.local_workers(), tasks)
    executor = backends.Dask(run_task, address, local, backends.CONNECT_TIMEOUT_S if timeout is None else timeout)
    if sys.stderr.isatty() and executor.kind == "remote":  # the scheduler's own view of the tasks, per worker
        print(f"tpufleet: Dask dashboard {executor.dashboard()}", file=sys.stderr)
    return executor


@app.command("sweep", epilog=EPILOG)
def sweep_cmd(
    spec_file: Annotated[Path, typer.Argument(metavar="SPEC.yaml", help="Sweep spec (YAML)")],
    out: Annotated[Path, typer.Option("--out", help="Directory for the results and the finished points")],
    resume: Annotated[bool, typer.Option("--resume", help="Keep the points already finished in --out")] = False,
    cluster: Annotated[str | None, dask_cluster_option("Run on this Dask scheduler")] = None,
    cluster_timeout: Annotated[
        float | None,
        typer.Option(
            "--cluster-timeout",
            min=0.1,
            max=HOUR,
            metavar="SECONDS",
            help="How long the --cluster scheduler may take to answer (its workers get 30 s more to appear) "
            "[default: 10]",
        ),
    ] = None,
    workers: Annotated[
        int | None, dask_workers_option("Worker processes of the local cluster [default: the cores]")
    ] = None,
    serial: Annotated[bool, typer.Option("--serial", help="Run in this process, one run after another")] = False,
    keep_events: Annotated[
        bool, typer.Option("--keep-events", help="Also write each fleet run's events to --out/events/")
    ] = False,
    plot_format: Annotated[str, typer.Option("--plot-format", help="png or svg")] = "png",
    output: OutputOpt = Output.table,
) -> None:
    """Run a simulation over a grid of parameters, several seeds per point, and write the mean and 95% interval
    of every figure per point to --out (sweep.json, sweep.csv, sweep.png).

    Runs go to a local Dask cluster (one worker per core) when Dask is installed, else run serially; the numbers
    are the same either way. Exit 1 if some points failed (the others are written; --resume runs them again) or
    the --cluster scheduler cannot be reached or does not answer within --cluster-timeout, 2 for a bad spec or a
    malformed --cluster address (before any run starts), 70 if a point failed by a bug."""
    from tpufleet.cli.progress import progress
    from tpufleet.errors import BadInput, shown
    from tpufleet.ops import sweep
    from tpufleet.sweep import backends, localcluster

    address = None if cluster is None else backends.scheduler_address(cluster)  # before the spec's work
    if address is None and not serial and backends.dask_available():  # (without Dask it runs serially: unused)
        localcluster.start_method()  # a bad TPUFLEET_DASK_START, before the spec's work too
    if cluster_timeout is not None and address is None:  # a local cluster is started, not waited on
        raise BadInput("bad option --cluster-timeout: it bounds a --cluster scheduler's answers; give --cluster too")
    if plot_format not in ("png", "svg"):
        raise BadInput(f"bad option --plot-format {shown(plot_format)}: png or svg")
    outcome, executor = sweep.run(
        spec_file,
        out,
        lambda tasks: _executor(serial, address, workers, cluster_timeout, tasks),
        resume=resume,
        keep_events=keep_events,
        progress=lambda: progress("sweep", None, count=True),
        warn=_warn,
    )
    doc = _write(outcome, out, plot_format)
    # How this invocation ran: not in sweep.json, which is the same however the sweep ran or resumed.
    doc["points_resumed"] = outcome.resumed
    if keep_events:
        doc["events_absent"] = outcome.events_absent
    doc["executor"] = {"kind": executor.kind, "workers": executor.workers}
    emit(doc, output, lambda: _text(doc))
    if outcome.failed:
        for failed in doc["failed"]:
            print(f"tpufleet: point {failed['index']} failed {failed['params']}: {failed['error']}", file=sys.stderr)
        raise typer.Exit(70 if any(f["bug"] for f in doc["failed"]) else 1)


def _warn(line: str) -> None:
    print(f"tpufleet: {line}", file=sys.stderr)


def _write(outcome: Any, out: Path, plot_format: str) -> dict[str, Any]:
    """sweep.json, sweep.csv and the plot in --out; the document, naming them. The names are the sweep's own: what
    else sits there (a FIFO, a symlink) is replaced, not written through (a FIFO blocked the sweep's end)."""
    from tpufleet.cli.render import flat_table, to_json
    from tpufleet.state.outputs import replace_own_file as write_output
    from tpufleet.sweep import plot, report

    doc = report.document(outcome)
    files = {"json": out / "sweep.json", "csv": out / "sweep.csv", "plot": out / f"sweep.{plot_format}"}
    doc["files"] = {k: str(v) for k, v in files.items()}
    write_output(files["csv"], (flat_table(report.rows(outcome), "csv") + "\n").encode())
    write_output(files["plot"], plot.plot(outcome, plot_format))
    write_output(files["json"], (to_json(doc) + "\n").encode())
    return doc
