"""Rendering of command results: json / yaml for scripts, plain tables for people."""

from __future__ import annotations

import json
from collections.abc import Callable

import typer


def to_json(data) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def emit(data, fmt, table: Callable[[], str]) -> None:
    value = getattr(fmt, "value", fmt)
    if value == "json":
        typer.echo(to_json(data))
    elif value == "yaml":
        import yaml

        typer.echo(yaml.safe_dump(data, sort_keys=False, default_flow_style=None).rstrip())
    else:
        typer.echo(table())


def grid(rows: list[list], headers: list[str]) -> str:
    from tabulate import tabulate

    if not rows:
        return "(none)"
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def flat_table(rows: list[dict], fmt: str) -> str:
    """CSV or Markdown of a list of flat-ish objects (lists become space-separated cells)."""
    if not rows:
        return ""
    headers = list(rows[0])
    cells = [[" ".join(map(str, v)) if isinstance(v, list) else v for v in (r.get(h) for h in headers)] for r in rows]
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
