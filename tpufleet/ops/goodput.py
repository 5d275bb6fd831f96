"""Use case of `goodput-report` (and of `metrics --goodput`): read the logs, account every job, report.

`tpufleet.state.goodputlogs` reads the logs and the --exclude file; `tpufleet.goodput.pipeline.from_log` makes
the report of what was read. With `fleet` (``--capacity state``), the fleet inventory's chips are the capacity,
per accelerator: each pod's generation (`fleet_capacity`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tpufleet.constants import CHIPS_PER_CUBE
from tpufleet.errors import BadInput
from tpufleet.goodput import metrics
from tpufleet.goodput.pipeline import NoJobEvents, ReportOptions
from tpufleet.model import Fleet
from tpufleet.ops import goodputforked, goodputparts
from tpufleet.state import goodputlogs

ACCELERATOR = "tpu-v4"  # the accelerator of a pod of the built-in TPU v4 model (--capacity state)


def fleet_capacity(fleet: Fleet) -> list[tuple[str, int]]:
    """(accelerator, chips) of the fleet's pods, by generation in pod order: the accelerator is the name the
    simulation and the logs give it (the generation's, ``tpu-v4`` for the built-in model), the chips each pod's
    cubes x 64 (a whole TPU7x superpod 9,216, a TPU v5p pod 8,960, a TPU v4 pod 4,096)."""
    chips: dict[str, int] = {}
    for pod in fleet.pods:
        name = ACCELERATOR if pod.generation is None else pod.generation.name
        chips[name] = chips.get(name, 0) + len(pod.cubes) * CHIPS_PER_CUBE
    return list(chips.items())


def gke_labels(fleet: Fleet) -> list[tuple[str, str]]:
    """(accelerator, GKE accelerator label) of the fleet's pods' generations: logs from a GKE cluster name the
    accelerator by its node label (tpu-v4-podslice, tpu-v5p-slice), the inventory by its generation."""
    from tpufleet.state import generations

    labels: dict[str, str] = {}
    for pod in fleet.pods:
        gen = pod.generation if pod.generation is not None else generations.shipped(generations.DEFAULT)
        labels[ACCELERATOR if pod.generation is None else gen.name] = gen.gke_accelerator
    return list(labels.items())


def build(
    logs: Sequence[str | Path],
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
    cluster: str | None = None,
    workers: int | None = None,
    whole_lines: bool = False,
    files_only: bool = False,
) -> metrics.Report:
    """The report of the logs `logs` (``-``: standard input; text: the names as typed, for the messages) in `fmt`
    (native or ml-goodput).

    `capacity`: (accelerator, chips) pairs over the logs' capacity records; `fleet`: the inventory's chips
    instead. With `keep_timelines`, also (key ``timelines``, for the HTML page only) the drill-down timelines of
    that many jobs, the lowest MPG first. With `cluster` (a Dask scheduler's address) or `workers` (a local
    Dask cluster's), the logs are read and accounted there (`goodputparts`), with the same report. With
    `whole_lines` (logs still being written, as `serve` reads them), a last line not yet finished is left out;
    with `files_only` (as `serve` reads them again as they change), a log that is not a regular file is refused."""
    aliases: list[tuple[str, str]] = []
    if fleet is not None:
        capacity, aliases = fleet_capacity(fleet), gke_labels(fleet)
    paths = [goodputlogs.log_path(log) for log in logs]
    if files_only:
        goodputlogs.refuse_standard_input(paths)
    goodputlogs.refuse_repeated(logs)
    exclusions = goodputlogs.load_exclusions(exclude) if exclude is not None else []
    options = ReportOptions(
        by or (), period, since, until, capacity or (), windows or (), exclusions, keep_timelines, aliases
    )
    result: metrics.Report | None
    try:
        if cluster is not None or workers:
            result = goodputparts.report(paths, fmt, skip_bad, cluster, workers, options)
        else:
            # several large logs: read side by side in forked processes (None: not worth it, or read them here)
            result = None if whole_lines or files_only else goodputforked.report(paths, fmt, skip_bad, options)
            if result is None:
                log = goodputlogs.load(paths, fmt, skip_bad, whole_lines=whole_lines, files_only=files_only)
                result = goodputparts.report_here(log, options)
    except NoJobEvents as exc:
        raise BadInput(f"{exc} ({_named(paths)})") from None
    result["input"] = {"files": [str(p) for p in paths], "format": fmt, **result["input"]}
    return result


def _named(paths: list[Path], shown_at_most: int = 3) -> str:
    """The logs, as a message names them: the first few, and how many more."""
    names = ", ".join(str(p) for p in paths[:shown_at_most])
    return names + (f" and {len(paths) - shown_at_most} more" if len(paths) > shown_at_most else "")
