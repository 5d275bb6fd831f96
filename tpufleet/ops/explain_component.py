"""`tpufleet explain TARGET`: a component's open faults (its own and those of what contains it) and the slices and
stored routing tables that depend on it (read-only)."""

from __future__ import annotations

from tpufleet.errors import BadInput
from tpufleet.faults import machines_hit
from tpufleet.fleetstate import Fault, FleetState
from tpufleet.ids import (
    ChipId,
    CubeId,
    HostId,
    IciId,
    LinkId,
    OcsId,
    TargetId,
    canonical,
    natural_key,
    near_id,
    parse_target,
)
from tpufleet.model import check_known, cubes_held
from tpufleet.ops.explain_faults import (
    Row,
    announced_on,
    clear_step_of,
    fault_row,
    held_whys,
    plan_window_ahead_of,
    reservation_whys,
    window_started,
)
from tpufleet.text import closest
from tpufleet.views import degraded_cubes, hosts_degraded, k8s_degraded_cubes


def _containing(state: FleetState, target: TargetId) -> list[Fault]:
    """Open faults on the target itself or on what contains it: its cube, its machine, the OCS of an optical link.
    For a cube, every fault that holds it out of the pool, and those of its optical links (in the pool, no
    whole-cube slice can be wired on it: `allocate` and `plan-xconnect` refuse it naming them)."""
    if isinstance(target, CubeId):
        ids = set(state.health().cubes_out.get(target.cube, ()))
        return [
            f
            for f in state.open_faults()
            if f.id in ids or f.target == target or (isinstance(f.target, LinkId) and f.target.cube == target.cube)
        ]
    machines = machines_hit(target)  # an electrical link: the machines at both its ends
    pod = None if isinstance(target, OcsId) else state.fleet.cube_pod.get(target.cube)

    def contains(t: TargetId) -> bool:
        if t == target:
            return True
        if isinstance(target, OcsId) or isinstance(t, (ChipId, IciId, LinkId)):
            return False  # nothing lies inside an OCS here, and a chip or link fault contains nothing else
        if isinstance(t, OcsId):
            return isinstance(target, LinkId) and (t.pod, t.dim, t.index) == (pod, target.dim, target.index)
        return t.cube == target.cube and (
            isinstance(t, CubeId) or (isinstance(t, HostId) and machines is not None and t.machine in machines)
        )

    return [f for f in state.open_faults() if contains(f.target)]


def _dependents(state: FleetState, target: TargetId) -> list[str]:
    """Slices that use the target: hold its cube (a sub-cube slice only through its own machines), are wired
    through it (an OCS or optical link), or have its cube reserved as their replacement."""
    if isinstance(target, OcsId):
        owners = state.owner_of_ports()
        wired = {owners.get((target.pod, port)) for pair in state.ocs.get(target, ()) for port in pair}
        waiting = {
            s.name for s in state.slices.values() if s.pod == target.pod and not s.state.wired and not s.machines
        }
        return sorted((n for n in wired | waiting if n), key=natural_key)
    cube, machines = target.cube, machines_hit(target)
    names = set()
    for n, s in state.slices.items():
        if cube in s.cubes and not (
            s.machines and (isinstance(target, LinkId) or (machines is not None and not machines & set(s.machines)))
        ):
            names.add(n)
        if isinstance(target, CubeId) and s.proposal is not None and cube in s.proposal.cubes:
            names.add(n)
    return sorted(names, key=natural_key)


def _component_state(target: TargetId, faults: list[Fault]) -> str:
    if not faults:
        return "healthy"
    own = [f for f in faults if f.target == target]
    cause = own or faults
    kind = "drained" if all(f.planned for f in cause) else "failed"
    if own:
        return kind
    # what contains the component failed (its cube, machine, OCS), or, for a cube, a part of it did
    if not isinstance(target, CubeId):
        return f"{kind} with {cause[0].target}"
    out = [f for f in cause if not isinstance(f.target, LinkId)]  # an optical link's fault leaves it in the pool
    if not out:
        return f"optical port down: {cause[0].target} {kind}"
    kind = "drained" if all(f.planned for f in out) else "failed"
    return f"out of the pool: {out[0].target} {kind}"


def degraded_whys(state: FleetState, cube: str) -> list[str]:
    """What `status` and `show inventory` say of a degraded cube (a DEGRADED reservation sub-block or GKE
    partition): it still serves, and no fault holds it, so `explain` does not leave it out."""
    why = []
    if (r := degraded_cubes(state).get(cube)) is not None:
        counted = hosts_degraded(r)
        hosts = "" if counted is None else f" ({counted} hosts degraded)"
        why.append(f"the reservation reports sub-block {r['sub_block']} DEGRADED{hosts}: the cube still serves")
    if (p := k8s_degraded_cubes(state).get(cube)) is not None:
        why.append(f"GKE reports partition {p['partition'] or cube} DEGRADED: the cube still serves")
    return why


def explain_target(state: FleetState, target: TargetId, now: str) -> Row:
    target = canonical(target)  # an electrical link by either end's name is one component, recorded by one
    pods = [p.name for p in state.fleet.pods]
    if isinstance(target, OcsId) and target.pod not in pods:
        raise BadInput(f"unknown pod {target.pod!r} in {target} (pods: {', '.join(pods)})")
    if not isinstance(target, OcsId) and target.cube not in state.fleet.cube_pod:
        raise BadInput(f"unknown cube {target.cube!r} in {target} ({cubes_held(state.fleet)})")
    faults = _containing(state, target)
    slices = _dependents(state, target)
    why = [] if faults else [f"`tpufleet inject-fault {target} --dry-run` shows what a failure here would do"]
    if isinstance(target, CubeId):
        why += [
            f"maintenance announced from {m['window_start'] or '?'} to {m['window_end'] or '?'} (reservation "
            f"sub-block {m['sub_block']}): "
            + (
                "a fault holds the cube out of the pool now"
                if m["out_of_pool"]
                else "its window has started: the next `tpufleet import reservation SUB-BLOCKS.json --apply` opens its drain"
                if window_started(m, now)
                else "the cube serves until then"
            )
            for m in announced_on(state, {target.cube})
        ]
    if isinstance(target, CubeId):
        why += degraded_whys(state, target.cube)
    held = {f.id for f in faults if plan_window_ahead_of(state, f, now) is not None}
    why += held_whys(state, faults, now)
    return {
        "kind": target.kind,
        "target": str(target),
        "state": _component_state(target, faults),
        "faults": [fault_row(f) for f in faults],
        "slices": slices,
        "tables": [n for n in slices if n in state.routes],
        "why": why + reservation_whys(faults),
        "next": list(dict.fromkeys(clear_step_of(f) for f in faults if f.id not in held)),
    }


def component_meant(state: FleetState, what: str) -> str | None:
    """The fleet's component `what` may name (`c7` is cube:c07), when it is no near miss of a slice or job."""
    near = near_id(what)
    if near is None or closest(what, [*state.slices, *state.jobs]) is not None:
        return None
    try:
        check_known(state.fleet, parse_target(near))
    except BadInput:
        return None
    return near
