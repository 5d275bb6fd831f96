"""`tpufleet goodput-report`: ML Productivity Goodput (SG x RG x PG) from job event logs."""

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from tpufleet.cli.app import (
    ReportOutput,
    app,
    dask_cluster_option,
    dask_workers_option,
    examples,
    report_output_option,
)
from tpufleet.cli.render import Renderers
from tpufleet.goodput import LOG_FORMATS, PERIODS
from tpufleet.text import meant_of, printable
from tpufleet.timeparse import TIME_HELP

HTML_TIMELINES = 50  # jobs whose timeline the HTML page can show (the lowest MPG first)


@app.command(
    "goodput-report",
    epilog=examples(
        "tpufleet goodput-report jobs.jsonl",
        "tpufleet goodput-report jobs.jsonl --period day --window 1h,6h,24h -o html --out goodput.html",
        "tpufleet goodput-report export.json --format ml-goodput -o json",
        "tpufleet goodput-report jobs.jsonl --exclude maintenance.json --since 2026-01-05T00:00:00Z",
        "zcat old/*.jsonl.gz | tpufleet goodput-report - sweep/events/*-r0.jsonl.gz",
    ),
)
def goodput_cmd(
    ctx: typer.Context,
    files: Annotated[
        list[str],  # as typed: a message names `./a.jsonl` so, where a Path would drop the `./`
        typer.Argument(
            click_type=click.Path(path_type=str),
            metavar="FILE...",
            help="Event logs: native JSONL or CSV (named *.csv, *.csv.gz), or ml-goodput-measurement entries; "
            "gzip-compressed or not; - for standard input (JSON lines)",
        ),
    ],
    fmt: Annotated[
        str, typer.Option("--format", click_type=click.Choice(LOG_FORMATS), help="native or ml-goodput")
    ] = "native",
    by: Annotated[
        str, typer.Option("--by", help="Segments: comma-separated accelerator,size,phase,framework,slices")
    ] = "accelerator,size,phase,framework",
    period: Annotated[
        str | None, typer.Option("--period", click_type=click.Choice(PERIODS), help="day or week")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="TIME", help=f"Start of the window: POSIX seconds, {TIME_HELP}"),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until", metavar="TIME", help="End of the window (the same forms; a date runs to its day's end)"
        ),
    ] = None,
    capacity: Annotated[
        str | None,
        typer.Option(
            "--capacity",
            help="Fleet chips, over the logs' capacity records: ACC=CHIPS,... or 'state' (the tpufleet inventory)",
        ),
    ] = None,
    window: Annotated[
        str | None,
        typer.Option(
            "--window",
            metavar="AGE,...",
            help="Rolling windows over the last part of the data, e.g. 1h,6h,24h (s, m, h, d, w)",
        ),
    ] = None,
    exclude: Annotated[
        Path | None,
        typer.Option(
            "--exclude", help="JSON list of {start, end, reason}: spans (planned maintenance) that count nowhere"
        ),
    ] = None,
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="Skip and count malformed records instead of failing")
    ] = False,
    workers: Annotated[
        int | None, dask_workers_option("Read and account the logs on a local Dask cluster of N workers")
    ] = None,
    cluster: Annotated[str | None, dask_cluster_option("Read and account the logs on this Dask scheduler")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report to this file")] = None,
    output: Annotated[
        ReportOutput,
        report_output_option(
            ReportOutput.csv, ReportOutput.md, ReportOutput.html, help_text="table, json, yaml, csv, md or html"
        ),
    ] = ReportOutput.table,
) -> None:
    """SG, RG, PG and MPG per job, segment, period and fleet, with the badput breakdown and checkpoint advice."""
    from tpufleet.cli.progress import progress
    from tpufleet.ops.goodput import build

    dims, t0, t1, pairs, windows = _parse(files, by, since, until, capacity, window, out, exclude)
    fleet = ctx.obj.store().load().fleet if capacity == "state" else None
    kind = output.value
    chosen = period if period else ("day" if kind == "html" else None)  # the page charts over periods
    keep = HTML_TIMELINES if kind == "html" else 0
    # drawn once, by no thread of its own, when the logs are read here: the report forks to read several large
    # logs side by side and to account a large log's jobs, which it does only while it runs one thread alone
    with progress("reading logs", None, animated=bool(cluster or workers)), _quiet_task_failures():
        report = build(
            files, fmt, dims, chosen, t0, t1, skip_bad, pairs, windows, exclude, keep, fleet, *_dask(cluster, workers)
        )
    _notes(report, capacity)
    _emit(_json_pieces(report) if kind == "json" else iter([_text(kind, report)]), out)


