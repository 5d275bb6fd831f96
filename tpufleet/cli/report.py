"""`tpufleet report`: the fleet on one page (map, slices, node pools held as unplaced slices, open faults with age, the
cubes the provider reports DEGRADED or under maintenance, latest changes); html for a wall."""

from pathlib import Path
from typing import Annotated, Any

import typer

from tpufleet.cli.app import ReportOutput, app, examples, report_output_option
from tpufleet.cli.render import data_text, emit, flat_table, grid
from tpufleet.text import around, printable, share_text

Row = dict[str, Any]
DEGRADED_TITLE, MAINTENANCE_TITLE = "Degraded cubes (still serving)", "Maintenance announced"
POOLS_TITLE = "Unplaced node-pool slices"
MD_TITLES = (
    "Slices",
    "Multislice jobs",
    POOLS_TITLE,
    "Open faults",
    DEGRADED_TITLE,
    MAINTENANCE_TITLE,
    "Latest changes",
)
TABLE_TITLES = tuple(title.lower() for title in MD_TITLES)


def _degraded(s: Row) -> str:
    d = s["degraded"]
    return (
        f"keeps {share_text(d['all_to_all_retained'])}, {d['vcs']} VCs, around {around(d['faults'], ',')}" if d else ""
    )


def _slices(r: Row) -> list[Row]:
    return [
        {
            "slice": s["name"],
            "shape": s["shape"] + (" twisted" if s["twisted"] else ""),
            "state": s["state"],
            "cubes": len(s["cubes"]),
            "tables": s["routes"],
            "missing cross-connects": s["missing_xconnects"],
            "degraded": _degraded(s),
        }
        for s in r["slices"]
    ]


def report_job_rows(r: Row) -> list[Row]:
    """Multislice jobs, one row each (`show jobs`' figures): none on a fleet without one."""
    return [
        {
            "job": j["name"],
            "shape": f"{len(j['slices'])} x {j['shape']}" + (" twisted" if j["twisted"] else ""),
            "state": j["state"],
            "active slices": f"{j['active_slices']}/{j['total_slices']}",
            "pods": ", ".join(j["pods"]),
            "throughput kept": "" if j["throughput_kept"] is None else share_text(j["throughput_kept"]),
            "evicted": ", ".join(j["evicted"]),
            "rerouted": ", ".join(j["rerouted"]),
        }
        for j in r["jobs"]
    ]


def node_pool_rows(r: Row) -> list[Row]:
    """The node pools held as unplaced slices, one row each (as `status` lists them; none without any): the cubes
    each holds against its pod's free cubes, which ones unknown (a sub-cube pool its machines)."""
    return [
        {
            "node pool": p["node_pool"],
            "shape": p["shape"],
            "accelerator": p["accelerator"],
            "pod": p["pod"],
            "nodes": len(p["nodes"]),
            "holds": f"{p['cubes']} cube(s)" if p["cubes"] or not p["machines"] else f"{p['machines']} machine(s)",
        }
        for p in r["node_pools"]["slices"]
    ]


def node_pools_note(r: Row) -> str:
    """What the pools leave of the free cubes, as `status` says it; empty without any."""
    pools = r["node_pools"]
    if not pools["slices"]:
        return ""
    rounded = any(p["machines"] and not p["cubes"] for p in pools["slices"])  # a row says machines, not cubes
    return (
        f"{len(pools['slices'])} node pool(s) hold {pools['cubes']} cube(s)"
        + (" (machines of sub-cube pools rounded up to whole cubes)" if rounded else "")
        + ", which ones unknown: "
        f"{pools['free_after_unplaced']} of the {r['cubes']['free']} free cubes are left to allocate"
    )


def degraded_cube_rows(r: Row) -> list[Row]:
    """The cubes that still serve while the provider reports them DEGRADED, one row a source (none without any)."""
    from tpufleet.views import hosts_degraded

    return [
        {
            "cube": g["cube"],
            "pod": g["pod"],
            "reported DEGRADED": _degraded_by(g),
            "hosts degraded": hosts_degraded(g) or "",  # none counted: a GKE partition, a sub-block without counts
        }
        for g in r["provider"]["degraded_cubes"]
    ]


def _degraded_by(g: Row) -> str:
    if g["source"] == "reservation":
        return f"reservation sub-block {g['sub_block']}"
    return f"GKE partition {g['partition'] or '?'}"


def maintenance_rows(r: Row) -> list[Row]:
    """The reservation's announced or ongoing maintenance, one row a cube (none without any)."""
    return [
        {
            "cube": m["cube"],
            "pod": m["pod"],
            "sub-block": m["sub_block"],
            "status": m["status"],
            "window start": m["window_start"] or "?",
            "window end": m["window_end"] or "?",
            "now": _maintenance_now(m),
        }
        for m in r["provider"]["maintenance"]
    ]


def _maintenance_now(m: Row) -> str:
    """drained (its drain is among the open faults), out of the pool (a fault holds it), else serving until then."""
    if m["drained"] or m["out_of_pool"]:
        return "drained" if m["drained"] else "out of the pool"
    return "serving" + (f" ({', '.join(m['slices'])} on it)" if m["slices"] else "")


