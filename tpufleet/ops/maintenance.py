"""Use cases of `plan-maintenance` and `apply-maintenance`: the waves of `tpufleet.maintenance`, each run through
the same use cases `inject-fault`, `reschedule`, `plan-xconnect --apply`, `routes` and `clear-fault` run.

Planning runs every wave on a copy of the fleet state (the state itself is never changed: the plan is a plan),
each drain and clear at its notice's window. Applying runs one wave of a saved plan on the state, in one
transaction, with the same step code (`run_wave`), after checking that nothing the wave depends on moved since
the plan was made; afterwards the moves it made must be the plan's, or nothing is committed.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tpufleet import maintenance
from tpufleet.errors import BadInput, BadStateFile, Refused, shown
from tpufleet.fleetstate import Change, FleetState
from tpufleet.ids import CubeId, OcsId, natural_key
from tpufleet.integrations.reservation import REASON_PREFIX as RESERVATION_PREFIX
from tpufleet.journalentry import FLEET_REPLACED, JournalEntry
from tpufleet.maintenance import Notice
from tpufleet.ops import faults as fault_ops
from tpufleet.ops import routes as route_ops
from tpufleet.ops.maintenance_waves import (
    Run,
    Wave,
    evicted_by,
    later_drains,
    opened_drains,
    run_wave,
    slice_holders,
    window_over,
)
from tpufleet.ops.outcome import Outcome
from tpufleet.state.maintenanceplan import SavedMaintenancePlan, SavedWave, check_fleet
from tpufleet.timeparse import utc_stamp

# Stores a moved slice's routing tables (npz bytes) with the transaction that applies the wave; returns where they
# are kept, relative to the state directory. The shell's: it owns the state directory.
SaveTables = Callable[[str, bytes], str]

JOURNAL_PLAN_KEY = "maintenance_plan"  # the journal details of an applied wave: plan id, wave number, plan serial


def open_drain_notices(state: FleetState) -> list[Notice]:
    """The open planned drains of whole cubes that carry a maintenance window (what `import reservation` opens),
    a reservation's drain named by its cube's sub-block, as the maintenance it announced for later is."""
    sub_blocks = {cube: name for cube, (name, _) in state.reservation.by_cube().items()}
    return [
        Notice(
            f.target.cube,
            _stamp(f.window_start),
            _stamp(f.window_end) if f.window_end is not None else None,
            f.id,
            sub_block=sub_blocks.get(f.target.cube) if f.reason.startswith(RESERVATION_PREFIX) else None,
        )
        for f in state.open_faults()
        if f.planned and f.window_start is not None and isinstance(f.target, CubeId)
    ]


def recorded_notices(state: FleetState) -> tuple[list[Notice], str]:
    """The notices `plan-maintenance` takes by default, and what it calls them: the open drains that carry a
    window, then the maintenance the last `import reservation` announced for a later window (its cube still
    serves, no planned drain open on it yet), each named by its sub-block."""
    notices = open_drain_notices(state)
    drained = state.cubes_drained() | {n.cube for n in notices}
    announced = [
        Notice(r.cube, _stamp(w.start), _stamp(w.end) if w.end is not None else None, None, sub_block=name)
        for name, r in sorted(state.reservation.sub_blocks.items(), key=lambda kv: natural_key(kv[1].cube))
        if (w := r.maintenance) is not None and w.drains and w.start is not None and r.cube not in drained
    ]
    return [*notices, *announced], "open maintenance drains and announced maintenance"


def _stamp(text: str) -> str:
    """A drain's window time as a plan writes it (drains recorded before times were so kept: +00:00, fractions)."""
    return utc_stamp(text) or text


def plan(state: FleetState, notices: Sequence[Notice], max_parallel: int, spares: int, source: str) -> Outcome:
    """The waves, each run on a copy of the state: drains, the evicted slices' moves (or why not), the free
    healthy cubes left during the window against the spare target, and the commands in order."""
    order = [c for p in state.fleet.pods for c in p.cubes]
    groups = maintenance.waves(notices, max_parallel, order)
    clears = maintenance.clear_positions(groups)
    sim = copy.deepcopy(state)
    rows = []
    for i, group in enumerate(groups):
        cleared = [n for j, g in enumerate(groups) if clears[j] == i for n in g]
        wave = Wave(i + 1, list(group), avoid=later_drains(groups[i + 1 :]))
        rows.append(run_wave(sim, wave, cleared, Run(), spares))
    return Outcome(_document(state, notices, rows, max_parallel, spares, source))


