"""Use case of `sweep`: read the spec, run its points on an executor, keep each finished point; and the runner
of one task, which the executors are given (a worker anywhere runs it: plain data in, plain data out).

The spec, its input files and the points' files are the state layer's (`tpufleet.state.sweepstore`); expanding
the spec, the tasks, the points' summaries are the core's (`tpufleet.sweep`); the simulations are the use cases
`simulate.simulate` and `availability.report`.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from tpufleet.errors import BadInput
from tpufleet.ops.availability import report as availability_report
from tpufleet.ops.simulate import simulate
from tpufleet.state import sweepstore
from tpufleet.sweep import driver
from tpufleet.sweep.backends import Executor
from tpufleet.sweep.runs import Result, Task, fleet_inputs, fleet_metrics, pod_cubes, sizes_of

__all__ = ["run", "run_task"]

ProgressBar = Callable[[], AbstractContextManager[Any]]  # a context whose value has .set(done, total)


def run(
    spec_file: Path,
    out: Path,
    executor: Callable[[int], Executor],
    *,
    resume: bool = False,
    keep_events: bool = False,
    progress: ProgressBar,
    warn: driver.Warn,
) -> tuple[driver.Outcome, Executor]:
    """Run the sweep of `spec_file` into `out` on the executor `executor(tasks)` makes once every point is checked
    (then closes it; `tasks`: the runs, which no more workers could share); the outcome and the executor (its kind
    and workers say how the sweep ran)."""
    sweepstore.check_out(out)
    sweep = sweepstore.load_spec(spec_file)  # every point is checked before any work starts
    if keep_events and sweep.simulation != "fleet":
        raise BadInput(f"bad option --keep-events: {sweep.simulation} sweeps have no events to keep (fleet sweeps do)")
    runner = executor(len(sweep.points) * len(sweep.seeds))
    try:
        with progress() as bar:
            points = sweepstore.prepare(out, resume, keep_events)
            outcome = driver.run(
                sweep, points, runner, resume=resume, keep_events=keep_events, progress=bar.set, warn=warn
            )
    finally:
        runner.close()
    return outcome, runner


def run_task(task: Task) -> Result:
    """Run one replication of one point; its figures, or the error (`bug`: not an expected refusal)."""
    from tpufleet.errors import TpufleetError

    head = {"point": task["point"], "replication": task["replication"], "seed": task["seed"]}
    try:
        if task["simulation"] == "fleet":
            metrics, events = _fleet(task["params"], task["inputs"], task["seed"], task["keep_events"], task["shipped"])
        else:
            cubes = pod_cubes(task["params"], task["shipped"])  # None: the built-in TPU v4 pod
            args = (task["params"], task["seed"]) if cubes is None else (task["params"], task["seed"], cubes)
            metrics, events = _availability(*args), None
    except TpufleetError as exc:
        return {**head, "error": str(exc), "bug": False}
    except Exception as exc:  # noqa: BLE001 - reported with its point; the other points go on
        return {**head, "error": f"{type(exc).__name__}: {exc}", "bug": True}
    return {**head, "metrics": metrics, "events": events}


def _fleet(
    params: Mapping[str, Any], inputs: Mapping[str, Any], seed: int, keep_events: bool, shipped: Mapping[str, Any]
) -> tuple[dict[str, float | None], bytes | None]:
    result = simulate(*fleet_inputs(params, inputs, seed, shipped), reroute_costs=shipped.get("reroute_costs"))
    events = None
    if keep_events:
        from tpufleet.simulation.log import jsonl

        events = gzip.compress(jsonl(result.entries), mtime=0)
    return fleet_metrics(result.summary), events


def _availability(params: Mapping[str, Any], seed: int, cubes: int | None = None) -> dict[str, float | None]:
    """Job availability by slice size (cubes), Monte Carlo (seeded) and exact, in a pod of `cubes` cubes (the
    point's generation's; None: the built-in TPU v4 pod, with its static twin)."""
    result = availability_report(
        sizes_of(params),
        params["host_availability"],
        params["ocs_availability"],
        params["trials"],
        seed,
        "given",
        pod_cubes=cubes,
    )
    metrics: dict[str, float | None] = {}
    for row in result["results"]:
        k = row["cubes"]
        metrics[f"reconfigurable_ft.{k}"] = row["reconfigurable_ft_mc"]
        metrics[f"reconfigurable.{k}"] = row["reconfigurable_mc"]
        metrics[f"reconfigurable_ft_exact.{k}"] = row["reconfigurable_ft"]
        if "static" in row:
            metrics[f"static.{k}"] = row["static"]
    return metrics
