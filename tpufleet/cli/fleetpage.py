"""`tpufleet report -o html`: one self-contained page (inline CSS and SVG, no script, nothing fetched).

Sized for a 1920x1080 wall screen: the pods' maps across the top (one panel per pod, every cube and OCS with a
hover title naming it, its slice and its faults) and what the map's legend says of a slice (as the table report's
map gives it), then the slices, the node pools held as unplaced slices, the open faults with their age, the cubes the
provider reports DEGRADED or under maintenance (when there are any) and the latest changes.
"""

from __future__ import annotations

from html import escape
from typing import Any

from tpufleet.constants import CUBE_EDGE, DIMS
from tpufleet.text import around, share_text

Row = dict[str, Any]
CELL, GAP, LAYER_GAP = 30, 4, 22
_PALETTE = (
    "#4e79a7",
    "#59a14f",
    "#b07aa1",
    "#76b7b2",
    "#9c755f",
    "#edc948",
    "#af7aa1",
    "#86bcb6",
    "#8cd17d",
    "#a0cbe8",
)
# a reserved cube (an evicted slice's replacement) is free of slices but not to be taken: not drawn as free
_STATE_FILL = {"free": "#2b2f36", "reserved": "#6b5b95", "out": "#e15759", "drained": "#f28e2b"}
_OCS_FILL = {"ok": "#3a3f47", "in_use": "#59a14f", "failed": "#e15759", "drained": "#f28e2b"}

CSS = """
body{margin:0;padding:18px 24px;background:#16191d;color:#e6e6e6;font:17px/1.35 system-ui,sans-serif}
h1{font-size:26px;margin:0 0 4px}h2{font-size:17px;margin:18px 0 6px;color:#c9d1d9}
.sub{color:#9aa4ae;margin-bottom:10px}.pods{display:flex;flex-wrap:wrap;gap:14px}
.panel{background:#1e2228;border:1px solid #30363d;border-radius:6px;padding:8px 10px;max-width:100%;box-sizing:border-box;overflow-x:auto}
.panel h3{margin:0 0 4px;font-size:15px}.cols{display:flex;gap:28px;flex-wrap:wrap}.cols>div{min-width:0;max-width:100%}
.wide{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;font-size:16px}th,td{padding:3px 10px;text-align:left;border-bottom:1px solid #30363d}
th{color:#9aa4ae;font-weight:600}.bad{color:#ff7b72}.warn{color:#f2cc60}.ok{color:#7ee787}
.keyed{white-space:nowrap}.key{display:inline-block;width:12px;height:12px;border-radius:2px;margin:0 4px 0 12px;vertical-align:-1px}
.notes{margin:8px 0 0;padding:0;list-style:none}.notes li,.journal td:last-child{overflow-wrap:anywhere}.journal td:last-child{min-width:12em}
.journal td:nth-child(2){white-space:nowrap}
svg text{fill:#9aa4ae;font:13px system-ui,sans-serif}
"""


def slice_colours(legend: list[Row]) -> dict[str, str]:
    return {e["slice"]: _PALETTE[i % len(_PALETTE)] for i, e in enumerate(legend)}


def _cube_rect(c: Row, x: int, y: int, colours: dict[str, str], legend: dict[str, Row]) -> str:
    fill = colours[c["slices"][0]] if c["state"] == "slice" else _STATE_FILL.get(c["state"], "#2b2f36")
    title = f"cube {c['cube']} (position {c['position']}): {c['state']}"
    for name in c["slices"]:
        e = legend.get(name, {})
        title += f"; slice {name} {e.get('shape', '')} {e.get('state', '')}"
    if c["faults"]:
        title += f"; faults {', '.join(c['faults'])}"
    if c.get("degraded"):
        title += "; reported DEGRADED by the provider (it serves; allocations take it after the healthy cubes)"
    stroke = (
        ' stroke="#f2cc60" stroke-width="2"'
        if any(legend.get(n, {}).get("state") == "degraded" for n in c["slices"])
        else ""
    )
    label = escape(c["mark"]) if c["state"] != "free" or c.get("degraded") else ""
    return (
        f'<g><title>{escape(title)}</title><rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" rx="3" fill="{fill}"{stroke}/>'
        f'<text x="{x + CELL / 2}" y="{y + CELL / 2 + 5}" text-anchor="middle" style="fill:#fff;font-size:14px">{label}</text></g>'
    )