def _document(
    state: FleetState, notices: Sequence[Notice], rows: list[dict[str, Any]], k: int, spares: int, source: str
) -> dict[str, Any]:
    unserved = [{"wave": w["wave"], **m} for w in rows for m in w["moves"] if m["status"] == "unserved"]
    short = [w["wave"] for w in rows if not w["spares_held"]]
    return {
        "kind": maintenance.KIND,
        "serial": state.serial,
        "source": source,
        "max_parallel": k,
        "spares": spares,
        "notices": [n.record() for n in notices],
        "waves": rows,
        "moves": sum(1 for w in rows for m in w["moves"] if m["status"] == "moved"),
        "unserved": unserved,
        "spare_shortfall_waves": short,
        "served": not unserved and not short,
        "commands": [c for w in rows for c in w["commands"]],
    }


# ---- apply-maintenance PLAN --wave N ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AppliedWaves:
    """What the journal says of a plan's applied waves: wave number -> the serial that applied it."""

    serials: dict[int, int]
    replaced_at: int | None = None  # the serial of an `init --force` after the plan's: its fleet is gone


def applied_waves(entries: Sequence[JournalEntry], saved: SavedMaintenancePlan) -> AppliedWaves:
    """This plan's applied waves, from the journal's entries (this plan's id, after its serial), and the last
    `init --force` since the plan was made, if any."""
    serials, replaced_at = {}, None
    for e in entries:
        if e.serial > saved.serial and FLEET_REPLACED in (e.details or {}):
            replaced_at = e.serial
        mark = (e.details or {}).get(JOURNAL_PLAN_KEY)
        if isinstance(mark, Mapping) and mark.get("id") == saved.plan_id and e.serial > saved.serial:
            wave = mark.get("wave")
            if isinstance(wave, int):
                serials[wave] = e.serial
    return AppliedWaves(serials, replaced_at)


def _order_refusal(state: FleetState, saved: SavedMaintenancePlan, number: int, applied: Mapping[int, int]) -> None:
    """Refused when the plan is newer than the state, or an earlier wave was not applied."""
    if saved.serial > state.serial:
        raise Refused(
            f"plan {saved.path} was made at serial {saved.serial}, after this state ({state.serial}); plan again"
        )
    missing = [k for k in range(1, number) if k not in applied]
    if missing:
        raise Refused(
            f"wave {missing[0]} of plan {saved.path} is not applied yet: waves go in order; run "
            f"`tpufleet apply-maintenance {shlex.quote(str(saved.path))} --wave {missing[0]}` first"
        )


def changed_since(state: FleetState, saved: SavedMaintenancePlan, wave: SavedWave, own: set[int]) -> list[str]:
    """What wave `wave` depends on that changed since the plan was made (its own earlier waves' commits, serials
    `own`, aside): a slice moved, released or added on a cube it touches (the cubes it drains, the moved
    slices' cubes and their destinations); a fault opened anywhere in their pods (a failure the plan did not
    know takes a spare the plan counted on, or the path it chose); a drain the plan found open, cleared. A slice
    allocated or released on other cubes, or a fault on another pod, does not matter to it."""
    why = []
    holders = slice_holders(state)
    for cube, names in wave.holders_before.items():
        now = holders.get(cube, [])
        if list(names) != now:
            why.append(f"cube {cube} is held by {','.join(now) or 'no slice'} (the plan: {','.join(names) or 'free'})")
    pods = {state.fleet.pod_of(c).name for c in [*wave.holders_before, *(n.cube for n in wave.notices)]}
    for fault in state.open_faults():
        serial, target = fault.opened_serial or 0, fault.target
        pod = target.pod if isinstance(target, OcsId) else state.fleet.pod_of(target.cube).name
        if serial > saved.serial and serial not in own and pod in pods:
            why.append(f"fault {fault.id} on {target} opened at serial {serial} in {pod}")
    return why + _drains_cleared(state, wave)


def _drains_cleared(state: FleetState, wave: SavedWave) -> list[str]:
    """The drains the plan found open (by id: another opened on the cube since is not the one the plan saw) that
    are no longer open."""
    why = []
    for n in wave.notices:
        if n.target in wave.already_drained and n.fault_id is not None:
            now = state.open_fault_on(CubeId(n.cube))
            if now is None or now.id != n.fault_id:
                why.append(f"the drain {n.fault_id} of {n.target} was cleared")
    return why


def _differs(wave: SavedWave, done: Wave, state: FleetState) -> list[str]:
    """How the wave as run differs from the plan's: other moves, or a slice left stopped."""
    planned = {m.slice: (set(m.cubes_out), set(m.cubes_in)) for m in wave.moves}
    made = {m["slice"]: (set(m["cubes_out"]), set(m["cubes_in"])) for m in done.moves}
    why = [f"slice {name!r} would not move" for name in sorted(planned.keys() - made.keys(), key=natural_key)]
    why += [f"slice {name!r} would be moved too" for name in sorted(made.keys() - planned.keys(), key=natural_key)]
    for name in sorted(planned.keys() & made.keys(), key=natural_key):
        for side, verb in ((1, "move to"), (0, "leave")):  # where it lands first: the cubes it leaves follow from it
            if planned[name][side] != made[name][side]:
                did, was = (",".join(sorted(m[name][side], key=natural_key)) or "-" for m in (made, planned))
                why.append(f"slice {name!r} would {verb} {did} (the plan: {was})")
                break
    left = sorted(evicted_by(state, done.fault_ids), key=natural_key)
    why += [f"slice {name!r} would be left evicted" for name in left]
    return why


