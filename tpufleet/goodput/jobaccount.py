"""What a job's account is: the badput buckets, their label codes, and `JobAccount`, one job's figures (pure).

Apart from `timeline`, which labels a job's time to make the account, because the report, its renderers, the
capacity checks and the health figures read accounts and buckets and need nothing of how they are made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpufleet.goodput.events import Job

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Times = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]


BUCKETS = (
    "tpu_initialization",
    "training_prep",
    "program_startup",
    "data_loading_sync",
    "checkpoint_save",
    "checkpoint_restore",
    "wasted_progress_from_disruption",
    "infrastructure_recovery_from_disruption",
    "custom_badput_events",
    "elastic_slice_down",
    "elastic_scale_up",
    "elastic_reinitialization",
    "other",
)
# label codes: 0 productive, 1.. buckets in BUCKETS order
PRODUCTIVE = 0
LABEL = {"productive": 0, **{b: i + 1 for i, b in enumerate(BUCKETS)}}


@dataclass
class JobAccount:
    job: Job
    start: float
    end: float
    demand_s: float
    all_allocated_s: float
    productive_s: float
    buckets: dict[str, float]
    productive_steps: int
    disruptions: int
    checkpoint_saves: int
    checkpoint_save_s: float
    checkpoint_interval_s: float | None
    restart_overhead_s: float
    starts: Times | None = None  # elementary intervals, all-allocated only: start times
    ends: Times | None = None
    labels: npt.NDArray[np.int64] | None = None  # LABEL code of each interval
    outside: int = 0  # entries stamped outside the job's span, dropped
    repeated: int = 0  # events that repeat an earlier one exactly, dropped
    inferred_disruptions: int = 0  # restarts with no disruption logged before them
    disruption_times: Times | None = None
    step_starts: Times | None = None  # the steps: start, end, step number, productive
    step_ends: Times | None = None
    step_numbers: Ints | None = None
    step_productive: npt.NDArray[np.bool_] | None = None
    checkpoint_starts: Times | None = None
    excluded_s: float = 0.0  # all-allocated seconds inside exclusions, left out of everything
    pg_steps: float | None = (
        None  # a part's productive steps for PG (see jobfigures._steps_share); None: productive_steps
    )
    estimated_ideal_step_s: float | None = None  # the empirical ideal (health.ideal_step) when none is declared
    extra: dict[str, Any] = field(default_factory=dict)
    # the job's all-allocated time over its whole span in the log (exclusions out), as time-ordered runs, whatever
    # part is reported: the busiest moment, the capacity estimated when none is given, is the whole log's
    whole_held: tuple[Times, Times] | None = None
    in_part: bool = True  # False: the job ran wholly outside --since/--until, kept for `whole_held` alone
    # made where the job is accounted on a cluster, in place of its intervals (starts, ends, labels), which then
    # do not travel: its all-allocated runs in the part reported (`capacityfit.held_runs`), and the period start
    # and TERMS of each period it adds to (`chiptime.job_window_terms`; None: no --period)
    part_held: tuple[Times, Times] | None = None
    window_terms: tuple[Times, Times] | None = None

    @property
    def ideal_step_s(self) -> float | None:
        return self.job.ideal_step_s if self.job.ideal_step_s is not None else self.estimated_ideal_step_s

    @property
    def pg_basis(self) -> str | None:
        """``declared`` (ideal step time or FLOPs logged), ``estimated`` (empirical ideal) or None."""
        if self.job.ideal_step_s is not None:
            return "declared"
        return "estimated" if self.estimated_ideal_step_s is not None else None

    @property
    def ideal_s(self) -> float | None:
        ideal = self.ideal_step_s
        steps = self.productive_steps if self.pg_steps is None else self.pg_steps
        return None if ideal is None else ideal * steps
