"""Rendering of command results: json / yaml for scripts, plain tables for people."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import typer

from tpufleet.text import share_text


def finite(data: Any) -> Any:
    """The same data with NaN and infinities as null: strict JSON has no such numbers (documented). Numbers and
    text of a subclass (a state file's floats keep the type they were read as) as the plain type: YAML's safe
    writer takes no other."""
    if isinstance(data, float):
        return float(data) if math.isfinite(data) else None
    if isinstance(data, str) and type(data) is not str:
        return str.__str__(data)  # an enum's value (str() of a str-mixin enum is its name: "SliceState.EVICTED")
    if isinstance(data, int) and type(data) not in (int, bool):
        return int(data)
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def to_json(data: Any) -> str:
    from tpufleet.jsontext import dumps_indented

    return dumps_indented(finite(data), 2, ensure_ascii=False)


# A command's own renderers of the report formats, by name ("csv", "md", "html"): each called only when chosen.
Renderers = Mapping[str, Callable[[], str]]


def data_text(data: Any, fmt: Any) -> str | None:
    """`data` as `-o json` or `-o yaml` prints it, ending in a newline (what `--out` writes in those formats);
    None for the other formats, which the command renders itself."""
    value = getattr(fmt, "value", fmt)
    if value == "json":
        return to_json(data) + "\n"
    if value == "yaml":
        from tpufleet.cli import yamltext

        return yamltext.dump(finite(data), sort_keys=False, default_flow_style=None).rstrip() + "\n"
    return None


def emit(data: Any, fmt: Any, table: Callable[[], str], renderers: Renderers | None = None) -> None:
    """`data` as `fmt` (an `Output` or `ReportOutput`) on stdout: json and yaml from the data itself, the table
    and the report formats from the command's renderers (the table made terminal-safe; csv, md and html escape
    their own cells). A format the command has no renderer for is refused (exit 2)."""
    value = getattr(fmt, "value", fmt)
    if value in ("csv", "md", "html"):
        if renderers is None or value not in renderers:
            from tpufleet.errors import BadInput

            raise BadInput(f"bad option -o/--output: this command does not write {value}")
        text = renderers[value]()
        if value == "md":  # a runbook people copy from: its commands run on the same fleet (cli/suggested)
            from tpufleet.cli.app import SETTINGS
            from tpufleet.cli.suggested import on_this_state

            text = on_this_state(text, SETTINGS.state_option)
        typer.echo(text, color=True)  # the data as the format escapes it, never stripped by Click
    elif value in ("json", "yaml"):
        typer.echo(data_text(data, value), nl=False)
    else:
        from tpufleet.cli.app import SETTINGS
        from tpufleet.cli.suggested import on_this_state
        from tpufleet.text import terminal_safe

        text = on_this_state(table(), SETTINGS.state_option)  # a command it suggests runs on the same fleet
        typer.echo(terminal_safe(text))  # values from outside never drive the terminal (ESC, bidi, NUL)


def grid(rows: list[list], headers: list[str]) -> str:
    from tabulate import tabulate

    if not rows:
        return "(none)"
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def _cell(value: Any, fmt: str) -> Any:
    """One table cell: lists space-separated; text that a spreadsheet would run as a formula is quoted (CSV),
    and HTML special characters are escaped (Markdown renders inline HTML)."""
    if isinstance(value, list):
        value = " ".join(map(str, value))
    if not isinstance(value, str):
        return value
    if fmt == "csv":
        from tpufleet.text import spreadsheet_cell

        return spreadsheet_cell(value)
    from tpufleet.text import markdown_text

    return markdown_text(value)  # one line per row, no link, image or emphasis


def flat_table(rows: list[dict], fmt: str) -> str:
    """CSV or Markdown of a list of flat-ish objects (lists become space-separated cells)."""
    if not rows:
        return ""
    headers = list(rows[0])
    cells = [[_cell(v, fmt) for v in (r.get(h) for h in headers)] for r in rows]
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(cells)
        return buf.getvalue().rstrip("\n")
    from tabulate import tabulate

    return tabulate(cells, headers=headers, tablefmt="github", disable_numparse=True)


def link_steps(indent: str, name: str, linked: Mapping[str, str]) -> list[str]:
    """The `next:` line that removes a symbolic link standing where the slice's routing tables belong, to go before
    its `tpufleet routes` (which refuses the link, never following it: `explain` gives the same step first); none
    without a link. `linked`: the store's `linked_tables`."""
    from tpufleet.ops.explain_routes import rm_step

    link = linked.get(name)
    return [] if link is None else [f"{indent}next: {rm_step(link)}  (a symbolic link where its tables belong)"]


def of_the_optimum(kept: float, kept_of_optimum: float | None, optimum: float | None = None, exact: bool = True) -> str:
    """After a throughput kept against the healthy tables (`kept`), what is kept of the healthy optimum, where the
    two differ to three places (twisted tori, whose healthy tables are heavier than the optimum); "" elsewhere.
    `optimum`: the optimum's max link load, named when given; not `exact`: a lower bound of it, so the share is at
    least the figure."""
    if kept_of_optimum is None or share_text(kept_of_optimum) == share_text(kept):
        return ""
    if optimum is None:
        return f" of the healthy tables, {share_text(kept_of_optimum)} of the healthy optimum"
    if not exact:
        return f" of the healthy tables, at least {share_text(kept_of_optimum)} of the healthy optimum (its load >= {optimum:g})"
    return f" of the healthy tables, {share_text(kept_of_optimum)} of the healthy optimum ({optimum:g})"
