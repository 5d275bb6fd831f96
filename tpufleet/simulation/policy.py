"""Scheduler policies: how the wait queue ranks jobs and which running jobs a waiting one may preempt (pure).

`priority` ranks by priority alone (then submission order) and lets a job preempt lower-priority ones.
`extra-large-first` applies the ML Productivity Goodput paper's preemption preference (section 5, Fig. 12): evicting
an extra-large job costs too much, so the scheduler avoids it and evicts medium jobs instead. Extra-large jobs go
to the head of the queue (by priority among themselves), may preempt any job that is not extra-large, and are never
preempted; every other job preempts as under `priority`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from tpufleet.simulation.job import Job

SchedulerPolicy = Literal["priority", "extra-large-first"]
SCHEDULER_POLICIES: tuple[SchedulerPolicy, ...] = get_args(SchedulerPolicy)
PROTECTED_SIZE = "extra-large"  # `extra-large-first`: placed first, may preempt any smaller job, never preempted


def queue_rank(job: Job, policy: SchedulerPolicy) -> tuple[int, ...]:
    """Where the job waits in the queue (lowest first)."""
    if policy == "extra-large-first":
        return (0 if job.size == PROTECTED_SIZE else 1, job.priority, job.seq)
    return (job.priority, job.seq)


def may_preempt(job: Job, victim: Job, policy: SchedulerPolicy) -> bool:
    """Whether the waiting `job` may preempt the running `victim`."""
    if policy == "extra-large-first":
        if victim.size == PROTECTED_SIZE:
            return False
        if job.size == PROTECTED_SIZE:
            return True
    return victim.priority > job.priority
