"""Use cases of `plan-maintenance` and `apply-maintenance`: the waves of `tpufleet.maintenance`, each run through
the same use cases `inject-fault`, `reschedule`, `plan-xconnect --apply`, `routes` and `clear-fault` run.

Planning runs every wave on a copy of the fleet state (the state itself is never changed: the plan is a plan),
each drain and clear at its notice's window. Applying runs one wave of a saved plan on the state, in one
transaction, with the same step code (`_run_wave`), after checking that nothing the wave depends on moved since
the plan was made; afterwards the moves it made must be the plan's, or nothing is committed.
"""

from __future__ import annotations

import copy
import shlex
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tpufleet import maintenance
from tpufleet.errors import BadInput, BadStateFile, Refused
from tpufleet.fleetstate import Change, FleetState, SliceState
from tpufleet.ids import CubeId, OcsId, natural_key
from tpufleet.integrations.reservation import REASON_PREFIX as RESERVATION_PREFIX
from tpufleet.journalentry import FLEET_REPLACED, JournalEntry
from tpufleet.maintenance import Notice
from tpufleet.ops import faults as fault_ops
from tpufleet.ops import routes as route_ops
from tpufleet.ops import xconnect as xconnect_ops
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


@dataclass
class _Wave:
    number: int
    notices: list[Notice]
    commands: list[str] = field(default_factory=list)
    moves: list[dict[str, Any]] = field(default_factory=list)
    fault_ids: set[str] = field(default_factory=set)
    steps: list[dict[str, Any]] = field(default_factory=list)  # what was done, in order (apply-maintenance)
    holders: dict[str, list[str]] = field(default_factory=dict)  # cube -> slices holding it before the wave
    avoid: tuple[str, ...] = ()  # cubes its moves take only when no other fits: later waves' (`later_drains`)


def later_drains(later: Sequence[Sequence[Notice]]) -> tuple[str, ...]:
    """The cubes the plan's later waves drain that are not drained yet (a notice whose drain is open is out of
    the pool already): a slice a wave moves goes there only when no other cube fits, or the later wave would
    stop it again and move it back. Planning and applying both take them from the plan's waves, so a wave applied
    makes the moves its printed commands (`reschedule NAME --avoid ...`) make."""
    cubes = {n.cube for wave in later for n in wave if n.fault_id is None}
    return tuple(sorted(cubes, key=natural_key))


@dataclass(frozen=True)
class _Run:
    """How a wave runs: on a plan's copy (each step at its notice's window; a slice that cannot move is noted
    as unserved) or applied (every step at `now`, the moved slices wired and routed; a refusal stops it all).
    Applied, a clear closes a plan's drain (`maintenance.a_plans_drain`) only once its window is over at `now`."""

    now: str | None = None
    route: Callable[[FleetState, str], dict[str, Any]] | None = None

    @property
    def applying(self) -> bool:
        return self.now is not None

    def drain_time(self, n: Notice) -> str:
        return self.now or n.window_start

    def clear_time(self, n: Notice) -> str:
        return self.now or n.window_end or n.window_start


def _holders(state: FleetState) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for name in sorted(state.slices):
        for c in state.slices[name].cubes:
            out[c].append(name)
    return out


def _drain(sim: FleetState, wave: _Wave, run: _Run) -> None:
    """Drain the wave's cubes (a notice whose drain is already open keeps it)."""
    reason = maintenance.wave_reason(wave.number, wave.notices)
    for n in wave.notices:
        target = CubeId(n.cube)
        existing = sim.open_fault_on(target)
        if existing is not None:
            wave.fault_ids.add(existing.id)
            wave.steps.append({"step": "drain", "target": n.target, "fault_id": existing.id, "opened": False})
            continue
        wave.commands.append(maintenance.drain_command(n, reason))
        request = fault_ops.FaultRequest(target, True, reason)
        radius = fault_ops.inject(sim, [request], run.drain_time(n)).data[0]
        wave.fault_ids.add(radius["fault_id"])
        wave.steps.append({"step": "drain", "target": n.target, "fault_id": radius["fault_id"], "opened": True})
        _stranded(sim, wave, n, radius["slices"], run)


