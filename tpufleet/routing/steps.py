"""How far the router has got: its slow steps (wild-first repairs, channel-dependency analyses, reach checks),
counted.

The core prints nothing: a caller that shows progress (the CLI's bar on a terminal, its `--verbose` timing line)
installs a `Steps` around its work with `using`; the router announces the steps it plans (`plan`) and those it has
done (`advance`). Without one installed, both do nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

KINDS = ("repair", "analysis", "reach")


@dataclass
class Steps:
    """Steps planned and done, by kind; `report(done, total)` is called after every change."""

    report: Callable[[int, int], None] | None = None
    planned: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    done: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def _tell(self) -> None:
        if self.report is not None:
            done = sum(self.done.values())
            self.report(done, max(done, sum(self.planned.values())))

    def summary(self) -> str:
        """`6 wild-first repairs, 2 route analyses` (what was done), then `, 24 reach checks` when there were any."""
        repairs, analyses, reaches = self.done["repair"], self.done["analysis"], self.done["reach"]
        return (
            f"{repairs} wild-first repair{'s' if repairs != 1 else ''}, "
            f"{analyses} route analys{'e' if analyses != 1 else 'i'}s"
            + (f", {reaches} reach check{'s' if reaches != 1 else ''}" if reaches else "")
        )


_current: ContextVar[Steps | None] = ContextVar("tpufleet_router_steps", default=None)


def plan(kind: str, count: int) -> None:
    """`count` more steps of `kind` are to come (a lower bound: more may be planned later)."""
    steps = _current.get()
    if steps is not None and count > 0:
        steps.planned[kind] += count
        steps._tell()


def advance(kind: str, planned: bool = True) -> None:
    """One step of `kind` is done (`planned`: it was announced by `plan`)."""
    steps = _current.get()
    if steps is not None:
        steps.done[kind] += 1
        if not planned:
            steps.planned[kind] += 1
        steps._tell()


def unplan(kind: str, count: int) -> None:
    """`count` announced steps of `kind` will not be taken after all (the verdict was decided without them)."""
    steps = _current.get()
    if steps is not None and count > 0:
        steps.planned[kind] = max(steps.done[kind], steps.planned[kind] - count)
        steps._tell()


@contextmanager
def using(steps: Steps | None) -> Iterator[Steps | None]:
    token = _current.set(steps)
    try:
        yield steps
    finally:
        _current.reset(token)
