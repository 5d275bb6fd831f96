"""Use cases of slices: allocate and release."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tpufleet import allocation
from tpufleet.errors import BadInput, Refused
from tpufleet.fleetstate import DEFAULT_MIN_THROUGHPUT, Change, FleetState, Slice
from tpufleet.generations import Generation
from tpufleet.ops import heldpools
from tpufleet.ops.jobs import name_clash, release_job
from tpufleet.ops.outcome import Outcome
from tpufleet.ops.pool import pool_after, released
from tpufleet.shapes import Shape, ShapeText
from tpufleet.views import cube_holders


def allocate(
    state: FleetState,
    name: str,
    shape: Shape | ShapeText,
    now: str,
    pod: str | None = None,
    cubes: Sequence[str] | None = None,
    fault_tolerant_routing: bool = True,
    min_throughput: float = DEFAULT_MIN_THROUGHPUT,
    running: bool = False,
) -> Outcome:
    """Reserve healthy free cubes (any of one pod, or the given ones) or machines inside a cube; a shape as
    written is checked against the rule of the pod's generation (of the first generation that takes it, when
    the slice may go to pods of several). `running`: a slice the cluster already runs on the given cubes (`import
    slices`), which the room node pools tpufleet has not placed hold does not refuse."""
    if isinstance(shape, ShapeText):  # first, as when the command line parsed it
        shape = _shape_for(state, shape, pod, cubes)
    twin = next((other for other in state.slices if other.casefold() == name.casefold()), None)
    if twin == name:
        raise Refused(f"slice {name!r} already exists (release it first, or choose another name)")
    if twin is not None:  # a bad name, as the README's exit codes say (and as a job's name in case only is)
        # Names become table file names, and "A" and "a" are one file on a case-insensitive file system.
        raise BadInput(f"bad slice name: {name!r} differs from slice {twin!r} only in case (choose another name)")
    clash = name_clash(state, name, "slice")
    if clash is not None:  # a name given to both could not tell `release` or `plan-xconnect` which is meant
        raise BadInput(f"bad slice name: {clash}")
    wirable: allocation.Wirable = "ports" if fault_tolerant_routing else "ports+ocs"  # only what plan-xconnect wires
    holders = cube_holders(state) if cubes else None
    pools = heldpools.placed_pools(state, [name], shape, running)
    health = heldpools.health_without(state, pools)
    place = (state.fleet, state.machine_usage(), replace(health, held={}) if running else health)
    if pools and pod is None and not cubes:  # the pool's pod first: its nodes are there
        try:
            alloc = allocation.allocate(shape, *place, pools[name].pod, cubes, wirable, holders)
        except Refused:
            alloc = allocation.allocate(shape, *place, pod, cubes, wirable, holders)
    else:
        alloc = allocation.allocate(shape, *place, pod, cubes, wirable, holders)
    sl = Slice.allocated(name, shape, alloc, fault_tolerant_routing, now, min_throughput)
    state.add_slice(sl)
    heldpools.let_go(state, pools)
    data = {"slice": name, "serial": state.next_serial, **sl.record()}
    data |= {"node_pool": name} if pools else {}
    data["next"] = _first_steps(state, name, now)
    return Outcome(data, Change(f"allocate {name}: {shape} on {','.join(alloc.cubes)}"))


def _first_steps(state: FleetState, name: str, now: str) -> list[str]:
    """The commands that wire and route a slice just allocated, as `explain SLICE` gives them (an OCS down under a
    slice without fault-tolerant routing: its clear first, as `plan-xconnect` would refuse it until then)."""
    from tpufleet.ops.explain import explain

    try:
        steps: list[str] = explain(state, name, now).data["next"]
    except (Refused, BadInput):  # the allocation stands whatever its hint: `explain SLICE` then says why
        return []
    return steps


def _shape_for(state: FleetState, text: ShapeText, pod: str | None, cubes: Sequence[str] | None) -> Shape:
    """The shape under the rule of the pods the slice may go to: the given pod, the pod of the given cubes, or
    any; the first rule that takes it, else the first refusal."""
    fleet = state.fleet
    if pod is None and cubes and cubes[0] in fleet.cube_pod:
        pod = fleet.cube_pod[cubes[0]]
    pods = [fleet.pod_by_name[pod]] if pod in fleet.pod_by_name else list(fleet.pods)
    generations: list[Generation | None] = list(dict.fromkeys(p.generation for p in pods))
    refusal: BadInput | None = None
    for generation in generations:
        try:
            shape = text.under(generation)
        except BadInput as exc:
            refusal = refusal or exc
            continue
        largest = max(len(p.cubes) for p in pods if p.generation == generation)
        if shape.cubes <= largest:
            return shape
        # no free cubes could ever hold it: the shape, not the fleet's state, is wrong
        refusal = refusal or BadInput(f"bad shape {shape}: {shape.cubes} cubes, more than a pod holds ({largest})")
    assert refusal is not None  # a fleet has at least one pod
    raise refusal


def release(state: FleetState, name: str) -> Outcome:
    """Return a slice's cubes to the pool; its cross-connects stay for a later slice to reuse."""
    sl = state.release(name)
    cubes = released([sl])
    data = {"slice": name, "serial": state.next_serial, "released_cubes": cubes, **pool_after(state, cubes)}
    return Outcome(data, Change(f"release {name}: {','.join(cubes)}"))


def release_named(state: FleetState, name: str) -> tuple[Outcome, list[str]]:
    """`release NAME`: the job of that name with every slice of it, else the slice. Returns the outcome and the
    slices released, whose stored routing tables go with the release."""
    state.slices_named(name)  # an unknown name: Refused listing the slices and the jobs
    if name in state.jobs:
        outcome = release_job(state, name)
        return outcome, list(outcome.data["slices"])
    return release(state, name), [name]


def set_policy(
    state: FleetState, name: str, min_throughput: float | None, fault_tolerant_routing: bool | None
) -> Outcome:
    """Change how a slice (or every slice of a job) meets network faults: its throughput floor for rerouting, and
    whether it reroutes at all. Takes effect at the next fault; a slice already degraded is not moved by it."""
    members = state.slices_named(name)
    said = []  # only what changes: a value set to what it is commits nothing (and shows the state's serial)
    if min_throughput is not None and any(sl.min_throughput != min_throughput for sl in members):
        said.append(f"min_throughput {min_throughput:g}")
    if fault_tolerant_routing is not None and any(
        sl.fault_tolerant_routing != fault_tolerant_routing for sl in members
    ):
        said.append(f"fault_tolerant_routing {'on' if fault_tolerant_routing else 'off'}")
    for sl in members:
        state.set_policy(sl.name, min_throughput, fault_tolerant_routing)
    serial = state.next_serial if said else state.serial
    rows = [{"slice": sl.name, "serial": serial, **sl.record()} for sl in members]
    what = f"job {name}" if name in state.jobs else name
    change = Change(f"policy {what}: {', '.join(said)}") if said else None
    if name in state.jobs:
        return Outcome({"job": name, "serial": serial, "slices": rows}, change)
    return Outcome(rows[0], change)
