"""A progress bar on stderr for commands that take more than a moment, only when stderr is a terminal.

Scripts (stderr a pipe or a file) get nothing extra. The core reports progress through a plain callback
(`advance(n)`), so it stays free of any terminal code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Advance = Callable[[int], None]


def _ignore(_: int) -> None:
    return None


@contextmanager
def progress(label: str, total: int) -> Iterator[Advance]:
    """Yields `advance(n)`; draws a transient bar with an ETA on a terminal, does nothing otherwise."""
    if not sys.stderr.isatty():
        yield _ignore
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
