"""Rendering of command results: json / yaml for scripts, plain tables for people."""

from __future__ import annotations

import json
import sys
from typing import Callable

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


def note(message: str) -> None:
    """A human remark on stderr, so stdout stays clean for pipes."""
    typer.echo(message, err=True)


def is_tty() -> bool:
    return sys.stdout.isatty()
