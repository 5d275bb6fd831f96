"""EASY backfill (the `reserve` scheduler policies): the reservation held by the job at the head of the queue.

The head is the first single-slice job in queue order that cannot start now (nor by preempting) and that some
running job's end makes room for (one waiting on a repair holds no room: the scheduler passes over it). Its shadow
time is
the earliest running job's predicted end (`Job.expected_end`) by which the jobs ending free room for it: the
placement is asked, through the same allocator and cross-connect planning as a start, whether it would fit with
those jobs gone (in an OCS pod any free healthy cubes can form the slice, wired through the OCS). A job behind the
head may start now only if it is predicted to end by the shadow time, or if the head would still fit at that time
with the new job's slice held as well. Jobs behind the head preempt none. Jobs ranked ahead of the head (a later
arrival of a higher rank) still start first: the reservation is the head's place, not a promise against them.
A fault can push the head past its shadow time: a machine out, a job slowed down by rerouting."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpufleet.allocation import Allocation
    from tpufleet.simulation.job import Job
    from tpufleet.simulation.placement import Placement

BACKFILL_SLACK_S = 1e-3  # a job predicted to end this close after the shadow time still ends by it


@dataclass
class Reservation:
    """The head job's reservation, made in one pass over the queue."""

    job: Job
    rerouting: bool  # the head has fault-tolerant routing (as `Scheduler.rerouting` says)
    shadow: float  # when the running jobs' known ends free room for it; inf: they never do (a fault holds it)
    blocked: set[tuple[object, ...]] = field(default_factory=set)  # kinds of job whose slice takes the head's room

    def ends_by_shadow(self, t: float, wall: float) -> bool:
        """Whether a job started at t that runs `wall` seconds ends by the shadow time."""
        return t + wall <= self.shadow + BACKFILL_SLACK_S


def reserve(placement: Placement, head: Job, rerouting: bool, running: Iterable[Job]) -> Reservation:
    """The head's reservation: the smallest prefix of the running jobs, by predicted end, whose end lets it fit
    (found by halving: freeing more never makes it fit less)."""
    ends = sorted(running, key=lambda j: (j.expected_end, j.seq))

    def fits(k: int) -> bool:
        return placement.would_fit(head.shape, rerouting, [j.id for j in ends[:k]], head.displaced)

    if not ends or not fits(len(ends)):
        return Reservation(head, rerouting, math.inf)
    lo, hi = 1, len(ends)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return Reservation(head, rerouting, ends[lo - 1].expected_end)


def leaves_room(
    placement: Placement, reservation: Reservation, running: Iterable[Job], plus: Collection[Allocation]
) -> bool:
    """Whether the head would still fit at its shadow time, every running job predicted to end by then gone, with
    the allocations `plus` held as well."""
    head, shadow = reservation.job, reservation.shadow
    ending = [j.id for j in running if j.expected_end <= shadow]
    return placement.would_fit(head.shape, reservation.rerouting, ending, head.displaced, plus)
