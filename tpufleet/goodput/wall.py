"""The goodput report as one self-contained HTML page for a wall screen (pure: report in, text out).

Everything is inline (styles, SVG charts drawn here, a small script for sorting, filtering and the per-job
drill-down): the page needs no network at view time. Every string from the input is escaped: HTML text with
`html.escape`, data for the script as JSON with ``<``, ``>`` and ``&`` written as ``\\u003c`` etc., so no input can
close the script element. The charts scale with the window (SVG viewBox, width 100%).
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Sequence
from typing import Any

from tpufleet.constants import HOUR
from tpufleet.goodput.jobaccount import BUCKETS, LABEL
from tpufleet.goodput.metrics import Report
from tpufleet.goodput.render import capacity_gap, input_notes

FACTORS = ("mpg", "sg", "rg", "pg")
COLOURS = {
    "productive": "#2e7d32",
    "tpu_initialization": "#6a1b9a",
    "training_prep": "#8e24aa",
    "program_startup": "#ab47bc",
    "data_loading_sync": "#0277bd",
    "checkpoint_save": "#f9a825",
    "checkpoint_restore": "#ef6c00",
    "wasted_progress_from_disruption": "#c62828",
    "infrastructure_recovery_from_disruption": "#ad1457",
    "custom_badput_events": "#5d4037",
    "elastic_slice_down": "#00838f",
    "elastic_scale_up": "#4db6ac",
    "elastic_reinitialization": "#26a69a",
    "other": "#9e9e9e",
}
LINES = {"mpg": "#111111", "sg": "#1565c0", "rg": "#2e7d32", "pg": "#ef6c00"}


def e(text: object, quote: bool = True) -> str:
    """HTML text from the input: escaped, and its control characters (never valid in HTML text) as escapes."""
    from tpufleet.text import printable

    return html.escape(printable(str(text)), quote=quote)


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _hours(chip_s: float) -> str:
    return f"{chip_s / HOUR:,.0f}"


def _script_json(value: Any) -> str:
    """JSON safe inside a script element: no input can write </script> or an entity."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _change(report: Report, key: str) -> str:
    """The factor's change over the report: last full period against the first, else the shortest window
    against the whole."""
    periods = [p for p in report["periods"] if not p.get("partial")]
    pair: tuple[Any, Any] | None = None
    what = ""
    if len(periods) >= 2:
        pair, what = (periods[0][key], periods[-1][key]), f"{periods[0]['period']} to {periods[-1]['period']}"
    elif report.get("windows"):
        w = min(report["windows"], key=lambda r: r["seconds"])
        pair, what = (report["fleet"][key], w[key]), f"last {w['window']} vs all"
    if pair is None or None in pair:
        return ""
    delta = 100 * (pair[1] - pair[0])
    arrow = "▲" if delta > 0.05 else "▼" if delta < -0.05 else "■"
    return f"<div class='delta'>{arrow} {delta:+.1f} pts <span>{e(what)}</span></div>"


def _tiles(report: Report) -> str:
    f = report["fleet"]
    names = {"mpg": "MPG", "sg": "Scheduling (SG)", "rg": "Runtime (RG)", "pg": "Program (PG)"}
    out = []
    for key in FACTORS:
        note = " (estimated)" if key == "pg" and f.get("pg_basis") in ("estimated", "mixed") else ""
        out.append(
            f"<div class='tile {key}'><div class='name'>{names[key]}{e(note)}</div>"
            f"<div class='value'>{_pct(f[key])}</div>{_change(report, key)}</div>"
        )
    return "<section class='tiles'>" + "".join(out) + "</section>"


