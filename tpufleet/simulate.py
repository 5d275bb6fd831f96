"""Discrete-event simulation of pods under load and faults, writing the events `goodput-report` reads (pure).

Jobs arrive (or are listed), wait in a priority queue and are placed through the same allocation and
cross-connect planning code the CLI uses. Components fail at daily rates and are repaired; an OCS or optical-link
fault is absorbed by fault-tolerant routing (the job runs on, its step time multiplied by `rerouted_slowdown`)
exactly where `inject-fault` would reroute, and otherwise evicts the job, as a machine fault always does. An
evicted or preempted job restarts from its last checkpoint after a restart overhead (TPU initialisation, training
preparation, compilation, restore). Preemption frees room for a higher-priority job, evicting lower-priority
jobs medium-sized first, then large, small and extra-large last (seed 000 §5).

Modes: ``static`` places a job only on a contiguous box of cubes of the pod's fixed 4x4x4 cube torus, has no
fault-tolerant routing, and cannot wire a spare cube in: a job hit by a machine fault keeps its block (still
all-allocated) and restarts when the machine is repaired; ``reconfigurable`` takes any healthy free cubes, still without fault-tolerant routing
(and so cannot place multi-cube jobs in a pod with a failed OCS); ``reconfigurable-ft`` adds fault-tolerant
routing for the jobs that opt in.

Steps are logged at the granularity of "macro steps": each checkpoint interval is ``macro_steps`` logged steps, and
the job's ``ideal_step_s`` is per logged step, so the goodput accounting is unchanged.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from dataclasses import dataclass, field

from tpufleet import allocation, xconnect
from tpufleet.health import Health
from tpufleet.model import Fleet, default_fleet
from tpufleet.shapes import Shape, parse_shape

START_EPOCH = 1767571200.0  # 2026-01-05T00:00:00Z
DAY = 86400.0
MODES = ("static", "reconfigurable", "reconfigurable-ft")
# eviction preference when preempting: medium first, extra-large last
VICTIM_ORDER = {"medium": 0, "large": 1, "small": 2, "extra-large": 3}


@dataclass
class Workload:
    arrival_rate_per_hour: float = 1.6
    duration_median_h: float = 5.0
    duration_sigma: float = 1.0
    duration_max_h: float = 96.0
    shapes: list[tuple[Shape, float]] = field(default_factory=lambda: [(parse_shape("4x4x4"), 1.0)])
    phases: dict[str, float] = field(default_factory=lambda: {"training": 1.0})
    frameworks: dict[str, float] = field(default_factory=lambda: {"jax": 1.0})
    priorities: list[str] = field(default_factory=lambda: ["batch"])
    priority_weights: list[float] = field(default_factory=lambda: [1.0])
    ideal_step_fraction: float = 0.6
    checkpoint_write_s: float = 60.0
    fault_tolerant_share: float = 0.95
    jobs: list[dict] = field(default_factory=list)  # explicit jobs: {shape, twisted?, duration_hours, arrival_hours?, ...}


@dataclass
class Rates:
    host_per_day: float = 0.0008
    link_per_day: float = 0.00005
    ocs_per_day: float = 0.0004
    repair_hours: dict[str, float] = field(default_factory=lambda: {"host": 8.0, "link": 4.0, "ocs": 2.0})
    rerouted_slowdown: float = 1.08


@dataclass
class Options:
    days: float
    seed: int = 0
    pods: int = 1
    mode: str = "reconfigurable-ft"
    checkpoint_interval_s: float = 3600.0
    restart_overhead_s: float = 600.0
    macro_steps: int = 10
    cubes_per_pod: int = 64


def size_class(chips: int) -> str:
    from tpufleet.goodput.metrics import size_class as sc

    return sc(chips)


@dataclass
class Job:
    id: str
    seq: int
    shape: Shape
    phase: str
    framework: str
    priority: int
    priority_name: str
    ft: bool
    work: float
    submitted: float
    state: str = "queued"
    progress: float = 0.0
    saved: float = 0.0
    step: int = 0
    saved_step: int = 0
    slow: float = 1.0
    network_faults: set = field(default_factory=set)
    alloc: object = None
    t_mark: float = 0.0
    startup: list = field(default_factory=list)
    started: bool = False
    ckpt_left: float | None = None
    ckpt_step: int = 0
    ckpt_progress: float = 0.0
    to_ckpt: float = 0.0
    to_step: float = 0.0
    version: int = 0
    runs: int = 0

    @property
    def chips(self) -> int:
        return self.shape.chips

    @property
    def size(self) -> str:
        return size_class(self.chips)


class Simulator:
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
        self.stats = {"preemptions": 0, "evictions": 0, "reroutes": 0, "faults": {"host": 0, "link": 0, "ocs": 0},
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
        ):
            if rate <= 0:
                continue
            t = self.t0
            lam = count * rate / DAY
            while True:
                t += self.rng.expovariate(lam)
                if t >= self.end:
                    break
                if kind == "host":
                    target = (self.rng.choice(cubes), self.rng.randrange(16))
                elif kind == "link":
                    target = (self.rng.choice(cubes), self.rng.randrange(48))
                else:
                    target = (f"pod{self.rng.randrange(o.pods)}", "xyz"[self.rng.randrange(3)], self.rng.randrange(16))
                self.push(t, "fault", (kind, target))

    # ---- placement ------------------------------------------------------------------------------------------
    def _health(self) -> Health:
        h = Health()
        h.cubes_out = {c: ["sim"] for c, n in self.out_counts.items() if n > 0}
        h.ocs_down = {k: ["sim"] for k, n in self.ocs_down.items() if n > 0}
        return h

    def _free_cubes(self, pod: str, health: Health) -> list[str]:
        used = allocation.machine_usage(self.slices)
        return [c for c in self.fleet.pod_by_name[pod].cubes if c not in used and health.cube_ok(c)]

    def _boxes(self, grid_dims) -> "object":
        """Every box of the fixed 4x4x4 cube torus with these sides, any orientation: [boxes, cubes] positions."""
        import numpy as np

        if grid_dims not in self._box_cache:
            boxes = []
            for dims in sorted(set(itertools.permutations(grid_dims))):
                cells = list(itertools.product(*(range(n) for n in dims)))
                for origin in itertools.product(range(4), repeat=3):
                    boxes.append([((origin[0] + a) % 4) * 16 + ((origin[1] + b) % 4) * 4 + (origin[2] + c) % 4
                                  for a, b, c in cells])
            self._box_cache[grid_dims] = np.array(boxes, dtype=np.int64)
        return self._box_cache[grid_dims]

    def _static_box(self, shape: Shape, pod: str, health: Health):
        import numpy as np

        cubes = self.fleet.pod_by_name[pod].cubes
        if len(cubes) != 64:
            return None
        free = set(self._free_cubes(pod, health))
        mask = np.array([c in free for c in cubes])
        boxes = self._boxes(shape.cube_grid)
        fits = np.flatnonzero(mask[boxes].all(axis=1))
        if not len(fits):
            return None
        box = [cubes[i] for i in boxes[fits[0]]]
        return allocation.Allocation(pod, box, allocation.grid_coords(shape, box))

    def _place(self, job: Job, commit: bool = True):
        health = self._health()
        shape = job.shape
        multi = not shape.is_subcube
        ft_routing = self.o.mode == "reconfigurable-ft" and job.ft
        for pod in self.fleet.pods:
            if multi and not ft_routing and any(k.startswith(pod.name + "/") for k in health.ocs_down):
                continue
            if multi and self.fast_paths and len(self._free_cubes(pod.name, health)) < shape.cubes:
                continue
            try:
                if self.o.mode == "static" and multi:
                    alloc = self._static_box(shape, pod.name, health)
                    if alloc is None:
                        continue
                else:
                    alloc = allocation.allocate(shape, self.fleet, self.slices, health, pod=pod.name)
            except Exception:  # noqa: BLE001 - a refusal means: not in this pod
                continue
            if multi:
                plan = xconnect.plan(shape, self.fleet, alloc.coords, self.ocs_state, health, ft_routing)
                if plan.blocked:
                    continue
                if not commit:
                    return alloc
                self.ocs_state = xconnect.apply(self.ocs_state, plan.changes)
                self.stats["xconnect_changes"] += plan.summary["add"] + plan.summary["remove"]
            return alloc
        return None

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
        self.push(repair + 1e-3, "restart", job.id)

    # ---- scheduling -----------------------------------------------------------------------------------------
    def schedule(self, t: float) -> None:
        self.waiting.sort(key=lambda j: (j.priority, j.seq))
        placed = True
        while placed:
            placed = False
            hopeless: set = set()  # shapes that did not fit since the last placement
            for job in list(self.waiting):
                key = (job.shape, job.ft, job.priority)
                if key in hopeless and self.fast_paths:
                    continue
                alloc = self._place(job)
                if alloc is None and self._preempt_for(job, t):
                    alloc = self._place(job)
                if alloc is not None:
                    self.waiting.remove(job)
                    self._start(job, alloc, t)
                    placed = True
                    hopeless.clear()
                else:
                    hopeless.add(key)

    def _preempt_for(self, job: Job, t: float) -> bool:
        """Evict the fewest lower-priority jobs (medium first, extra-large last) that let `job` fit; none if no
        set of them would."""
        victims = [j for j in self.running.values() if j.priority > job.priority]
        if not victims:
            return False
        for pod in self.fleet.pods:
            mine = sorted((j for j in victims if j.alloc.pod == pod.name),
                          key=lambda j: (VICTIM_ORDER[j.size], -j.priority, -j.seq))
            chosen = []
            saved = dict(self.slices)
            try:
                for victim in mine:
                    chosen.append(victim)
                    self.slices.pop(victim.id, None)
                    if self._place(job, commit=False) is not None:
                        break
                else:
                    chosen = []
            finally:
                self.slices = saved
            if chosen:
                for victim in chosen:
                    self.disrupt(victim, t, "preemption")
                return True
        return False

    # ---- faults ---------------------------------------------------------------------------------------------
    def _jobs_on_cube(self, cube: str, machine: int | None = None) -> list[Job]:
        out = []
        for job in self.running.values():
            if cube in job.alloc.cubes and (machine is None or not job.alloc.machines or machine in job.alloc.machines):
                out.append(job)
        return out

    def fault(self, t: float, kind: str, target) -> None:
        self.stats["faults"][kind] += 1
        repair = t + self.r.repair_hours[kind] * 3600.0
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
            elif kind == "restart":
                job = next(j for j in self.jobs if j.id == payload)
                if job.state == "repairing":
                    self._start(job, job.alloc, t)
        for job in list(self.running.values()):
            self.advance(job, self.end)
        return self.records
