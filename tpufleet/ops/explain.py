"""`tpufleet explain SLICE|TARGET`: why a slice is where it is, and what depends on a component (read-only).

For a slice: its state in words, the faults behind it, what it is waiting for and the command that moves it on
(wire it, regenerate tables, reschedule it, clear a fault). For a component (cube, host, chip, ICI or optical link,
OCS): its open faults and the slices and stored routing tables that depend on it.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Mapping
from typing import Any

from tpufleet.errors import BadInput, Refused
from tpufleet.faults import machines_hit
from tpufleet.fleetstate import Fault, FleetState, Slice, SliceState
from tpufleet.ids import ChipId, CubeId, HostId, IciId, LinkId, OcsId, TargetId, canonical, natural_key, parse_target
from tpufleet.integrations.reservation import REASON_PREFIX as RESERVATION_PREFIX
from tpufleet.integrations.reservation import awaited, clear_step
from tpufleet.ops.fleet import counted
from tpufleet.ops.outcome import Outcome
from tpufleet.text import around
from tpufleet.views import missing_xconnects, reservation_maintenance

Row = dict[str, Any]


def explain(
    state: FleetState,
    what: str,
    now: str,
    missing_tables: Collection[str] = (),
    linked_tables: Mapping[str, str] | None = None,
) -> Outcome:
    """A slice name, or a target id (it has a kind prefix: cube:, host:, chip:, ici:, link:, ocs:).
    `missing_tables`: slices whose indexed tables are no longer kept; `linked_tables`: the path of a symbolic link
    standing where a slice's tables belong (`routes` refuses it), by slice (the shell looks)."""
    if ":" in what:
        return Outcome(explain_target(state, parse_target(what), now), None)
    if what in state.jobs:
        return Outcome(_explain_job(state, what, now, missing_tables, linked_tables or {}), None)
    fault = state.fault(what) if what not in state.slices else None
    if fault is not None:  # a fault id, as `faults` lists it: the component it is on is what explain takes
        raise Refused(
            f"{what!r} is a fault, not a slice or job; `tpufleet explain {fault.target}` explains the component "
            "it is on and what depends on it"
        )
    (sl,) = state.slices_named(what)  # explain takes either: an unknown name is told with both lists
    return Outcome(explain_slice(state, sl, now, missing_tables, linked_tables), None)


def _explain_job(
    state: FleetState, name: str, now: str, missing_tables: Collection[str], linked_tables: Mapping[str, str]
) -> Row:
    """`explain JOB`, its wiring step as `job_wire_steps` gives it, then each wired slice's own steps (the job's
    bring its evicted slices back; a running slice may still wait for its repairs, cross-connects or tables)."""
    from tpufleet.jobs import explain_job

    row = explain_job(state, name, now)
    steps = job_wire_steps(state, name, row["next"], now, row["why"])
    reasons: dict[int, list[str]] = {}  # under each wired slice's line (row["why"][1 + i]): why its steps are there
    for i, sl in enumerate(state.job_slices(name)):
        if sl.state.wired:
            own = explain_slice(state, sl, now, missing_tables, linked_tables)
            steps += own["next"]
            reasons[2 + i] = [f"slice {sl.name}: {line}" for line in own["why"][1:] if not line.startswith("wired")]
    for at in sorted(reasons, reverse=True):  # from the last, so the earlier places stay where they are
        row["why"][at:at] = reasons[at]
    row["next"] = _once_each(steps)
    return row


def _once_each(steps: list[str]) -> list[str]:
    """The slices' steps merged, a clear or move they share given once; a slice's `routes` may come twice in its
    own steps (around a fault now, on the repaired network after its clear) and only its own steps give it."""
    seen: set[str] = set()
    out = []
    for step in steps:
        if step not in seen or step.startswith("tpufleet routes "):
            out.append(step)
        seen.add(step)
    return out


