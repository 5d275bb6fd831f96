"""A progress bar on stderr for commands that take more than a moment, only when stderr is a terminal.

Scripts (stderr a pipe or a file) get nothing extra. The core reports progress through plain callbacks
(`bar.advance(n)` or `bar.set(done, total)`), so it stays free of any terminal code.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Bar:
    """What a command hands the core: `advance(n)` by increments, or `set(done, total)` by position."""

    def __init__(self, bar: Any = None, task: Any = None) -> None:
        self._bar, self._task = bar, task

    def advance(self, n: float) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def set(self, done: float, total: float | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, **({} if total is None else {"total": total}))


@contextmanager
def progress(label: str, total: float | None, count: bool = False, animated: bool = True) -> Iterator[Bar]:
    """A transient bar with an ETA on a terminal (with `count`, "done/total" instead of a percentage); a bar that
    draws nothing otherwise. Not `animated`, it is drawn once, as the work starts, by no thread of its own (it does
    not move): a process running one thread alone may fork (`state.forkedjobs.can_fork`)."""
    if not sys.stderr.isatty():
        yield Bar()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    amount = MofNCompleteColumn() if count else TaskProgressColumn()
    columns = (TextColumn("{task.description}"), BarColumn(), amount, TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True, auto_refresh=animated) as bar:
        yield Bar(bar, bar.add_task(label, total=total))


@contextmanager
def routing_progress(label: str, verbose: bool = False) -> Iterator[None]:
    """The router's slow steps (`tpufleet.routing.steps`) as a bar with their count and an ETA on a terminal;
    with `verbose`, once done, a timing line on stderr (`tpufleet: analysing: 6 wild-first repairs, 0 route
    analyses in 21.4 s`), whether or not it is a terminal."""
    import time

    from tpufleet.routing import steps

    start = time.perf_counter()
    with progress(label, None, count=True) as bar:
        counted = steps.Steps(report=bar.set)
        with steps.using(counted):
            yield
    if verbose:
        print(f"tpufleet: {label}: {counted.summary()} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
