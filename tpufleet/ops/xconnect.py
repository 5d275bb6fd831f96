"""Use cases of cross-connects: plan a slice's wiring, and apply a plan (fresh, saved, or a reschedule's)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from tpufleet import xconnect
from tpufleet.errors import Refused
from tpufleet.faults import machines_hit
from tpufleet.fleetstate import Change, FleetState, Slice, SliceState
from tpufleet.ids import LinkId, OcsId, natural_key
from tpufleet.journalentry import JournalEntry
from tpufleet.movesteps import evicted_refusal
from tpufleet.ops.outcome import Outcome
from tpufleet.ops.plan_then import plan_when_made
from tpufleet.state.planfile import SavedPlan, plan_doc
from tpufleet.timeparse import parse_stamp

Journal = Callable[[int], Sequence[JournalEntry]]  # the committed journal lines after a serial


def make_plan(state: FleetState, name: str, now: str) -> tuple[dict[str, Any], xconnect.Plan]:
    """The plan document for a slice (`plan-xconnect -o json`), and the plan; Refused if it cannot be wired."""
    sl = state.slice(name)
    if sl.state is SliceState.EVICTED:
        raise evicted_refusal(name)
    health = state.health()
    bad_cubes = _cubes_out_under(state, sl)
    if bad_cubes:
        raise Refused(
            f"slice {name!r} holds cubes out of the pool: {', '.join(bad_cubes)}; choose other cubes", bad_cubes
        )
    plan = xconnect.plan(sl.shape, state.fleet, sl.coords, state.ocs, health, sl.fault_tolerant_routing)
    if plan.blocked:
        raise Refused(
            f"cannot wire slice {name!r}: {len(plan.blocked)} needed OCS or port(s) are failed or drained; "
            + _remedy(state, sl, plan.blocked),
            plan.blocked,
        )
    return plan_doc(sl, state.serial, plan, now), plan


def _remedy(state: FleetState, sl: Slice, blocked: list[str]) -> str:
    """What wires a slice its plan refuses: other cubes avoid a port down, not an OCS down (every cube of the pod
    is cabled to it), which only the repair or fault-tolerant routing (its pairs there deferred) get past. A slice
    wired already runs on around a port down (its cross-connect stays): the clear, once repaired, lets it be planned."""
    name, ocs = sl.name, sum(1 for b in blocked if b.startswith("ocs:"))
    down = {f.id for f in state.open_faults() if isinstance(f.target, LinkId) and f.target.cube in sl.cubes}
    if not ocs and sl.state.wired and down:
        clears = ", ".join(f"`tpufleet clear-fault {i}`" for i in sorted(down, key=natural_key))
        return (
            f"it is wired and runs on around them: {clears} once repaired, then plan again "
            f"(other cubes only by `tpufleet release {sl.job or name}` and allocating again)"
        )
    if not ocs:
        return "choose other cubes"
    ports = "; other cubes for the ports" if ocs < len(blocked) else ""
    return (
        f"an OCS serves every cube of its pod: wait for its repair, or `tpufleet policy {name} "
        f"--fault-tolerant-routing` to wire it now with that OCS's pairs deferred{ports}"
    )


def _cubes_out_under(state: FleetState, sl: Slice) -> list[str]:
    """The slice's cubes out of the pool; for a sub-cube slice, only a cube whose fault stops one of its own
    machines: beside a fault on other machines of its cube it runs on (the fault's verdict), so it may be wired."""
    health = state.health()
    out = [c for c in sl.cubes if not health.cube_ok(c)]
    if not sl.machines or not out:
        return out
    held = set(sl.machines)
    stopped = {
        f.target.cube
        for f in state.open_faults()
        if not isinstance(f.target, (OcsId, LinkId)) and ((hit := machines_hit(f.target)) is None or bool(hit & held))
    }
    return [c for c in out if c in stopped]


def wire(state: FleetState, sl: Slice, changes: list[xconnect.OcsChange], stale_reason: str) -> list[str]:
    """Make the changes on the OCS and mark the slice connected (degraded still while faults it routes around are
    open). Tables of the slice (when anything changed) and
    of slices whose cross-connects were removed go stale; returns those of them that are wired with stale tables."""
    if already_wired(sl, changes):
        return own_stale_tables(state, sl)  # no re-wire: the slice keeps its state (degraded too) and its tables
    owners = state.owner_of_ports()
    touched = {owners.get((c.ocs.pod, port)) for c in changes for pair in c.remove for port in pair}
    state.set_ocs(xconnect.apply(state.ocs, changes))
    was = sl.reroute
    state.connect(sl.name)
    left = tuple(f for f in (was.faults if was else ()) if (fault := state.fault(f)) is not None and fault.is_open)
    if was is not None and left:  # still routing around them: as after clearing one of its faults, the figures
        state.degrade(sl.name, replace(was, faults=left))  # stand until `routes` is run again
    changed = any(c.add or c.remove for c in changes)
    stale = state.mark_routes_stale(({sl.name} if changed else set()) | touched, stale_reason)
    return [n for n in stale if state.slices[n].state.wired]


def own_stale_tables(state: FleetState, sl: Slice) -> list[str]:
    """The wired slice itself when its stored tables are stale (by an earlier change): a wiring with nothing to add
    or remove leaves them so, and `routes` is still their next step."""
    record = state.routes.get(sl.name)
    return [sl.name] if sl.state.wired and record is not None and record.stale else []


def already_wired(sl: Slice, changes: list[xconnect.OcsChange]) -> bool:
    """A wired slice whose plan adds and removes nothing: applying it is no change at all (nothing committed)."""
    return sl.state.wired and not any(c.add or c.remove for c in changes)


def plan_and_apply(state: FleetState, name: str, now: str) -> Outcome:
    """`plan-xconnect --apply`: plan and apply in one locked step (nothing committed when all is in place)."""
    pdoc, plan = make_plan(state, name, now)
    if already_wired(state.slice(name), plan.changes):
        pdoc.update(applied=True, routes_stale=own_stale_tables(state, state.slice(name)), serial=state.serial)
        return Outcome(pdoc, None)
    stale = wire(state, state.slice(name), plan.changes, "cross-connects changed")
    pdoc.update(applied=True, routes_stale=stale, serial=state.next_serial)
    return Outcome(pdoc, _change(name, plan.summary, stale))


def changed_since(state: FleetState, saved: SavedPlan) -> list[str]:
    """What a saved plan depends on that changed after it was made: the slice (gone, other shape or cubes), faults
    opened since on its cubes or on the OCS it touches. Changes elsewhere in the fleet do not matter to it."""
    if saved.slice not in state.slices:
        return [f"slice {saved.slice!r} was released"]
    sl, why = state.slices[saved.slice], []
    if (sl.shape.text, sl.shape.twisted) != (saved.shape, saved.twisted) and not _allocated_before(sl, saved):
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


def _allocated_before(sl: Slice, saved: SavedPlan) -> bool:
    """The slice was allocated before the plan was made (a second earlier at least: the same second could be a
    slice released and allocated again since), so its shape is the one the plan was made for."""
    created, made = parse_stamp(sl.created or ""), parse_stamp(saved.made)
    return bool(created and made and created < made)


def _reviewed_fields_edited(sl: Slice, saved: SavedPlan, summary: dict[str, Any] | None) -> list[str]:
    """The fields an operator reviews (shape, cubes and their places, the counts unless `summary` is None) that
    differ from the plan the state gives: a plan is applied only as it was read."""
    edited = []
    if (saved.shape, saved.twisted) != (sl.shape.text, sl.shape.twisted):
        edited.append(f"shape {saved.shape}{' twisted' if saved.twisted else ''} (the slice is {sl.shape})")
    if saved.coords is not None and saved.coords != {c: tuple(sl.coords[c]) for c in sl.cubes}:
        edited.append(f"cubes {','.join(saved.coords)} (the slice's: {','.join(sl.cubes)}, in its grid order)")
    if summary is not None and saved.summary is not None and saved.summary != summary:
        edited.append(f"summary {saved.summary} (the plan's: {summary})")
    return edited


def apply_saved(state: FleetState, saved: SavedPlan, now: str, journal: Journal | None = None) -> Outcome:
    """`apply-xconnect FILE`: refuse a plan when something it depends on changed since it was made (not merely the
    serial: an unrelated slice allocated meanwhile leaves it valid), or when it is not the plan this state gives
    (edited, or made in another state directory); otherwise apply the plan recomputed here. `journal` reads the
    journal's lines after a serial: a plan already applied is checked against the plan its slice had when it was
    made (`plan_then`), which shows what the plan recomputed now, with nothing left to do, cannot."""
    if saved.serial > state.serial:
        raise Refused(
            f"plan {saved.path} was made at serial {saved.serial}, after this state ({state.serial}); plan again"
        )
    if saved.slice not in state.slices:  # released since, or never made here: this state knows no such slice
        known = ", ".join(sorted(state.slices, key=natural_key)) or "none"
        raise Refused(f"plan {saved.path}: unknown slice {saved.slice!r} (slices: {known})")
    why = changed_since(state, saved) if saved.serial != state.serial else []
    if why:
        raise Refused(
            f"stale plan {saved.path}: made at serial {saved.serial}, and since then {'; '.join(why)}; plan again", why
        )
    _, plan = make_plan(state, saved.slice, now)
    if _comparable(saved.changes) != _comparable(plan.changes) and in_place(state, saved, plan.changes):
        then = plan_when_made(state, saved, journal(saved.serial)) if journal is not None else None
        if then is not None and not _same_plan(saved, then):  # refused as it was before it was applied
            _refuse_other_plan(state, saved, then.changes)
        _refuse_edited(saved, _reviewed_fields_edited(state.slice(saved.slice), saved, _own_summary(saved)))
        data = {"slice": saved.slice, "serial": state.serial, "summary": plan.summary, "applied": True}
        # the plan's own (its pairs on an OCS that was down were deferred: the slice may hold more since)
        data["plan_cross_connects"] = sum(len(c.add) + c.keep for c in saved.changes)
        stale = own_stale_tables(state, state.slice(saved.slice))
        return Outcome({**data, "routes_stale": stale, "already_applied": True}, None)
    if _comparable(saved.changes) != _comparable(plan.changes):
        _refuse_other_plan(state, saved, plan.changes)
    _refuse_edited(saved, _reviewed_fields_edited(state.slice(saved.slice), saved, plan.summary))
    noop = already_wired(state.slice(saved.slice), plan.changes)
    stale = wire(state, state.slice(saved.slice), plan.changes, "cross-connects changed")
    data = {
        "slice": saved.slice,
        "serial": state.serial if noop else state.next_serial,
        "summary": plan.summary,
        "applied": True,
        "routes_stale": stale,
    }
    return Outcome(data, None if noop else _change(saved.slice, plan.summary, stale))


def _same_plan(saved: SavedPlan, plan: xconnect.Plan) -> bool:
    return _comparable(saved.changes) == _comparable(plan.changes) and sorted(saved.deferred) == sorted(
        str(o) for o in plan.deferred
    )


def _refuse_other_plan(state: FleetState, saved: SavedPlan, changes: list[xconnect.OcsChange]) -> None:
    """Refused: the saved plan is not `changes`, the plan its slice has (now, or when it was made)."""
    why = _why_plans_differ(state, saved, changes)
    raise Refused(
        f"stale plan {saved.path}: it does not match the plan for slice {saved.slice!r} at serial {state.serial}: "
        + (
            "; ".join(why[:4]) + (f"; and {len(why) - 4} more" if len(why) > 4 else "")
            if why
            else "it was edited or made for another state directory"
        )
        + "; plan again",
        why,
    )


def _refuse_edited(saved: SavedPlan, edited: list[str]) -> None:
    if edited:
        raise Refused(
            f"plan {saved.path} does not say what the plan for slice {saved.slice!r} does: {'; '.join(edited)} "
            "(edited after it was made?); plan again"
        )


def _own_summary(saved: SavedPlan) -> dict[str, int]:
    """The counts of the plan's own lists: what its `summary` says when it is not edited."""
    changes = saved.changes
    return {
        "add": sum(len(c.add) for c in changes),
        "remove": sum(len(c.remove) for c in changes),
        "keep": sum(c.keep for c in changes),
    }


def in_place(state: FleetState, saved: SavedPlan, now: list[xconnect.OcsChange]) -> bool:
    """Whether a saved plan is already applied: its slice is wired with nothing left to add or remove, the plan is
    one its slice could have had (`_entries_no_plan_holds`), every cross-connect it adds is in place and none it
    removes is (a runbook run twice; nothing to do)."""
    sl = state.slice(saved.slice)
    if not already_wired(sl, now) or _entries_no_plan_holds(state, saved):
        return False
    return all(
        set(c.add) <= state.ocs.get(c.ocs, frozenset()) and not set(c.remove) & state.ocs.get(c.ocs, frozenset())
        for c in saved.changes
    )


def _entries_no_plan_holds(state: FleetState, saved: SavedPlan) -> set[str]:
    """The OCS (ids) where the saved plan says what no plan of its slice says, whatever wiring it was made against:
    there, every pair the slice needs is added or kept, each once; a pair removed is another that held a port it
    needs, each once; each OCS is listed once, and one the slice needs is listed or deferred (down then). Once the
    plan's work is in place the plan recomputed now shows no such edit: these show it."""
    sl = state.slice(saved.slice)
    wanted = {str(k): set(v) for k, v in xconnect.wanted_pairs(sl.shape, state.fleet, sl.coords).items()}
    listed = Counter(str(c.ocs) for c in saved.changes)
    bad = {key for key, n in listed.items() if n > 1 or key not in wanted}
    bad |= {key for key in wanted if (key in listed) == (key in saved.deferred)}
    bad |= {key for key in saved.deferred if key not in wanted}
    for c in saved.changes:
        want = wanted.get(str(c.ocs), set())
        north, south = {n for n, _ in want}, {s for _, s in want}
        adds_ok = len(set(c.add)) == len(c.add) and set(c.add) <= want and len(c.add) + c.keep == len(want)
        removes_ok = len(set(c.remove)) == len(c.remove) and all(
            p not in want and (p[0] in north or p[1] in south) for p in c.remove
        )
        if not (adds_ok and removes_ok):
            bad.add(str(c.ocs))
    return bad


def _why_plans_differ(state: FleetState, saved: SavedPlan, now: list[xconnect.OcsChange]) -> list[str]:
    """Name what makes the recomputed plan differ: faults cleared since the plan was made, and per OCS whose
    changes differ, the other slices now holding the ports it touches."""
    made = parse_stamp(saved.made)
    why = [
        f"fault {f.id} on {f.target} was cleared at {f.cleared}"
        for f in state.faults
        if made and _at_or_after(f.cleared, made) and _touches(f.target, saved)  # same second: listed
    ]
    old, new = {str(c.ocs): c for c in saved.changes}, {str(c.ocs): c for c in now}
    owners, edited = state.owner_of_ports(), _entries_no_plan_holds(state, saved)
    for key in sorted(old.keys() | new.keys() | edited):
        a, b = old.get(key), new.get(key)
        same = _comparable([a] if a else []) == _comparable([b] if b else []) or _done_here(state, a, b)
        if same and key not in edited:
            continue
        if a is None and b is None:  # an OCS only the plan's `deferred` names
            why.append(f"{key} changed")
            continue
        pod = (a or b).ocs.pod  # type: ignore[union-attr]  # one of them exists: the key came from it
        ports = {p for c in (a, b) if c for pair in (*c.add, *c.remove) for p in pair}
        others = sorted({owners.get((pod, p)) for p in ports} - {None, saved.slice})  # type: ignore[type-var]
        why.append(
            f"{key} changed" + (f" (its ports are now wired for slice {', '.join(map(str, others))})" if others else "")
        )
    return why


def _at_or_after(stamp: str | None, moment: datetime) -> bool:
    """`stamp` (a time the tool wrote) is a time at or after `moment`, compared as times."""
    at = parse_stamp(stamp or "")
    return at is not None and at >= moment


def _done_here(state: FleetState, saved: xconnect.OcsChange | None, now: xconnect.OcsChange | None) -> bool:
    """The saved plan's changes on this OCS are in place (it was applied before) and the plan now has nothing
    left to do there: not a change that makes the plan stale, only its own work done."""
    if saved is None or (now is not None and (now.add or now.remove)):
        return False
    held = state.ocs.get(saved.ocs, frozenset())
    return set(saved.add) <= held and not set(saved.remove) & held


def _touches(target: object, saved: SavedPlan) -> bool:
    if isinstance(target, OcsId):
        return any(c.ocs.pod == target.pod for c in saved.changes)
    return getattr(target, "cube", None) in saved.cubes


def _comparable(changes: list[xconnect.OcsChange]) -> list[tuple[object, ...]]:
    return sorted((str(c.ocs), sorted(c.add), sorted(c.remove), c.keep) for c in changes if c.add or c.remove or c.keep)


def _change(name: str, s: dict[str, int], stale: list[str]) -> Change:
    return Change(
        f"apply-xconnect {name}: +{s['add']} -{s['remove']} ={s['keep']}", {"slice": name, **s, "routes_stale": stale}
    )
