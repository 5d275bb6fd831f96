"""Use case of `goodput-report` (and of `metrics --goodput`): read the logs, account every job, report.

`tpufleet.state.goodputlogs` reads the logs and the --exclude file; `tpufleet.goodput.pipeline.from_log` makes
the report of what was read. With `fleet` (``--capacity state``), the fleet inventory's chips are the capacity.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tpufleet.goodput import metrics
from tpufleet.goodput.pipeline import from_log
from tpufleet.model import Fleet, inventory_counts
from tpufleet.state import goodputlogs

ACCELERATOR = "tpu-v4"  # the accelerator of the fleet tpufleet manages (--capacity state)


def build(
    paths: list[Path],
    fmt: str = "native",
    by: list[str] | None = None,
    period: str | None = None,
    since: float | None = None,
    until: float | None = None,
    skip_bad: bool = False,
    capacity: Sequence[tuple[str, int]] | None = None,
    windows: list[tuple[str, float]] | None = None,
    exclude: Path | None = None,
    keep_timelines: int = 0,
    fleet: Fleet | None = None,
) -> metrics.Report:
    """The report of the logs `paths` (``-``: standard input) in `fmt` (native or ml-goodput).

    `capacity`: (accelerator, chips) pairs over the logs' capacity records; `fleet`: the inventory's chips
    instead. With `keep_timelines`, also (key ``timelines``, for the HTML page only) the drill-down timelines of
    that many jobs, the lowest MPG first."""
    if fleet is not None:
        capacity = [(ACCELERATOR, inventory_counts(fleet)["chips"])]
    exclusions = goodputlogs.load_exclusions(exclude) if exclude is not None else []
    log = goodputlogs.load(paths, fmt, skip_bad)
    result = from_log(log, by, period, since, until, capacity, windows, exclusions, keep_timelines)
    result["input"] = {"files": [str(p) for p in paths], "format": fmt, **result["input"]}
    return result