@contextmanager
def _quiet_task_failures() -> Iterator[None]:
    """Dask's worker log of a task that raised (a bad record in a log read on a worker) left out: the log is read
    again here and its error is the one line said. For workers forked from this process (`TPUFLEET_DASK_START=fork`)
    with the filter in place; those from the fork server have it from `sweep.workerlog` (a remote cluster's workers
    log on their own machines)."""
    import logging  # (here: the other commands never log)

    from tpufleet.sweep import workerlog

    worker_log = logging.getLogger(workerlog.WORKER_LOG)
    worker_log.addFilter(workerlog.not_a_task_failure)
    try:
        yield
    finally:
        worker_log.removeFilter(workerlog.not_a_task_failure)


def _notes(report: dict[str, Any], capacity: str | None) -> None:
    """What the figures rest on that they do not show, on stderr."""
    read = report["input"]
    for cut in read["cut_off"]:
        where = "<stdin>" if cut["file"] == "-" else cut["file"]
        typer.echo(
            f"tpufleet: warning: {where}:{cut['line']}: the gzip stream is cut off here (the file is "
            "truncated): the lines before it are counted, the rest of this log is missing",
            err=True,
        )
    if capacity is not None and read["capacity_records"]:
        typer.echo(
            f"tpufleet: note: --capacity is used; the logs' {read['capacity_records']:,} capacity "
            "record(s) are not (an option on the command line wins)",
            err=True,
        )
    if report["fleet"]["accelerators_without_capacity"]:
        typer.echo(
            f"tpufleet: note: no capacity for {_some(report['fleet']['accelerators_without_capacity'])}: its jobs "
            "are left out of the fleet, period and window figures (its segment has no SG)",
            err=True,
        )
    if read["jobs_without_record"]:
        typer.echo(
            f"tpufleet: note: no job record for {_some(read['jobs_without_record'])}: each counted as accelerator "
            "'unknown', with the chips of its largest allocation (1 without one)",
            err=True,
        )


def _some(names: list[str], shown_names: int = 3) -> str:
    """The first few names of a list, and how many more."""
    from tpufleet.errors import shown

    more = len(names) - shown_names
    return ", ".join(shown(n) for n in names[:shown_names]) + (f" and {more:,} more" if more > 0 else "")


def _dask(cluster: str | None, workers: int | None) -> tuple[str | None, int | None]:
    """--cluster (checked and spelt out) and --workers: one or the other."""
    from tpufleet.errors import BadInput
    from tpufleet.sweep import backends

    if cluster is not None and workers:
        raise BadInput(
            "bad options --workers and --cluster: --workers sizes the local cluster; a --cluster is sized by its own "
            "workers"
        )
    return (None if cluster is None else backends.scheduler_address(cluster)), workers


_CAPACITY = re.compile(r"\s*([^=,\s](?:[^=,]{0,62}[^=,\s])?)\s*=\s*([0-9]{1,9})\s*")


