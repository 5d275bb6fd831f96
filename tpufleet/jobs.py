"""Multislice jobs: where their slices go, the job's state derived from its slices, and what a fault does to a
job (pure).

A job is N identical slices, each an ICI torus wired through the OCS of its own pod, joined by the data-centre
network (Pathways' "islands"; Cloud TPU's multislice). Pathways gang-schedules every slice of a program
together, so a job without elasticity runs only when all its slices do: one evicted slice stops the whole job,
while its other slices stay held so that `reschedule` replaces only the broken one. An elastic job (a minimum
of M slices) runs on while at least M are active, data parallel: each active slice keeps its own step time, so
the job keeps active/N of its throughput, and a step of the same global batch takes N/active as long.

>>> from tpufleet.fleetstate import Job, Slice, SliceState
>>> from tpufleet.shapes import parse_shape
>>> shape = parse_shape("4x4x8")
>>> job = Job("j", shape, ("j-0", "j-1", "j-2", "j-3"), elastic_min=3)
>>> parts = [Slice(n, shape, "pod0", (), {}, SliceState.CONNECTED, job="j") for n in job.slices]
>>> parts[1].state = SliceState.EVICTED
>>> s = status_of(job, parts)
>>> s.state.value, len(s.active), s.throughput_kept, s.step_slowdown
('degraded', 3, 0.75, 1.333)
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tpufleet import allocation
from tpufleet.allocation import ALL_MACHINES, Allocation, MachineUsage
from tpufleet.errors import BadInput, Refused
from tpufleet.fleetstate import FleetState, Job, Slice, SliceState
from tpufleet.health import Health
from tpufleet.ids import natural_key
from tpufleet.model import Fleet
from tpufleet.shapes import Shape

Json = dict[str, Any]


class JobState(str, enum.Enum):
    PENDING = "pending"  # not every slice wired yet, none evicted
    RUNNING = "running"  # every slice wired, none evicted
    DEGRADED = "degraded"  # elastic: some slices out, at least its minimum active
    STOPPED = "stopped"  # fewer active slices than it needs (without elasticity: any slice evicted)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class JobStatus:
    """A job's state as its slices give it."""

    job: Job
    state: JobState
    active: tuple[str, ...]  # wired (connected or rerouted) slices
    evicted: tuple[str, ...]
    rerouted: tuple[str, ...]  # active slices running on tables around a network fault
    pods: tuple[str, ...]

    @property
    def total(self) -> int:
        return len(self.job.slices)

    @property
    def throughput_kept(self) -> float | None:
        """Share of the job's data-parallel throughput it keeps (None while it has not started)."""
        if self.state is JobState.PENDING:
            return None
        if self.state is JobState.STOPPED:
            return 0.0
        return round(len(self.active) / self.total, 3)

    @property
    def step_slowdown(self) -> float | None:
        """How much longer a step of the same global batch takes on the active slices (None when stopped)."""
        if self.state in (JobState.RUNNING, JobState.DEGRADED):
            return round(self.total / len(self.active), 3)
        return None

    def record(self) -> Json:
        """The documented `show jobs -o json` object."""
        job = self.job
        return {
            "name": job.name,
            "shape": job.shape.text,
            "twisted": job.shape.twisted,
            "slices": list(job.slices),
            "elastic_min": job.elastic_min,
            "spread": job.spread,
            "state": self.state.value,
            "active_slices": len(self.active),
            "total_slices": self.total,
            "pods": list(self.pods),
            "throughput_kept": self.throughput_kept,
            "step_slowdown": self.step_slowdown,
            "evicted": list(self.evicted),
            "rerouted": list(self.rerouted),
            "created": job.created,
        }


def status_of(job: Job, slices: Sequence[Slice]) -> JobStatus:
    """The job's state from its slices' states (given in the job's order)."""
    active = tuple(s.name for s in slices if s.state.wired)
    evicted = tuple(s.name for s in slices if s.state is SliceState.EVICTED)
    rerouted = tuple(s.name for s in slices if s.state is SliceState.DEGRADED)
    pods = tuple(sorted({s.pod for s in slices}, key=natural_key))
    if evicted:  # an elastic job runs on while it keeps its minimum; any other stops whole
        state = JobState.DEGRADED if job.elastic and len(active) >= job.needed else JobState.STOPPED
    else:
        state = JobState.RUNNING if len(active) == len(slices) else JobState.PENDING
    return JobStatus(job, state, active, evicted, rerouted, pods)


