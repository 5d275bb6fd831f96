"""What a fault does to the jobs it hits, and what its repair gives back.

A machine fault takes its cube out of the pool and stops the jobs on that machine: they are queued again, or in
a static pod wait on their block for the repair. An OCS or optical-link fault leaves the cubes in the pool; a
multi-cube job in its way is rerouted (runs on, slower) if it has fault-tolerant routing, and evicted otherwise.
A planned drain gives notice: a training job first writes a checkpoint, then leaves.
"""

from __future__ import annotations

from tpufleet.ids import HostId, LinkId, OcsId
from tpufleet.simulation.events import EventQueue, Eviction, FaultStrike, Repair, Schedule
from tpufleet.simulation.inputs import FaultRates, Options
from tpufleet.simulation.job import Job
from tpufleet.simulation.log import Stats
from tpufleet.simulation.placement import Placement
from tpufleet.simulation.runner import JobRunner
from tpufleet.simulation.scheduler import Scheduler

HOUR = 3600.0


class FaultResponse:
    def __init__(
        self,
        options: Options,
        rates: FaultRates,
        placement: Placement,
        runner: JobRunner,
        scheduler: Scheduler,
        queue: EventQueue,
        stats: Stats,
    ) -> None:
        self.options = options
        self.rates = rates
        self.placement = placement
        self.runner = runner
        self.scheduler = scheduler
        self.queue = queue
        self.stats = stats

    def strike(self, fault: FaultStrike) -> None:
        self.stats.faults[fault.kind] += 1
        repair_at = fault.time + self.rates.repair_hours[fault.kind] * HOUR
        target = fault.target
        if isinstance(target, HostId):
            self.placement.take_out(target.cube)
            if fault.kind == "drain":
                self._drain(fault.time, target)
            else:
                self._machine_down(fault.time, target, repair_at)
            self.queue.push(Repair(repair_at, "host", target))
            return
        if isinstance(target, LinkId):
            hit = [job for job in self.runner.on_cube(target.cube) if not job.shape.is_subcube]
        else:
            self.placement.fail_ocs(target)
            hit = [job for job in self.runner.in_pod(target.pod) if not job.shape.is_subcube]
        for job in hit:
            if self.scheduler.rerouting(job):
                self._reroute(job, fault)
            else:
                self.scheduler.disrupt(job, fault.time, "eviction")
        self.queue.push(Repair(repair_at, fault.kind, target, fault))

    def _machine_down(self, t: float, machine: HostId, repair_at: float) -> None:
        for job in self.runner.on_cube(machine.cube, machine.machine):
            if self.options.static:
                self.scheduler.wait_in_place(job, t, repair_at)
            else:
                self.scheduler.disrupt(job, t, "failure")

    def _drain(self, t: float, machine: HostId) -> None:
        """Planned maintenance: the jobs get notice, training saves a checkpoint, then they move."""
        for job in self.runner.on_cube(machine.cube, machine.machine):
            self.runner.advance(job, t)
            leave = t
            if job.phase == "training" and not job.startup and job.checkpoint_left is None and job.progress > job.saved:
                self.runner.begin_checkpoint(job, t)
            if job.checkpoint_left is not None:
                leave = t + job.checkpoint_left
            self.queue.push(Eviction(leave, job.id, job.runs))

    def _reroute(self, job: Job, fault: FaultStrike) -> None:
        slowdown = self._slowdown(job, job.network_faults | {fault})
        if slowdown == float("inf"):  # these faults leave some pair of its chips unroutable
            self.scheduler.disrupt(job, fault.time, "eviction")
            return
        self.runner.advance(job, fault.time)
        job.network_faults.add(fault)
        job.slowdown = slowdown
        self.stats.reroutes += 1
        self.runner.schedule_completion(job)

    def _slowdown(self, job: Job, faults: set[FaultStrike]) -> float:
        """The modelled factor for a job that declares its step, else the fault-rate file's constant."""
        if not faults:
            return 1.0
        if job.model is None:
            return self.rates.rerouted_slowdown
        from tpufleet.simulation.reroute import slowdown

        targets = sorted((f.target for f in faults if isinstance(f.target, LinkId | OcsId)), key=str)
        return slowdown(job.shape, job.model, targets, job.placed.coords)

    def repair(self, repair: Repair) -> None:
        target = repair.target
        if isinstance(target, HostId):
            self.placement.bring_back(target.cube)
        elif isinstance(target, OcsId):
            self.placement.repair_ocs(target)
        if repair.fault is not None:
            for job in list(self.runner.running.values()):
                if repair.fault in job.network_faults:
                    self._end_reroute(job, repair.fault, repair.time)
        self.queue.push(Schedule(repair.time))

    def _end_reroute(self, job: Job, fault: FaultStrike, t: float) -> None:
        self.runner.advance(job, t)
        job.network_faults.discard(fault)
        slowdown = self._slowdown(job, job.network_faults)
        if slowdown == float("inf"):  # what is left cannot be routed within the budget on its own: move it
            self.scheduler.disrupt(job, t, "eviction")
            return
        job.slowdown = slowdown
        self.runner.schedule_completion(job)