def _axes(width: int, height: int, pad: int, ylabel: str, xlabels: Sequence[str], ymax: float, fmt: str) -> str:
    mid = height / 2
    parts = [
        f"<text class='axis' x='22' y='{mid}' transform='rotate(-90 22 {mid})' text-anchor='middle'>{e(ylabel)}</text>"
    ]
    for k in range(5):
        y = height - pad - (height - 2 * pad) * k / 4
        parts.append(f"<line class='grid' x1='{pad * 2}' x2='{width - pad}' y1='{y:.1f}' y2='{y:.1f}'/>")
        parts.append(
            f"<text class='tick' x='{pad * 2 - 6}' y='{y + 4:.1f}' text-anchor='end'>{fmt.format(ymax * k / 4)}</text>"
        )
    n = len(xlabels)
    step = max(1, n // 12)
    for i in range(0, n, step):
        x = _x(i, n, width, pad)
        parts.append(
            f"<text class='tick' x='{x:.1f}' y='{height - pad + 18}' text-anchor='middle'>{e(xlabels[i])}</text>"
        )
    return "".join(parts)


LEFT = 140  # room for the y tick labels and the axis title


def _x(i: int, n: int, width: int, pad: int) -> float:
    return LEFT + (width - LEFT - 2 * pad) * (i / max(1, n - 1))


def factors_chart(periods: list[dict[str, Any]]) -> str:
    """MPG and its factors per period, as lines; a partial last period is drawn hollow and labelled."""
    width, height, pad = 1200, 380, 30
    labels = [p["period"] for p in periods]
    parts = [_axes(width, height, pad, "share (%)", labels, 100, "{:.0f}")]
    for key in FACTORS:
        points = [(i, p[key]) for i, p in enumerate(periods) if p[key] is not None]
        coords = " ".join(f"{_x(i, len(periods), width, pad):.1f},{_y(v, 1, height, pad):.1f}" for i, v in points)
        parts.append(f"<polyline fill='none' stroke='{LINES[key]}' stroke-width='3' points='{coords}'/>")
        for i, v in points:
            hollow = periods[i].get("partial")
            parts.append(
                f"<circle cx='{_x(i, len(periods), width, pad):.1f}' cy='{_y(v, 1, height, pad):.1f}' r='5' "
                f"fill='{'#fff' if hollow else LINES[key]}' stroke='{LINES[key]}' stroke-width='2'/>"
            )
    if periods and periods[-1].get("partial"):
        x = _x(len(periods) - 1, len(periods), width, pad)
        anchor = "end" if len(periods) > 1 else "start"
        parts.append(f"<text class='tick' x='{x:.1f}' y='{pad - 8}' text-anchor='{anchor}'>partial period</text>")
    legend = "".join(f"<span style='color:{LINES[k]}'>■ {k.upper()}</span>" for k in FACTORS)
    return _figure("MPG and its factors over time", width, height, "".join(parts), legend)


def _y(v: float, vmax: float, height: int, pad: int) -> float:
    return height - pad - (height - 2 * pad) * (v / vmax if vmax else 0)


def badput_area_chart(periods: list[dict[str, Any]]) -> str:
    """Badput chip-hours per period, stacked by bucket."""
    width, height, pad = 1200, 380, 30
    n = len(periods)
    totals = [sum(p["badput_chip_s"].values()) / HOUR for p in periods]
    ymax = max(totals, default=0) or 1
    scale, unit = (1000, "thousand chip-hours") if ymax >= 1000 else (1, "chip-hours")
    labels = [p["period"] for p in periods]
    parts = [_axes(width, height, pad, f"badput, {unit}", labels, ymax / scale, "{:,.1f}" if scale > 1 else "{:,.0f}")]
    base = [0.0] * n
    for b in BUCKETS:
        values = [p["badput_chip_s"].get(b, 0) / HOUR for p in periods]
        if not any(values):
            continue
        top = [lo + v for lo, v in zip(base, values, strict=True)]
        upper = [f"{_x(i, n, width, pad):.1f},{_y(top[i], ymax, height, pad):.1f}" for i in range(n)]
        lower = [f"{_x(i, n, width, pad):.1f},{_y(base[i], ymax, height, pad):.1f}" for i in reversed(range(n))]
        parts.append(
            f"<polygon fill='{COLOURS[b]}' opacity='0.85' points='{' '.join(upper + lower)}'><title>{e(b)}</title></polygon>"
        )
        base = top
    legend = "".join(f"<span style='color:{COLOURS[b]}'>■ {e(b)}</span>" for b in BUCKETS)
    return _figure("Badput over time", width, height, "".join(parts), legend)


def breakdown_chart(fleet: dict[str, Any]) -> str:
    width, row = 1200, 34
    height = row * len(BUCKETS) + 50
    vmax = max(fleet["badput_pct"].values(), default=0) or 1
    parts = []
    for i, b in enumerate(BUCKETS):
        v = fleet["badput_pct"][b]
        y = 10 + i * row
        w = (width - 560) * v / vmax
        parts.append(f"<text class='tick' x='430' y='{y + 24}' text-anchor='end'>{e(b)}</text>")
        parts.append(f"<rect x='440' y='{y + 4}' width='{w:.1f}' height='{row - 8}' fill='{COLOURS[b]}'/>")
        parts.append(f"<text class='tick' x='{446 + w:.1f}' y='{y + 24}'>{v:.2f}%</text>")
    parts.append(
        f"<text class='axis' x='{width / 2}' y='{height - 6}' text-anchor='middle'>% of all-allocated chip-time</text>"
    )
    return _figure("Badput breakdown", width, height, "".join(parts), "")


def _figure(title: str, width: int, height: int, body: str, legend: str) -> str:
    return (
        f"<figure><figcaption>{e(title)}</figcaption><svg viewBox='0 0 {width} {height}' role='img' "
        f"aria-label='{e(title)}'>{body}</svg><div class='legend'>{legend}</div></figure>"
    )


def _disruptions(report: Report) -> str:
    f = report["fleet"]
    a = f.get("checkpoint_advice")
    rows = [
        ("disruptions", f"{f['disruptions']:,}"),
        ("mean time between disruptions", "-" if f["mtbf_h"] is None else f"{f['mtbf_h']:,.2f} h"),
        ("jobs with slow periods", f"{f.get('jobs_with_slow_periods', 0):,}"),
    ]
    if a:
        rows += [
            ("checkpoint write (blocking)", f"{a['checkpoint_write_s']:,.1f} s"),
            ("restart overhead", f"{a['restart_overhead_s']:,.1f} s"),
            (
                "checkpoint interval now",
                "-" if not a.get("current_interval_s") else f"{a['current_interval_s']:,.0f} s",
            ),
            ("Young's interval, sqrt(2 w MTBF)", f"{a['young_interval_s']:,.0f} s"),
            ("Daly's interval", f"{a['daly_interval_s']:,.0f} s"),
        ]
        if "rg_at_current" in a:
            rows.append(("predicted RG now -> at Daly", f"{a['rg_at_current']:.3f} -> {a['rg_at_daly']:.3f}"))
    body = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows)
    return (
        "<section><h2>Disruptions and checkpoint advice</h2><table class='kv'>" + body + "</table>"
        "<p class='note'>Intervals after Young (1974) and Daly (2006); predicted RG by the ETTR model of Meta's "
        "cluster study. Badput buckets as in Google's ML Productivity Goodput paper and ml-goodput-measurement."
        "</p></section>"
    )