def job_wire_steps(state: FleetState, name: str, steps: list[str], now: str, why: list[str] | None = None) -> list[str]:
    """A job's next steps (`explain JOB`, `inject-fault`'s `jobs[].next`) with its wiring step one that works:
    `plan-xconnect JOB --apply` plans every slice, wired ones too, and wires all or none, so where it would refuse
    one, the slices it would wire are wired one by one and the steps a refused unwired slice waits for (its own
    `explain`'s) come instead (a wired slice refused, say for a port down on its cube, runs on: its own `explain`
    gives its repair). Why it refuses is added to `why`."""
    from tpufleet.ops.xconnect import make_plan

    wire = f"tpufleet plan-xconnect {name} --apply"
    if wire not in steps:
        return steps
    one_by_one: list[str] = []
    waits: list[str] = []
    refused = False
    for sl in state.job_slices(name):
        try:
            make_plan(state, sl.name, now)
        except Refused as exc:
            refused = True
            if why is not None:
                why.append(f"{exc} ({'; '.join(map(str, exc.details[:3]))})" if exc.details else str(exc))
            waits += _pending(state, sl, now)[1] if sl.state is SliceState.ALLOCATED else []
            continue
        if sl.state is SliceState.ALLOCATED:
            one_by_one.append(f"tpufleet plan-xconnect {sl.name} --apply")
    if not refused:
        return steps
    return list(dict.fromkeys([*(s for s in steps if s != wire), *one_by_one, *waits]))


def _clear_step(f: Fault) -> str:
    return clear_step(f.id, f.reason)


def _reservation_whys(faults: list[Fault]) -> list[str]:
    return [
        f"{f.id} is the reservation's drain for maintenance ({f.reason.removeprefix(RESERVATION_PREFIX)}): "
        "`tpufleet import reservation` closes it once the maintenance is no longer announced"
        for f in faults
        if f.reason.startswith(RESERVATION_PREFIX)
    ]


def _fault_row(f: Fault) -> Row:
    return {"id": f.id, "target": str(f.target), "planned": f.planned, "since": f.opened, "reason": f.reason}


def _faults_under(state: FleetState, sl: Slice) -> list[Fault]:
    """Open faults on what the slice uses: its cubes (for a sub-cube slice, its own machines) and, when it is
    wired through the OCS (any whole-cube slice), the OCS of its pod."""
    cubes, held = set(sl.cubes), set(sl.held_machines)
    out = []
    for f in state.open_faults():
        t = f.target
        if isinstance(t, OcsId):
            if t.pod == sl.pod and not sl.machines:
                out.append(f)
        elif t.cube in cubes and (not sl.machines or (hit := machines_hit(t)) is None or bool(hit & held)):
            out.append(f)
    return out


def _pending(state: FleetState, sl: Slice, now: str) -> tuple[list[str], list[str]]:
    from tpufleet.ops.xconnect import make_plan

    if sl.machines:
        broken = _faults_under(state, sl)
        if not broken:
            return [
                f"a sub-cube slice on machines {','.join(map(str, sl.machines))} of {sl.cubes[0]}: no cross-connects needed"
            ], []
        why = [f"fault {f.id} on {f.target} ({'drain' if f.planned else 'failure'}) is under it" for f in broken]
        return [*why, "release it and allocate it again on healthy machines"], [f"tpufleet release {sl.job or sl.name}"]
    try:
        _, plan = make_plan(state, sl.name, now)
    except Refused as exc:
        return _unwirable(state, sl, exc)
    why = [f"it is allocated but not wired: {plan.summary['add']} cross-connects to add"]
    if plan.deferred:
        why.append(f"cross-connects on {', '.join(map(str, plan.deferred))} would be deferred (OCS down)")
    return why, [f"tpufleet plan-xconnect {sl.name} --apply"]