def pod_svg(pod: Row, colours: dict[str, str], legend: dict[str, Row]) -> str:
    layers = max(1, -(-len(pod["cubes"]) // CUBE_EDGE**2))
    layer_w = CUBE_EDGE * (CELL + GAP)
    width = layers * (layer_w + LAYER_GAP)
    parts = [f'<text x="{z * (layer_w + LAYER_GAP)}" y="11">z={z}</text>' for z in range(layers)]
    for c in pod["cubes"]:
        x, y, z = c["xyz"]
        parts.append(
            _cube_rect(c, z * (layer_w + LAYER_GAP) + x * (CELL + GAP), 16 + y * (CELL + GAP), colours, legend)
        )
    top = 16 + CUBE_EDGE * (CELL + GAP) + 14
    parts.append(f'<text x="0" y="{top - 3}">OCS (x, y, z rows; 0-15)</text>')
    for row, dim in enumerate(DIMS):
        for o in (o for o in pod["ocs"] if o["dim"] == dim):
            state = "in_use" if o["state"] == "ok" and o["xconnects"] else o["state"]
            title = f"{o['id']}: {o['state']}, {o['xconnects']} cross-connects"
            x, y = 16 + o["index"] * 18, top + 4 + row * 18
            parts.append(
                f'<g><title>{escape(title)}</title><rect x="{x}" y="{y}" width="15" height="15" rx="2" fill="{_OCS_FILL[state]}"/></g>'
            )
        parts.append(f'<text x="0" y="{top + 16 + row * 18}">{dim}</text>')
    height = top + 4 + 3 * 18 + 4
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="map of {escape(pod["pod"])}">{"".join(parts)}</svg>'


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    """`cls`: the table's class ("journal": its last column, a change's summary, wraps even a list without spaces)."""
    if not rows:
        return '<p class="sub">none</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in r) + "</tr>" for r in rows)
    attr = f' class="{cls}"' if cls else ""
    return f'<div class="wide"><table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _slice_rows(r: Row, colours: dict[str, str]) -> list[list[str]]:
    rows = []
    for s in r["slices"]:
        state_class = {"degraded": "warn", "evicted": "bad", "connected": "ok"}.get(s["state"], "")
        d = s["degraded"]
        degraded = (
            f"keeps {share_text(d['all_to_all_retained'])}, {d['vcs']} VCs, around {around(d['faults'])}" if d else ""
        )
        key = f'<span class="key" style="background:{colours.get(s["name"], "#555")}"></span>'
        rows.append(
            [
                f'<span class="keyed">{key}{escape(s["name"])}</span>',
                escape(s["shape"] + (" twisted" if s["twisted"] else "")),
                f'<span class="{state_class}">{escape(s["state"])}</span>',
                str(len(s["cubes"])),
                f'<span class="{"warn" if s["routes"] == "stale" else ""}">{escape(s["routes"])}</span>',
                str(s["missing_xconnects"]),  # 0 said, as the table and md reports do
                escape(degraded),
            ]
        )
    return rows


def _generation_tag(pod: Row) -> str:
    """' tpu7x' after a pod's name when it has a generation (the built-in TPU v4 model shows none)."""
    return f" {escape(pod['generation'])}" if "generation" in pod else ""


def _pod_panels(r: Row, colours: dict[str, str]) -> str:
    legend = {e["slice"]: e for e in r["map"]["legend"]}
    return "".join(
        f'<div class="panel"><h3>{escape(p["pod"])}{_generation_tag(p)} <span class="sub">{p["counts"]["slice"]} in slices, {p["counts"]["free"]} free, '
        f"{p['counts']['reserved']} reserved, {p['counts']['out']} out, {p['counts']['drained']} drained</span></h3>{pod_svg(p, colours, legend)}</div>"
        for p in r["map"]["pods"]
    )


def _cubes_text(r: Row) -> str:
    """'140 free, 0 allocated, 2 out of the pool (2 of them drained)': the out as the summary counts them, the
    drained apart, as each pod's panel counts them."""
    cubes = r["cubes"]
    drained = sum(p["counts"]["drained"] for p in r["map"]["pods"])
    apart = f" ({drained} of them drained)" if drained else ""
    return f"{cubes['free']} free, {cubes['allocated']} allocated, {cubes['out']} out of the pool{apart}"


def _map_keys() -> str:
    shared = '<span class="keyed"><b>+</b>&nbsp;a cube shared by sub-cube slices</span>'  # its mark, as the table map's
    return shared + "".join(
        f'<span class="keyed"><span class="key" style="background:{c}"></span>{escape(k)}</span>'
        for k, c in (
            ("free", _STATE_FILL["free"]),
            ("reserved for an evicted slice", _STATE_FILL["reserved"]),
            ("out of the pool", _STATE_FILL["out"]),
            ("drained", _STATE_FILL["drained"]),
            ("OCS unused", _OCS_FILL["ok"]),
            ("OCS in use", _OCS_FILL["in_use"]),
            ("OCS failed", _OCS_FILL["failed"]),
            ("OCS drained", _OCS_FILL["drained"]),
        )
    )


def _fault_rows(r: Row) -> list[list[str]]:
    """Each open fault; with its reason when the rows carry one (`tpufleet serve`'s page)."""
    return [
        [
            escape(f["fault"]),
            escape(f["target"]),
            "drain" if f["planned"] else '<span class="bad">fault</span>',
            escape(f["age"]),
            escape(f["effect"]),
        ]
        + ([escape(f["reason"])] if "reason" in f else [])
        for f in r["faults"]
    ]


def _faults_text(faults: list[Row]) -> str:
    """'3 open fault(s) (2 unplanned, 1 planned drain(s))', as `status` says them: the unplanned ones apart are
    what `tpufleet_open_faults` counts."""
    drains = sum(1 for f in faults if f["planned"])
    apart = f" ({len(faults) - drains} unplanned, {drains} planned drain(s))" if drains else ""
    return f"{len(faults)} open fault(s){apart}"


def _journal_rows(r: Row) -> list[list[str]]:
    return [
        [str(e["serial"]), escape(str(e["time"])), escape(str(e["user"])), escape(str(e["summary"]))]
        for e in r["journal"]
    ]


def render_page(r: Row, refresh: int | None = None, state: str | None = None) -> str:
    """The page; `refresh`: seconds after which the browser reloads it (a meta refresh, no script); `state`: the
    `--state` given on the command line, which the commands the page suggests carry (cli/suggested)."""
    colours = slice_colours(r["map"]["legend"])
    panels, keys = _pod_panels(r, colours), _map_keys()
    faults, journal = _fault_rows(r), _journal_rows(r)
    fault_heads = ["fault", "target", "kind", "age", "effect"] + (
        ["reason"] if any("reason" in f for f in r["faults"]) else []
    )
    inv = r["inventory"]
    reload = f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">{reload}
<title>tpufleet report, serial {r["serial"]}</title><style>{CSS}</style></head><body>
<h1>Fleet report <span class="sub">serial {r["serial"]}, generated {escape(r["generated"])}</span></h1>
<div class="sub">{inv["pods"]} pod(s), {inv["cubes"]} cubes, {inv["chips"]} chips; cubes {_cubes_text(r)}; OCS {_ocs_text(r["ocs"])}; {_faults_text(r["faults"])}</div>
<div class="sub">{keys}<span class="keyed"><span class="key" style="border:2px solid #f2cc60"></span>degraded slice (rerouted)</span></div>
<div class="pods">{panels}</div>{_legend_notes(r["map"]["legend"], colours, state)}
<div class="cols"><div><h2>Slices</h2>{_table(["slice", "shape", "state", "cubes", "tables", "missing cross-connects", "degraded"], _slice_rows(r, colours))}</div>
<div><h2>Open faults</h2>{_table(fault_heads, faults)}</div></div>{_jobs_section(r)}{_node_pools_section(r)}{_provider_sections(r)}
<h2>Latest changes</h2>{_table(["serial", "time (UTC)", "user", "summary"], journal, "journal")}{_damaged(r["journal_damaged_lines"], state)}
</body></html>
"""


def _legend_notes(legend: list[Row], colours: dict[str, str], state: str | None) -> str:
    """Under the maps, what the terminal map's legend adds of a slice (rerouted around which faults, evicted by
    which, the cubes reserved for it and the command that moves it), with its colour and letter."""
    from tpufleet.cli.suggested import on_this_state

    notes = [
        f'<li><span class="key" style="background:{colours.get(e["slice"], "#555")}"></span>'
        f"{escape(e['mark'])} {escape(e['slice'])}: {escape(on_this_state(e['detail'], state))}</li>"
        for e in legend
        if e["detail"]
    ]
    return f'<ul class="sub notes">{"".join(notes)}</ul>' if notes else ""


def _jobs_section(r: Row) -> str:
    """The multislice jobs (as the table and md reports give them), only when the fleet has any."""
    from tpufleet.cli.report import report_job_rows

    return _rows_section("Multislice jobs", report_job_rows(r)) if r["jobs"] else ""


def _node_pools_section(r: Row) -> str:
    """The node pools held as unplaced slices and the free cubes they leave (as the table and md reports give them),
    only when there are any."""
    from tpufleet.cli.report import POOLS_TITLE, node_pool_rows, node_pools_note

    section = _rows_section(POOLS_TITLE, node_pool_rows(r))
    return section and f'{section}<div class="sub">{escape(node_pools_note(r))}</div>'


def _provider_sections(r: Row) -> str:
    """The cubes the provider reports DEGRADED (still serving) and its maintenance announced (as the table and md
    reports give them), each only when there are any."""
    from tpufleet.cli.report import DEGRADED_TITLE, MAINTENANCE_TITLE, degraded_cube_rows, maintenance_rows

    return _rows_section(DEGRADED_TITLE, degraded_cube_rows(r)) + _rows_section(MAINTENANCE_TITLE, maintenance_rows(r))


def _rows_section(title: str, rows: list[Row]) -> str:
    """A titled table of the table report's rows, every cell escaped; nothing when there are none."""
    if not rows:
        return ""
    cells = [[escape(str(v)) for v in row.values()] for row in rows]
    return f"<h2>{escape(title)}</h2>{_table(list(rows[0]), cells)}"


def _ocs_text(ocs: Row) -> str:
    """ "2 failed of 48", or "1 failed, 1 drained of 48": a planned drain is not a failure (as `status` says)."""
    drained = f", {ocs['drained']} drained" if ocs["drained"] else ""
    return f"{ocs['failed']} failed{drained} of {ocs['total']}"


def _damaged(lines: list[int], state: str | None) -> str:
    """A note under the latest changes when damaged journal lines were skipped (an entry may be missing)."""
    if not lines:
        return ""
    from tpufleet.cli.report import damaged_note
    from tpufleet.cli.suggested import on_this_state

    return f'<p class="warn">{escape(on_this_state(damaged_note(lines), state))}</p>'