def _jobs(report: Report) -> str:
    jobs = sorted(report["jobs"], key=lambda j: (j["mpg"] is None, j["mpg"] or 0, j["job"]))
    head = ["job", "accelerator", "chips", "phase", "MPG", "SG", "RG", "PG", "chip-hours", "badput chip-hours", "disr."]
    rows = []
    for j in jobs:
        c = j["chips"]
        bad = sum(j["badput_s"].values()) * c
        cells = [
            e(j["job"]),
            e(j["accelerator"]),
            f"{c:,}",
            e(j["phase"]),
            *[_pct(j[k]) for k in FACTORS],
            _hours(j["all_allocated_s"] * c),
            _hours(bad),
            f"{j['disruptions']:,}",
        ]
        sort = [j["job"], j["accelerator"], c, j["phase"], *[-1 if j[k] is None else j[k] for k in FACTORS]]
        sort += [j["all_allocated_s"] * c, bad, j["disruptions"]]
        # data-job: the exact name as JSON (ASCII), the drill-down data's key; the name as shown (control
        # characters escaped) missed a job named with a tab, or was another job's (a tab and a written "\\t")
        rows.append(
            f"<tr data-job='{e(json.dumps(j['job']))}' data-sort='{e(json.dumps(sort))}'>"
            + "".join(f"<td>{v}</td>" for v in cells)
            + "</tr>"
        )
    header = "".join(f"<th data-col='{i}' tabindex='0'>{e(h)}</th>" for i, h in enumerate(head))
    return (
        "<section><h2>Jobs <span class='note'>(worst MPG first; click a column to sort, a job for its timeline)"
        "</span></h2><input id='filter' placeholder='filter jobs by name, accelerator or phase' aria-label='filter'>"
        f"<div class='scroll'><table id='jobs'><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table></div><div id='drill'></div></section>"
    )