def _stranded(sim: FleetState, wave: _Wave, n: Notice, hits: Sequence[dict[str, Any]], run: _Run) -> None:
    """A slice evicted before the wave whose reserved move the drain takes, no other place free: the drain strands
    it (unserved, as a slice it stops; applied, a refusal). One it evicts is the wave's to move (`_move`)."""
    for hit in hits:
        sl = sim.slices[hit["slice"]]
        if sl.evicted_by in wave.fault_ids or (hit.get("replacement") or {}).get("status") != "pending":
            continue
        reason = f"{hit['reason']} ({hit['replacement'].get('why', 'no move')})"
        if run.applying:
            raise Refused(f"wave {wave.number}: {n.target} strands slice {sl.name!r}: {reason}; plan again")
        row = {"slice": sl.name, "job": sl.job, "notice": n.target, "pod": sl.pod}
        wave.moves.append({**row, "status": "unserved", "reason": reason})


def _move(sim: FleetState, wave: _Wave, name: str, run: _Run) -> None:
    sl = sim.slices[name]
    before, on = list(sl.cubes), [n.target for n in wave.notices if n.cube in sl.cubes]
    row: dict[str, Any] = {"slice": name, "job": sl.job, "notice": on[0] if on else None, "pod": sl.pod}
    try:
        done = fault_ops.reschedule(sim, name, wave.avoid).data
    except Refused as exc:
        if run.applying:
            raise Refused(f"wave {wave.number}: cannot move slice {name!r}: {exc}; plan again") from None
        wave.moves.append({**row, "status": "unserved", "reason": str(exc)})
        return
    wave.commands.extend(maintenance.move_commands(name, wave.avoid))
    after = list(done["cubes"])
    out, into = [c for c in before if c not in after], [c for c in after if c not in before]
    wave.moves.append({**row, "status": "moved", "to_pod": done["pod"], "cubes_out": out, "cubes_in": into})
    # `reschedule` wires the slice where it lands: the cross-connects it adds and removes are this step's (the
    # plan-xconnect step after it then finds them made).
    wired_at_move = {k: done["xconnect_changes"][k] for k in ("add", "remove", "keep")}
    step = {"step": "reschedule", "slice": name, "pod": done["pod"], "cubes_out": out, "cubes_in": into}
    wave.steps.append({**step, **wired_at_move})
    if run.route is not None and run.now is not None:
        wired = xconnect_ops.plan_and_apply(sim, name, run.now).data["summary"]
        wave.steps.append({"step": "plan-xconnect", "slice": name, **wired})
        wave.steps.append({"step": "routes", **run.route(sim, name)})


def _evicted_by(sim: FleetState, fault_ids: set[str]) -> list[str]:
    return sorted(
        name for name, sl in sim.slices.items() if sl.state is SliceState.EVICTED and sl.evicted_by in fault_ids
    )


def _free_healthy(sim: FleetState, pods: set[str]) -> int:
    """The spares of the wave's pod that has fewest: free cubes a torus can use (in the pool, every port working).
    Spares are a pod's: another pod's free cubes cannot stand in for them."""
    health, used = sim.health(), sim.machine_usage()
    per_pod = [health.free_room(p.name, p.cubes, used) for p in sim.fleet.pods if p.name in pods]
    return min(per_pod, default=0)


def _clear(sim: FleetState, wave: _Wave, notices: Sequence[Notice], run: _Run) -> None:
    """Close the drains of the notices whose maintenance is over; a failure that was open on the cube before its
    drain (not planned: the drain kept it) stays open, as the hardware is still broken, and so does a drain the
    plan did not open (a reservation's, an operator's): it is left to whoever opened it, planned or applied, so
    a plan never counts on a cube that applying it would leave down. Applied, a drain stays open until its window
    ends."""
    for n in notices:
        existing = sim.open_fault_on(CubeId(n.cube))
        step: dict[str, Any] = {"step": "clear", "target": n.target, "fault_ids": []}
        if existing is not None and not existing.planned:
            wave.steps.append({**step, "kept_failure": existing.id})
            continue
        if existing is not None and not maintenance.a_plans_drain(existing.reason):  # this plan's, or one it replaced
            wave.steps.append({**step, "kept_drain": existing.id})
            continue
        wave.commands.append(maintenance.clear_command(n))
        if existing is not None and run.applying and not _window_over(n, str(run.now)):
            wave.steps.append({**step, "left_open": existing.id, "until": n.window_end})
        elif existing is not None or not run.applying:
            done = fault_ops.clear(sim, n.target, run.clear_time(n)).data
            wave.steps.append({**step, "fault_ids": [f["id"] for f in done["cleared"]]})
        else:
            wave.steps.append(step)  # cleared meanwhile (by hand): nothing open


