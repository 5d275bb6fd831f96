"""A simulated job: what it is (shape, phase, priority) and where its timeline stands."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tpufleet.allocation import Allocation
from tpufleet.goodput.metrics import size_class
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.simulation.events import FaultStrike
    from tpufleet.simulation.reroute import StepModel

# Eviction preference when preempting, by size class: medium first, extra-large last.
VICTIM_ORDER = {"medium": 0, "large": 1, "small": 2, "extra-large": 3}


class JobState(enum.Enum):
    QUEUED = "queued"  # waiting to be placed (new, evicted or preempted)
    RUNNING = "running"
    REPAIRING = "repairing"  # static pod: stopped on its block until the machine is repaired
    DONE = "done"


@dataclass
class StartupStep:
    """One stage between (re)start and the first step: tpu_init, training_prep, compile, restore."""

    name: str
    remaining_s: float


@dataclass(eq=False)
class Job:
    id: str
    seq: int  # submission order
    shape: Shape
    phase: str
    framework: str
    priority: int  # rank: 0 is the highest
    priority_name: str
    fault_tolerant: bool  # opts in to fault-tolerant routing
    work: float  # seconds of useful compute
    submitted: float
    state: JobState = JobState.QUEUED
    alloc: Allocation | None = None  # where it runs (kept while it waits in place for a repair)
    displaced: bool = False  # waiting again because a fault stopped it (spare cubes are kept for such jobs)
    stopped_at: float = 0.0  # when a fault last displaced it
    first_start: float | None = None  # when it first started (None: still waiting)
    runs: int = 0  # starts so far; an eviction notice names the run it was given in
    version: int = 0  # bumped whenever a pending completion event goes stale
    expected_end: float = 0.0  # when its pending completion event says it ends (while it runs)
    t_mark: float = 0.0  # the time the timeline below has been brought up to
    progress: float = 0.0  # seconds of compute done (since the start, counting restored work)
    saved: float = 0.0  # progress in the last checkpoint
    step: int = 0
    saved_step: int = 0
    slowdown: float = 1.0  # step-time factor while running on rerouted tables
    network_faults: set[FaultStrike] = field(default_factory=set)  # open faults it is rerouted around
    startup: list[StartupStep] = field(default_factory=list)  # stages left before the first step
    startup_logged: bool = False  # the current startup stage's start event is written
    checkpoint_left: float | None = None  # seconds of checkpoint write left, None when not writing
    checkpoint_step: int = 0
    checkpoint_progress: float = 0.0
    to_checkpoint: float = 0.0  # compute seconds to the next checkpoint
    to_step: float = 0.0  # compute seconds to the next logged step
    model: StepModel | None = None  # the declared step, for the modelled slowdown when rerouted
    slices: int = 1  # a multislice job: this many slices of `shape`, gang-scheduled
    elastic_min: int | None = None  # an elastic multislice job runs on while it holds this many
    spread: bool = False  # its slices go to the pods holding fewest of them
    more: list[Allocation] = field(default_factory=list)  # the slices held beyond `alloc` (multislice)
    reroute_factor: float = 1.0  # step-time factor of the network faults it routes around

    @property
    def held(self) -> list[Allocation]:
        """Every slice it holds (one for a single-slice job)."""
        return ([self.alloc] if self.alloc is not None else []) + self.more

    @property
    def active(self) -> int:
        return len(self.held)

    def refresh_slowdown(self) -> None:
        """Step-time factor: its network faults', times total/active slices (the same global batch on fewer)."""
        self.slowdown = self.reroute_factor * (self.slices / self.active if self.active else 1.0)

    @property
    def chips(self) -> int:
        """All its slices' chips."""
        return self.shape.chips * self.slices

    @property
    def size(self) -> str:
        return size_class(self.chips)

    @property
    def placed(self) -> Allocation:
        """Where the job runs; only asked of a job that has been started."""
        if self.alloc is None:
            raise AssertionError(f"job {self.id} has no allocation")
        return self.alloc