def job_status(state: FleetState, name: str) -> JobStatus:
    return status_of(state.job(name), state.job_slices(name))


def all_statuses(state: FleetState) -> list[JobStatus]:
    return [job_status(state, name) for name in sorted(state.jobs, key=natural_key)]


# ---- what a fault does to a job ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobVerdict:
    """A job touched by a fault, after the fault's per-slice verdicts: stopped whole, or running on."""

    status: JobStatus
    hit: tuple[str, ...]  # its slices the fault touched

    @property
    def action(self) -> str:
        return "stop" if self.status.state is JobState.STOPPED else "continue"

    def reason(self) -> str:
        s, job = self.status, self.status.job
        if s.state is JobState.STOPPED and not job.elastic:
            held = s.total - len(s.evicted)
            if not held:  # every slice evicted: no other slice to hold
                return f"not elastic: all {s.total} of its slices evicted; `reschedule` replaces each"
            return (
                f"not elastic: {len(s.evicted)} of its {s.total} slices evicted stops the whole job; "
                f"its other {held} slice(s) stay held and `reschedule` replaces only the evicted one(s)"
            )
        if s.state is JobState.STOPPED:
            return f"elastic, but only {len(s.active)} of {s.total} slices active, below its minimum {job.elastic_min}"
        if s.state is JobState.DEGRADED:
            return (
                f"elastic: continues on {len(s.active)} of {s.total} slices (minimum {job.elastic_min}), "
                f"keeping {s.throughput_kept:g} of its throughput (a step takes {s.step_slowdown:g}x as long)"
            )
        if s.state is JobState.PENDING:
            return "not running yet: some slices are not wired"
        return "runs on: no slice of it was evicted"

    def record(self, state: FleetState, now: str) -> Json:
        """The job section of a blast radius (`inject-fault -o json` under "jobs")."""
        s = self.status
        return {
            "job": s.job.name,
            "action": self.action,
            "state": s.state.value,
            "reason": self.reason(),
            "slices_hit": list(self.hit),
            "active_slices": len(s.active),
            "total_slices": s.total,
            "elastic_min": s.job.elastic_min,
            "throughput_kept": s.throughput_kept,
            "step_slowdown": s.step_slowdown,
            "replacements": [_replacement(state.slices[n]) for n in s.evicted],
            "next": next_steps(state, s, now),
        }


def _replacement(sl: Slice) -> Json:
    return {"slice": sl.name, "proposal": sl.proposal.record() if sl.proposal else None}


def next_steps(state: FleetState, status: JobStatus, now: str) -> list[str]:
    """The commands that bring the job back to all its slices, in the order to run them, each working when run: the
    moves worked out before the first that waits for a repair (an elastic job may run on them), the repairs the
    others wait for (`movesteps.steps_to_move`), their moves (a slice a maintenance plan's wave stopped, as its
    `explain` gives it: `movesteps.move_steps`); a slice that cannot move even then gets no step, nor one whose
    move waits for a maintenance plan's drain until its window ends; then the job's wiring, while one is unwired."""
    from tpufleet.integrations.reservation import clear_step
    from tpufleet.maintenance import plan_window_ahead
    from tpufleet.movesteps import move_steps, steps_to_move

    plan = steps_to_move(state, [state.slices[name] for name in status.evicted])
    held = {f.id for f in plan.clears if plan_window_ahead(f.reason, now, state.announced_end(f.target)) is not None}
    clears = dict.fromkeys(clear_step(f.id, f.reason) for f in plan.clears if f.id not in held)  # one import: all
    first_wait = next((i for i, n in enumerate(plan.moves) if n in plan.waits), 0)
    steps: list[str] = []
    for i, n in enumerate(plan.moves):
        steps += [*clears] if i == first_wait else []
        if n in plan.waits:  # it moves once faults are cleared: `reschedule`, as its own `explain` gives it then
            steps += [] if held.intersection(plan.needs.get(n, ())) else [f"tpufleet reschedule {n}"]
        else:
            steps += move_steps(state, state.slices[n])
    steps += [] if plan.moves else [*clears]
    # pending, or stopped with slices never wired besides the evicted ones: `plan-xconnect JOB --apply` wires them
    if status.state is JobState.PENDING or any(
        s.state is SliceState.ALLOCATED for s in state.job_slices(status.job.name)
    ):
        steps.append(f"tpufleet plan-xconnect {status.job.name} --apply")
    return steps


