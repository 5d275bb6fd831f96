"""Running a sweep: the points not finished yet go to the executor as tasks, one per replication; each point is
saved as soon as all its replications are back, and a point whose run failed is reported with its parameters
while the others go on. With `resume`, a point whose saved file does not check (`Points.read_point`) is run again
and `warn` is told why. The points are kept by a `Points` (`tpufleet.state.sweepstore.PointDir` keeps them in
files); the runs by an `Executor` (`backends`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tpufleet.errors import BadStateFile
from tpufleet.sweep.backends import Executor
from tpufleet.sweep.runs import Result, Task
from tpufleet.sweep.spec import Point, SweepSpec
from tpufleet.sweep.stats import summarize

Progress = Callable[[int, int], None]  # (points done, points in all)
Warn = Callable[[str], None]  # one line for the operator


class Points(Protocol):
    """Where the finished points are kept (`tpufleet.state.sweepstore.PointDir`: one file per point)."""

    def read_point(self, key: str, seeds: Sequence[int]) -> list[dict[str, float | None]] | None:
        """The runs saved for the point `key`, None if none; BadStateFile if what is saved does not check."""
        ...

    def save(self, saved: Mapping[str, Any]) -> None:
        """Keep a finished point (its key, index, parameters, seeds, runs and summary)."""
        ...

    def write_events(self, key: str, replication: int, data: bytes) -> str:
        """Keep a run's events (gzip-compressed JSONL) under the point's key; where they are."""
        ...

    def has_events(self, key: str, replications: int) -> bool:
        """Whether the events of every replication of the point `key` are kept."""
        ...


@dataclass
class Outcome:
    spec: SweepSpec
    points: dict[int, dict[str, Any]] = field(default_factory=dict)  # index -> finished point
    failed: dict[int, dict[str, Any]] = field(default_factory=dict)  # index -> its first failed run
    resumed: int = 0  # points taken from an earlier run's files
    ran: int = 0  # points run now (finished or failed)
    events: list[str] = field(default_factory=list)  # event files written (--keep-events)
    events_absent: int = 0  # resumed points without their events (--keep-events: a resumed point is not run)


def tasks(spec: SweepSpec, points: list[Point], keep_events: bool) -> list[Task]:
    """One task per replication of each point, in point order: plain data a worker anywhere can run."""
    out = []
    for point in points:
        used = {name: spec.inputs[name] for name in spec.inputs if name in point.params.values()}
        for replication, seed in enumerate(spec.seeds):
            out.append(
                {
                    "simulation": spec.simulation,
                    "point": point.index,
                    "key": point.key,
                    "params": point.params,
                    "inputs": used,
                    "shipped": spec.shipped,
                    "replication": replication,
                    "seed": seed,
                    "keep_events": keep_events,
                }
            )
    return out


def run(
    spec: SweepSpec,
    points: Points,
    executor: Executor,
    *,
    resume: bool = False,
    keep_events: bool = False,
    progress: Progress | None = None,
    warn: Warn | None = None,
) -> Outcome:
    outcome = Outcome(spec)
    if resume:
        _resume(outcome, points, warn or (lambda line: None), keep_events and spec.simulation == "fleet")
    todo = [p for p in spec.points if p.index not in outcome.points]
    by_index = {p.index: p for p in todo}
    if progress is not None:
        progress(outcome.resumed, len(spec.points))
    back: dict[int, dict[int, Result]] = {p.index: {} for p in todo}
    for result in executor.run(tasks(spec, todo, keep_events)):
        index = result["point"]
        back[index][result["replication"]] = result
        if keep_events and result.get("events") is not None:
            outcome.events.append(points.write_events(by_index[index].key, result["replication"], result["events"]))
        if len(back[index]) == len(spec.seeds):
            _finish(outcome, points, by_index[index], back.pop(index))
            if progress is not None:
                progress(len(outcome.points) + len(outcome.failed), len(spec.points))
    return outcome


def _resume(outcome: Outcome, points: Points, warn: Warn, events: bool) -> None:
    """Take the points an earlier run saved; a file that does not check is not used (its point runs again and
    the file is replaced), and `warn` says which and why. With `events` (--keep-events), count the points taken
    whose events an earlier run did not keep: they are not run, so nothing writes them."""
    for point in outcome.spec.points:
        try:
            runs = points.read_point(point.key, outcome.spec.seeds)
        except BadStateFile as exc:
            warn(f"{exc}: point {point.index} runs again")
            continue
        if runs is not None:
            outcome.points[point.index] = _public(point, runs)
            outcome.resumed += 1
            if events and not points.has_events(point.key, len(outcome.spec.seeds)):
                outcome.events_absent += 1


def _finish(outcome: Outcome, points: Points, point: Point, results: dict[int, Result]) -> None:
    """Save the point, or record its first failed run (it is not saved: --resume runs it again)."""
    outcome.ran += 1
    ordered = [results[r] for r in sorted(results)]
    errors = [r for r in ordered if "error" in r]
    if errors:
        first = errors[0]
        outcome.failed[point.index] = {
            "index": point.index,
            "params": point.params,
            "replication": first["replication"],
            "seed": first["seed"],
            "error": first["error"],
            "bug": first["bug"],
            "failed_runs": len(errors),
        }
        return
    runs = [r["metrics"] for r in ordered]
    saved = {
        "key": point.key,
        "index": point.index,
        "params": point.params,
        "seeds": list(outcome.spec.seeds),
        "runs": runs,
        "metrics": summarize(runs),
    }
    points.save(saved)
    outcome.points[point.index] = _public(point, runs)


def _public(point: Point, runs: list[dict[str, float | None]]) -> dict[str, Any]:
    """A finished point as the sweep's output shows it (its runs stay in its file): the spec's parameters and the
    summary of the runs, worked out the same way for a point just run and one read back."""
    return {"index": point.index, "key": point.key, "params": point.params, "metrics": summarize(runs)}
