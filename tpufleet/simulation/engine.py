"""The simulator: its parts put together, and the event loop that drives them."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import assert_never

from tpufleet.constants import CHIPS_PER_CUBE, DAY
from tpufleet.model import Fleet, default_fleet
from tpufleet.simulation import draws
from tpufleet.simulation.events import (
    Arrival,
    Completion,
    Event,
    EventQueue,
    Eviction,
    FaultStrike,
    Repair,
    RestartAfterRepair,
    Schedule,
)
from tpufleet.simulation.fault_response import FaultResponse
from tpufleet.simulation.inputs import FaultRates, Options, Workload
from tpufleet.simulation.job import Job, JobState
from tpufleet.simulation.log import ACCELERATOR, EventLog, Record, Stats
from tpufleet.simulation.placement import Placement
from tpufleet.simulation.reroute import RerouteCosts
from tpufleet.simulation.runner import JobRunner
from tpufleet.simulation.scale import fleet_workload
from tpufleet.simulation.scheduler import Scheduler

START_EPOCH = 1767571200.0  # 2026-01-05T00:00:00Z
COMPLETION_SLACK_S = 1.0  # a completion event brings the job's log this far past its predicted end
Progress = Callable[[int], None]  # called with each simulated day as it is reached


class Simulator:
    """One simulation run. `fit_shortcuts=False` turns off the scheduler's memo of kinds of job that did not fit
    and the free-cube count guard: the same events (a test checks it); only the benchmark's baseline uses it.
    `reroute_costs`: the shipped table of all-reduce terms (`tpufleet.state.reroutecosts`), looked up for the step
    models instead of modelling them (None: every term modelled, the same figures more slowly)."""

    def __init__(
        self,
        workload: Workload,
        rates: FaultRates,
        options: Options,
        *,
        fit_shortcuts: bool = True,
        reroute_costs: RerouteCosts | None = None,
    ) -> None:
        workload = fleet_workload(workload, options)
        self.workload = workload
        self.rates = rates
        self.options = options
        self.rng = random.Random(options.seed)
        self.fleet: Fleet = default_fleet(options.pods, options.cubes_per_pod, options.generation)
        self.start = START_EPOCH
        self.end = START_EPOCH + options.days * DAY
        self.queue = EventQueue()
        self.log = EventLog(options.generation.name if options.generation is not None else ACCELERATOR)
        self.stats = Stats()
        self.placement = Placement(self.fleet, options.static, self.stats, fit_shortcuts, options.spare_cubes)
        self.runner = JobRunner(options, workload, self.queue, self.log, self.placement, self.stats)
        self.scheduler = Scheduler(
            self.fleet, options, self.placement, self.runner, self.queue, self.log, self.stats, fit_shortcuts
        )
        self.fault_response = FaultResponse(
            options, rates, self.placement, self.runner, self.scheduler, self.queue, self.stats, reroute_costs
        )
        self.job_maker = draws.JobMaker(self.rng, workload, options, self.log, reroute_costs)

    @property
    def jobs(self) -> list[Job]:
        """Every job submitted so far, in order."""
        return self.job_maker.jobs

    @property
    def records(self) -> list[Record]:
        return self.log.records

    def run(self, progress: Progress | None = None) -> list[Record]:
        """Simulate `options.days` and return the records (capacity, jobs, events), in order."""
        self.simulate(progress)
        return self.log.records

    def simulate(self, progress: Progress | None = None) -> None:
        """Simulate `options.days`; the records are left in `log` (events as tuples, see `EventLog`)."""
        options = self.options
        chips = options.pods * options.cubes_per_pod * CHIPS_PER_CUBE
        self.log.capacity(self.start, chips)
        for arrival in draws.arrivals(self.rng, self.workload, self.start, self.end):
            self.queue.push(arrival)
        for fault in draws.faults(self.rng, self.rates, self.fleet, self.start, self.end):
            self.queue.push(fault)
        day = 0
        while self.queue:
            event = self.queue.pop()
            if event.time > self.end:
                break
            if progress is not None and int((event.time - self.start) // DAY) > day:
                day = int((event.time - self.start) // DAY)
                progress(day)
            self._dispatch(event)
        for job in list(self.runner.running.values()):
            self.runner.advance(job, self.end)
        for job in self.jobs:  # a job not done by the end (running, waiting, or holding its block for a repair)
            if job.state is not JobState.DONE:  # is charged to the end: a job's time ends at its last event
                held = 0 if job.state is JobState.QUEUED else job.shape.chips * job.active
                self.log.event(job, self.end, "allocation", chips=held)
        self.log.capacity(self.end, chips)  # still held as the run ends: the report spans the whole run

    # ---- handlers -------------------------------------------------------------------------------------------
    def _dispatch(self, event: Event) -> None:
        match event:
            case Arrival():
                self.scheduler.submit(self.job_maker.make(event), event.time)
            case Completion():
                self._completion(event)
            case FaultStrike():
                self.fault_response.strike(event)
            case Repair():
                self.fault_response.repair(event)
            case Schedule():
                self.scheduler.schedule(event.time)
            case Eviction():
                self._eviction(event)
            case RestartAfterRepair():
                self.scheduler.restart(event.job, event.time)
            case _:
                assert_never(event)

    def _completion(self, completion: Completion) -> None:
        job = self.runner.running.get(completion.job_id)
        if job is None or job.version != completion.version:
            return  # finished, stopped or rescheduled since
        self.runner.advance(job, completion.time + COMPLETION_SLACK_S)
        if job.state is JobState.RUNNING:
            self.runner.schedule_completion(job)

    def _eviction(self, eviction: Eviction) -> None:
        job = self.runner.running.get(eviction.job_id)
        if job is not None and job.runs == eviction.run:
            self.scheduler.disrupt(job, eviction.time, "drain")  # planned, with notice: not a disruption