def fault_verdicts(state: FleetState, slices_hit: Iterable[str]) -> list[JobVerdict]:
    """The job-level verdict for every job one of whose slices a fault touched, given the state after the fault's
    per-slice verdicts (evictions and reroutes already made). Changes nothing: a job's state is derived."""
    hit: dict[str, list[str]] = {}
    for name in slices_hit:
        sl = state.slices.get(name)
        if sl is not None and sl.job is not None:
            hit.setdefault(sl.job, []).append(name)
    ordered = sorted(hit.items(), key=lambda kv: natural_key(kv[0]))
    return [JobVerdict(job_status(state, job), tuple(names)) for job, names in ordered]


def jobs_hit(state: FleetState, radius: Json, now: str) -> list[Json]:
    """The "jobs" section for one blast radius (`BlastRadius.to_dict()`): its slices' jobs and their verdicts."""
    touched = [s["slice"] for s in radius.get("slices", []) if s.get("action") != "none"]
    return [v.record(state, now) for v in fault_verdicts(state, touched)]


# ---- words for `explain` and the map legend ----------------------------------------------------------------------


def summary(status: JobStatus) -> str:
    """One line: how many slices are active, of how many, and what that means for the job."""
    job = status.job
    kind = f"elastic, minimum {job.elastic_min}" if job.elastic else "not elastic"
    text = f"job {job.name}: {len(status.active)} of {status.total} slices active ({kind}), {status.state}"
    if status.state is JobState.DEGRADED:
        text += f": keeps {status.throughput_kept:g} of its throughput, a step takes {status.step_slowdown:g}x as long"
    elif status.state is JobState.STOPPED and not job.elastic:
        text += ": one evicted slice stops the whole job; its other slices stay held"
    return text


def job_line(state: FleetState, sl: Slice) -> str | None:
    """For `explain SLICE`: the job the slice belongs to, in one line (None for a slice of no job)."""
    if sl.job is None:
        return None
    return f"one of the slices of {summary(job_status(state, sl.job))}"


def job_tag(state: FleetState, sl: Slice) -> str:
    """For the map legend: "job J (state)", or "" for a slice of no job."""
    return "" if sl.job is None else f"job {sl.job} ({job_status(state, sl.job).state})"


def explain_job(state: FleetState, name: str, now: str) -> Json:
    """`explain JOB`: its state in words, each slice's, and the commands that bring every slice back."""
    from tpufleet.integrations.reservation import awaited
    from tpufleet.movesteps import move_to, steps_to_move, unjudged_note

    status = job_status(state, name)
    why = [summary(status)]
    moves = steps_to_move(state, [state.slices[n] for n in status.evicted])
    for member in state.job_slices(name):
        line = member.describe()
        fault = state.fault(member.evicted_by)
        if fault is not None:
            line += f", by fault {fault.id} on {fault.target}"
        if member.name in moves.stuck:
            line += f"; no place to move it to, even once its faults are cleared: {moves.stuck[member.name]}"
        elif needs := moves.needs.get(member.name):  # a reserved move too: `reschedule` refuses it until then
            repair, _ = awaited([f for f in map(state.fault, needs) if f is not None])
            placed = _refused(member, moves.waits)
            line += f"; {placed}: it waits for {repair}{_windows(state, needs, now)}"
        elif member.proposal is not None:
            line += f"; reschedule moves it {move_to(state, member)}"
        if member.name in moves.unjudged:
            line += f"; {unjudged_note(member, moves.unjudged[member.name])}"
        why.append(line)
    return {"kind": "job", **status.record(), "why": why, "next": next_steps(state, status, now)}


def _windows(state: FleetState, faults: Iterable[str], now: str) -> str:
    """Where some of `faults` are maintenance plans' drains whose window is ahead: until when they hold."""
    from tpufleet.maintenance import plan_drain_held

    own = state.announced_end
    held = [why for f in map(state.fault, faults) if f and (why := plan_drain_held(f.id, f.reason, now, own(f.target)))]
    return "".join(f" ({why})" for why in held)


def _refused(sl: Slice, waits: dict[str, str]) -> str:
    if sl.proposal is None:
        return f"reschedule cannot move it yet: {waits[sl.name]}"  # a slice that waits has a why
    where = f"{sl.proposal.pod} {','.join(sl.proposal.cubes)}"
    return f"reschedule cannot move it to {where} (reserved) yet: {waits[sl.name]}"