def _unwirable(state: FleetState, sl: Slice, exc: Refused) -> tuple[list[str], list[str]]:
    """An allocated slice its plan refuses: a failed OCS (every cube of the pod needs it) or failed ports/cubes."""
    why = [f"it is allocated but cannot be wired: {exc}", *exc.details[:20]]
    down = [f for f in _faults_under(state, sl) if isinstance(f.target, OcsId)]
    owner = sl.job or sl.name  # a slice of a job goes only with its job
    if not down:
        return [*why, "release it and allocate it again on other cubes"], [f"tpufleet release {owner}"]
    why += [f"every cube of {sl.pod} needs {f.target}: clear {f.id} once it is repaired" for f in down]
    steps = [f"tpufleet clear-fault {f.id}" for f in down]
    if not sl.fault_tolerant_routing:
        why.append("with fault-tolerant routing it can be wired around the failed OCS now")
        steps.insert(0, f"tpufleet policy {owner} --fault-tolerant-routing")  # a job: every slice of it
    if len(state.fleet.pods) > 1:
        why.append("or release it and allocate it in another pod")
    return why, steps


def _evicted(state: FleetState, sl: Slice, now: str) -> tuple[list[str], list[str]]:
    from tpufleet.maintenance import a_plans_drain, move_commands
    from tpufleet.moves import propose_move
    from tpufleet.movesteps import steps_to_move, unjudged_note

    fault = state.fault(sl.evicted_by)
    why = [f"evicted by fault {sl.evicted_by}" + (f" on {fault.target} (since {fault.opened})" if fault else "")]
    if fault is not None and not fault.is_open:
        why.append(f"fault {fault.id} is cleared since {fault.cleared}")
    out = [c for c in sl.cubes if not state.health().cube_ok(c)]
    if out:
        why.append(f"cubes out of the pool: {', '.join(out)}")
    steps = steps_to_move(state, [sl])
    unjudged = [unjudged_note(sl, steps.unjudged[sl.name])] if sl.name in steps.unjudged else []
    if sl.name in steps.waits:
        why.append(f"reschedule cannot move it yet: {steps.waits[sl.name]}")
        if sl.name in steps.stuck:
            return [*why, f"nor once its faults are cleared: {steps.stuck[sl.name]}"], []
        why += [f"it moves once {awaited(steps.clears)[1]}", *unjudged]
        why += _reservation_whys(steps.clears)
        held = _held_whys(state, steps.clears, now)
        clears = dict.fromkeys(_clear_step(f) for f in steps.clears if _plan_window_ahead(state, f, now) is None)
        # one import closes every reservation drain; while a plan's drain holds, reschedule could not move it yet
        return why + held, [*clears] if held else [*clears, f"tpufleet reschedule {sl.name}"]
    proposal = propose_move(state, sl).to_dict()
    where = f"cubes {', '.join(proposal['cubes'])} in {proposal['pod']}"
    if sl.proposal is None:  # nowhere was free when the fault struck: nothing was reserved
        note = " (free now; nothing was reserved for it)"
    elif list(sl.proposal.cubes) == proposal["cubes"]:
        note = " (reserved for it)"
    else:
        late = [c for c in sl.proposal.cubes if c in state.health().maintenance and c not in sl.cubes]
        note = (
            f" (the reserved {', '.join(late)}: maintenance announced since, taken only when no other cube fits)"
            if late
            else " (the reserved cubes are no longer usable)"
        )
    why += [f"reschedule would move it to {where}{note}", *unjudged]
    if fault is not None and fault.is_open and a_plans_drain(fault.reason):
        return [*why, _wave_moves_why(fault.id, sl.name)], move_commands(sl.name)  # as the wave moves a slice
    return why, [f"tpufleet reschedule {sl.name}"]


def _wave_moves_why(fault_id: str, name: str) -> str:
    return (
        f"{fault_id} is a maintenance plan's drain: its wave moves a slice it stops with `reschedule`, "
        f"`plan-xconnect --apply` and `routes`; where the plan printed `tpufleet reschedule {name} --avoid CUBES`, "
        "run that one: it keeps the slice off the cubes the plan's later waves drain"
    )


