"""Use cases of multislice jobs: allocate N slices at once, release them, plan and wire every slice of a job."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tpufleet import allocation, jobs
from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.errors import BadInput, Refused
from tpufleet.fleetparts import job_slice_names
from tpufleet.fleetstate import Change, FleetState, Job, Slice
from tpufleet.ids import natural_key
from tpufleet.model import known_pod
from tpufleet.ops import heldpools
from tpufleet.ops.outcome import Outcome
from tpufleet.ops.pool import pool_after, released
from tpufleet.ops.xconnect import Journal, already_wired, apply_saved, make_plan, wire
from tpufleet.shapes import Shape, ShapeText
from tpufleet.state.planfile import SavedJobPlan, job_plan_doc


@dataclass(frozen=True)
class JobRequest:
    """What `allocate JOB --slices N` asks for (the shape as written is checked against the rule of the pods'
    generation when the fleet is known: `job_shape`)."""

    name: str
    shape: Shape | ShapeText
    count: int
    pods: tuple[str, ...] = ()
    spread: bool = False
    elastic_min: int | None = None
    fault_tolerant_routing: bool = True
    min_throughput: float = 0.5


def name_clash(state: FleetState, name: str, kind: str) -> str | None:
    """Why `name` cannot be a new job's or slice's name here (None if it can). Compared without case: names
    become table file names, and "A" and "a" are one file on a case-insensitive file system."""
    folded = name.casefold()
    for other in state.jobs:
        if other.casefold() == folded:
            return f"{kind} name {name!r} collides with job {other!r}"
    if kind == "job":
        for other in state.slices:
            if other.casefold() == folded:
                return f"job name {name!r} collides with slice {other!r}"
    return None


def _check_names(state: FleetState, req: JobRequest) -> list[str]:
    """The job's slice names, after refusing (exit 2) any name that collides with a job or slice."""
    if req.name in state.jobs:
        raise Refused(f"job {req.name!r} already exists (release it first, or choose another name)")
    clash = name_clash(state, req.name, "job")
    if clash is not None:
        raise BadInput(f"bad job name: {clash}")
    names = job_slice_names(req.name, req.count)
    existing = {s.casefold(): s for s in state.slices}
    taken = [f"{n} (slice {existing[n.casefold()]!r})" for n in names if n.casefold() in existing]
    taken += [f"{n} (job {j!r})" for n in names for j in state.jobs if j.casefold() == n.casefold()]
    if taken:
        raise BadInput(f"bad job name {req.name!r}: its slice names are in use: {', '.join(taken)}")
    return names


def _check_fits_the_fleet(state: FleetState, req: JobRequest, shape: Shape) -> None:
    """Refuse a job larger than the whole fleet from two multiplications, whatever N is."""
    machines = sum(len(p.cubes) for p in state.fleet.pods) * MACHINES_PER_CUBE
    needed = req.count * shape.machines
    if needed > machines:
        raise Refused(
            f"job {req.name!r} needs {req.count:,} x {shape.machines:,} = {needed:,} machines; "
            f"the whole fleet has {machines:,}"
        )


def job_shape(state: FleetState, req: JobRequest) -> Shape:
    """The job's shape under the rule of the pods it may go to (the given ones, else any): the first generation
    whose rule takes it, else the first refusal (BadInput naming the rule, the generation and the job)."""
    if isinstance(req.shape, Shape):
        return req.shape
    fleet = state.fleet
    pods = [fleet.pod_by_name[p] for p in req.pods if p in fleet.pod_by_name] or list(fleet.pods)
    refusals: list[tuple[BadInput, bool]] = []  # (refusal, by a generation's rule)
    for generation in dict.fromkeys(p.generation for p in pods):
        try:
            return req.shape.under(generation)
        except BadInput as exc:
            refusals.append((exc, generation is not None))
    first, of_generation = refusals[0]
    if not of_generation:  # the built-in TPU v4 rule's message, as the command has always given it
        raise first
    raise BadInput(f"{first} (job {req.name!r}, {req.count} slices)")


def allocate_job(state: FleetState, req: JobRequest, now: str) -> Outcome:
    """Reserve N identical slices in one go (all or none): any pods, or spread across pods."""
    shape = job_shape(state, req)
    _check_fits_the_fleet(state, req, shape)  # before anything of size N is built
    names = _check_names(state, req)
    for pod in req.pods:
        known_pod(state.fleet, pod)
    wirable: allocation.Wirable = "ports" if req.fault_tolerant_routing else "ports+ocs"
    pools = heldpools.placed_pools(state, names, shape)  # held node pools these slices are: their room is theirs
    health = heldpools.health_without(state, pools)
    placement = jobs.place_slices(
        shape, req.count, state.fleet, state.machine_usage(), health, req.pods, req.spread, wirable
    )
    members = [
        Slice.allocated(name, shape, alloc, req.fault_tolerant_routing, now, req.min_throughput, req.name)
        for name, alloc in zip(names, placement.allocations, strict=True)
    ]
    job = Job(req.name, shape, tuple(names), req.elastic_min, req.spread, now)
    state.add_job(job, members)
    heldpools.let_go(state, pools)
    data = {
        "job": req.name,
        "serial": state.next_serial,
        "shape": shape.text,
        "twisted": shape.twisted,
        "slices": [{"slice": s.name, **s.record()} for s in members],
        "pods": list(placement.per_pod),  # in the order people count pods
        "per_pod": placement.per_pod,
        "spread": req.spread,
        "elastic_min": req.elastic_min,
        "note": placement.note,
        **({"node_pools": sorted(pools, key=natural_key)} if pools else {}),
        "next": _first_steps(state, req.name, now),
    }
    where = ", ".join(f"{pod} x{n}" for pod, n in placement.per_pod.items())
    return Outcome(data, Change(f"allocate job {req.name}: {req.count} x {shape} on {where}"))


