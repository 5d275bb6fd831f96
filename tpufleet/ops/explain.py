"""`tpufleet explain SLICE|TARGET`: why a slice is where it is, and what depends on a component (read-only).

For a slice: its state in words, the faults behind it, what it is waiting for and the command that moves it on
(wire it, regenerate tables, reschedule it, clear a fault). For a component (cube, host, chip, ICI or optical link,
OCS): its open faults and the slices and stored routing tables that depend on it.
"""

from __future__ import annotations

from typing import Any

from tpufleet.errors import BadInput, Refused
from tpufleet.fleetstate import Fault, FleetState, Slice, SliceState
from tpufleet.ids import CubeId, OcsId, TargetId, parse_target
from tpufleet.ops.outcome import Outcome
from tpufleet.views import missing_xconnects

Row = dict[str, Any]


def explain(state: FleetState, what: str, now: str) -> Outcome:
    """A slice name, or a target id (it has a kind prefix: cube:, host:, chip:, ici:, link:, ocs:)."""
    if ":" in what:
        return Outcome(explain_target(state, parse_target(what)), None)
    return Outcome(explain_slice(state, state.slice(what), now), None)


def _fault_row(f: Fault) -> Row:
    return {"id": f.id, "target": str(f.target), "planned": f.planned, "since": f.opened, "reason": f.reason}


def _faults_under(state: FleetState, sl: Slice) -> list[Fault]:
    """Open faults on the slice's cubes (any component inside them) or on an OCS of its pod."""
    cubes = set(sl.cubes)
    return [
        f
        for f in state.open_faults()
        if (isinstance(f.target, OcsId) and f.target.pod == sl.pod) or getattr(f.target, "cube", None) in cubes
    ]


def _pending(state: FleetState, sl: Slice, now: str) -> tuple[list[str], list[str]]:
    from tpufleet.ops.xconnect import make_plan

    try:
        _, plan = make_plan(state, sl.name, now)
    except Refused as exc:
        why = [f"it is allocated but cannot be wired: {exc}", *exc.details[:20]]
        down = [f for f in _faults_under(state, sl) if isinstance(f.target, OcsId)]
        if not down:
            return why, [f"tpufleet release {sl.name}, then allocate it on other cubes"]
        steps = [
            f"tpufleet clear-fault {f.id} once {f.target} is repaired" for f in down
        ]  # every cube of the pod needs it
        if not sl.fault_tolerant_routing:
            steps.append(f"tpufleet policy {sl.name} --fault-tolerant-routing   # wire around the failed OCS")
        return why, [*steps, f"or release {sl.name} and allocate it in another pod"]
    why = [f"it is allocated but not wired: {plan.summary['add']} cross-connects to add"]
    if plan.deferred:
        why.append(f"cross-connects on {', '.join(map(str, plan.deferred))} would be deferred (OCS down)")
    return why, [f"tpufleet plan-xconnect {sl.name} --apply"]


def _evicted(state: FleetState, sl: Slice) -> tuple[list[str], list[str]]:
    fault = state.fault(sl.evicted_by)
    why = [f"evicted by fault {sl.evicted_by}" + (f" on {fault.target} (since {fault.opened})" if fault else "")]
    out = [c for c in sl.cubes if not state.health().cube_ok(c)]
    if out:
        why.append(f"cubes out of the pool: {', '.join(out)}")
    if sl.proposal is None:
        why.append("no replacement is reserved: there were not enough healthy free cubes")
        return why, [f"tpufleet clear-fault {sl.evicted_by} once repaired, or release {sl.name}"]
    why.append(f"reschedule would move it to cubes {', '.join(sl.proposal.cubes)} (reserved for it)")
    return why, [f"tpufleet reschedule {sl.name}"]


def _degraded(sl: Slice) -> tuple[list[str], list[str]]:
    r = sl.reroute
    assert r is not None  # degraded slices carry their reroute
    why = [
        f"running on rerouted tables around {', '.join(r.faults)}: keeps {r.retained:.3f} of its all-to-all "
        f"throughput with {r.vcs} virtual channels (its floor is {sl.min_throughput:g}; below it, it is rescheduled)"
    ]
    return why, [f"tpufleet clear-fault {f}" for f in r.faults] + [f"tpufleet reschedule {sl.name} (to move now)"]


def explain_slice(state: FleetState, sl: Slice, now: str) -> Row:
    route = state.routes.get(sl.name)
    routes = "none" if route is None else ("stale" if route.stale else "fresh")
    if sl.state is SliceState.ALLOCATED:
        why, next_steps = _pending(state, sl, now)
    elif sl.state is SliceState.EVICTED:
        why, next_steps = _evicted(state, sl)
    elif sl.state is SliceState.DEGRADED:
        why, next_steps = _degraded(sl)
    else:
        why, next_steps = ["wired and healthy"], []
    if sl.state.wired and routes != "fresh":
        why.append(f"its routing tables are {routes}" + (f" ({route.stale})" if route and route.stale else ""))
        next_steps.append(f"tpufleet routes {sl.name}")
    missing = missing_xconnects(state, sl)
    if missing:
        why.append(f"{missing} cross-connects it needs are not in place")
        next_steps.append(f"tpufleet plan-xconnect {sl.name} --apply")
    return {
        "kind": "slice",
        "name": sl.name,
        "state": sl.state.value,
        "shape": sl.shape.text + (" twisted" if sl.shape.twisted else ""),
        "pod": sl.pod,
        "cubes": list(sl.cubes),
        "why": why,
        "next": next_steps,
        "faults": [_fault_row(f) for f in _faults_under(state, sl)],
        "routes": routes,
        "missing_xconnects": missing,
        "degraded": sl.reroute.record() if sl.reroute else None,
        "proposal": sl.proposal.record() if sl.proposal else None,
    }


def _dependents(state: FleetState, target: TargetId) -> list[str]:
    if isinstance(target, OcsId):
        owners = state.owner_of_ports()
        wired = {owners.get((target.pod, port)) for pair in state.ocs.get(target, ()) for port in pair}
        waiting = {
            s.name for s in state.slices.values() if s.pod == target.pod and not s.state.wired and not s.machines
        }
        return sorted(n for n in wired | waiting if n)
    cube = target.cube
    holders = {n for n, s in state.slices.items() if cube in s.cubes}
    reserved = {n for n, s in state.slices.items() if s.proposal is not None and cube in s.proposal.cubes}
    return sorted(holders | reserved)


def explain_target(state: FleetState, target: TargetId) -> Row:
    pods = [p.name for p in state.fleet.pods]
    if isinstance(target, OcsId) and target.pod not in pods:
        raise BadInput(f"unknown pod {target.pod!r} in {target} (pods: {', '.join(pods)})")
    if not isinstance(target, OcsId) and target.cube not in state.fleet.cube_pod:
        raise BadInput(f"unknown cube {target.cube!r} in {target}")
    faults = [
        f
        for f in state.open_faults()
        if f.target == target or (isinstance(target, CubeId) and getattr(f.target, "cube", None) == target.cube)
    ]
    slices = _dependents(state, target)
    tables = [n for n in slices if n in state.routes]
    impact = "out of the pool" if isinstance(target, CubeId) and not state.health().cube_ok(target.cube) else None
    return {
        "kind": target.kind,
        "target": str(target),
        "faults": [_fault_row(f) for f in faults],
        "state": impact or ("failed" if faults else "healthy"),
        "slices": slices,
        "tables": tables,
        "next": [f"tpufleet inject-fault {target} --dry-run   # what a failure here would do"]
        if not faults
        else [f"tpufleet clear-fault {f.id}" for f in faults],
    }
