"""The steps of one maintenance wave, pure: its drains, the moves of the slices they stop and the clears that fall
at its end, run through the use cases `inject-fault`, `reschedule`, `plan-xconnect --apply`, `routes` and
`clear-fault` run. `ops.maintenance` runs them on a copy of the state to plan, and on the state to apply a wave
(`Run` says which), so a wave applied makes the moves its plan printed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tpufleet import maintenance
from tpufleet.errors import Refused
from tpufleet.fleetstate import FleetState, SliceState
from tpufleet.ids import CubeId, natural_key
from tpufleet.maintenance import Notice
from tpufleet.ops import faults as fault_ops
from tpufleet.ops import xconnect as xconnect_ops


@dataclass
class Wave:
    """One wave as it runs: its notices, then what it did (commands, moves, drains opened, steps in order)."""

    number: int
    notices: list[Notice]
    commands: list[str] = field(default_factory=list)
    moves: list[dict[str, Any]] = field(default_factory=list)
    fault_ids: set[str] = field(default_factory=set)
    steps: list[dict[str, Any]] = field(default_factory=list)  # what was done, in order (apply-maintenance)
    reserved: list[dict[str, Any]] = field(default_factory=list)  # evicted slices whose reserved move a drain moved
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
class Run:
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


def slice_holders(state: FleetState) -> dict[str, list[str]]:
    """cube -> the slices holding it, by name."""
    out: dict[str, list[str]] = defaultdict(list)
    for name in sorted(state.slices, key=natural_key):
        for c in state.slices[name].cubes:
            out[c].append(name)
    return out


def _drain(sim: FleetState, wave: Wave, run: Run) -> None:
    """Drain the wave's cubes (a notice whose drain is already open keeps it), each drain's reason carrying its own
    notice's window: the cube is cleared after its own end, and `explain` tells that end, not the wave's latest."""
    for n in wave.notices:
        reason = maintenance.wave_reason(wave.number, [n])
        target = CubeId(n.cube)
        existing = sim.open_fault_on(target)
        if existing is not None:
            wave.fault_ids.add(existing.id)
            wave.steps.append({"step": "drain", "target": n.target, "fault_id": existing.id, "opened": False})
            continue
        wave.commands.append(maintenance.drain_command(n, reason))
        request = fault_ops.FaultRequest(target, True, reason)
        reserved = _reserved(sim)
        radius = fault_ops.inject(sim, [request], run.drain_time(n)).data[0]
        wave.fault_ids.add(radius["fault_id"])
        wave.steps.append({"step": "drain", "target": n.target, "fault_id": radius["fault_id"], "opened": True})
        _reservations_moved(sim, wave, reserved)
        _stranded(sim, wave, n, radius["slices"], run)


def _reserved(sim: FleetState) -> dict[str, tuple[str, ...]]:
    """Evicted slice -> the cubes reserved for its move."""
    return {n: sl.proposal.cubes for n, sl in sim.slices.items() if sl.proposal is not None}


def _reservations_moved(sim: FleetState, wave: Wave, before: dict[str, tuple[str, ...]]) -> None:
    """A drain on a cube reserved for an evicted slice's move reserves it other cubes: said in the wave's
    `reservations_moved` (`holders_before` names the slices on cubes, not the moves reserved there)."""
    after = _reserved(sim)
    for name in sorted(before.keys() & after.keys(), key=natural_key):
        if before[name] != after[name]:
            out = [c for c in before[name] if c not in after[name]]
            into = [c for c in after[name] if c not in before[name]]
            wave.reserved.append({"slice": name, "cubes_out": out, "cubes_in": into})


def _stranded(sim: FleetState, wave: Wave, n: Notice, hits: Sequence[dict[str, Any]], run: Run) -> None:
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


def _move(sim: FleetState, wave: Wave, name: str, run: Run) -> None:
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


def evicted_by(sim: FleetState, fault_ids: set[str]) -> list[str]:
    """The slices these drains stopped, as the fleet counts them (s9 before s10): the order a wave moves them in,
    first come first placed, as the fault path moves the slices of one blast radius."""
    return sorted(
        (name for name, sl in sim.slices.items() if sl.state is SliceState.EVICTED and sl.evicted_by in fault_ids),
        key=natural_key,
    )


def _free_healthy(sim: FleetState, pods: set[str]) -> tuple[int, str | None]:
    """The spares of the wave's pod that has fewest, and that pod: free cubes a torus can use (in the pool, every
    port working). Spares are a pod's: another pod's free cubes cannot stand in for them."""
    health, used = sim.health(), sim.machine_usage()
    per_pod = [(health.free_room(p.name, p.cubes, used), p.name) for p in sim.fleet.pods if p.name in pods]
    return min(per_pod, default=(0, None))


def _clear(sim: FleetState, wave: Wave, notices: Sequence[Notice], run: Run) -> None:
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
        if existing is not None and run.applying and not window_over(n, str(run.now)):
            wave.steps.append({**step, "left_open": existing.id, "until": n.window_end})
        elif existing is not None or not run.applying:
            done = fault_ops.clear(sim, n.target, run.clear_time(n), moves=False).data
            wave.steps.append({**step, "fault_ids": [f["id"] for f in done["cleared"]]})
        else:
            wave.steps.append(step)  # cleared meanwhile (by hand): nothing open


def opened_drains(wave: Wave) -> list[str]:
    """The drains this wave opened (not those it found open), in order."""
    return [s["fault_id"] for s in wave.steps if s["step"] == "drain" and s["opened"]]


def window_over(n: Notice, now: str) -> bool:
    """Whether the notice's maintenance window has ended at `now` (never, while its end is unknown)."""
    return n.window_end is not None and n.window_end <= now


