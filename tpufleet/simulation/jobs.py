"""A running job's own timeline: start-up, macro steps, checkpoints, and how it stops (mixin of Simulator)."""

from __future__ import annotations

import math

from tpufleet.simulation.spec import Job


class JobTimelines:
    def _start(self, job: Job, alloc, t: float) -> None:
        in_place = job.state == "repairing"
        job.alloc = alloc
        self.slices[job.id] = {"cubes": alloc.cubes, "machines": alloc.machines}
        self.running[job.id] = job
        job.state = "running"
        job.runs += 1
        job.t_mark = t
        job.progress = job.saved
        job.step = job.saved_step
        job.slow = 1.0
        job.network_faults = set()
        u0 = self.o.restart_overhead_s
        job.startup = [["tpu_init", 0.3 * u0], ["training_prep", 0.2 * u0], ["compile", 0.3 * u0]]
        if job.saved > 0:
            job.startup.append(["restore", 0.2 * u0])
        job.started = False
        job.ckpt_left = None
        job.to_ckpt = self.o.checkpoint_interval_s if job.phase == "training" else math.inf
        job.to_step = self.step_s
        if not in_place:
            self.emit(job, t, "allocation", chips=job.chips)
        self.emit(job, t, "job_start")
        self._schedule_completion(job)

    def _remaining_wall(self, job: Job) -> float:
        rest = sum(r for _, r in job.startup) + (job.ckpt_left or 0.0)
        work = job.work - job.progress
        rest += work * job.slow
        if job.phase == "training" and work > job.to_ckpt:
            rest += (math.floor((work - job.to_ckpt) / self.o.checkpoint_interval_s) + 1) * self.w.checkpoint_write_s
        return rest

    def _schedule_completion(self, job: Job) -> None:
        job.version += 1
        self.push(job.t_mark + self._remaining_wall(job), "complete", (job.id, job.version))

    # ---- a job's own timeline -------------------------------------------------------------------------------
    def advance(self, job: Job, t_to: float) -> None:
        t = job.t_mark
        eps = 1e-6
        while t < t_to - eps and job.state == "running":
            if job.startup:
                name, rem = job.startup[0]
                if not job.started:
                    self.emit(job, t, f"{name}_start")
                    job.started = True
                take = min(rem, t_to - t)
                t += take
                job.startup[0][1] = rem - take
                if job.startup[0][1] <= eps:
                    if name == "restore":
                        self.emit(job, t, "restore_end", step=job.saved_step)
                    else:
                        self.emit(job, t, f"{name}_end")
                    job.startup.pop(0)
                    job.started = False
                    if not job.startup:
                        job.step += 1
                        self.emit(job, t, "step_start", step=job.step)
                continue
            if job.ckpt_left is not None:
                take = min(job.ckpt_left, t_to - t)
                t += take
                job.ckpt_left -= take
                if job.ckpt_left <= eps:
                    self.emit(job, t, "checkpoint_end", step=job.ckpt_step)
                    job.saved, job.saved_step = job.ckpt_progress, job.ckpt_step
                    job.ckpt_left = None
                    job.step += 1
                    self.emit(job, t, "step_start", step=job.step)
                continue
            boundary = min(job.to_step, job.to_ckpt, job.work - job.progress)
            wall = boundary * job.slow
            take = min(wall, t_to - t)
            done = take / job.slow
            t += take
            job.progress += done
            job.to_step -= done
            job.to_ckpt -= done
            if take < wall - eps:
                break
            if job.progress >= job.work - eps:
                self._finish(job, t)
                break
            if job.to_ckpt <= eps:
                self.emit(job, t, "checkpoint_start", step=job.step)
                job.ckpt_left = self.w.checkpoint_write_s
                job.ckpt_step, job.ckpt_progress = job.step, job.progress
                job.to_ckpt = self.o.checkpoint_interval_s
                job.to_step = self.step_s
                continue
            if job.to_step <= eps:
                job.step += 1
                job.to_step = self.step_s
                self.emit(job, t, "step_start", step=job.step)
        job.t_mark = max(job.t_mark, min(t, t_to) if job.state == "running" else t)

    def _release(self, job: Job) -> None:
        self.slices.pop(job.id, None)
        self.running.pop(job.id, None)

    def _finish(self, job: Job, t: float) -> None:
        self.emit(job, t, "job_end")
        self.emit(job, t, "allocation", chips=0)
        job.state = "done"
        job.t_mark = t
        self._release(job)
        self.stats["jobs_finished"] += 1
        self.push(t, "schedule")

    def _stop(self, job: Job, t: float, why: str, state: str) -> bool:
        """Bring the job's log up to t and stop it: training falls back to its last checkpoint."""
        self.advance(job, t)
        if job.state != "running":
            return False
        if job.phase == "training":
            job.progress = job.saved
        else:
            job.saved, job.saved_step = job.progress, job.step  # serving and inference lose no work
        self.emit(job, t, why)
        job.state = state
        job.version += 1
        return True

    def disrupt(self, job: Job, t: float, why: str) -> None:
        if not self._stop(job, t, why, "queued"):
            return
        self.emit(job, t, "allocation", chips=0)
        self._release(job)
        self.waiting.append(job)
        self.stats["evictions" if why != "preemption" else "preemptions"] += 1
        self.push(t, "schedule")

    def wait_in_place(self, job: Job, t: float, repair: float) -> None:
        """Static pod: no spare cube can be wired in, so the job keeps its block and restarts after the repair."""
        if not self._stop(job, t, "failure", "repairing"):
            return
        self.running.pop(job.id, None)
        self.stats["evictions"] += 1
        self.push(repair + 1e-3, "restart", job)