def _sections(r: Row, titles: tuple[str, ...]) -> list[tuple[str, list[Row]]]:
    """(title, rows) of each section in order; the jobs', the node pools', the degraded cubes' and the maintenance's
    only when there are any (titles: slices, jobs, node pools, faults, degraded cubes, maintenance, latest changes)."""
    slices, jobs, pools, faults, degraded, maintenance, journal = titles
    provider = [(degraded, degraded_cube_rows(r)), (maintenance, maintenance_rows(r))]
    shown_jobs = [(jobs, report_job_rows(r))] if r["jobs"] else []
    shown_pools = [(pools, node_pool_rows(r))] if r["node_pools"]["slices"] else []
    shown_provider = [(title, rows) for title, rows in provider if rows]
    head = [(slices, _slices(r)), *shown_jobs, *shown_pools]
    return [*head, (faults, _faults(r)), *shown_provider, (journal, _journal(r))]


def _faults(r: Row) -> list[Row]:
    return [
        {
            "fault": f["fault"],
            "target": f["target"],
            "kind": "drain" if f["planned"] else "fault",
            "age": f["age"],
            "effect": f["effect"],
        }
        for f in r["faults"]
    ]


def _journal(r: Row) -> list[Row]:
    return [
        {"serial": e["serial"], "time (UTC)": e["time"], "user": e["user"], "summary": e["summary"]}
        for e in r["journal"]
    ]


def damaged_note(lines: list[int]) -> str:
    """The note under the latest changes of a report that skipped damaged journal lines."""
    shown = ", ".join(map(str, lines[:10])) + (" ..." if len(lines) > 10 else "")
    return (
        f"Damaged journal line(s) {shown} skipped: a change may be missing here (`tpufleet show journal` names them)."
    )


def _markdown(r: Row, map_text: str) -> str:
    """Markdown with every cell escaped (render.flat_table): a user or slice name cannot inject HTML or columns."""
    parts = [f"# Fleet report, serial {r['serial']} ({r['generated']})", "", "```", map_text, "```"]
    for title, rows in _sections(r, MD_TITLES):
        parts += ["", f"## {title}", "", flat_table(rows, "md") or "none"]
        parts += ["", node_pools_note(r)] if title == POOLS_TITLE else []  # numbers only: nothing to escape
    if r["journal_damaged_lines"]:
        parts += ["", damaged_note(r["journal_damaged_lines"])]
    return "\n".join(parts) + "\n"


def _table(r: Row, map_text: str) -> str:
    parts = [map_text]
    for title, rows in _sections(r, TABLE_TITLES):
        cells = [[printable(v) if isinstance(v, str) else v for v in row.values()] for row in rows]  # one line each
        note = f"\n{node_pools_note(r)}" if title == POOLS_TITLE.lower() else ""
        parts.append(f"{title}:\n" + grid(cells, list(rows[0]) if rows else []) + note)
    return "\n\n".join(parts)


def _text(r: Row, fmt: ReportOutput, map_text: str) -> str:
    """The report as one text in a format that is not emitted as data (html, md, table for a file); the commands it
    suggests carry the `--state` given, as the table on a terminal's do (cli/suggested)."""
    from tpufleet.cli.app import SETTINGS
    from tpufleet.cli.suggested import on_this_state

    if fmt is ReportOutput.html:  # the page quotes each command's state itself, before it escapes the text
        from tpufleet.cli.fleetpage import render_page

        return render_page(r, state=SETTINGS.state_option)
    text = _markdown(r, map_text) if fmt is ReportOutput.md else _table(r, map_text) + "\n"
    return on_this_state(text, SETTINGS.state_option)


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
        ReportOutput,
        report_output_option(
            ReportOutput.md, ReportOutput.html, help_text="table, json, yaml, md, or html (a self-contained page)"
        ),
    ] = ReportOutput.table,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write to FILE instead of standard output")
    ] = None,
) -> None:
    """The fleet on one page: a map of each pod, the slices (degraded, stale tables, missing cross-connects), open
    faults with their age, the cubes the provider reports DEGRADED or under maintenance, and the latest changes."""
    from datetime import UTC, datetime

    from tpufleet.cli.history import warn_journal
    from tpufleet.cli.mapview import render_map
    from tpufleet.ops import views
    from tpufleet.state.outputs import check_output_path, write_output

    if out is not None:
        check_output_path(out, "--out")
    store = ctx.obj.store()
    fleet = views.report(store, datetime.now(UTC))
    r = fleet.document
    warn_journal(store.journal_label, fleet.journal)  # as `show journal` says it
    colour = out is None and output is ReportOutput.table  # a file, or Markdown, never holds terminal styles
    map_text = render_map(fleet.map, colour=colour)
    if out is None and output in (ReportOutput.table, ReportOutput.json, ReportOutput.yaml):
        emit(r, output, lambda: _table(r, map_text))
        return
    text = data_text(r, output) or _text(r, output, map_text)
    if out is None:
        typer.echo(text, nl=False)
        return
    write_output(out, text.encode())
    typer.echo(f"wrote {printable(str(out))}", err=True)
