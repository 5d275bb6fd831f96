"""`tpufleet report`: the fleet on one page (map, slices, open faults with age, latest changes); html for a wall."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any

import typer

from tpufleet.cli.app import app, examples
from tpufleet.cli.render import emit, grid


class ReportFormat(str, enum.Enum):
    table = "table"
    json = "json"
    yaml = "yaml"
    md = "md"
    html = "html"


def _markdown(r: dict[str, Any]) -> str:
    lines = [f"# Fleet report, serial {r['serial']} ({r['generated']})", "", "## Slices", ""]
    lines += ["| slice | shape | state | cubes | tables | missing cross-connects |", "|---|---|---|---|---|---|"]
    lines += [
        f"| {s['name']} | {s['shape']}{' twisted' if s['twisted'] else ''} | {s['state']} | {len(s['cubes'])} | {s['routes']} | {s['missing_xconnects']} |"
        for s in r["slices"]
    ]
    lines += ["", "## Open faults", "", "| fault | target | kind | age | effect |", "|---|---|---|---|---|"]
    lines += [
        f"| {f['fault']} | {f['target']} | {'drain' if f['planned'] else 'fault'} | {f['age']} | {f['effect']} |"
        for f in r["faults"]
    ]
    lines += ["", "## Latest changes", "", "| serial | time | user | change |", "|---|---|---|---|"]
    lines += [f"| {e['serial']} | {e['time']} | {e['user']} | {e['summary']} |" for e in r["journal"]]
    return "\n".join(lines)


def _table(r: dict[str, Any], map_text: str) -> str:
    faults = grid(
        [[f["fault"], f["target"], f["age"], f["effect"]] for f in r["faults"]], ["fault", "target", "age", "effect"]
    )
    journal = grid([[e["serial"], e["time"], e["summary"]] for e in r["journal"]], ["serial", "time (UTC)", "change"])
    return f"{map_text}\n\nopen faults:\n{faults}\n\nlatest changes:\n{journal}"


@app.command(
    "report",
    epilog=examples(
        "tpufleet report -o html --out fleet.html   # a self-contained page for a browser or a wall screen",
        "tpufleet report -o md > fleet.md",
    ),
)
def report_cmd(
    ctx: typer.Context,
    output: Annotated[
        ReportFormat, typer.Option("-o", "--output", help="table, json, yaml, md, or html (a self-contained page)")
    ] = ReportFormat.table,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write to FILE instead of standard output")
    ] = None,
) -> None:
    """The fleet on one page: a map of each pod, the slices (degraded, stale tables, missing cross-connects), open
    faults with their age and the latest changes."""
    from datetime import UTC, datetime

    from tpufleet.fleetreport import report
    from tpufleet.state.files import check_output_path, write_output

    if out is not None:
        check_output_path(out, "--out")
    store = ctx.obj.store()
    state = store.load()
    r = report(state, store.journal(state.serial), datetime.now(UTC))
    if output is ReportFormat.html or output is ReportFormat.md:
        from tpufleet.cli.fleetpage import render_page

        text = render_page(r) if output is ReportFormat.html else _markdown(r) + "\n"
    else:
        from tpufleet.cli.mapview import render_map
        from tpufleet.fleetmap import fleet_map

        if out is None:
            emit(r, output, lambda: _table(r, render_map(fleet_map(state))))
            return
        from tpufleet.cli.render import finite, to_json

        if output is ReportFormat.json:
            text = to_json(r) + "\n"
        elif output is ReportFormat.yaml:
            import yaml

            text = yaml.safe_dump(finite(r), sort_keys=False)
        else:
            text = _table(r, render_map(fleet_map(state))) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_output(out, text.encode())
        typer.echo(f"wrote {out}", err=True)
