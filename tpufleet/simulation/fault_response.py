"""What a fault does to the jobs it hits, and what its repair gives back.

A machine fault takes its cube out of the pool and stops the jobs on that machine: they are queued again, or in
a static pod wait on their block for the repair. An OCS or optical-link fault leaves the cubes in the pool; a
multi-cube job in its way is rerouted (runs on, slower) if it has fault-tolerant routing, and evicted otherwise.
A planned drain gives notice: a training job first writes a checkpoint, then leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpufleet.allocation import Allocation
from tpufleet.constants import HOUR
from tpufleet.goodput.events import Disruption
from tpufleet.ids import HostId, LinkId, OcsId
from tpufleet.simulation.events import EventQueue, Eviction, FaultStrike, FaultTarget, Repair, Schedule
from tpufleet.simulation.inputs import FaultRates, Options
from tpufleet.simulation.job import Job
from tpufleet.simulation.log import Stats
from tpufleet.simulation.placement import Placement
from tpufleet.simulation.reroute import RerouteCosts
from tpufleet.simulation.runner import JobRunner
from tpufleet.simulation.scheduler import Scheduler


def _hits(target: FaultTarget, alloc: Allocation) -> bool:
    """Whether a fault's component belongs to the slice: an OCS of its pod, a link or machine of its cubes."""
    if isinstance(target, OcsId):
        return alloc.pod == target.pod
    if isinstance(target, HostId):
        return target.cube in alloc.cubes and (not alloc.machines or target.machine in alloc.machines)
    return target.cube in alloc.cubes


@dataclass(eq=False)
class FaultResponse:
    options: Options
    rates: FaultRates
    placement: Placement
    runner: JobRunner
    scheduler: Scheduler
    queue: EventQueue
    stats: Stats
    reroute_costs: RerouteCosts | None = None  # the shipped all-reduce terms (None: modelled)
    slices_lost: int = field(default=0, init=False)  # slices elastic jobs ran on without
    # OCS and optical-link faults not yet repaired, in order
    open_network: dict[FaultStrike, None] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.scheduler.joined = self._joined
        self.profile = self.options.profile  # the pods' generation's figures (None: the shipped TPU v4 profile)

    def strike(self, fault: FaultStrike) -> None:
        self.stats.faults[fault.kind] += 1
        repair_at = fault.time + self.rates.repair_hours[fault.kind] * HOUR
        target = fault.target
        if isinstance(target, HostId):
            self.placement.take_out(target.cube, target.machine, repair_at)
            if fault.kind == "drain":
                self._drain(fault.time, target)
            else:
                self._machine_down(fault.time, target, repair_at)
            self.queue.push(Repair(repair_at, "host", target))
            return
        self.open_network[fault] = None
        if isinstance(target, LinkId):
            self.placement.fail_link(target.cube)
            hit = [job for job in self.runner.on_cube(target.cube) if not job.shape.is_subcube]
        else:
            self.placement.fail_ocs(target)
            hit = [job for job in self.runner.in_pod(target.pod) if not job.shape.is_subcube]
        for job in hit:
            if self.scheduler.rerouting(job):
                self._reroute(job, fault)
            else:
                self._lose_slices(job, fault.time, [a for a in job.held if _hits(target, a)], "eviction")
        self.queue.push(Repair(repair_at, fault.kind, target, fault))

    def _machine_down(self, t: float, machine: HostId, repair_at: float) -> None:
        for job in self.runner.on_cube(machine.cube, machine.machine):
            if self.options.static and not job.shape.is_subcube:  # a sub-cube job needs no wiring to move
                self.scheduler.wait_in_place(job, t, repair_at)
            else:
                self._lose_slices(job, t, [a for a in job.held if _hits(machine, a)], "failure")

    def _lose_slices(self, job: Job, t: float, lost: list[Allocation], why: Disruption) -> None:
        """An elastic multislice job that keeps its minimum runs on without the lost slices (the scheduler gives
        them back when they fit); any other job stops whole (one program: a lost slice stops every slice)."""
        keep = [a for a in job.held if not any(a is b for b in lost)]
        if job.elastic_min is None or not keep or len(keep) < job.elastic_min:
            self.scheduler.disrupt(job, t, why)
            return
        if not self.runner.set_slices(job, t, keep):
            return  # it had just finished
        self.scheduler.short[job.id] = job
        self.slices_lost += len(lost)
        self.queue.push(Schedule(t))  # a slice may fit elsewhere at once

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
        factor = self._slowdown(job, job.network_faults | {fault})
        if factor == float("inf"):  # these faults leave some pair of its chips unroutable
            self._lose_slices(job, fault.time, [a for a in job.held if _hits(fault.target, a)], "eviction")
            return
        self.runner.advance(job, fault.time)
        job.network_faults.add(fault)
        job.reroute_factor = factor
        job.refresh_slowdown()
        self.stats.reroutes += 1
        self.runner.schedule_completion(job)

    def _joined(self, job: Job, t: float) -> None:
        """A job started (or took a slice back) where network faults are open: it runs routed around them (the
        placement only puts a job that cannot be rerouted clear of a down OCS)."""
        if job.shape.is_subcube or not self.open_network or not self.scheduler.rerouting(job):
            return
        faults = {f for f in self.open_network if any(_hits(f.target, a) for a in job.held)}
        if not faults - job.network_faults:
            return
        factor = self._slowdown(job, job.network_faults | faults)
        if factor == float("inf"):  # cannot be routed around them after all: it leaves again
            self.scheduler.disrupt(job, t, "eviction")
            return
        job.network_faults |= faults
        job.reroute_factor = factor
        job.refresh_slowdown()
        self.runner.schedule_completion(job)

    def _slowdown(self, job: Job, faults: set[FaultStrike]) -> float:
        """The modelled factor for a job that declares its step, else the fault-rate file's constant. The slices
        of a multislice job step in lockstep: the slowest slice sets the pace."""
        if not faults:
            return 1.0
        if job.model is None:
            return self.rates.rerouted_slowdown
        from tpufleet.simulation.reroute import slowdown

        factor = 1.0
        for alloc in job.held:
            mine = [f.target for f in faults if isinstance(f.target, LinkId | OcsId) and _hits(f.target, alloc)]
            if mine:
                faults_here = sorted(mine, key=str)
                factor = max(factor, slowdown(job.shape, job.model, faults_here, self.profile, self.reroute_costs))
        return factor

    def repair(self, repair: Repair) -> None:
        target = repair.target
        if isinstance(target, HostId):
            self.placement.bring_back(target.cube, target.machine)
        elif isinstance(target, OcsId):
            self.placement.repair_ocs(target)
        else:
            self.placement.repair_link(target.cube)
        if repair.fault is not None:
            self.open_network.pop(repair.fault, None)
            for job in list(self.runner.running.values()):
                if repair.fault in job.network_faults:
                    self._end_reroute(job, repair.fault, repair.time)
        self.queue.push(Schedule(repair.time))

    def _end_reroute(self, job: Job, fault: FaultStrike, t: float) -> None:
        self.runner.advance(job, t)
        job.network_faults.discard(fault)
        factor = self._slowdown(job, job.network_faults)
        if factor == float("inf"):  # what is left cannot be routed within the budget on its own: move it
            self.scheduler.disrupt(job, t, "eviction")
            return
        job.reroute_factor = factor
        job.refresh_slowdown()
        self.runner.schedule_completion(job)