def _first_steps(state: FleetState, name: str, now: str) -> list[str]:
    """The commands that wire and route a job just allocated, as `explain JOB` gives them: `plan-xconnect JOB
    --apply` wires all or none, so where it would refuse (an OCS down under slices without fault-tolerant routing)
    the clears it waits for come first."""
    from tpufleet.ops.explain import job_wire_steps

    return job_wire_steps(state, name, [f"tpufleet plan-xconnect {name} --apply"], now)


def release_job(state: FleetState, name: str) -> Outcome:
    """Return every slice of the job to the pool; cross-connects stay for later slices to reuse."""
    gone = state.release_job(name)
    cubes = released(gone)
    data = {
        "job": name,
        "serial": state.next_serial,
        "slices": [s.name for s in gone],
        "released_cubes": cubes,
        **pool_after(state, cubes),
    }
    return Outcome(data, Change(f"release job {name}: {', '.join(s.name for s in gone)}"))


# ---- cross-connects of a whole job ------------------------------------------------------------------------------


def _job_plan_doc(state: FleetState, name: str, plans: list[dict[str, Any]], now: str) -> dict[str, Any]:
    return job_plan_doc(name, state.serial, plans, now)


def plan_job(state: FleetState, name: str, now: str) -> tuple[dict[str, Any], bool]:
    """Every slice's plan (each against the OCS as they stand), and whether applying changes anything (cross-
    connects, or a slice not wired yet marked connected); Refused if any slice cannot be wired (an evicted slice is
    rescheduled first)."""
    docs, changes = [], False
    for sl in state.job_slices(name):
        pdoc, plan = make_plan(state, sl.name, now)
        docs.append(pdoc)
        changes = changes or not already_wired(sl, plan.changes)
    return _job_plan_doc(state, name, docs, now), changes


def plan_and_apply_job(state: FleetState, name: str, now: str) -> Outcome:
    """`plan-xconnect JOB --apply`: wire every slice in one locked step, each planned after the one before
    is applied (two slices may want the same stale cross-connect removed)."""
    docs, stale, noop = [], set(), True
    for sl in state.job_slices(name):
        pdoc, plan = make_plan(state, sl.name, now)
        noop = noop and already_wired(sl, plan.changes)
        stale.update(wire(state, sl, plan.changes, "cross-connects changed"))
        docs.append(pdoc)
    serial = state.serial if noop else state.next_serial  # every slice in place: nothing committed
    for pdoc in docs:
        pdoc.update(applied=True, serial=serial)
    doc = _job_plan_doc(state, name, docs, now)
    stale_names = sorted(stale, key=natural_key)
    doc.update(applied=True, routes_stale=stale_names, serial=serial)
    return Outcome(doc, None if noop else _change(name, doc["summary"], stale_names))


def apply_saved_job(state: FleetState, job_plan: SavedJobPlan, now: str, journal: Journal | None = None) -> Outcome:
    """`apply-xconnect JOBPLAN`: every slice's saved plan is checked exactly as `apply-xconnect` checks one (stale
    since, or not the plan this state gives) before anything is applied, and the job's own reviewed fields (its
    serial and summed counts) against its parts; then all are wired in this transaction."""
    job, saved = job_plan.job, job_plan.plans
    edited = _job_fields_edited(job_plan)
    if edited:
        raise Refused(
            f"plan {job_plan.path} does not say what its slices' plans do: {'; '.join(edited)} "
            "(edited after it was made?); plan again"
        )
    members = [s.name for s in state.job_slices(job)]
    if sorted(p.slice for p in saved) != sorted(members):
        raise Refused(
            f"job plan for {job!r} covers slices {', '.join(p.slice for p in saved)}, the job has "
            f"{', '.join(members)}; plan again"
        )
    # On a copy: each part is judged against the state as it is now, not after the parts before it are wired
    # (two slices' plans may both remove one stale cross-connect).
    parts = [apply_saved(copy.deepcopy(state), plan, now, journal) for plan in saved]
    done = plan_and_apply_job(state, job, now)
    if all(p.data.get("already_applied") for p in parts):
        done.data["already_applied"] = True
        done.data["plan_cross_connects"] = sum(p.data["plan_cross_connects"] for p in parts)
    return done


def _job_fields_edited(job_plan: SavedJobPlan) -> list[str]:
    """The job plan's own fields that disagree with its parts: its serial (every part is made at the job's) and
    its summary (the parts' counts summed, as `plan-xconnect JOB` writes it), which is what a reviewer reads."""
    edited, serials = [], sorted({p.serial for p in job_plan.plans})
    if job_plan.serial is not None and serials != [job_plan.serial]:
        edited.append(
            f"serial {job_plan.serial} (its slices' plans were made at serial {', '.join(map(str, serials))})"
        )
    parts = [p.summary for p in job_plan.plans]
    counts = ("add", "remove", "keep")
    if job_plan.summary is None or not all(
        isinstance(s, dict) and all(type(s.get(k)) is int for k in counts) for s in parts
    ):
        return edited  # a part's own summary that is no set of counts is refused with that part
    total = {k: sum(s[k] for s in parts if s is not None) for k in counts}
    if job_plan.summary != total:
        edited.append(f"summary {job_plan.summary} (its slices' plans add up to {total})")
    return edited


def _change(name: str, s: dict[str, int], stale: list[str]) -> Change:
    return Change(
        f"apply-xconnect job {name}: +{s['add']} -{s['remove']} ={s['keep']}", {"job": name, **s, "routes_stale": stale}
    )