def _opened(wave: _Wave) -> list[str]:
    """The drains this wave opened (not those it found open), in order."""
    return [s["fault_id"] for s in wave.steps if s["step"] == "drain" and s["opened"]]


def _window_over(n: Notice, now: str) -> bool:
    """Whether the notice's maintenance window has ended at `now` (never, while its end is unknown)."""
    return n.window_end is not None and n.window_end <= now


def _run_wave(sim: FleetState, wave: _Wave, cleared: Sequence[Notice], run: _Run, spares: int) -> dict[str, Any]:
    """One wave's steps, in the order of its commands: drains, the evicted slices' moves, then the clears that
    fall at its end. The wave's record (cubes, moves, free healthy cubes during it) is returned."""
    holders = _holders(sim)
    _drain(sim, wave, run)
    for name in _evicted_by(sim, wave.fault_ids):
        _move(sim, wave, name, run)
    record = _wave_record(sim, wave, spares)
    moved = {m["slice"] for m in wave.moves}
    touched = {n.cube for n in wave.notices} | {c for m in wave.moves for c in m.get("cubes_in", ())}
    touched |= {c for c, names in holders.items() if moved & set(names)}
    order = {c: i for i, c in enumerate(sim.fleet.cubes)}
    record["holders_before"] = {c: holders.get(c, []) for c in sorted(touched, key=order.__getitem__)}
    _clear(sim, wave, cleared, run)
    kept = [s["target"] for s in wave.steps if s["step"] == "clear" and ("kept_drain" in s or "kept_failure" in s)]
    return {**record, "cleared_after": [n.target for n in cleared], "kept_down": kept, "commands": wave.commands}


def _wave_record(sim: FleetState, wave: _Wave, spares: int) -> dict[str, Any]:
    start, end = maintenance.window(wave.notices)
    pods = {sim.fleet.pod_of(n.cube).name for n in wave.notices}
    free = _free_healthy(sim, pods)
    return {
        "wave": wave.number,
        "window_start": start,
        "window_end": end,
        "cubes": [n.cube for n in wave.notices],
        "already_drained": [n.target for n in wave.notices if n.fault_id is not None],
        "moves": wave.moves,
        "free_healthy_cubes": free,
        "spares_held": free >= spares,
    }


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
        wave = _Wave(i + 1, list(group), avoid=later_drains(groups[i + 1 :]))
        rows.append(_run_wave(sim, wave, cleared, _Run(), spares))
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
    """Refused when the plan is newer than the state, the wave was applied, or an earlier one was not."""
    if saved.serial > state.serial:
        raise Refused(
            f"plan {saved.path} was made at serial {saved.serial}, after this state ({state.serial}); plan again"
        )
    if number in applied:
        raise Refused(f"wave {number} of plan {saved.path} was applied at serial {applied[number]}; nothing to do")
    missing = [k for k in range(1, number) if k not in applied]
    if missing:
        raise Refused(
            f"wave {missing[0]} of plan {saved.path} is not applied yet: waves go in order "
            f"(tpufleet apply-maintenance {shlex.quote(str(saved.path))} --wave {missing[0]})"
        )


def changed_since(state: FleetState, saved: SavedMaintenancePlan, wave: SavedWave, own: set[int]) -> list[str]:
    """What wave `wave` depends on that changed since the plan was made (its own earlier waves' commits, serials
    `own`, aside): a slice moved, released or added on a cube it touches (the cubes it drains, the moved
    slices' cubes and their destinations); a fault opened anywhere in their pods (a failure the plan did not
    know takes a spare the plan counted on, or the path it chose); a drain the plan found open, cleared. A slice
    allocated or released on other cubes, or a fault on another pod, does not matter to it."""
    why = []
    holders = _holders(state)
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