def _faults_past_tables(state: FleetState, sl: Slice, tables: str) -> list[str]:
    """The faults a degraded slice is rerouted around that its stored tables do not avoid: none stored (or none
    readable), or made before the fault opened (they still route through the failed part)."""
    r = sl.reroute
    assert r is not None
    record = state.routes.get(sl.name)
    if tables == "fresh":  # a fault marks the tables of every slice it reroutes stale: these were made after
        return []
    if tables in ("none", "missing") or record is None:
        return list(r.faults)
    opened = {f: fault.opened_serial if (fault := state.fault(f)) is not None else None for f in r.faults}
    return [f for f, serial in opened.items() if serial is None or serial > record.serial]


def _degraded(state: FleetState, sl: Slice, tables: str, linked: bool) -> tuple[list[str], list[str]]:
    why, steps = _degraded_figures(sl)
    past = [] if sl.machines or linked else _faults_past_tables(state, sl, tables)
    if past:  # the figures are what `routes` would store: until it does, the tables in use cross the faults
        held = "none are stored" if tables == "none" else f"the stored ones predate {around(past)}"
        why.append(f"it runs on tables around them only once `tpufleet routes {sl.name}` stores them: {held}")
        steps.insert(0, f"tpufleet routes {sl.name}")
    return why, steps


def _degraded_figures(sl: Slice) -> tuple[list[str], list[str]]:
    r = sl.reroute
    assert r is not None  # degraded slices carry their reroute
    floor = (  # `policy` turns rerouting off (or raises the floor) without moving the slice
        ": its fault-tolerant routing is off, yet nothing moves it for that (the next network fault on it "
        "reschedules it)"
        if not sl.fault_tolerant_routing
        else f", below its floor of {sl.min_throughput:g}: nothing moves it for that (the floor is judged only when a "
        "fault strikes it)"
        if r.retained < sl.min_throughput
        else f" (its floor is {sl.min_throughput:g}; below it, it is rescheduled)"
    )
    why = [
        f"running on rerouted tables around {around(r.faults)}: keeps {r.retained:.3f} of its all-to-all "
        f"throughput with {r.vcs} virtual channels{floor}",
        f"it returns to healthy tables when {', '.join(r.faults)} {'is' if len(r.faults) == 1 else 'are'} repaired and cleared"
        if r.faults
        else "it returns to healthy tables once wired again and routed",
    ]
    return why, [f"tpufleet clear-fault {f}" for f in r.faults]


def _missing_by_ocs(state: FleetState, sl: Slice) -> dict[OcsId, int]:
    """OCS -> how many of the cross-connects a wired slice needs there are not in place."""
    from tpufleet.xconnect import wanted_pairs

    if not missing_xconnects(state, sl):
        return {}
    wanted = wanted_pairs(sl.shape, state.fleet, sl.coords)
    return {o: n for o, pairs in wanted.items() if (n := len(set(pairs) - state.ocs.get(o, frozenset())))}


def _missing_why(state: FleetState, sl: Slice, by_ocs: dict[OcsId, int]) -> str:
    from tpufleet.xconnect import ocs_order

    down = {f.target for f in _faults_under(state, sl) if isinstance(f.target, OcsId)}
    held = sorted((o for o in by_ocs if o in down), key=ocs_order)
    missing, deferred = sum(by_ocs.values()), sum(by_ocs[o] for o in held)
    if not held:
        return f"{counted(missing, 'cross_connects')} it needs {'is' if missing == 1 else 'are'} not in place"
    where = f"{', '.join(map(str, held))} {'is' if len(held) == 1 else 'are'} down"
    live = [str(o) for o in sorted(by_ocs, key=ocs_order) if o not in down]
    rest = missing - deferred
    more = f"; {rest} more, on {', '.join(live)}, {'is' if rest == 1 else 'are'} not in place" if live else ""
    return (
        f"{counted(deferred, 'cross_connects')} {'is' if deferred == 1 else 'are'} deferred while {where} (fault-tolerant routing bridges them){more}; "
        f"after the repair, `plan-xconnect {sl.name} --apply` programs them"
    )