# ---- placement --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    allocations: list[Allocation]
    note: str | None  # with --spread: one pod each, or why not (None without --spread)

    @property
    def per_pod(self) -> dict[str, int]:
        return dict(sorted(Counter(a.pod for a in self.allocations).items(), key=lambda kv: natural_key(kv[0])))


def place_slices(
    shape: Shape,
    count: int,
    fleet: Fleet,
    used: MachineUsage,
    health: Health,
    pods: Sequence[str] = (),
    spread: bool = False,
    wirable: allocation.Wirable = "ports",
) -> Placement:
    """Where N identical slices go, all or none (Refused naming how far it got). Without `spread`, each slice
    takes the first pod (in `pods` order, else the fleet's) with room, which packs pods; with `spread`, the pod
    holding fewest of the job's slices so far, so they land in different pods while there are pods for them and
    evenly after that. A job's slices share one accelerator generation (a workload is built for one): in a
    fleet of several, the first generation (in the fleet's order) whose pods hold all N."""
    groups = _by_generation(fleet, list(pods) or [p.name for p in fleet.pods])
    if len(groups) > 1 and pods:
        named = ", ".join(f"{p} is {g or 'tpu-v4 (built-in)'}" for g, ps in groups.items() for p in ps)
        raise BadInput(f"bad option --pod: a job's slices run on one accelerator generation ({named})")
    refusals = []
    for candidates in groups.values():
        try:
            return _place_in(shape, count, fleet, used, health, candidates, spread, wirable)
        except Refused as exc:
            refusals.append(str(exc))
    raise Refused("; ".join(refusals))


def _by_generation(fleet: Fleet, pods: Sequence[str]) -> dict[str | None, list[str]]:
    """The pods by their generation's name (None: the built-in TPU v4 model), generations in first-seen order."""
    groups: dict[str | None, list[str]] = {}
    for pod in pods:
        groups.setdefault(fleet.pod_by_name[pod].generation_name, []).append(pod)
    return groups


def _place_in(
    shape: Shape,
    count: int,
    fleet: Fleet,
    used: MachineUsage,
    health: Health,
    candidates: list[str],
    spread: bool,
    wirable: allocation.Wirable,
) -> Placement:
    usage = {cube: set(machines) for cube, machines in used.items()}
    placed: list[Allocation] = []
    for i in range(count):
        counts = Counter(a.pod for a in placed) if spread else None
        order = allocation.wirable_first(candidates, health, wirable, shape, counts)
        alloc, why = _first_fit(shape, fleet, usage, health, order, wirable)
        if alloc is None:
            raise Refused(
                f"not enough healthy free room for {count} slice{'' if count == 1 else 's'} of {shape}: {i} placed, then {why}"
                " (nothing was allocated)"
            )
        placed.append(alloc)
        for cube in alloc.cubes:
            usage.setdefault(cube, set()).update(alloc.machines or ALL_MACHINES)
    return Placement(placed, _spread_note(placed, candidates, count) if spread else None)


def _first_fit(
    shape: Shape, fleet: Fleet, usage: MachineUsage, health: Health, order: Sequence[str], wirable: allocation.Wirable
) -> tuple[Allocation | None, str]:
    reasons = []
    for pod in order:
        try:
            return allocation.allocate(shape, fleet, usage, health, pod=pod, wirable=wirable), ""
        except (Refused, BadInput) as exc:  # BadInput: a pod whose generation cannot hold the shape
            reasons.append(f"{pod}: {exc}")
    return None, "; ".join(reasons)


def _spread_note(placed: Sequence[Allocation], candidates: Sequence[str], count: int) -> str:
    used_pods = {a.pod for a in placed}
    if len(used_pods) == count:
        return f"one pod each ({', '.join(a.pod for a in placed)})"
    if count > len(candidates):
        per = Counter(a.pod for a in placed)
        spread = ", ".join(f"{pod}: {n}" for pod, n in sorted(per.items(), key=lambda kv: natural_key(kv[0])))
        return f"{count} slices, {len(candidates)} pod(s): not one pod each; spread as evenly as room allows ({spread})"
    full = sorted(set(candidates) - used_pods, key=natural_key)
    return f"pods {', '.join(full)} had no room: {count} slices share {len(used_pods)} pod(s)"
