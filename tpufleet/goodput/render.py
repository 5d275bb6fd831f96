"""Goodput report renderings: terminal table, CSV and Markdown (pure; the HTML page is `wall`)."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Mapping
from typing import Any

from tpufleet.goodput.health import SLOW_FACTOR
from tpufleet.goodput.jobaccount import BUCKETS
from tpufleet.goodput.metrics import Report
from tpufleet.text import markdown_text, printable, spreadsheet_cell

COLUMNS = ("sg", "rg", "pg", "mpg")


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def _basis(row: Mapping[str, Any]) -> str:
    """A mark on a PG that is (partly) estimated from step times rather than from logged program data."""
    basis = row.get("pg_basis")
    return f" ({basis})" if basis in ("estimated", "mixed") else ""


def capacity_gap(fleet: Mapping[str, Any]) -> str:
    """What the fleet figures leave out, after the capacity basis: the accelerators the capacity does not name
    (their jobs' chip-time is over no capacity of its own), or nothing."""
    names = fleet.get("accelerators_without_capacity") or []
    shown = ", ".join(printable(n) for n in names)  # names from the logs: on one line, no escape sequence left live
    return f"; none for {shown}: its jobs are not in the fleet figures" if names else ""


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def rows(report: Report) -> list[dict[str, Any]]:
    """One flat row per fleet, segment, period and job (the CSV / Markdown view)."""
    out: list[dict[str, Any]] = []

    def add(
        scope: str,
        key: str,
        r: Mapping[str, Any],
        productive: float,
        allocated: float,
        buckets: Mapping[str, float],
    ) -> None:
        row = {
            "scope": scope,
            "key": key,
            **{c: r.get(c) for c in COLUMNS},
            "productive_chip_s": productive,
            "all_allocated_chip_s": allocated,
        }
        row.update({f"{b}_chip_s": buckets.get(b, 0.0) for b in BUCKETS})
        out.append(row)

    f = report["fleet"]
    add("fleet", "all", f, f["productive_chip_s"], f["all_allocated_chip_s"], f["badput_chip_s"])
    for s in report["segments"]:
        add(
            "segment",
            f"{s['dimension']}={s['value']}",
            s,
            s["productive_chip_s"],
            s["all_allocated_chip_s"],
            s["badput_chip_s"],
        )
    for p in report["periods"]:
        add("period", p["period"], p, p["productive_chip_s"], p["all_allocated_chip_s"], p["badput_chip_s"])
    for w in report.get("windows", []):
        add("window", f"last {w['window']}", w, w["productive_chip_s"], w["all_allocated_chip_s"], w["badput_chip_s"])
    for j in report["jobs"]:
        c = j["chips"]
        add(
            "job",
            j["job"],
            j,
            round(j["productive_s"] * c, 3),
            round(j["all_allocated_s"] * c, 3),
            {b: round(v * c, 3) for b, v in j["badput_s"].items()},
        )
    return out


def _csv_cell(value: Any) -> Any:
    """Text a spreadsheet would run as a formula gets a leading quote (`spreadsheet_cell`); numbers stay numbers."""
    return spreadsheet_cell(value) if isinstance(value, str) else value


def to_csv(report: Report) -> str:
    data = rows(report)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(data[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _csv_cell(v) for k, v in row.items()} for row in data)
    return buf.getvalue()


def to_markdown(report: Report) -> str:
    from tabulate import tabulate

    f = report["fleet"]
    parts = [
        "# ML Productivity Goodput",
        "",
        f"Window {_when(f['window']['start'])} to {_when(f['window']['end'])}, {f['jobs']} jobs, capacity basis "
        f"{f['capacity_basis']}{markdown_text(capacity_gap(f))}.",
        "",
        *(f"Input: {markdown_text(note)}.\n" for note in input_notes(report)),
    ]
    table = [[markdown_text(r["scope"]), markdown_text(r["key"]), *[_f(r[c]) for c in COLUMNS]] for r in rows(report)]
    parts.append(
        tabulate(table, headers=["scope", "key", "SG", "RG", "PG", "MPG"], tablefmt="github", disable_numparse=True)
    )
    parts += ["", "## Badput (share of all-allocated chip-time)", ""]
    parts.append(
        tabulate([[b, f"{f['badput_pct'][b]:.2f}%"] for b in BUCKETS], headers=["bucket", "share"], tablefmt="github")
    )
    return "\n".join(parts) + "\n"


def to_table(report: Report, top: int = 15) -> str:
    """The terminal report: headline, badput, segments, periods, windows, the worst jobs, slow periods, the
    checkpoint advice."""
    lines = _headline(report)
    if report["segments"]:
        rows = [
            [s["dimension"], s["value"], s["jobs"], *[_f(s[c]) for c in COLUMNS], s["sg_basis"]]
            for s in report["segments"]
        ]
        lines += ["", tabulate_rows(rows, ["by", "segment", "jobs", "SG", "RG", "PG", "MPG", "SG basis"])]
    if report["periods"]:
        rows = [[p["period"], *[_f(p[c]) for c in COLUMNS]] for p in report["periods"]]
        lines += ["", tabulate_rows(rows, ["period", "SG", "RG", "PG", "MPG"])]
    if report.get("windows"):
        rows = [[f"last {w['window']}", *[_f(w[c]) for c in COLUMNS]] for w in report["windows"]]
        lines += ["", tabulate_rows(rows, ["window", "SG", "RG", "PG", "MPG"])]
    if report.get("exclusions"):
        lines.append(
            f"\nnot charged: {len(report['exclusions'])} excluded span(s), {report['fleet']['excluded_chip_s']:,.0f} chip-s"
        )
    lines += _job_lines(report, top)
    lines += _slow_lines(report, top)
    lines += _advice_lines(report["fleet"].get("checkpoint_advice"))
    lines += [f"({note})" for note in input_notes(report)]
    return "\n".join(lines)


def input_notes(report: Report) -> list[str]:
    """What the figures lack of the input, which every rendering says (the Markdown and HTML reports said
    nothing of it): the malformed records --skip-bad skipped, and the gzip logs cut off before their end."""
    notes = [f"skipped {report['input']['skipped']} malformed record(s)"] if report["input"]["skipped"] else []
    for cut in report["input"].get("cut_off", ()):
        where = "<stdin>" if cut["file"] == "-" else cut["file"]  # standard input, as `input.files` gives it
        notes.append(f"gzip stream cut off at {where}:{cut['line']}: the rest of that log is missing")
    return notes


def _headline(report: Report) -> list[str]:
    f = report["fleet"]
    lines = [
        f"ML Productivity Goodput  {_when(f['window']['start'])} .. {_when(f['window']['end'])}  ({f['jobs']} jobs)",
        f"  fleet  SG {_f(f['sg'])}  x  RG {_f(f['rg'])}  x  PG {_f(f['pg'])}{_basis(f)}  =  MPG {_f(f['mpg'])}"
        f"   (capacity: {f['capacity_basis']}{capacity_gap(f)})",
        f"  disruptions {f['disruptions']}" + (f", MTBF {f['mtbf_h']:.2f} h" if f["mtbf_h"] else ""),
        "",
        "badput (share of all-allocated chip-time):",
    ]
    return lines + [f"  {b:<42} {f['badput_pct'][b]:7.2f}%" for b in BUCKETS if f["badput_chip_s"][b]]


def _job_lines(report: Report, top: int) -> list[str]:
    jobs = sorted(report["jobs"], key=lambda j: (j["mpg"] is None, j["mpg"] or 0))[:top]
    rows = [
        [j["job"], j["accelerator"], j["chips"], j["phase"], *[_f(j[c]) for c in COLUMNS], j["disruptions"]]
        for j in jobs
    ]
    return [
        "",
        f"jobs (lowest MPG first, {len(jobs)} of {len(report['jobs'])}):",
        tabulate_rows(rows, ["job", "accelerator", "chips", "phase", "SG", "RG", "PG", "MPG", "disr."]),
    ]


def _advice_lines(advice: dict[str, Any] | None) -> list[str]:
    if not advice:
        return []
    return [
        "",
        f"checkpoint interval advice: Young {advice['young_interval_s']:.0f} s, Daly {advice['daly_interval_s']:.0f} s"
        + (f" (now {advice['current_interval_s']:.0f} s)" if advice.get("current_interval_s") else "")
        + (
            f"; predicted RG {advice.get('rg_at_current', float('nan')):.3f} now -> {advice['rg_at_daly']:.3f} at Daly"
            if "rg_at_daly" in advice and "rg_at_current" in advice
            else ""
        ),
    ]


def slow_rows(report: Report) -> list[dict[str, Any]]:
    """Every slow period of every job, the worst slowdown first."""
    out = [
        {"job": j["job"], **p} for j in report["jobs"] for p in ((j.get("step_time") or {}).get("slow_periods") or [])
    ]
    return sorted(out, key=lambda p: (-p["slowdown"], p["job"], p["start"]))


def _slow_lines(report: Report, top: int) -> list[str]:
    periods = slow_rows(report)
    if not periods:
        return []
    shown = periods[:top]
    return [
        "",
        f"slow periods (steps over {SLOW_FACTOR:.1f}x the job's empirical ideal, worst first, {len(shown)} of "
        f"{len(periods)}):",
        tabulate_rows(
            [
                [
                    p["job"],
                    _when(p["start"]),
                    _when(p["end"]),
                    p["steps"],
                    f"{p['mean_step_s']:.2f}",
                    f"{p['slowdown']:.2f}x",
                ]
                for p in shown
            ],
            ["job", "from", "to", "steps", "mean step s", "slowdown"],
        ),
    ]


def tabulate_rows(rows_: list[list[Any]], headers: list[str]) -> str:
    """A table whose text cells (job names from the logs) stay on one line: a newline in one would forge a row."""
    from tabulate import tabulate

    from tpufleet.text import printable

    cells = [[printable(c) if isinstance(c, str) else c for c in row] for row in rows_]
    return tabulate(cells, headers=headers, tablefmt="simple", disable_numparse=True)