def run_wave(sim: FleetState, wave: Wave, cleared: Sequence[Notice], run: Run, spares: int) -> dict[str, Any]:
    """One wave's steps, in the order of its commands: drains, the evicted slices' moves, then the clears that
    fall at its end. The wave's record (cubes, moves, free healthy cubes during it) is returned."""
    holders = slice_holders(sim)
    _drain(sim, wave, run)
    for name in evicted_by(sim, wave.fault_ids):
        _move(sim, wave, name, run)
    stopped = {m["slice"] for m in wave.moves}  # their moves say where they go: a reservation on the way is no news
    wave.reserved = [r for r in wave.reserved if r["slice"] not in stopped]
    record = _wave_record(sim, wave, spares)
    moved = {m["slice"] for m in wave.moves}
    touched = {n.cube for n in wave.notices} | {c for m in wave.moves for c in m.get("cubes_in", ())}
    touched |= {c for c, names in holders.items() if moved & set(names)}
    order = {c: i for i, c in enumerate(sim.fleet.cubes)}
    record["holders_before"] = {c: holders.get(c, []) for c in sorted(touched, key=order.__getitem__)}
    _clear(sim, wave, cleared, run)
    kept = [s["target"] for s in wave.steps if s["step"] == "clear" and ("kept_drain" in s or "kept_failure" in s)]
    return {**record, "cleared_after": [n.target for n in cleared], "kept_down": kept, "commands": wave.commands}


def _wave_record(sim: FleetState, wave: Wave, spares: int) -> dict[str, Any]:
    start, end = maintenance.window(wave.notices)
    # spares are counted in the notices' pods and in every pod a move lands in: a move takes that pod's free cubes
    pods = {sim.fleet.pod_of(n.cube).name for n in wave.notices} | {m["to_pod"] for m in wave.moves if "to_pod" in m}
    free, fewest = _free_healthy(sim, pods)
    return {
        "wave": wave.number,
        "window_start": start,
        "window_end": end,
        "cubes": [n.cube for n in wave.notices],
        "already_drained": [n.target for n in wave.notices if n.fault_id is not None],
        "moves": wave.moves,
        "reservations_moved": wave.reserved,
        "free_healthy_cubes": free,
        "free_healthy_pod": fewest,
        "spares_held": free >= spares,
    }
