"""`tpufleet metrics`: the fleet (and, with --goodput, its goodput; with --drift-*, its drift) as Prometheus
metrics for the node exporter's textfile collector. `serve` exposes the same families over HTTP."""

import enum
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from tpufleet.cli.app import GoodputFormatOpt, Output, OutputOpt, app, examples
from tpufleet.cli.render import emit
from tpufleet.text import printable


class MetricsFormat(str, enum.Enum):
    prometheus = "prometheus"
    openmetrics = "openmetrics"


def _families_json(text: bytes) -> list[dict[str, Any]]:
    """The exposition as JSON, read back with prometheus_client's own parser (so both say the same)."""
    from prometheus_client.parser import text_string_to_metric_families

    return [
        {
            "name": fam.name,
            "type": fam.type,
            "help": fam.documentation,
            "samples": [{"name": s.name, "labels": dict(s.labels), "value": s.value} for s in fam.samples],
        }
        for fam in text_string_to_metric_families(text.decode())
    ]


@app.command(
    "metrics",
    epilog=examples(
        "tpufleet metrics",
        "tpufleet metrics --out /var/lib/node_exporter/textfile_collector/tpufleet.prom",
        "tpufleet metrics --goodput events.jsonl --out /var/lib/node_exporter/textfile_collector/tpufleet.prom",
        "tpufleet metrics --drift-reservation sb.json --drift-slices slices.json --out /var/lib/node_exporter/textfile_collector/tpufleet.prom",
    ),
)
def metrics_cmd(
    ctx: typer.Context,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write to FILE.prom atomically (temp file, then rename)")
    ] = None,
    goodput: Annotated[
        list[str] | None,
        typer.Option(
            "--goodput",
            click_type=click.Path(path_type=str),
            metavar="FILE|-",
            help="Goodput event logs (- for standard input): add SG/RG/PG/MPG and badput to the metrics (repeatable)",
        ),
    ] = None,
    goodput_format: GoodputFormatOpt = "native",
    fmt: Annotated[
        MetricsFormat, typer.Option("--format", help="prometheus (text 0.0.4, the textfile collector's) or openmetrics")
    ] = MetricsFormat.prometheus,
    drift_nodes: Annotated[
        str | None,
        typer.Option("--drift-nodes", metavar="FILE|-", help="Add the drift of a node list (as drift --nodes)"),
    ] = None,
    drift_mapping: Annotated[
        Path | None, typer.Option("--drift-mapping", help="Mapping file of --drift-nodes (as import k8s --mapping)")
    ] = None,
    drift_reservation: Annotated[
        str | None, typer.Option("--drift-reservation", metavar="FILE|-", help="Add the drift of a sub-block list")
    ] = None,
    drift_slices: Annotated[
        str | None, typer.Option("--drift-slices", metavar="FILE|-", help="Add the drift of a Slice list")
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """The state as Prometheus metrics: cubes by state per pod, open faults and drains by kind, slices by state,
    stale tables, all-to-all throughput kept per slice, cross-connects, serial and last change time; with
    --drift-*, the drift of fresh exports against the state (as `drift`) by source and kind."""
    from tpufleet import __version__
    from tpufleet.cli.fleetimport import state_before_standard_input
    from tpufleet.cli.reconcile import drift_kinds
    from tpufleet.integrations.metrics import exposition
    from tpufleet.ops.fleetio import last_change
    from tpufleet.ops.views import tables_as_stored
    from tpufleet.state.outputs import check_output_path

    if out is not None:
        # the metrics must not replace a goodput log or an export they read
        exports_read = [Path(name) for name in (drift_nodes, drift_reservation, drift_slices) if name is not None]
        check_output_path(out, "--out", [*(Path(log) for log in goodput or []), drift_mapping, *exports_read])
    state_before_standard_input(ctx, *(goodput or []), drift_nodes, drift_reservation, drift_slices)
    report, given = _metrics_inputs(
        goodput, goodput_format, drift_nodes, drift_mapping, drift_reservation, drift_slices
    )
    store = ctx.obj.store()
    state, missing = tables_as_stored(store, store.load())
    # -o json and -o yaml: the families as data (the same for both); the table is the exposition text itself
    as_json = getattr(output, "value", output) in ("json", "yaml") and out is None
    openmetrics = fmt is MetricsFormat.openmetrics and not as_json  # the JSON is read back from the 0.0.4 text
    drift = drift_kinds(state, given)
    changed = last_change(store.journal_tail(1, state.serial).entries, state.serial)
    text = exposition(state, changed, report, __version__, openmetrics, drift, missing)
    if as_json:
        emit(_families_json(text), output, str)
    elif out is None:
        typer.echo(text.decode(), nl=False)
    else:
        _write_textfile(out, text, state.serial, output, openmetrics)


def _metrics_inputs(
    goodput: list[str] | None,
    goodput_format: str,
    nodes: str | None,
    mapping: Path | None,
    reservation: str | None,
    slices: str | None,
) -> tuple[dict[str, Any] | None, Any]:
    """The goodput report and the drift sources (None: none given), every option checked before anything is read,
    and standard input read last: a file named wrong is refused before a piped log or export is read."""
    from tpufleet.cli.reconcile import check_drift_options, read_drift_inputs

    _one_standard_input(goodput, {"nodes": nodes, "reservation": reservation, "slices": slices})
    check_drift_options(nodes, mapping, reservation, slices, "--drift-")
    given = any(source is not None for source in (nodes, reservation, slices))
    if any(str(log) == "-" for log in goodput or []):  # the sources' files first
        sources = read_drift_inputs(nodes, mapping, reservation, slices, "--drift-") if given else None
        return goodput_report(goodput, goodput_format), sources
    report = goodput_report(goodput, goodput_format)
    return report, read_drift_inputs(nodes, mapping, reservation, slices, "--drift-") if given else None


def _one_standard_input(goodput: list[str] | None, drift: dict[str, str | None]) -> None:
    """BadInput when more than one of the logs and exports is '-': the first read standard input whole, and the
    next was told that the node list it then read was not a goodput log (or found it empty)."""
    from tpufleet.errors import BadInput

    dashes = ["--goodput"] * sum(str(p) == "-" for p in goodput or []) + [
        f"--drift-{name}" for name, given in drift.items() if given == "-"
    ]
    if "--goodput" in dashes and len(dashes) > 1:  # two exports: read_drift_inputs says so
        options = list(dict.fromkeys(dashes))  # each option named once, however often it was given
        if len(options) == 1:
            raise BadInput("bad option --goodput: - (standard input) is given more than once; only one log can be")
        raise BadInput(f"bad options {' and '.join(options)}: each is - (standard input); only one can be")


GOODPUT_SEGMENTS = ("accelerator", "size", "phase", "framework")  # the segments the goodput families export


def goodput_report(
    goodput: Sequence[str | Path] | None, fmt: str, whole_lines: bool = False, files_only: bool = False
) -> dict[str, Any] | None:
    """The goodput report the metrics export (None without logs); `whole_lines`: logs still being written;
    `files_only`: logs read again as they change, which must be regular files."""
    from tpufleet.errors import BadInput
    from tpufleet.goodput import LOG_FORMATS

    if fmt not in LOG_FORMATS:
        raise BadInput(f"bad option --goodput-format {fmt!r}: {' or '.join(LOG_FORMATS)}")
    if not goodput:
        return None
    from tpufleet.ops.goodput import build

    return build(list(goodput), fmt, by=list(GOODPUT_SEGMENTS), whole_lines=whole_lines, files_only=files_only)


def _write_textfile(out: Path, text: bytes, serial: int, output: Output, openmetrics: bool) -> None:
    """Temp file beside it, fsync, rename: a textfile collector never reads half a file."""
    from tpufleet.state.outputs import write_output

    write_output(out, text)
    if not out.name.endswith(".prom"):
        typer.echo("tpufleet: note: the node exporter's textfile collector reads only *.prom files", err=True)
    elif openmetrics:  # its parser refuses OpenMetrics' info families, and with them the whole file
        typer.echo(
            "tpufleet: note: the node exporter's textfile collector reads only the Prometheus text format "
            "(--format prometheus); it would drop this OpenMetrics file",
            err=True,
        )
    summary = {"file": str(out), "families": text.count(b"# TYPE "), "serial": serial}
    emit(summary, output, lambda: f"wrote {summary['families']} metric families to {printable(str(out))}")
