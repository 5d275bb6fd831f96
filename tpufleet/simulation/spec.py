"""The simulation's inputs (workload, fault rates, options) and its job record."""

from __future__ import annotations

from dataclasses import dataclass, field

from tpufleet.shapes import Shape, parse_shape

START_EPOCH = 1767571200.0  # 2026-01-05T00:00:00Z
DAY = 86400.0
MODES = ("static", "reconfigurable", "reconfigurable-ft")
# eviction preference when preempting: medium first, extra-large last
VICTIM_ORDER = {"medium": 0, "large": 1, "small": 2, "extra-large": 3}


@dataclass
class Workload:
    arrival_rate_per_hour: float = 1.6
    duration_median_h: float = 5.0
    duration_sigma: float = 1.0
    duration_max_h: float = 96.0
    shapes: list[tuple[Shape, float]] = field(default_factory=lambda: [(parse_shape("4x4x4"), 1.0)])
    phases: dict[str, float] = field(default_factory=lambda: {"training": 1.0})
    frameworks: dict[str, float] = field(default_factory=lambda: {"jax": 1.0})
    priorities: list[str] = field(default_factory=lambda: ["batch"])
    priority_weights: list[float] = field(default_factory=lambda: [1.0])
    ideal_step_fraction: float = 0.6
    checkpoint_write_s: float = 60.0
    fault_tolerant_share: float = 0.95
    jobs: list[dict] = field(default_factory=list)  # explicit jobs: {shape, twisted?, duration_hours, arrival_hours?, ...}


@dataclass
class Rates:
    host_per_day: float = 0.0008
    link_per_day: float = 0.00005
    ocs_per_day: float = 0.0004
    drain_per_day: float = 0.0
    repair_hours: dict[str, float] = field(default_factory=lambda: {"host": 8.0, "link": 4.0, "ocs": 2.0, "drain": 4.0})
    rerouted_slowdown: float = 1.08


@dataclass
class Options:
    days: float
    seed: int = 0
    pods: int = 1
    mode: str = "reconfigurable-ft"
    checkpoint_interval_s: float = 3600.0
    restart_overhead_s: float = 600.0
    macro_steps: int = 10
    cubes_per_pod: int = 64


def size_class(chips: int) -> str:
    from tpufleet.goodput.metrics import size_class as sc

    return sc(chips)


@dataclass
class Job:
    id: str
    seq: int
    shape: Shape
    phase: str
    framework: str
    priority: int
    priority_name: str
    ft: bool
    work: float
    submitted: float
    state: str = "queued"
    progress: float = 0.0
    saved: float = 0.0
    step: int = 0
    saved_step: int = 0
    slow: float = 1.0
    network_faults: set = field(default_factory=set)
    alloc: object = None
    t_mark: float = 0.0
    startup: list = field(default_factory=list)
    started: bool = False
    ckpt_left: float | None = None
    ckpt_step: int = 0
    ckpt_progress: float = 0.0
    to_ckpt: float = 0.0
    to_step: float = 0.0
    version: int = 0
    runs: int = 0

    @property
    def chips(self) -> int:
        return self.shape.chips

    @property
    def size(self) -> str:
        return size_class(self.chips)


