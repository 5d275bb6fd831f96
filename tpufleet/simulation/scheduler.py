"""The wait queue: placing waiting jobs in priority order with backfill, preemption, and taking jobs off the fleet."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from tpufleet.allocation import Allocation
from tpufleet.goodput.events import Stop
from tpufleet.model import Fleet
from tpufleet.shapes import Shape
from tpufleet.simulation.events import EventQueue, RestartAfterRepair, Schedule
from tpufleet.simulation.inputs import Options
from tpufleet.simulation.job import VICTIM_ORDER, Job, JobState
from tpufleet.simulation.log import EventLog, Stats
from tpufleet.simulation.placement import Placement
from tpufleet.simulation.policy import may_preempt, queue_rank, reserves
from tpufleet.simulation.reservation import BACKFILL_SLACK_S, Reservation, leaves_room, reserve
from tpufleet.simulation.runner import JobRunner

RESTART_DELAY_S = 1e-3  # a job waiting in place restarts just after its machine's repair


def _joined_nowhere(job: Job, t: float) -> None:
    """The scheduler's `joined` until the fault response sets its own."""


@dataclass(eq=False)
class Scheduler:
    """Waiting jobs and the decisions that move jobs on and off the fleet.

    `fit_shortcuts` remembers, within one pass, the kinds of job that did not fit since the last placement and
    skips them (the same answer; off only for the benchmark baseline)."""

    fleet: Fleet
    options: Options
    placement: Placement
    runner: JobRunner
    queue: EventQueue
    log: EventLog
    stats: Stats
    fit_shortcuts: bool = True
    waiting: list[Job] = field(default_factory=list, init=False)
    short: dict[str, Job] = field(default_factory=dict, init=False)  # elastic jobs running without some slices
    # Called when a job starts or takes a slice back, so that it is routed around the network faults open where it
    # landed (the fault response sets it).
    joined: Callable[[Job, float], None] = field(default=_joined_nowhere, init=False)
    slices_regained: int = field(default=0, init=False)
    reserved: dict[tuple[str, int], float] = field(default_factory=dict, init=False)  # (job, run) -> first shadow

    def rerouting(self, job: Job) -> bool:
        """Whether faults in the job's network are routed around rather than evicting it."""
        return self.options.fault_tolerant_routing and job.fault_tolerant

    def submit(self, job: Job, t: float) -> None:
        self.waiting.append(job)
        self.schedule(t)

    def schedule(self, t: float) -> None:
        """Place waiting jobs in queue order (`queue_rank`), preempting where that makes room (`may_preempt`);
        keep going over the queue while anything was placed. Under a reserving policy (`reserves`) the jobs behind
        the head's reservation only backfill around it (`reservation`)."""
        policy = self.options.scheduler
        self.waiting.sort(key=lambda j: queue_rank(j, policy))
        placed, head = True, None
        while placed:
            placed, head = self._pass(t)
        self._regrow(t, head)

    def _pass(self, t: float) -> tuple[bool, Reservation | None]:
        """One pass over the queue; whether anything was placed, and the head's reservation made in it."""
        reserving = reserves(self.options.scheduler)
        hopeless: set[tuple[Shape, bool, int, bool, int]] = set()  # kinds that did not fit since a placement
        head: Reservation | None = None
        placed = False
        for job in list(self.waiting):
            kind = (job.shape, job.fault_tolerant, job.priority, job.displaced, job.slices)
            if kind in hopeless and self.fit_shortcuts:
                continue
            slices = self._place(job, t) if head is None else self._backfill(job, t, head, kind)
            if slices:
                self._start(job, slices, t, backfill=head is not None)
                placed = True
                hopeless.clear()
                if head is not None:
                    head.blocked.clear()  # the slices found for those kinds may be others now
            elif slices is None:
                hopeless.add(kind)
                if reserving and head is None and job.slices == 1:
                    head = self._reserve(job)
        return placed, head

    def _start(self, job: Job, slices: list[Allocation], t: float, backfill: bool) -> None:
        shadow = self.reserved.pop((job.id, job.runs), None)
        if shadow is not None and t > shadow + BACKFILL_SLACK_S:
            self.stats.reservations_late += 1
        self.stats.backfilled += backfill
        self.waiting.remove(job)
        self.runner.start(job, slices[0], t, slices[1:])
        self.joined(job, t)

    def _reserve(self, job: Job) -> Reservation | None:
        """The head's reservation; the first shadow time of each of its runs is kept (`reserved`). None when no
        running job's end makes room for it (it waits on a repair, as Slurm passes over a job no node can run now):
        it holds no room, and the next job that cannot start may be the head."""
        head = reserve(self.placement, job, self.rerouting(job), self.runner.running.values())
        if not math.isfinite(head.shadow):
            return None
        if (job.id, job.runs) not in self.reserved:
            self.reserved[job.id, job.runs] = head.shadow
            self.stats.reservations += 1
        return head

    def _backfill(self, job: Job, t: float, head: Reservation, kind: tuple[object, ...]) -> list[Allocation] | None:
        """Where a job behind the reserved head starts now: anywhere it fits if it ends by the shadow time, else
        only on a slice that leaves the head's room free then; it preempts none. None: it does not fit now; []: it
        fits only by taking the head's room."""
        rerouting = self.rerouting(job)
        if head.ends_by_shadow(t, self.runner.wall_if_started(job)):
            if job.slices > 1:
                return self.placement.place_slices(job.shape, job.slices, rerouting, job.displaced, job.spread)
            alloc = self.placement.place(job.shape, rerouting, job.displaced)
            return [alloc] if alloc is not None else None
        if job.slices > 1 or (kind in head.blocked and self.fit_shortcuts):
            return []
        alloc = self.placement.find(job.shape, rerouting, job.displaced)
        if alloc is None:
            return None
        if not leaves_room(self.placement, head, self.runner.running.values(), [alloc]):
            head.blocked.add(kind)
            return []
        alloc = self.placement.place(job.shape, rerouting, job.displaced)  # the slice found, its cross-connects made
        return [alloc] if alloc is not None else None

    def _place(self, job: Job, t: float) -> list[Allocation] | None:
        """Where the job's slices go (preempting lower priorities for a single-slice job if that makes room)."""
        rerouting = self.rerouting(job)
        if job.slices > 1:  # gang-scheduled: every slice or none; it does not preempt
            return self.placement.place_slices(job.shape, job.slices, rerouting, job.displaced, job.spread)
        alloc = self.placement.place(job.shape, rerouting, job.displaced)
        if alloc is None and self._preempt_for(job, t):
            alloc = self.placement.place(job.shape, rerouting, job.displaced)
        return [alloc] if alloc is not None else None

    def _regrow(self, t: float, head: Reservation | None) -> None:
        """Give elastic jobs running without some slices those slices back, one at a time, where they fit (and,
        behind a reservation, where the head's room stays free)."""
        for job in list(self.short.values()):
            while job.state is JobState.RUNNING and job.active < job.slices:
                beside = job.held if job.spread else None
                if head is not None and not self._regrow_leaves_room(job, head, beside):
                    break
                alloc = self.placement.place(job.shape, self.rerouting(job), True, beside)
                if alloc is None or not self.runner.set_slices(job, t, [*job.held, alloc]):
                    break  # it had just finished (the slice found was never held)
                self.joined(job, t)
                self.slices_regained += 1
            if job.state is not JobState.RUNNING or job.active == job.slices:
                del self.short[job.id]

    def _regrow_leaves_room(self, job: Job, head: Reservation, beside: list[Allocation] | None) -> bool:
        """Whether the slice the elastic job would take back now leaves the head's room free at its shadow time."""
        alloc = self.placement.find(job.shape, self.rerouting(job), True, beside)
        return alloc is not None and leaves_room(self.placement, head, self.runner.running.values(), [alloc])

    def _preempt_for(self, job: Job, t: float) -> bool:
        """Evict the fewest jobs it may preempt (`may_preempt`) of one pod (medium first, extra-large last) that let
        `job` fit; none if no set of them would."""
        policy = self.options.scheduler
        victims = [j for j in self.runner.running.values() if may_preempt(job, j, policy)]
        if not victims:
            return False
        for pod in self.fleet.pods:
            mine = sorted(
                (j for j in victims if j.placed.pod == pod.name),
                key=lambda j: (VICTIM_ORDER[j.size], -j.priority, -j.seq),
            )
            chosen: list[Job] = []
            for victim in mine:
                chosen.append(victim)
                if self.placement.would_fit(job.shape, self.rerouting(job), {v.id for v in chosen}, job.displaced):
                    break
            else:
                chosen = []
            if chosen:
                for victim in chosen:
                    self.disrupt(victim, t, "preemption")
                return True
        return False

    def disrupt(self, job: Job, t: float, why: Stop) -> None:
        """Stop the job (`why`: failure, eviction or preemption; or drain, planned: no disruption and no restart
        wait, as nothing failed), free its place and queue it again."""
        if not self.runner.stop(job, t, why, JobState.QUEUED):
            return
        self.log.event(job, t, "allocation", chips=0)
        self.runner.release(job)
        self.waiting.append(job)
        if why == "preemption":
            self.stats.preemptions += 1
        elif why == "drain":
            self.stats.drain_moves += 1
        else:
            job.displaced = True  # a fault moved it: it may restart on a spare cube
            job.stopped_at = t
            self.stats.evictions += 1
        self.queue.push(Schedule(t))

    def wait_in_place(self, job: Job, t: float, repair: float) -> None:
        """Static pod: no spare cube can be wired in, so the job keeps its block and restarts after the repair."""
        if not self.runner.stop(job, t, "failure", JobState.REPAIRING):
            return
        self.runner.running.pop(job.id, None)
        job.displaced = True  # displaced as surely as a job queued again: its wait is a restart wait
        job.stopped_at = t
        self.stats.evictions += 1
        self.queue.push(RestartAfterRepair(repair + RESTART_DELAY_S, job))

    def restart(self, job: Job, t: float) -> None:
        """A job that waited in place for a repair starts again on its block (unless something moved it) once
        none of its machines is out: one that failed or was drained while it waited keeps it waiting until that
        one is back too. An elastic job still short of slices is given them back when they fit."""
        if job.state is JobState.REPAIRING:
            back = self.placement.back_by(job.held)
            if back is not None:
                self.queue.push(RestartAfterRepair(back + RESTART_DELAY_S, job))
                return
            self.runner.start(job, job.placed, t)
            if job.active < job.slices:
                self.short[job.id] = job
                self.queue.push(Schedule(t))
