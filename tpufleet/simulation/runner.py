"""Running jobs' timelines: start-up, macro steps, checkpoints, finishing and stopping."""

from __future__ import annotations

import math

from tpufleet.allocation import Allocation
from tpufleet.simulation.events import Completion, EventQueue, Schedule
from tpufleet.simulation.inputs import Options, Workload
from tpufleet.simulation.job import Job, JobState, StartupStep
from tpufleet.simulation.log import EventLog, Stats
from tpufleet.simulation.placement import Placement, slice_key

EPSILON = 1e-6  # seconds: a stage within this of its end has ended
# Shares of the restart overhead: TPU initialisation, training preparation, compilation, checkpoint restore.
STARTUP_SHARES = (("tpu_init", 0.3), ("training_prep", 0.2), ("compile", 0.3))
RESTORE_SHARE = 0.2


class JobRunner:
    """The running jobs: brings each one's log up to a time, and starts, finishes and stops them."""

    def __init__(
        self, options: Options, workload: Workload, queue: EventQueue, log: EventLog, placement: Placement, stats: Stats
    ) -> None:
        self.options = options
        self.step_s = options.step_s
        self.checkpoint_interval_s = options.checkpoint_interval_s
        self.checkpoint_write_s = workload.checkpoint_write_s
        self.queue = queue
        self.log = log
        self.placement = placement
        self.stats = stats
        self.running: dict[str, Job] = {}

    def on_cube(self, cube: str, machine: int | None = None) -> list[Job]:
        """Running jobs holding the cube (or, given a machine, holding that machine of it)."""

        def holds(alloc: Allocation) -> bool:
            return cube in alloc.cubes and (machine is None or not alloc.machines or machine in alloc.machines)

        return [job for job in self.running.values() if any(holds(a) for a in job.held)]

    def in_pod(self, pod: str) -> list[Job]:
        return [job for job in self.running.values() if any(a.pod == pod for a in job.held)]

    # ---- starting and ending --------------------------------------------------------------------------------
    def start(self, job: Job, alloc: Allocation, t: float, more: list[Allocation] | None = None) -> None:
        """Start (or, after waiting in place for a repair, restart) the job from its last checkpoint; `more`: a
        multislice job's other slices (a restart in place keeps the ones it held)."""
        in_place = job.state is JobState.REPAIRING
        job.alloc = alloc
        if more is not None:
            job.more = list(more)
        self.placement.hold(job.id, alloc)
        for k, extra in enumerate(job.more, 1):
            self.placement.hold(slice_key(job.id, k), extra)
        self.running[job.id] = job
        job.state = JobState.RUNNING
        if job.first_start is None:
            job.first_start = t
        if job.displaced:
            self.stats.restart_waits.setdefault(job.size, []).append(t - job.stopped_at)
        job.displaced = False
        job.runs += 1
        job.t_mark = t
        job.progress = job.saved
        job.step = job.saved_step
        job.reroute_factor = 1.0
        job.network_faults = set()
        job.refresh_slowdown()
        overhead = self.options.restart_overhead_s
        job.startup = [StartupStep(name, share * overhead) for name, share in STARTUP_SHARES]
        if job.saved > 0:
            job.startup.append(StartupStep("restore", RESTORE_SHARE * overhead))
        job.startup_logged = False
        job.checkpoint_left = None
        job.to_checkpoint = self.checkpoint_interval_s if job.phase == "training" else math.inf
        job.to_step = self.step_s
        if not in_place:
            self.log.event(job, t, "allocation", chips=job.shape.chips * job.active)
        if job.elastic_min is not None:
            self.log.slice_counts(job, t)
        self.log.event(job, t, "job_start")
        self.schedule_completion(job)

    def release(self, job: Job) -> None:
        self._release_slices(job)
        job.more = []
        self.running.pop(job.id, None)

    def _release_slices(self, job: Job) -> None:
        self.placement.release(job.id)
        for k in range(1, len(job.more) + 1):
            self.placement.release(slice_key(job.id, k))

    def set_slices(self, job: Job, t: float, held: list[Allocation]) -> bool:
        """An elastic job runs on `held` (one slice fewer after a fault, one more when a slice is back): its
        log is brought up to t, the slices it no longer holds are freed, its step time follows the count. False
        (nothing changed) when the job ended on its own by t."""
        self.advance(job, t)
        if job.state is not JobState.RUNNING:
            return False
        self._release_slices(job)
        job.alloc, job.more = held[0], list(held[1:])
        self.placement.hold(job.id, job.alloc)
        for k, extra in enumerate(job.more, 1):
            self.placement.hold(slice_key(job.id, k), extra)
        self.log.event(job, t, "allocation", chips=job.shape.chips * job.active)
        self.log.slice_counts(job, t)
        job.refresh_slowdown()
        self.schedule_completion(job)
        return True

    def _finish(self, job: Job, t: float) -> None:
        self.log.event(job, t, "job_end")
        self.log.event(job, t, "allocation", chips=0)
        job.state = JobState.DONE
        job.t_mark = t
        self.release(job)
        self.stats.jobs_finished += 1
        self.queue.push(Schedule(t))

    def stop(self, job: Job, t: float, why: str, state: JobState) -> bool:
        """Bring the job's log up to t and stop it (False if it had already ended): training falls back to its
        last checkpoint, serving and inference lose no work."""
        self.advance(job, t)
        if job.state is not JobState.RUNNING:
            return False
        if job.phase == "training":
            job.progress = job.saved
        else:
            job.saved, job.saved_step = job.progress, job.step
        self.log.event(job, t, why)
        job.state = state
        job.version += 1
        return True

    # ---- completion -----------------------------------------------------------------------------------------
    def _remaining_wall(self, job: Job) -> float:
        startup = sum(s.remaining_s for s in job.startup) + (job.checkpoint_left or 0.0)
        return self._compute_wall(job, startup, job.work - job.progress, job.to_checkpoint, job.slowdown)

    def _compute_wall(self, job: Job, rest: float, work: float, to_checkpoint: float, slowdown: float) -> float:
        """`rest` wall seconds, then `work` compute seconds at `slowdown` with the checkpoint writes a training job
        makes (added in this order, so a prediction is the same to the last bit)."""
        rest += work * slowdown
        if job.phase == "training" and work > to_checkpoint:
            writes = math.floor((work - to_checkpoint) / self.checkpoint_interval_s) + 1
            rest += writes * self.checkpoint_write_s
        return rest

    def wall_if_started(self, job: Job) -> float:
        """How long the waiting job would run if started now on all its slices with nothing failing: its start-up
        stages, then its compute from its last checkpoint with the checkpoint writes (as `start` sets it up)."""
        overhead = self.options.restart_overhead_s
        startup = sum(share * overhead for _, share in STARTUP_SHARES)
        startup += RESTORE_SHARE * overhead if job.saved > 0 else 0.0
        to_checkpoint = self.checkpoint_interval_s if job.phase == "training" else math.inf
        return self._compute_wall(job, startup, job.work - job.saved, to_checkpoint, 1.0)

    def schedule_completion(self, job: Job) -> None:
        """(Re)predict the job's end; any earlier prediction goes stale."""
        job.version += 1
        job.expected_end = job.t_mark + self._remaining_wall(job)
        self.queue.push(Completion(job.expected_end, job.id, job.version))

    def begin_checkpoint(self, job: Job, t: float) -> None:
        self.log.event(job, t, "checkpoint_start", step=job.step)
        job.checkpoint_left = self.checkpoint_write_s
        job.checkpoint_step, job.checkpoint_progress = job.step, job.progress
        job.to_checkpoint = self.checkpoint_interval_s

    # ---- a job's own timeline -------------------------------------------------------------------------------
    def advance(self, job: Job, t_to: float) -> None:
        """Write the job's events up to t_to: start-up stages, then steps and checkpoints, maybe its end."""
        t = job.t_mark
        while t < t_to - EPSILON and job.state is JobState.RUNNING:
            if job.startup:
                t = self._startup(job, t, t_to)
            elif job.checkpoint_left is not None:
                t = self._checkpoint_write(job, t, t_to, job.checkpoint_left)
            else:
                t, more = self._compute(job, t, t_to)
                if not more:
                    break
                t = self._steps(job, t, t_to)
        job.t_mark = max(job.t_mark, min(t, t_to) if job.state is JobState.RUNNING else t)

    def _startup(self, job: Job, t: float, t_to: float) -> float:
        stage = job.startup[0]
        if not job.startup_logged:
            self.log.event(job, t, f"{stage.name}_start")
            job.startup_logged = True
        take = min(stage.remaining_s, t_to - t)
        t += take
        stage.remaining_s -= take
        if stage.remaining_s <= EPSILON:
            if stage.name == "restore":
                self.log.event(job, t, "restore_end", step=job.saved_step)
            else:
                self.log.event(job, t, f"{stage.name}_end")
            job.startup.pop(0)
            job.startup_logged = False
            if not job.startup:
                self._next_step(job, t)
        return t

    def _checkpoint_write(self, job: Job, t: float, t_to: float, left: float) -> float:
        take = min(left, t_to - t)
        t += take
        job.checkpoint_left = left - take
        if job.checkpoint_left <= EPSILON:
            self.log.event(job, t, "checkpoint_end", step=job.checkpoint_step)
            job.saved, job.saved_step = job.checkpoint_progress, job.checkpoint_step
            job.checkpoint_left = None
            self._next_step(job, t)
        return t

    def _compute(self, job: Job, t: float, t_to: float) -> tuple[float, bool]:
        """Compute up to the next step, checkpoint or the end, or to t_to; False once there is no more to do."""
        boundary = min(job.to_step, job.to_checkpoint, job.work - job.progress)
        wall = boundary * job.slowdown
        take = min(wall, t_to - t)
        done = take / job.slowdown
        t += take
        job.progress += done
        job.to_step -= done
        job.to_checkpoint -= done
        if take < wall - EPSILON:
            return t, False
        if job.progress >= job.work - EPSILON:
            self._finish(job, t)
            return t, False
        if job.to_checkpoint <= EPSILON:
            self.begin_checkpoint(job, t)
            job.to_step = self.step_s
        elif job.to_step <= EPSILON:
            job.to_step = self.step_s
            self._next_step(job, t)
        return t, True

    def _steps(self, job: Job, t: float, t_to: float) -> float:
        """Whole steps, one after another, while nothing else happens (`_compute` over and over, the same
        arithmetic in the same order, without a call per step: steps are nearly all of a run's events): up to the
        step that ends the job, starts a checkpoint or reaches t_to, which is left to `_compute` (any step this
        loop does not vouch for is, from the same state, so the events are `_compute`'s)."""
        step_s, slowdown, work = self.step_s, job.slowdown, job.work
        wall = step_s * slowdown  # a whole step's wall time, as `_compute` works it out
        done = wall / slowdown
        busy = job.state is not JobState.RUNNING or job.startup or job.checkpoint_left is not None
        if busy or job.to_step != step_s or step_s - done > EPSILON:
            return t
        progress, to_checkpoint, step = job.progress, job.to_checkpoint, job.step
        entries, job_id = self.log.entries, job.id
        mine = self.log.by_job[job_id]  # the job logged its start already
        while t < t_to - EPSILON:
            if to_checkpoint < step_s or work - progress < step_s or wall > t_to - t:
                break  # the step is cut short by a checkpoint, the job's end or t_to
            after, left = progress + done, to_checkpoint - done
            if after >= work - EPSILON or left <= EPSILON:
                break  # it ends the job or starts a checkpoint
            t += wall
            progress, to_checkpoint = after, left
            step += 1
            event = (job_id, round(t, 3), "step_start", step, None)
            entries.append(event)
            mine.append(event)
        job.progress, job.to_checkpoint, job.step = progress, to_checkpoint, step
        return t

    def _next_step(self, job: Job, t: float) -> None:
        job.step += 1
        self.log.event(job, t, "step_start", step=job.step)