def apply_wave(
    state: FleetState,
    saved: SavedMaintenancePlan,
    number: int,
    applied: AppliedWaves,
    now: str,
    save_tables: SaveTables | None,
) -> Outcome:
    """`apply-maintenance PLAN --wave N`: check the order and that nothing the wave depends on moved, then run
    its steps (`run_wave`, as planning did) on `state`; refused, with nothing changed, when a step cannot be
    made or the moves differ from the plan's. `save_tables` None: a dry run (tables made, not kept)."""
    if not saved.waves:
        raise BadInput(f"bad option --wave: plan {saved.path} has no waves (it was made from no notices)")
    if not 1 <= number <= len(saved.waves):
        raise BadInput(
            f"bad option --wave: {shown(str(number))} is not a wave of plan {saved.path} (1 to {len(saved.waves)})"
        )
    _unknown_cubes_refused(state, saved)
    faults = {f.id: str(f.target) for f in state.faults} if applied.replaced_at is None else None  # else refused below
    check_fleet(saved, state.fleet, faults)
    _order_refusal(state, saved, number, applied.serials)
    if applied.replaced_at is not None:  # same names, another fleet: its spares and holders are not the plan's
        raise Refused(
            f"stale plan {saved.path}: made at serial {saved.serial}, and since then `init --force` replaced the "
            f"fleet (serial {applied.replaced_at}); plan again"
        )
    if number in applied.serials:  # a runbook run twice: the wave is in place, as `apply-xconnect` of a plan applied
        return _already_applied(state, saved, number, applied.serials[number], save_tables is None)
    wave = saved.waves[number - 1]
    unserved = [m for m in wave.moves if m.status != "moved"]
    if unserved:
        raise Refused(  # a wave applies only as planned: it never evicts a slice on its own
            f"wave {number} of plan {saved.path} stops slice {unserved[0].slice!r}: {unserved[0].reason}; free cubes "
            "in its pod and plan again, or run the wave's steps by hand (`plan-maintenance -o md`), which stop it"
        )
    why = changed_since(state, saved, wave, set(applied.serials.values()))
    if why and state.serial == saved.serial and not applied.serials:  # nothing happened since: not this state's
        raise Refused(
            f"plan {saved.path} was not made from this state: made at serial {saved.serial}, the state's serial, "
            f"yet {_listed(why)}"
        )
    if why:
        raise Refused(f"stale plan {saved.path}: made at serial {saved.serial}, and since then {_listed(why)}")
    _not_back_yet_refused(state, saved, number, now)
    run = Run(now, lambda s, name: _route(s, name, now, save_tables))
    avoid = wave.avoid if wave.avoid is not None else later_drains([w.notices for w in saved.waves[number:]])
    done = Wave(number, list(wave.notices), avoid=avoid)  # as the plan's commands were made: an older plan's lack it
    _clear_overdue(state, done, [n for w in saved.waves[: number - 1] for n in w.cleared_after], run)
    record = run_wave(state, done, wave.cleared_after, run, 0)
    differ = _differs(wave, done, state)
    if differ:
        raise Refused(f"wave {number} would not do what plan {saved.path} says: {_listed(differ)}; plan again")
    return _applied(state, saved, done, record, save_tables is None)


def _not_back_yet_refused(state: FleetState, saved: SavedMaintenancePlan, number: int, now: str) -> None:
    """Refused when the wave moves a slice onto a cube an earlier wave drained whose window is not over at `now`:
    the plan counts on that cube being back, and its drain stays open until then (`_clear_overdue`). Run anyway,
    the move would fail or go elsewhere, and planning again plans the same move: the wave is early, not stale."""
    wave = saved.waves[number - 1]
    into = {c for m in wave.moves for c in m.cubes_in}
    for n in (n for w in saved.waves[: number - 1] for n in w.cleared_after if n.cube in into):
        drain = state.open_fault_on(CubeId(n.cube))
        if drain is None or not maintenance.a_plans_drain(drain.reason) or window_over(n, now):
            continue
        done = f"run `tpufleet clear-fault {n.target}` once its maintenance is done"
        when = f"its window ends {n.window_end}: apply wave {number} then, or {done}" if n.window_end else done
        raise Refused(
            f"wave {number} of plan {saved.path} moves a slice onto {n.target}, back only when its drain "
            f"{drain.id} is cleared; {when}"
        )