def _wiring_waits(
    state: FleetState, sl: Slice, now: str, by_ocs: dict[OcsId, int], why: list[str]
) -> list[Fault] | None:
    """The faults whose clears a wired slice's missing cross-connects wait for: an OCS still down holding some of
    them; when `plan-xconnect --apply` refuses (said in `why`), the failed or drained ports and OCS under it (a
    slice without fault-tolerant routing needs every OCS up). Empty: it programs them all now; None: it refuses
    for something no clear of these mends."""
    from tpufleet.ops.xconnect import make_plan

    under = _faults_under(state, sl)
    waits = [f for f in under if isinstance(f.target, OcsId) and f.target in by_ocs]
    try:
        make_plan(state, sl.name, now)
    except Refused as exc:
        blocked = "; ".join(map(str, exc.details[:5])) or str(exc)
        why.append(f"`plan-xconnect {sl.name} --apply` refuses them until repaired: {blocked}")
        network = [f for f in under if isinstance(f.target, (LinkId, OcsId))]
        waits += [f for f in network if f not in waits]
        return waits or None
    return waits


def _wiring_steps(state: FleetState, sl: Slice, now: str, why: list[str], next_steps: list[str]) -> bool:
    """Adds to `next_steps` what programs a wired slice's missing cross-connects (the clears they wait for, then
    `plan-xconnect --apply`) and says whether it did. A degraded slice waits for those clears on its rerouted
    tables, so it is wired and routed once, after them (and routed first only when its tables predate a fault:
    `_degraded`). A connected one is routed now (its tables do not route around the faults) and wired later."""
    by_ocs = _missing_by_ocs(state, sl)
    if not by_ocs:
        return False
    why.append(_missing_why(state, sl, by_ocs))
    waits = _wiring_waits(state, sl, now, by_ocs, why)
    if waits is None or (waits and sl.state is not SliceState.DEGRADED):
        return False
    clears = [f"tpufleet clear-fault {f.id}" for f in waits]
    next_steps.extend(dict.fromkeys(step for step in clears if step not in next_steps))
    next_steps.append(f"tpufleet plan-xconnect {sl.name} --apply")  # wired first: tables made before go stale
    return True


def explain_slice(
    state: FleetState,
    sl: Slice,
    now: str,
    missing_tables: Collection[str] = (),
    linked_tables: Mapping[str, str] | None = None,
) -> Row:
    route = state.routes.get(sl.name)
    routes = (
        "none" if route is None else ("missing" if sl.name in missing_tables else "stale" if route.stale else "fresh")
    )
    if sl.state is SliceState.ALLOCATED:
        why, next_steps = _pending(state, sl, now)
    elif sl.state is SliceState.EVICTED:
        why, next_steps = _evicted(state, sl, now)
    elif sl.state is SliceState.DEGRADED:
        why, next_steps = _degraded(state, sl, routes, sl.name in (linked_tables or {}))
    else:
        whole = not _faults_under(state, sl) and not missing_xconnects(state, sl)
        why, next_steps = ["wired" + (" and healthy" if whole else "")], []
    from tpufleet.jobs import job_line

    line = job_line(state, sl)
    if line is not None:
        why.insert(0, line)
    missing = missing_xconnects(state, sl)
    if sl.state.wired and routes != "fresh" and not sl.machines:
        reason = f" ({route.stale_reason})" if route is not None and route.stale_reason else ""
        why.append(f"its routing tables are {routes}{reason}")
    _maintenance_ahead(state, sl, now, why, next_steps)
    rewire = _wiring_steps(state, sl, now, why, next_steps)
    if sl.state.wired and not sl.machines and (routes != "fresh" or rewire):
        link = (linked_tables or {}).get(sl.name)
        if link is not None:  # `routes` refuses it: the operator removes it (tpufleet never follows or removes it)
            why.append(f"a symbolic link stands where its routing tables belong: {link} (never followed: remove it)")
            next_steps.append(f"rm -- {shlex.quote(str(link))}")
        next_steps.append(f"tpufleet routes {sl.name}")
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
        "job": sl.job,
    }


