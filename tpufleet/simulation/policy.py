"""Scheduler policies: how the wait queue ranks jobs, which running jobs a waiting one may preempt, and whether
the job at the head of the queue holds a reservation (pure).

`priority` ranks by priority alone (then submission order) and lets a job preempt lower-priority ones.
`extra-large-first` applies the ML Productivity Goodput paper's preemption preference (section 5, Fig. 12): evicting
an extra-large job costs too much, so the scheduler avoids it and evicts medium jobs instead. Extra-large jobs go
to the head of the queue (by priority among themselves), may preempt any job that is not extra-large, and are never
preempted; every other job preempts as under `priority`.
`reserve` and `extra-large-first-reserve` rank and preempt as `priority` and `extra-large-first`, and add EASY
backfill (`reservation`): the first single-slice job in the queue that cannot start is given a reservation at the
time the running jobs' known ends free room for it, and a job behind it starts only if it ends by then or leaves
that room free."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from tpufleet.simulation.job import Job

SchedulerPolicy = Literal["priority", "extra-large-first", "reserve", "extra-large-first-reserve"]
SCHEDULER_POLICIES: tuple[SchedulerPolicy, ...] = get_args(SchedulerPolicy)
PROTECTED_SIZE = "extra-large"  # `extra-large-first`: placed first, may preempt any smaller job, never preempted
_SIZE_FIRST: frozenset[SchedulerPolicy] = frozenset({"extra-large-first", "extra-large-first-reserve"})
_RESERVING: frozenset[SchedulerPolicy] = frozenset({"reserve", "extra-large-first-reserve"})


def reserves(policy: SchedulerPolicy) -> bool:
    """Whether the head of the queue holds a reservation that later jobs backfill around."""
    return policy in _RESERVING


def queue_rank(job: Job, policy: SchedulerPolicy) -> tuple[int, ...]:
    """Where the job waits in the queue (lowest first)."""
    if policy in _SIZE_FIRST:
        return (0 if job.size == PROTECTED_SIZE else 1, job.priority, job.seq)
    return (job.priority, job.seq)


def may_preempt(job: Job, victim: Job, policy: SchedulerPolicy) -> bool:
    """Whether the waiting `job` may preempt the running `victim`."""
    if policy in _SIZE_FIRST:
        if victim.size == PROTECTED_SIZE:
            return False
        if job.size == PROTECTED_SIZE:
            return True
    return victim.priority > job.priority
