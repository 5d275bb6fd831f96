"""`tpufleet explain SLICE|TARGET`: why a slice is where it is, and what depends on a component (read-only).

For a slice: its state in words, the faults behind it, what it is waiting for and the command that moves it on
(wire it, regenerate tables, reschedule it, clear a fault). For a component (cube, host, chip, ICI or optical link,
OCS): its open faults and the slices and stored routing tables that depend on it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tpufleet.errors import BadInput, Refused
from tpufleet.faults import normalize
from tpufleet.fleetstate import FleetState, Slice, SliceState
from tpufleet.ids import OcsId
from tpufleet.integrations.reservation import awaited
from tpufleet.ops.explain_component import component_meant, degraded_whys, explain_target
from tpufleet.ops.explain_deferred import deferred_rewiring, deferred_steps, deferred_why
from tpufleet.ops.explain_faults import (
    Row,
    announced_on,
    clear_step_of,
    fault_meant,
    fault_row,
    faults_under,
    held_whys,
    in_place_whys,
    move_where,
    plan_window_ahead_of,
    reservation_whys,
    window_started,
)
from tpufleet.ops.explain_order import once_each
from tpufleet.ops.explain_routes import link_why, rm_step, then_routes
from tpufleet.ops.explain_wiring import wiring_steps
from tpufleet.ops.outcome import Outcome
from tpufleet.tableneeds import needs_tables, tables_moved, tables_predating
from tpufleet.text import around, share_text
from tpufleet.views import missing_xconnects


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
        return Outcome(explain_target(state, normalize(state.fleet, what), now), None)
    if what in state.jobs:
        return Outcome(_explain_job(state, what, now, missing_tables, linked_tables or {}), None)
    fault = fault_meant(state, what) if what not in state.slices else None
    if fault is not None:  # a fault id, as `faults` lists it: the component it is on is what explain takes
        raise Refused(
            f"{what!r} is {'a fault' if fault.id == what else f'fault {fault.id}'}, not a slice or job; "
            f"`tpufleet explain {fault.target}` explains the component it is on and what depends on it"
        )
    if what not in state.slices and what in state.fleet.cube_pod:  # a cube's name as `status` writes it
        raise Refused(
            f"{what!r} is a cube, not a slice or job; `tpufleet explain cube:{what}` explains it and what depends on it"
        )
    if what not in state.slices and what in state.fleet.pod_by_name:  # a pod's name, as `status` writes it
        raise Refused(
            f"{what!r} is a pod, not a slice or job; `tpufleet show map --pod {what}` pictures it (explain takes a "
            f"slice, a job or a component of it: cube:CUBE, ocs:{what}/x/0)"
        )
    near = component_meant(state, what) if what not in state.slices else None
    if near is not None:  # `c7`, `pod0/x/5`: a component's id without its kind, as no slice or job is named
        raise Refused(f"{what!r} is no slice or job; did you mean {near}? (`tpufleet explain {near}`)")
    (sl,) = state.slices_named(what)  # explain takes either: an unknown name is told with both lists
    return Outcome(explain_slice(state, sl, now, missing_tables, linked_tables), None)


def slices_told(state: FleetState, what: str) -> set[str]:
    """The slices whose stored tables `explain WHAT` tells of (fresh, stale or missing): a job's, or the one slice's;
    none for a component (its dependants' tables are told from the index)."""
    if ":" in what:
        return set()
    if what in state.jobs:
        return {sl.name for sl in state.job_slices(what)}
    return {what} & state.slices.keys()


def _explain_job(
    state: FleetState, name: str, now: str, missing_tables: Collection[str], linked_tables: Mapping[str, str]
) -> Row:
    """`explain JOB`, its wiring step as `job_wire_steps` gives it, then each wired slice's own steps (the job's
    bring its evicted slices back; a running slice may still wait for its repairs, cross-connects or tables)."""
    from tpufleet.jobs import explain_job

    row = explain_job(state, name, now)
    steps = [job_wire_steps(state, name, row["next"], now, row["why"], linked_tables)]
    reasons: dict[int, list[str]] = {}  # under each wired slice's line (row["why"][1 + i]): why its steps are there
    for i, sl in enumerate(state.job_slices(name)):
        if sl.state.wired:
            own = explain_slice(state, sl, now, missing_tables, linked_tables)
            steps.append(own["next"])
            reasons[2 + i] = [f"slice {sl.name}: {line}" for line in own["why"][1:] if not line.startswith("wired")]
        elif sl.name in linked_tables and rm_step(linked_tables[sl.name]) in steps[0]:  # moved or wired, then routed
            reasons[2 + i] = [f"slice {sl.name}: {link_why(linked_tables[sl.name])}"]
    for at in sorted(reasons, reverse=True):  # from the last, so the earlier places stay where they are
        row["why"][at:at] = reasons[at]
    row["next"] = once_each(steps)
    return row


def job_wire_steps(
    state: FleetState,
    name: str,
    steps: list[str],
    now: str,
    why: list[str] | None = None,
    linked_tables: Mapping[str, str] | None = None,
) -> list[str]:
    """A job's next steps (`explain JOB`, `inject-fault`'s `jobs[].next`): its wiring step one that works
    (`_job_wiring`), then the tables of every slice they wire or move (`then_routes`, a symbolic link standing
    where they belong removed first), and the repair of the cross-connects its wiring defers (`deferred_rewiring`)."""
    wiring = deferred_rewiring(state, name, _job_wiring(state, name, steps, now, why), now, why)
    return then_routes(state, wiring, linked_tables)


def _job_wiring(state: FleetState, name: str, steps: list[str], now: str, why: list[str] | None = None) -> list[str]:
    """A job's next steps with its wiring step one that works:
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
    # a refused slice's own wiring, once its waits are done, is the job's: it wires every slice then
    after = [wire] if any(w.startswith("tpufleet plan-xconnect ") for w in waits) else []
    waits = [w for w in waits if not w.startswith("tpufleet plan-xconnect ")]
    return list(dict.fromkeys([*(s for s in steps if s != wire), *one_by_one, *waits, *after]))


def _pending(state: FleetState, sl: Slice, now: str) -> tuple[list[str], list[str]]:
    from tpufleet.ops.xconnect import make_plan

    if sl.machines:
        broken = faults_under(state, sl)
        if not broken:  # nothing to program, yet it runs (`connected`) only once `plan-xconnect --apply` says so
            return [
                f"a sub-cube slice on machines {','.join(map(str, sl.machines))} of {sl.cubes[0]}: no cross-connects "
                "needed; it is allocated but not wired until `plan-xconnect --apply` marks it so"
            ], [f"tpufleet plan-xconnect {sl.name} --apply"]
        why = [f"fault {f.id} on {f.target} ({'drain' if f.planned else 'failure'}) is under it" for f in broken]
        return [*why, "release it and allocate it again on healthy machines"], [f"tpufleet release {sl.job or sl.name}"]
    try:
        _, plan = make_plan(state, sl.name, now)
    except Refused as exc:
        return _unwirable(state, sl, exc)
    why = [f"it is allocated but not wired: {plan.summary['add']} cross-connects to add"]
    # deferred: wired and routed around the OCS now, then wired whole and routed again after the repair
    why += [deferred_why(plan.deferred)] if plan.deferred else []
    return why, [f"tpufleet plan-xconnect {sl.name} --apply", *deferred_steps(state, sl.name, plan.deferred)]


def _unwirable(state: FleetState, sl: Slice, exc: Refused) -> tuple[list[str], list[str]]:
    """An allocated slice its plan refuses: a failed OCS (every cube of the pod needs it) or failed ports/cubes."""
    why = [f"it is allocated but cannot be wired: {exc}", *exc.details[:20]]
    down = [f for f in faults_under(state, sl) if isinstance(f.target, OcsId)]
    owner = sl.job or sl.name  # a slice of a job goes only with its job
    if not down:
        return [*why, "release it and allocate it again on other cubes"], [f"tpufleet release {owner}"]
    why += [f"every cube of {sl.pod} needs {f.target}: clear {f.id} once it is repaired" for f in down]
    # then the wiring the clears let through; the policy that would wire it now is another way, said, not a step
    # (run in order after it, the clears would close faults not repaired, and undo the policy the operator chose)
    steps = [*(f"tpufleet clear-fault {f.id}" for f in down), f"tpufleet plan-xconnect {sl.name} --apply"]
    if not sl.fault_tolerant_routing:  # a job: every slice of it
        why.append(
            "or, with fault-tolerant routing, wire it around the failed OCS now: "
            f"`tpufleet policy {owner} --fault-tolerant-routing`, then `tpufleet plan-xconnect {sl.name} --apply`"
        )
    if len(state.fleet.pods) > 1:
        why.append("or release it and allocate it in another pod")
    return why, steps


def _evicted(state: FleetState, sl: Slice, now: str) -> tuple[list[str], list[str]]:
    from tpufleet.moves import propose_move
    from tpufleet.movesteps import move_steps, steps_to_move, stopped_by_a_wave, unjudged_note

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
        why += [f"it moves once {awaited(steps.clears)[1]}", *unjudged, *in_place_whys(sl, fault)]
        why += reservation_whys(steps.clears)
        held = held_whys(state, steps.clears, now)
        clears = dict.fromkeys(clear_step_of(f) for f in steps.clears if plan_window_ahead_of(state, f, now) is None)
        # one import closes every reservation drain; while a plan's drain holds, reschedule could not move it yet
        return why + held, [*clears] if held else [*clears, f"tpufleet reschedule {sl.name}"]
    move = propose_move(state, sl)
    proposal, deferred = move.to_dict(), list(move.plan.deferred) if move.plan is not None else []
    why += [f"reschedule would move it to {move_where(state, sl, fault, proposal)}", *unjudged]
    # deferred: moved and routed around the OCS now, then wired whole and routed again after the repair
    later = deferred_steps(state, sl.name, deferred)
    why += [deferred_why(deferred)] if deferred else []
    moving = move_steps(state, sl)  # the wave's steps where a maintenance plan's drain stopped it
    if fault is not None and stopped_by_a_wave(state, sl):
        return [*why, _wave_moves_why(fault.id, sl.name)], [*moving, *later[1:]]
    return why, [*moving, *later]


def _wave_moves_why(fault_id: str, name: str) -> str:
    return (
        f"{fault_id} is a maintenance plan's drain: its wave moves a slice it stops with `reschedule`, "
        f"`plan-xconnect --apply` and `routes`; where the plan printed `tpufleet reschedule {name} --avoid CUBES`, "
        "run that one: it keeps the slice off the cubes the plan's later waves drain"
    )


def _degraded(state: FleetState, sl: Slice, tables: str) -> tuple[list[str], list[str]]:
    why, steps = _degraded_figures(sl, {f.id for f in state.faults if f.planned})
    assert sl.reroute is not None
    none_kept = tables in ("none", "missing")  # every fault it routes around is crossed until `routes` makes them
    past = [] if sl.machines else list(sl.reroute.faults) if none_kept else tables_predating(state, sl)
    if past:  # the figures are what `routes` would store: until it does, the tables in use cross the faults
        it = "it" if len(past) == 1 else "them"
        gone = {"none": "no routing tables are stored for it", "missing": "its stored routing tables are gone"}
        if tables == "stale" and tables_moved(state.routes.get(sl.name)):
            gone["stale"] = "its stored routing tables were made on the cubes it left"
        why.append(
            f"{gone[tables]}: `tpufleet routes {sl.name}` makes the ones around {around(past)}"
            if tables in gone
            else f"its stored routing tables were made before {around(past)} and still route through {it} until "
            f"`tpufleet routes {sl.name}` stores tables around {it}"
        )
        steps.insert(
            0, f"tpufleet routes {sl.name}"
        )  # (a symbolic link in its tables' place removed first: `then_routes`)
    return why, steps


def _degraded_figures(sl: Slice, drains: set[str]) -> tuple[list[str], list[str]]:
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
        f"running on rerouted tables around {around(r.faults)}: keeps {share_text(r.retained)} of its all-to-all "
        f"throughput with {r.vcs} virtual channels{floor}",
        f"it returns to healthy tables when {', '.join(r.faults)} {'is' if len(r.faults) == 1 else 'are'} "
        + ("cleared, once the maintenance is done" if drains.issuperset(r.faults) else "repaired and cleared")
        if r.faults
        else "it returns to healthy tables once wired again and routed",
    ]
    return why, [f"tpufleet clear-fault {f}" for f in r.faults]


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
        why, next_steps = _degraded(state, sl, routes)
    else:
        whole = not faults_under(state, sl) and not missing_xconnects(state, sl)
        why, next_steps = ["wired" + (" and healthy" if whole else "")], []
    from tpufleet.jobs import job_line

    line = job_line(state, sl)
    if line is not None:
        why.insert(0, line)
    missing = missing_xconnects(state, sl)
    unfresh = sl.state.wired and routes != "fresh" and needs_tables(state, sl)
    if unfresh:
        reason = f" ({route.stale_reason})" if route is not None and route.stale_reason else ""
        said = "no routing tables are stored for it" if routes == "none" else f"its routing tables are {routes}{reason}"
        if not any(w.startswith(said) for w in why):  # a degraded slice's reroute says it already, with its step
            why.append(said)
    why += [f"cube {cube}: {w}" for cube in sl.cubes for w in degraded_whys(state, cube)]
    _maintenance_ahead(state, sl, now, why, next_steps)
    rewire = wiring_steps(state, sl, now, why, next_steps, unrouted=unfresh)
    # a degraded slice's clears make its tables stale (the last one ends the reroute): routed again after them
    cleared = (
        sl.state is SliceState.DEGRADED
        and not sl.machines
        and any(s.startswith("tpufleet clear-fault ") for s in next_steps)
    )
    if unfresh or cleared or (rewire and sl.state.wired and not sl.machines):
        next_steps.append(f"tpufleet routes {sl.name}")
    # wired or moved, it is routed next; a symbolic link in its tables' place is removed before its first `routes`
    next_steps = then_routes(state, next_steps, linked_tables)
    link = (linked_tables or {}).get(sl.name)
    if link is not None and rm_step(link) in next_steps:  # `routes` refuses it: tpufleet never follows or removes it
        why.append(link_why(link))
    return {
        "kind": "slice",
        "name": sl.name,
        "state": sl.state.value,
        "shape": sl.shape.text + (" twisted" if sl.shape.twisted else ""),
        "pod": sl.pod,
        "cubes": list(sl.cubes),
        "why": why,
        "next": next_steps,
        "faults": [fault_row(f) for f in faults_under(state, sl)],
        "routes": routes,
        "missing_xconnects": missing,
        "degraded": sl.reroute.record() if sl.reroute else None,
        "proposal": sl.proposal.record() if sl.proposal else None,
        "job": sl.job,
    }


def _maintenance_ahead(state: FleetState, sl: Slice, now: str, why: list[str], next_steps: list[str]) -> None:
    """A running (or about to run) slice on a cube whose announced maintenance will drain it: move it first."""
    if sl.state is SliceState.EVICTED:
        return
    ahead = announced_on(state, sl.cubes)
    for m in ahead:
        when = (
            f"'s maintenance window started at {m['window_start']} (reservation sub-block {m['sub_block']}): the "
            "next `tpufleet import reservation SUB-BLOCKS.json --apply` opens its drain, which"
            if window_started(m, now)
            else f" goes into maintenance at {m['window_start'] or 'an unknown time'} (reservation sub-block "
            f"{m['sub_block']}): its drain"
        )
        why.append(f"cube {m['cube']}{when} stops the slice unless it is moved first")
    if ahead:  # `next` holds commands as run: the plan's waves go in order, up to the one that moves the slice
        why.append(
            "`tpufleet plan-maintenance` plans its move: apply the waves in order (`apply-maintenance plan.json --wave N`)"
        )
        waves = range(1, _moving_wave(state, sl.name) + 1)
        next_steps += ["tpufleet plan-maintenance --out plan.json"]
        next_steps += [f"tpufleet apply-maintenance plan.json --wave {n}" for n in waves]


def _moving_wave(state: FleetState, name: str) -> int:
    """The wave of the plan `plan-maintenance --out plan.json` makes now (its defaults: a cube a wave, no spare
    target) that moves the slice; 1 when none does (the plan says why)."""
    from tpufleet.ops import maintenance as maintenance_ops

    notices, source = maintenance_ops.recorded_notices(state)
    try:
        doc = maintenance_ops.plan(state, notices, 1, 0, source).data
    except (BadInput, Refused):  # a plan `plan-maintenance` refuses too: it says why, from wave 1 on
        return 1
    moving = [w["wave"] for w in doc["waves"] for m in w["moves"] if m["slice"] == name and m["status"] == "moved"]
    return moving[0] if moving else 1