_STYLE = """
:root{--fg:#111;--muted:#555;--bg:#fafafa}
*{box-sizing:border-box}body{font:18px/1.4 system-ui,sans-serif;margin:0;padding:1.2vw 2vw;color:var(--fg);
background:var(--bg)}h1{font-size:2.2em;margin:.2em 0}h2{font-size:1.5em;margin:1em 0 .4em}
.meta{color:var(--muted)}.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(260px,100%),1fr));gap:1vw}
.tile{background:#fff;border-radius:12px;padding:1em 1.2em;box-shadow:0 1px 4px #0002}
.tile .name{font-size:1.1em;color:var(--muted)}.tile .value{font-size:3.4em;font-weight:700}
.tile .delta{font-size:1.1em}.tile .delta span{color:var(--muted);font-size:.85em}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(800px,100%),1fr));gap:1vw;margin-top:1vw}
figure{margin:0;background:#fff;border-radius:12px;padding:.8em;box-shadow:0 1px 4px #0002}
figcaption{font-weight:600;font-size:1.2em}svg{width:100%;height:auto}
.grid{stroke:#ddd}.tick{font-size:20px;fill:#333}.axis{font-size:22px;fill:#333;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:.2em 1em}.legend span{white-space:nowrap;font-size:.85em}
table{border-collapse:collapse;background:#fff}td,th{padding:.3em .7em;border-bottom:1px solid #e5e5e5;text-align:right}
td:first-child,th:first-child,td:nth-child(2),td:nth-child(4){text-align:left}
#jobs th{cursor:pointer;position:sticky;top:0;background:#eee}.scroll{max-height:60vh;overflow:auto}
#jobs tr:hover{background:#f0f4ff;cursor:pointer}.kv th{text-align:left;font-weight:500}
#filter{font-size:1em;padding:.4em;width:min(600px,100%);margin:.4em 0}.note{color:var(--muted);font-size:.8em}
"""