def _parse(
    files: list[str],
    by: str,
    since: str | None,
    until: str | None,
    capacity: str | None,
    window: str | None,
    out: Path | None,
    exclude: Path | None,
) -> tuple[list[str], float | None, float | None, list[tuple[str, int]] | None, list[tuple[str, float]] | None]:
    """The options checked before any file is read: (segments, --since, --until, --capacity pairs, windows)."""
    from tpufleet.errors import BadInput, refuse_repeats, shown
    from tpufleet.goodput.metrics import DIMENSIONS
    from tpufleet.goodput.times import option_window
    from tpufleet.goodput.windows import parse_windows
    from tpufleet.state.outputs import check_output_path

    if sum(str(f) == "-" for f in files) > 1:
        raise BadInput("bad arguments: - (standard input) is given more than once")
    dims = [d.strip() for d in by.split(",") if d.strip()]
    if not by.strip():  # as `plan-spares --slices ''`: a report of no segment at all was made, unsaid
        raise BadInput("bad option --by: empty list")
    if len(dims) < by.count(",") + 1:  # as every other list refuses it, not dropped unsaid
        raise BadInput(f"bad option --by: {shown(by)} names an empty segment (between two commas, or at an end)")
    for d in dims:
        if d not in DIMENSIONS:
            raise BadInput(
                f"bad option --by: {shown(d)} is not one of {', '.join(DIMENSIONS)}{meant_of(d, DIMENSIONS)}"
            )
    refuse_repeats("--by", dims)
    t0, t1 = option_window(since, until)
    pairs = parse_capacity(capacity) if capacity is not None and capacity != "state" else None
    windows = parse_windows(window) if window is not None else None
    if out is not None:
        check_output_path(out, "--out", [*map(Path, files), exclude])  # the report must not replace a log it reads
    return dims, t0, t1, pairs, windows


def parse_capacity(text: str) -> list[tuple[str, int]]:
    """--capacity ACC=CHIPS,...: (accelerator, chips) pairs, each accelerator once."""
    from tpufleet.errors import BadInput, shown
    from tpufleet.goodput.events import MAX_CHIPS

    out: dict[str, int] = {}
    for part in text.split(","):
        match = _CAPACITY.fullmatch(part)
        if match is None or int(match[2]) > MAX_CHIPS:
            raise BadInput(
                f"bad option --capacity: {shown(part)} is not ACCELERATOR=CHIPS (a name, and 0 to {MAX_CHIPS:,} chips)"
            )
        if match[1] in out:
            raise BadInput(f"bad option --capacity: accelerator {match[1]!r} is given twice")
        out[match[1]] = int(match[2])
    return list(out.items())


def _text(kind: str, report: dict[str, Any]) -> str:
    """The report as a table, YAML, CSV, Markdown or the HTML page."""
    import time

    from tpufleet.cli import yamltext
    from tpufleet.goodput import render, wall
    from tpufleet.text import terminal_safe

    renderers: Renderers = {
        "yaml": lambda: yamltext.dump(report, sort_keys=False),
        "csv": lambda: render.to_csv(report),
        "md": lambda: render.to_markdown(report),
        "html": lambda: wall.to_html(report, time.time(), report.pop("timelines", None)),
        "table": lambda: terminal_safe(render.to_table(report)),  # names from the logs never drive the terminal
    }
    return renderers[kind]().rstrip("\n")


EMIT_BATCH = 1 << 20  # characters written to stdout at a time


def _emit(pieces: Iterator[str], out: Path | None) -> None:
    """The text and a newline: to --out (whole, atomically), or to stdout a batch at a time, so a large report's
    text is never held a second time."""
    import io

    from tpufleet.state.outputs import write_output

    if out is not None:
        buffer = io.StringIO()
        for piece in pieces:
            buffer.write(piece)
        buffer.write("\n")
        write_output(out, buffer.getvalue().encode())
        typer.echo(f"report written to {printable(str(out))}", err=True)
        return
    batch: list[str] = []
    size = 0
    for piece in pieces:
        batch.append(piece)
        size += len(piece)
        if size >= EMIT_BATCH:
            typer.echo("".join(batch), nl=False, color=True)  # the format's own escaping, never stripped
            batch, size = [], 0
    typer.echo("".join(batch), color=True)


def _json_pieces(report: dict[str, Any]) -> Iterator[str]:
    """`render.to_json`'s text a piece at a time: the pure-Python indenting encoder's list of pieces, the text
    joined from it and `render.finite`'s copy each cost about as much as the report. Its figures are finite at
    the source (the readers bound every input they come from); were one not, the copy with nulls is encoded, as
    `to_json` does."""
    import json

    from tpufleet.cli.render import finite

    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, allow_nan=False)
    return encoder.iterencode(report if _all_finite(report) else finite(report))


def _all_finite(data: Any) -> bool:
    """Whether every float in the (JSON-shaped) data is finite, without copying it."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return True