def _announced_on(state: FleetState, cubes: Collection[str]) -> list[Row]:
    """The maintenance the reservation announced for a later window on these cubes (no drain open yet)."""
    return [m for m in reservation_maintenance(state) if m["cube"] in cubes and not m["drained"]]


def _started(m: Row, now: str) -> bool:
    """Whether announced maintenance's window has started at `now`: its drain waits for the next import."""
    return m["window_start"] is not None and m["window_start"] <= now


def _maintenance_ahead(state: FleetState, sl: Slice, now: str, why: list[str], next_steps: list[str]) -> None:
    """A running (or about to run) slice on a cube whose announced maintenance will drain it: move it first."""
    if sl.state is SliceState.EVICTED:
        return
    ahead = _announced_on(state, sl.cubes)
    for m in ahead:
        when = (
            f"'s maintenance window started at {m['window_start']} (reservation sub-block {m['sub_block']}): the "
            "next `tpufleet import reservation` opens its drain, which"
            if _started(m, now)
            else f" goes into maintenance at {m['window_start'] or 'an unknown time'} (reservation sub-block "
            f"{m['sub_block']}): its drain"
        )
        why.append(f"cube {m['cube']}{when} stops the slice unless it is moved first")
    if ahead:  # `next` holds commands as run: the plan's waves go in order, so wave 1 comes first
        why.append(
            "`tpufleet plan-maintenance` plans its move: apply the waves in order (`apply-maintenance plan.json --wave N`)"
        )
        next_steps += ["tpufleet plan-maintenance --out plan.json", "tpufleet apply-maintenance plan.json --wave 1"]


def _containing(state: FleetState, target: TargetId) -> list[Fault]:
    """Open faults on the target itself or on what contains it: its cube, its machine, the OCS of an optical link.
    For a cube, every fault that holds it out of the pool."""
    if isinstance(target, CubeId):
        ids = set(state.health().cubes_out.get(target.cube, ()))
        return [f for f in state.open_faults() if f.id in ids or f.target == target]
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
    inside = isinstance(target, CubeId) and not isinstance(cause[0].target, CubeId)
    return f"out of the pool: {cause[0].target} {kind}" if inside else f"{kind} with {cause[0].target}"


def explain_target(state: FleetState, target: TargetId, now: str) -> Row:
    target = canonical(target)  # an electrical link by either end's name is one component, recorded by one
    pods = [p.name for p in state.fleet.pods]
    if isinstance(target, OcsId) and target.pod not in pods:
        raise BadInput(f"unknown pod {target.pod!r} in {target} (pods: {', '.join(pods)})")
    if not isinstance(target, OcsId) and target.cube not in state.fleet.cube_pod:
        raise BadInput(f"unknown cube {target.cube!r} in {target}")
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
                else "its window has started: the next `tpufleet import reservation` opens its drain"
                if _started(m, now)
                else "the cube serves until then"
            )
            for m in _announced_on(state, {target.cube})
        ]
    held = {f.id for f in faults if _plan_window_ahead(state, f, now) is not None}
    why += _held_whys(state, faults, now)
    return {
        "kind": target.kind,
        "target": str(target),
        "state": _component_state(target, faults),
        "faults": [_fault_row(f) for f in faults],
        "slices": slices,
        "tables": [n for n in slices if n in state.routes],
        "why": why + _reservation_whys(faults),
        "next": list(dict.fromkeys(_clear_step(f) for f in faults if f.id not in held)),
    }


def _held_whys(state: FleetState, faults: list[Fault], now: str) -> list[str]:
    """Why the `clear-fault` step of each maintenance plan's drain among `faults` is held back, until when (the
    cube's own end where the state knows it, as `apply-maintenance` clears it)."""
    from tpufleet.maintenance import plan_drain_held

    own = state.announced_end
    return [why for f in faults if (why := plan_drain_held(f.id, f.reason, now, own(f.target))) is not None]


def _plan_window_ahead(state: FleetState, f: Fault, now: str) -> str | None:
    from tpufleet.maintenance import plan_window_ahead

    return plan_window_ahead(f.reason, now, state.announced_end(f.target))