_SCRIPT = """
(function(){
var data=JSON.parse(document.getElementById('drill-data').textContent);
var colours=JSON.parse(document.getElementById('colours').textContent);
var table=document.getElementById('jobs'),body=table.tBodies[0],dir={};
function sortBy(c){var rows=[].slice.call(body.rows);dir[c]=!dir[c];
rows.sort(function(a,b){var x=JSON.parse(a.dataset.sort)[c],y=JSON.parse(b.dataset.sort)[c];
return (x<y?-1:x>y?1:0)*(dir[c]?1:-1);});rows.forEach(function(r){body.appendChild(r);});}
[].forEach.call(table.tHead.rows[0].cells,function(th){th.addEventListener('click',function(){
sortBy(+th.dataset.col);});});
document.getElementById('filter').addEventListener('input',function(ev){var q=ev.target.value.toLowerCase();
[].forEach.call(body.rows,function(r){r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':'';});});
function el(n,a){var x=document.createElementNS('http://www.w3.org/2000/svg',n);
for(var k in a){x.setAttribute(k,a[k]);}return x;}
body.addEventListener('click',function(ev){var tr=ev.target.closest('tr');if(!tr)return;
var job=JSON.parse(tr.dataset.job),d=data[job],box=document.getElementById('drill');box.textContent='';
var h=document.createElement('h2');h.textContent='Timeline of '+tr.cells[0].textContent;box.appendChild(h);
if(!d){var p=document.createElement('p');p.textContent='No timeline kept for this job (the page keeps the '+
Object.keys(data).length+' with the lowest MPG).';box.appendChild(p);return;}
var W=1200,t0=d.start,span=Math.max(d.end-t0,1e-9),svg=el('svg',{viewBox:'0 0 '+W+' 90'});
d.segments.forEach(function(s){var r=el('rect',{x:(s[0]-t0)/span*W,y:10,width:Math.max((s[1]-s[0])/span*W,0.5),
height:40,fill:colours[s[2]]});var t=el('title',{});t.textContent=s[2]+': '+(s[1]-s[0]).toFixed(1)+' s';
r.appendChild(t);svg.appendChild(r);});
d.disruptions.forEach(function(x){svg.appendChild(el('line',{x1:(x-t0)/span*W,x2:(x-t0)/span*W,y1:4,y2:56,
stroke:'#000','stroke-width':2}));});
d.checkpoints.forEach(function(x){svg.appendChild(el('circle',{cx:(x-t0)/span*W,cy:68,r:3,fill:'#f9a825'}));});
box.appendChild(svg);var tb=document.createElement('table');
Object.keys(d.badput).forEach(function(k){if(!d.badput[k])return;var r=tb.insertRow(),a=r.insertCell(),
b=r.insertCell();a.textContent=k;b.textContent=d.badput[k].toLocaleString()+' s';});box.appendChild(tb);});
document.body.dataset.ready='1';
})();
"""


def to_html(report: Report, generated_at: float, timelines: dict[str, Any] | None = None) -> str:
    """The wall-screen page. `timelines`: the drill-down data of some jobs (see `pipeline.timelines`)."""
    f = report["fleet"]
    w = f["window"]
    charts = []
    if report["periods"]:
        charts += [factors_chart(report["periods"]), badput_area_chart(report["periods"])]
    charts.append(breakdown_chart(f))
    windows = "".join(
        f"<tr><th>last {e(r['window'])}</th>" + "".join(f"<td>{_pct(r[k])}</td>" for k in FACTORS) + "</tr>"
        for r in report.get("windows", [])
    )
    window_table = (
        "<section><h2>Rolling windows</h2><table><tr><th></th><th>MPG</th><th>SG</th><th>RG</th><th>PG</th></tr>"
        + windows
        + "</table></section>"
        if windows
        else ""
    )
    exclusions = "".join(
        f"<li>{e(_when(x['start']))} to {e(_when(x['end']))}: {e(x['reason'] or 'no reason given')}</li>"
        for x in report.get("exclusions", [])
    )
    excluded = f"<section><h2>Not charged</h2><ul>{exclusions}</ul></section>" if exclusions else ""
    colours = {str(LABEL[k]) if k in LABEL else k: v for k, v in COLOURS.items()}
    return "".join(
        [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width,initial-scale=1'>",
            f"<title>ML Productivity Goodput</title><style>{_STYLE}</style></head><body>",
            "<h1>ML Productivity Goodput</h1>",
            f"<p class='meta'>{e(_when(w['start']))} to {e(_when(w['end']))} · {f['jobs']:,} jobs · "
            f"{_hours(f['all_allocated_chip_s'])} all-allocated chip-hours · capacity basis "
            f"{e(str(f['capacity_basis']) + capacity_gap(f))} · generated at {e(_when(generated_at))}</p>",
            "".join(f"<p class='meta'>Input: {e(note)}.</p>" for note in input_notes(report)),
            _tiles(report),
            "<div class='grid2'>" + "".join(charts) + "</div>",
            window_table,
            excluded,
            _disruptions(report),
            _jobs(report),
            f"<script type='application/json' id='drill-data'>{_script_json(timelines or {})}</script>",
            f"<script type='application/json' id='colours'>{_script_json(colours | COLOURS)}</script>",
            f"<script>{_SCRIPT}</script></body></html>",
        ]
    )