def _differs(wave: SavedWave, done: _Wave, state: FleetState) -> list[str]:
    """How the wave as run differs from the plan's: other moves, or a slice left stopped."""
    planned = {m.slice: (set(m.cubes_out), set(m.cubes_in)) for m in wave.moves}
    made = {m["slice"]: (set(m["cubes_out"]), set(m["cubes_in"])) for m in done.moves}
    why = [f"slice {name!r} would not move" for name in sorted(planned.keys() - made.keys())]
    why += [f"slice {name!r} would be moved too" for name in sorted(made.keys() - planned.keys())]
    for name in sorted(planned.keys() & made.keys()):
        if planned[name] != made[name]:
            into = ",".join(sorted(made[name][1], key=natural_key)) or "-"
            was = ",".join(sorted(planned[name][1], key=natural_key)) or "-"
            why.append(f"slice {name!r} would move to {into} (the plan: {was})")
    why += [f"slice {name!r} would be left evicted" for name in _evicted_by(state, done.fault_ids)]
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
    its steps (`_run_wave`, as planning did) on `state`; refused, with nothing changed, when a step cannot be
    made or the moves differ from the plan's. `save_tables` None: a dry run (tables made, not kept)."""
    if not saved.waves:
        raise BadInput(f"bad option --wave: plan {saved.path} has no waves (it was made from no notices)")
    if not 1 <= number <= len(saved.waves):
        raise BadInput(f"bad option --wave: {number} is not a wave of plan {saved.path} (1 to {len(saved.waves)})")
    _unknown_cubes_refused(state, saved)
    check_fleet(saved, state.fleet)
    _order_refusal(state, saved, number, applied.serials)
    if applied.replaced_at is not None:  # same names, another fleet: its spares and holders are not the plan's
        raise Refused(
            f"stale plan {saved.path}: made at serial {saved.serial}, and since then `init --force` replaced the "
            f"fleet (serial {applied.replaced_at}); plan again"
        )
    wave = saved.waves[number - 1]
    unserved = [m for m in wave.moves if m.status != "moved"]
    if unserved:
        raise Refused(f"wave {number} of plan {saved.path} stops slice {unserved[0].slice!r}: {unserved[0].reason}")
    why = changed_since(state, saved, wave, set(applied.serials.values()))
    if why:
        raise Refused(f"stale plan {saved.path}: made at serial {saved.serial}, and since then {_listed(why)}")
    _not_back_yet_refused(state, saved, number, now)
    run = _Run(now, lambda s, name: _route(s, name, now, save_tables))
    done = _Wave(number, list(wave.notices), avoid=later_drains([w.notices for w in saved.waves[number:]]))
    _clear_overdue(state, done, [n for w in saved.waves[: number - 1] for n in w.cleared_after], run)
    record = _run_wave(state, done, wave.cleared_after, run, 0)
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
        if drain is None or not maintenance.a_plans_drain(drain.reason) or _window_over(n, now):
            continue
        done = f"run `tpufleet clear-fault {n.target}` once its maintenance is done"
        when = f"its window ends {n.window_end}: apply wave {number} then, or {done}" if n.window_end else done
        raise Refused(
            f"wave {number} of plan {saved.path} moves a slice onto {n.target}, back only when its drain "
            f"{drain.id} is cleared; {when}"
        )


def _clear_overdue(state: FleetState, done: _Wave, notices: Sequence[Notice], run: _Run) -> None:
    """Before a wave, clear the drains earlier waves of the plan opened and left open whose window is over (the
    plan counts on those cubes being back)."""
    for n in notices:
        existing = state.open_fault_on(CubeId(n.cube))
        if existing is not None and maintenance.a_plans_drain(existing.reason) and _window_over(n, str(run.now)):
            cleared = fault_ops.clear(state, n.target, str(run.now)).data["cleared"]
            done.steps.append({"step": "clear", "target": n.target, "fault_ids": [f["id"] for f in cleared]})


def _unknown_cubes_refused(state: FleetState, saved: SavedMaintenancePlan) -> None:
    """A plan naming a cube this fleet lacks (made for another state, or edited) is bad input, naming the cube."""
    known = state.fleet.cube_pod
    for i, wave in enumerate(saved.waves):
        named = [n.cube for n in (*wave.notices, *wave.cleared_after)] + list(wave.holders_before)
        named += [c for m in wave.moves for c in (*m.cubes_out, *m.cubes_in)]
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


def _applied(
    state: FleetState, saved: SavedMaintenancePlan, done: _Wave, record: dict[str, Any], dry_run: bool
) -> Outcome:
    opened = _opened(done)
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
        "faults_opened": opened,
        "faults_cleared": cleared,
        "commands": done.commands,
        "serial": state.serial if dry_run else state.next_serial,
    }
    summary = f"apply-maintenance wave {done.number}: {','.join(record['cubes'])}; {len(moved)} slice(s) moved"
    mark = {"id": saved.plan_id, "wave": done.number, "plan_serial": saved.serial}
    details: dict[str, object] = {JOURNAL_PLAN_KEY: mark, "moved": moved, "faults_opened": opened}
    return Outcome(data, None if dry_run else Change(summary, details))
