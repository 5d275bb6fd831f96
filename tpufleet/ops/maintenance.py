"""Use case of `plan-maintenance`: the waves of `tpufleet.maintenance`, replayed on a copy of the fleet state
through the same use cases `inject-fault`, `reschedule` and `clear-fault` run, so each move shown is the one the
commands will make. Read only: the state itself is never changed (the plan is a plan)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tpufleet import maintenance
from tpufleet.errors import Refused
from tpufleet.fleetstate import FleetState, SliceState
from tpufleet.ids import CubeId
from tpufleet.maintenance import Notice
from tpufleet.ops import faults as fault_ops
from tpufleet.ops.outcome import Outcome


def open_drain_notices(state: FleetState) -> list[Notice]:
    """The open planned drains of whole cubes that carry a maintenance window (what `import reservation` opens)."""
    return [
        Notice(f.target.cube, f.window_start, f.window_end, f.id)
        for f in state.open_faults()
        if f.planned and f.window_start is not None and isinstance(f.target, CubeId)
    ]


@dataclass
class _Wave:
    number: int
    notices: list[Notice]
    commands: list[str] = field(default_factory=list)
    moves: list[dict[str, Any]] = field(default_factory=list)
    fault_ids: set[str] = field(default_factory=set)


def _drain(sim: FleetState, wave: _Wave) -> None:
    """Drain the wave's cubes (a notice whose drain is already open keeps it)."""
    reason = maintenance.wave_reason(wave.number, wave.notices)
    for n in wave.notices:
        target = CubeId(n.cube)
        existing = sim.open_fault_on(target)
        if existing is not None:
            wave.fault_ids.add(existing.id)
            continue
        wave.commands.append(maintenance.drain_command(n, reason))
        radius = fault_ops.inject(sim, [fault_ops.FaultRequest(target, True, reason)], n.window_start).data[0]
        wave.fault_ids.add(radius["fault_id"])


def _move(sim: FleetState, wave: _Wave, name: str) -> None:
    sl = sim.slices[name]
    before, on = list(sl.cubes), [n.target for n in wave.notices if n.cube in sl.cubes]
    row: dict[str, Any] = {"slice": name, "job": sl.job, "notice": on[0] if on else None, "pod": sl.pod}
    try:
        done = fault_ops.reschedule(sim, name).data
    except Refused as exc:
        wave.moves.append({**row, "status": "unserved", "reason": str(exc)})
        return
    wave.commands.extend(maintenance.move_commands(name))
    after = list(done["cubes"])
    out, into = [c for c in before if c not in after], [c for c in after if c not in before]
    wave.moves.append({**row, "status": "moved", "to_pod": done["pod"], "cubes_out": out, "cubes_in": into})


def _evicted_by(sim: FleetState, fault_ids: set[str]) -> list[str]:
    return sorted(
        name for name, sl in sim.slices.items() if sl.state is SliceState.EVICTED and sl.evicted_by in fault_ids
    )


def _free_healthy(sim: FleetState, pods: set[str]) -> int:
    health, used = sim.health(), sim.machine_usage()
    return sum(1 for p in sim.fleet.pods if p.name in pods for c in p.cubes if c not in used and health.cube_ok(c))


def _clear(sim: FleetState, wave: _Wave, notices: Sequence[Notice]) -> None:
    for n in notices:
        wave.commands.append(maintenance.clear_command(n))
        fault_ops.clear(sim, n.target, n.window_end or n.window_start)


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
    """The waves, each replayed on a copy of the state: drains, the evicted slices' moves (or why not), the free
    healthy cubes left during the window against the spare target, and the commands in order."""
    order = [c for p in state.fleet.pods for c in p.cubes]
    groups = maintenance.waves(notices, max_parallel, order)
    clears = maintenance.clear_positions(groups)
    sim = copy.deepcopy(state)
    rows = []
    for i, group in enumerate(groups):
        wave = _Wave(i + 1, list(group))
        _drain(sim, wave)
        for name in _evicted_by(sim, wave.fault_ids):
            _move(sim, wave, name)
        record = _wave_record(sim, wave, spares)
        cleared = [n for j, g in enumerate(groups) if clears[j] == i for n in g]
        _clear(sim, wave, cleared)
        rows.append({**record, "cleared_after": [n.target for n in cleared], "commands": wave.commands})
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
