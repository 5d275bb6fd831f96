"""The event loop: arrivals, faults and repairs, and the log it writes."""

from __future__ import annotations

import heapq
import itertools
import math
import random

from tpufleet.model import Fleet, default_fleet
from tpufleet.shapes import Shape, parse_shape
from tpufleet.simulation.jobs import JobTimelines
from tpufleet.simulation.placement import Placement
from tpufleet.simulation.spec import DAY, MODES, START_EPOCH, Job, Options, Rates, Workload


class Simulator(Placement, JobTimelines):
    def __init__(self, workload: Workload, rates: Rates, options: Options):
        if options.mode not in MODES:
            raise ValueError(options.mode)
        self.w, self.r, self.o = workload, rates, options
        self.rng = random.Random(options.seed)
        self.fleet: Fleet = default_fleet(options.pods, options.cubes_per_pod)
        self.t0 = START_EPOCH
        self.end = START_EPOCH + options.days * DAY
        self.queue: list = []  # heap of (time, seq, kind, payload)
        self.counter = itertools.count()
        self.jobs: list[Job] = []
        self.waiting: list[Job] = []
        self.running: dict[str, Job] = {}
        self.slices: dict[str, dict] = {}
        self.out_counts: dict[str, int] = {}
        self.ocs_down: dict[str, int] = {}
        self.ocs_state: dict = {}
        self.records: list[dict] = []
        self.stats = {"preemptions": 0, "evictions": 0, "reroutes": 0, "faults": {"host": 0, "link": 0, "ocs": 0, "drain": 0},
                      "xconnect_changes": 0, "jobs_finished": 0}
        self.step_s = options.checkpoint_interval_s / options.macro_steps
        self._box_cache: dict = {}
        self.fast_paths = True  # memo of shapes that did not fit, cube-count guard; off only for the benchmark baseline

    # ---- event plumbing -------------------------------------------------------------------------------------
    def push(self, t: float, kind: str, payload=None) -> None:
        heapq.heappush(self.queue, (t, next(self.counter), kind, payload))

    def emit(self, job: Job, t: float, name: str, **extra) -> None:
        self.records.append({"type": "event", "job": job.id, "time": round(t, 3), "event": name, **extra})

    # ---- workload -------------------------------------------------------------------------------------------
    def _pick(self, weights: dict[str, float]) -> str:
        names = list(weights)
        return self.rng.choices(names, weights=[weights[n] for n in names])[0]

    def _new_job(self, t: float, shape: Shape, hours: float, **fixed) -> Job:
        w = self.w
        seq = len(self.jobs)
        rank = fixed.get("priority_rank")
        if rank is None:
            rank = self.rng.choices(range(len(w.priorities)), weights=w.priority_weights)[0]
        job = Job(
            id=fixed.get("id") or f"job{seq:05d}",
            seq=seq,
            shape=shape,
            phase=fixed.get("phase") or self._pick(w.phases),
            framework=fixed.get("framework") or self._pick(w.frameworks),
            priority=rank,
            priority_name=w.priorities[rank],
            ft=fixed.get("fault_tolerant", self.rng.random() < w.fault_tolerant_share),
            work=hours * 3600.0,
            submitted=t,
        )
        self.jobs.append(job)
        ideal = self.step_s * w.ideal_step_fraction
        self.records.append({"type": "job", "job": job.id, "accelerator": "tpu-v4", "chips": job.chips,
                             "topology": shape.text + (" twisted" if shape.twisted else ""), "phase": job.phase,
                             "framework": job.framework, "priority": job.priority_name, "ideal_step_s": round(ideal, 6)})
        self.emit(job, t, "submitted")
        return job

    def _arrivals(self) -> None:
        w = self.w
        for i, spec in enumerate(w.jobs):
            t = self.t0 + float(spec.get("arrival_hours", 0.0)) * 3600.0
            shape = parse_shape(spec["shape"], bool(spec.get("twisted", False)))
            self.push(t, "arrive", (shape, float(spec["duration_hours"]), {
                "id": spec.get("id"), "phase": spec.get("phase"), "fault_tolerant": spec.get("fault_tolerant", True),
                "priority_rank": spec.get("priority_rank", 0)}))
        if w.arrival_rate_per_hour > 0 and w.shapes:
            t = self.t0
            shapes, weights = [s for s, _ in w.shapes], [x for _, x in w.shapes]
            while True:
                t += self.rng.expovariate(w.arrival_rate_per_hour / 3600.0)
                if t >= self.end:
                    break
                hours = min(w.duration_max_h, math.exp(math.log(w.duration_median_h) + w.duration_sigma * self.rng.gauss(0, 1)))
                self.push(t, "arrive", (self.rng.choices(shapes, weights=weights)[0], hours, {}))

    def _faults(self) -> None:
        o, r = self.o, self.r
        cubes = self.fleet.cubes
        for kind, count, rate in (
            ("host", len(cubes) * 16, r.host_per_day),
            ("link", len(cubes) * 48, r.link_per_day),  # one cable per optical link pair
            ("ocs", o.pods * 48, r.ocs_per_day),
            ("drain", len(cubes) * 16, r.drain_per_day),
        ):
            if rate <= 0:
                continue
            t = self.t0
            lam = count * rate / DAY
            while True:
                t += self.rng.expovariate(lam)
                if t >= self.end:
                    break
                if kind in ("host", "drain"):
                    target = (self.rng.choice(cubes), self.rng.randrange(16))
                elif kind == "link":
                    target = (self.rng.choice(cubes), self.rng.randrange(48))
                else:
                    target = (f"pod{self.rng.randrange(o.pods)}", "xyz"[self.rng.randrange(3)], self.rng.randrange(16))
                self.push(t, "fault", (kind, target))

    # ---- faults ---------------------------------------------------------------------------------------------
    def _jobs_on_cube(self, cube: str, machine: int | None = None) -> list[Job]:
        out = []
        for job in self.running.values():
            if cube in job.alloc.cubes and (machine is None or not job.alloc.machines or machine in job.alloc.machines):
                out.append(job)
        return out

    def drain(self, t: float, target, repair: float) -> None:
        """Planned maintenance of a machine: jobs get notice, training saves a checkpoint, then they move."""
        cube, machine = target
        self.out_counts[cube] = self.out_counts.get(cube, 0) + 1
        for job in self._jobs_on_cube(cube, machine):
            self.advance(job, t)
            leave = t
            if job.phase == "training" and not job.startup and job.ckpt_left is None and job.progress > job.saved:
                self.emit(job, t, "checkpoint_start", step=job.step)
                job.ckpt_left = self.w.checkpoint_write_s
                job.ckpt_step, job.ckpt_progress = job.step, job.progress
                job.to_ckpt = self.o.checkpoint_interval_s
                leave = t + job.ckpt_left
            elif job.ckpt_left is not None:
                leave = t + job.ckpt_left
            self.push(leave, "evict", (job.id, job.runs))
        self.push(repair, "repair", ("host", target))

    def fault(self, t: float, kind: str, target) -> None:
        self.stats["faults"][kind] += 1
        repair = t + self.r.repair_hours[kind] * 3600.0
        if kind == "drain":
            self.drain(t, target, repair)
            return
        if kind == "host":
            cube, machine = target
            self.out_counts[cube] = self.out_counts.get(cube, 0) + 1
            for job in self._jobs_on_cube(cube, machine):
                if self.o.mode == "static":
                    self.wait_in_place(job, t, repair)
                else:
                    self.disrupt(job, t, "failure")
            self.push(repair, "repair", (kind, target))
            return
        if kind == "link":
            cube, _ = target
            hit = [j for j in self._jobs_on_cube(cube) if not j.shape.is_subcube]
        else:
            pod = target[0]
            key = f"{pod}/{target[1]}/{target[2]}"
            self.ocs_down[key] = self.ocs_down.get(key, 0) + 1
            hit = [j for j in self.running.values() if j.alloc.pod == pod and not j.shape.is_subcube]
        fault_id = (kind, target, t)
        for job in hit:
            if self.o.mode == "reconfigurable-ft" and job.ft:
                self.advance(job, t)
                job.network_faults.add(fault_id)
                job.slow = self.r.rerouted_slowdown
                self.stats["reroutes"] += 1
                self._schedule_completion(job)
            else:
                self.disrupt(job, t, "eviction")
        self.push(repair, "repair", (kind, target, fault_id))

    def repair(self, t: float, kind: str, target, fault_id=None) -> None:
        if kind == "host":
            cube = target[0]
            self.out_counts[cube] -= 1
        else:
            if kind == "ocs":
                key = f"{target[0]}/{target[1]}/{target[2]}"
                self.ocs_down[key] -= 1
            for job in self.running.values():
                if fault_id in job.network_faults:
                    self.advance(job, t)
                    job.network_faults.discard(fault_id)
                    if not job.network_faults:
                        job.slow = 1.0
                    self._schedule_completion(job)
        self.push(t, "schedule")

    # ---- main loop ------------------------------------------------------------------------------------------
    def run(self, progress=None) -> list[dict]:
        capacity = self.o.pods * self.o.cubes_per_pod * 64
        self.records.append({"type": "capacity", "time": self.t0, "accelerator": "tpu-v4", "chips": capacity})
        self._arrivals()
        self._faults()
        last_day = 0
        while self.queue:
            t, _, kind, payload = heapq.heappop(self.queue)
            if t > self.end:
                break
            if progress is not None and int((t - self.t0) // DAY) > last_day:
                last_day = int((t - self.t0) // DAY)
                progress(last_day)
            if kind == "arrive":
                shape, hours, fixed = payload
                self.waiting.append(self._new_job(t, shape, hours, **fixed))
                self.schedule(t)
            elif kind == "complete":
                job_id, version = payload
                job = self.running.get(job_id)
                if job is not None and job.version == version:
                    self.advance(job, t + 1.0)
                    if job.state == "running":
                        self._schedule_completion(job)
            elif kind == "fault":
                self.fault(t, *payload)
            elif kind == "repair":
                self.repair(t, *payload)
            elif kind == "schedule":
                self.schedule(t)
            elif kind == "evict":
                job_id, runs = payload
                job = self.running.get(job_id)
                if job is not None and job.runs == runs:
                    self.disrupt(job, t, "eviction")
            elif kind == "restart":
                job = payload
                if job.state == "repairing":
                    self._start(job, job.alloc, t)
        for job in list(self.running.values()):
            self.advance(job, self.end)
        return self.records

