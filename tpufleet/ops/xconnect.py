"""Use cases of cross-connects: plan a slice's wiring, and apply a plan (fresh, saved, or a reschedule's)."""

from __future__ import annotations

from typing import Any

from tpufleet import xconnect
from tpufleet.errors import Refused
from tpufleet.fleetstate import Change, FleetState, Slice, SliceState
from tpufleet.ids import OcsId
from tpufleet.ops.outcome import Outcome
from tpufleet.state.planfile import SavedPlan, plan_doc


def make_plan(state: FleetState, name: str, now: str) -> tuple[dict[str, Any], xconnect.Plan]:
    """The plan document for a slice (`plan-xconnect -o json`), and the plan; Refused if it cannot be wired."""
    sl = state.slice(name)
    if sl.state is SliceState.EVICTED:
        raise Refused(f"slice {name!r} is evicted; run `tpufleet reschedule {name}` first")
    health = state.health()
    bad_cubes = [c for c in sl.cubes if not health.cube_ok(c)]
    if bad_cubes:
        raise Refused(
            f"slice {name!r} holds cubes out of the pool: {', '.join(bad_cubes)}; choose other cubes", bad_cubes
        )
    plan = xconnect.plan(sl.shape, state.fleet, sl.coords, state.ocs, health, sl.fault_tolerant_routing)
    if plan.blocked:
        raise Refused(
            f"cannot wire slice {name!r}: {len(plan.blocked)} needed OCS or port(s) are failed or drained; choose other cubes",
            plan.blocked,
        )
    return plan_doc(sl, state.serial, plan, now), plan


def wire(state: FleetState, sl: Slice, changes: list[xconnect.OcsChange], stale_reason: str) -> list[str]:
    """Make the changes on the OCS and mark the slice connected. Tables of the slice (when anything changed) and
    of slices whose cross-connects were removed go stale; returns their names."""
    owners = state.owner_of_ports()
    touched = {owners.get((c.ocs.pod, port)) for c in changes for pair in c.remove for port in pair}
    state.set_ocs(xconnect.apply(state.ocs, changes))
    state.connect(sl.name)
    changed = any(c.add or c.remove for c in changes)
    return state.mark_routes_stale(({sl.name} if changed else set()) | touched, stale_reason)


def plan_and_apply(state: FleetState, name: str, now: str) -> Outcome:
    """`plan-xconnect --apply`: plan and apply in one locked step."""
    pdoc, plan = make_plan(state, name, now)
    stale = wire(state, state.slice(name), plan.changes, "cross-connects changed")
    pdoc.update(applied=True, routes_stale=stale, serial=state.next_serial)
    return Outcome(pdoc, _change(name, plan.summary, stale))


def changed_since(state: FleetState, saved: SavedPlan) -> list[str]:
    """What a saved plan depends on that changed after it was made: the slice (gone, other shape or cubes), faults
    opened since on its cubes or on the OCS it touches. Changes elsewhere in the fleet do not matter to it."""
    if saved.slice not in state.slices:
        return [f"slice {saved.slice!r} was released"]
    sl, why = state.slices[saved.slice], []
    if (sl.shape.text, sl.shape.twisted) != (saved.shape, saved.twisted):
        why.append(f"slice {saved.slice!r} is now {sl.shape}")
    if set(sl.cubes) != set(saved.cubes):
        why.append(f"slice {saved.slice!r} now holds cubes {','.join(sl.cubes)}")
    touched = {str(c.ocs) for c in saved.changes} | set(saved.cubes)
    for fault in state.open_faults():
        target = fault.target
        where = str(target) if isinstance(target, OcsId) else getattr(target, "cube", "")
        if (fault.opened_serial or 0) > saved.serial and where in touched:
            why.append(f"fault {fault.id} on {target} opened at serial {fault.opened_serial}")
    return why


def apply_saved(state: FleetState, saved: SavedPlan, now: str) -> Outcome:
    """`apply-xconnect FILE`: refuse a plan when something it depends on changed since it was made (not merely the
    serial: an unrelated slice allocated meanwhile leaves it valid), or when it is not the plan this state gives
    (edited, or made in another state directory); otherwise apply the plan recomputed here."""
    if saved.serial > state.serial:
        raise Refused(
            f"plan {saved.path} was made at serial {saved.serial}, after this state ({state.serial}); plan again"
        )
    why = changed_since(state, saved) if saved.serial != state.serial else []
    if why:
        raise Refused(
            f"stale plan {saved.path}: made at serial {saved.serial}, and since then {'; '.join(why)}; plan again", why
        )
    _, plan = make_plan(state, saved.slice, now)
    if _comparable(saved.changes) != _comparable(plan.changes):
        raise Refused(
            f"stale plan {saved.path}: it does not match the plan for slice {saved.slice!r} at serial {state.serial} "
            "(the cross-connects it touches changed, or it was edited or made for another state directory); plan again"
        )
    stale = wire(state, state.slice(saved.slice), plan.changes, "cross-connects changed")
    data = {
        "slice": saved.slice,
        "serial": state.next_serial,
        "summary": plan.summary,
        "applied": True,
        "routes_stale": stale,
    }
    return Outcome(data, _change(saved.slice, plan.summary, stale))


def _comparable(changes: list[xconnect.OcsChange]) -> list[tuple[object, ...]]:
    return sorted((str(c.ocs), sorted(c.add), sorted(c.remove), c.keep) for c in changes if c.add or c.remove or c.keep)


def _change(name: str, s: dict[str, int], stale: list[str]) -> Change:
    return Change(
        f"apply-xconnect {name}: +{s['add']} -{s['remove']} ={s['keep']}", {"slice": name, **s, "routes_stale": stale}
    )
