"""The simulation's events, one frozen dataclass per kind, and the queue that orders them by (time, sequence)."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from tpufleet.ids import HostId, LinkId, OcsId
from tpufleet.shapes import Shape
from tpufleet.simulation.inputs import FaultKind, JobSpec
from tpufleet.simulation.job import Job

FaultTarget = HostId | LinkId | OcsId


@dataclass(frozen=True)
class Arrival:
    """A job is submitted: drawn at random (spec None) or listed in the workload file."""

    time: float
    shape: Shape
    hours: float  # of useful compute
    spec: JobSpec | None = None
    slices: int = 1  # a drawn multislice job: slices of `shape`
    elastic_min: int | None = None


@dataclass(frozen=True)
class Completion:
    """The job's expected end; stale (ignored) unless the job's version still matches."""

    time: float
    job_id: str
    version: int


@dataclass(frozen=True)
class FaultStrike:
    """A component fails, or a machine is drained for maintenance; also the id of the fault while it is open."""

    time: float
    kind: FaultKind
    target: FaultTarget


@dataclass(frozen=True)
class Repair:
    """The component is back. `fault` is the strike being repaired for network faults (jobs rerouted around it)."""

    time: float
    kind: FaultKind
    target: FaultTarget
    fault: FaultStrike | None = None


@dataclass(frozen=True)
class Schedule:
    """Try to place the waiting jobs (something was freed or repaired)."""

    time: float


@dataclass(frozen=True)
class Eviction:
    """A drained machine's job leaves (after its checkpoint); ignored if the job has restarted since `run`."""

    time: float
    job_id: str
    run: int


@dataclass(frozen=True, eq=False)
class RestartAfterRepair:
    """Static pod: the job waiting on its block restarts now that the machine is repaired."""

    time: float
    job: Job


Event = Arrival | Completion | FaultStrike | Repair | Schedule | Eviction | RestartAfterRepair


class EventQueue:
    """A heap of events keyed by (time, sequence): events at the same time come out in the order pushed."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Event]] = []
        self._sequence = itertools.count()

    def push(self, event: Event) -> None:
        heapq.heappush(self._heap, (event.time, next(self._sequence), event))

    def pop(self) -> Event:
        return heapq.heappop(self._heap)[2]

    def __bool__(self) -> bool:
        return bool(self._heap)

    def __len__(self) -> int:
        return len(self._heap)