def _clear_overdue(state: FleetState, done: Wave, notices: Sequence[Notice], run: Run) -> None:
    """Before a wave, clear the drains earlier waves of the plan opened and left open whose window is over (the
    plan counts on those cubes being back)."""
    for n in notices:
        existing = state.open_fault_on(CubeId(n.cube))
        if existing is not None and maintenance.a_plans_drain(existing.reason) and window_over(n, str(run.now)):
            cleared = fault_ops.clear(state, n.target, str(run.now), moves=False).data["cleared"]
            done.steps.append({"step": "clear", "target": n.target, "fault_ids": [f["id"] for f in cleared]})


def _unknown_cubes_refused(state: FleetState, saved: SavedMaintenancePlan) -> None:
    """A plan naming a cube this fleet lacks (made for another state, or edited) is bad input, naming the cube."""
    known = state.fleet.cube_pod
    for i, wave in enumerate(saved.waves):
        named = [n.cube for n in (*wave.notices, *wave.cleared_after)] + list(wave.holders_before)
        named += [c for m in wave.moves for c in (*m.cubes_out, *m.cubes_in)] + list(wave.avoid or ())
        unknown = next((c for c in named if c not in known), None)
        if unknown is not None:
            raise BadStateFile(
                saved.path, f"waves.{i}", unknown, "no such cube in this fleet (a plan made for another state?)"
            )


def _listed(why: list[str], shown: int = 4) -> str:
    return "; ".join(why[:shown]) + (f"; and {len(why) - shown} more" if len(why) > shown else "")


def _route(state: FleetState, name: str, now: str, save_tables: SaveTables | None) -> dict[str, Any]:
    """`routes SLICE` with its defaults, the tables kept with the wave's transaction (`save_tables`)."""
    request = route_ops.RouteRequest("auto", ["all-to-all", "all-reduce"], True)

    def keep(routed: route_ops.RoutedSlice, npz: bytes) -> tuple[str, bool]:
        where = save_tables(name, npz) if save_tables is not None else f"routes/{name}.npz"
        route_ops.record(state, routed, where)
        return where, True

    done = route_ops.route_slice(state, name, request, now, keep)
    if done.refusal is not None:
        raise Refused(f"tables for slice {name!r} cannot be stored: {done.refusal}; nothing was changed")
    s = done.data
    return {"slice": name, "vcs": s["vcs"], "routable_pairs": s["routable_pairs"], "stored": save_tables is not None}


def _already_applied(state: FleetState, saved: SavedMaintenancePlan, number: int, at: int, dry_run: bool) -> Outcome:
    """The result of a wave the journal says was applied (at serial `at`): nothing to do, nothing committed."""
    wave = saved.waves[number - 1]
    data = {
        "plan": saved.path,
        "plan_id": saved.plan_id,
        "plan_serial": saved.serial,
        "wave": number,
        "waves": len(saved.waves),
        "dry_run": dry_run,
        "cubes": [n.cube for n in wave.notices],
        "steps": [],
        "moved": [],
        "reservations_moved": [],
        "faults_opened": [],
        "faults_cleared": [],
        "commands": list(wave.commands),
        "serial": state.serial,
        "already_applied": True,
        "applied_serial": at,
    }
    return Outcome(data, None)


def _applied(
    state: FleetState, saved: SavedMaintenancePlan, done: Wave, record: dict[str, Any], dry_run: bool
) -> Outcome:
    opened = opened_drains(done)
    cleared = [f for s in done.steps if s["step"] == "clear" for f in s["fault_ids"]]
    moved = [{k: m[k] for k in ("slice", "pod", "to_pod", "cubes_out", "cubes_in")} for m in done.moves]
    data = {
        "plan": saved.path,
        "plan_id": saved.plan_id,
        "plan_serial": saved.serial,
        "wave": done.number,
        "waves": len(saved.waves),
        "dry_run": dry_run,
        "cubes": record["cubes"],
        "steps": done.steps,
        "moved": moved,
        "reservations_moved": done.reserved,
        "faults_opened": opened,
        "faults_cleared": cleared,
        "commands": done.commands,
        "serial": state.serial if dry_run else state.next_serial,
    }
    summary = f"apply-maintenance wave {done.number}: {','.join(record['cubes'])}; {len(moved)} slice(s) moved"
    mark = {"id": saved.plan_id, "wave": done.number, "plan_serial": saved.serial}
    details: dict[str, object] = {JOURNAL_PLAN_KEY: mark, "moved": moved, "faults_opened": opened}
    return Outcome(data, None if dry_run else Change(summary, details))
