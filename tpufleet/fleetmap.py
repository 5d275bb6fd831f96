"""A map of each pod (pure): what every cube and every OCS is doing, for `show map` and the HTML report.

A pod's cubes are drawn as a 4x4x4 grid, cube position p at x = p mod 4, y = (p div 4) mod 4, z = p div 16 (one
small grid per z layer), which is the order `show inventory` lists them in. Each cube gets one mark:

    .   free                 A..Z, a..z, AA..  the slice holding it (legend)
    X   out of the pool (a fault)              D   drained (only planned maintenance holds it out)
    +   several sub-cube slices share it        *   reserved as an evicted slice's replacement
    ~   free, but the provider reports it DEGRADED (it serves; allocations take it after the healthy ones)

A slice running on rerouted tables is `degraded`; its cubes carry its letter and the legend says so. A cube's
`degraded` says the provider reports it DEGRADED, whatever its mark (a slice's letter wins over `~`). The OCS
strip has one mark per switch: `.` healthy and unused, `o` healthy with cross-connects in use, `X` failed,
`D` drained.

>>> from tpufleet.fleetstate import FleetState
>>> from tpufleet.model import default_fleet
>>> m = fleet_map(FleetState(default_fleet()))
>>> m.pods[0].counts
{'free': 64, 'slice': 0, 'reserved': 0, 'out': 0, 'drained': 0}
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass, field

from tpufleet.constants import CUBE_EDGE, DIMS
from tpufleet.fleetstate import FleetState, Slice
from tpufleet.health import Health
from tpufleet.ids import natural_key
from tpufleet.jobs import job_tag
from tpufleet.model import known_pod, pod_ocs
from tpufleet.text import around, share_text
from tpufleet.views import cube_users, reserved_cubes

FREE, OUT, DRAINED, SHARED, RESERVED, FREE_DEGRADED = ".", "X", "D", "+", "*", "~"
OCS_IDLE, OCS_IN_USE = ".", "o"
# Slice labels never use the status marks (D drained, X out), so a cube's letter is never ambiguous.
_LETTERS = "".join(c for c in string.ascii_uppercase + string.ascii_lowercase if c not in "DXdx")


@dataclass(frozen=True)
class CubeCell:
    cube: str
    position: int
    xyz: tuple[int, int, int]
    state: str  # free | slice | reserved | out | drained
    mark: str
    slices: tuple[str, ...]
    faults: tuple[str, ...]
    degraded: bool = False  # its reservation sub-block or GKE partition is reported DEGRADED


@dataclass(frozen=True)
class OcsCell:
    id: str
    dim: str
    index: int
    state: str  # ok | failed | drained
    mark: str
    xconnects: int


@dataclass(frozen=True)
class LegendEntry:
    mark: str
    slice: str
    shape: str
    state: str
    detail: str
    job: str | None = None  # the multislice job the slice belongs to


@dataclass
class PodMap:
    pod: str
    cubes: list[CubeCell]
    ocs: list[OcsCell]
    counts: dict[str, int] = field(default_factory=dict)
    generation: str | None = None  # None: the built-in TPU v4 model

    def layers(self) -> list[list[list[CubeCell | None]]]:
        """cells[z][y][x]; positions past the pod's last cube are None."""
        n_layers = -(-len(self.cubes) // CUBE_EDGE**2) or 1
        grid: list[list[list[CubeCell | None]]] = [
            [[None] * CUBE_EDGE for _ in range(CUBE_EDGE)] for _ in range(n_layers)
        ]
        for cell in self.cubes:
            x, y, z = cell.xyz
            grid[z][y][x] = cell
        return grid


@dataclass
class FleetMap:
    pods: list[PodMap]
    legend: list[LegendEntry]

    def record(self) -> dict[str, object]:
        """The documented `show map -o json` shape."""
        return {
            "pods": [
                {
                    "pod": p.pod,
                    **({"generation": p.generation} if p.generation is not None else {}),
                    "counts": p.counts,
                    "cubes": [
                        {**c.__dict__, "xyz": list(c.xyz), "slices": list(c.slices), "faults": list(c.faults)}
                        for c in p.cubes
                    ],
                    "ocs": [o.__dict__ for o in p.ocs],
                }
                for p in self.pods
            ],
            "legend": [e.__dict__ for e in self.legend],
        }


def slice_marks(names: Iterable[str]) -> dict[str, str]:
    """A, B, C, E, ... (no D or X, the status marks), then a ..., then two letters: one label per slice, by name.

    >>> slice_marks(["a", "b", "c", "d"])
    {'a': 'A', 'b': 'B', 'c': 'C', 'd': 'E'}
    """
    marks = {}
    for i, name in enumerate(sorted(names, key=natural_key)):
        marks[name] = (
            _LETTERS[i] if i < len(_LETTERS) else _LETTERS[i // len(_LETTERS) - 1] + _LETTERS[i % len(_LETTERS)]
        )
    return marks


def _slice_detail(state: FleetState, sl: Slice) -> str:
    if sl.reroute is not None:
        return f"rerouted around {around(sl.reroute.faults)}: keeps {share_text(sl.reroute.retained)} of all-to-all"
    evicting = state.fault(sl.evicted_by) if sl.evicted_by else None
    if evicting is not None and not evicting.is_open:  # back onto its own cubes, if they serve, not the reserved
        return f"evicted by {sl.evicted_by}, cleared since: `tpufleet reschedule {sl.name}`"
    if sl.evicted_by and sl.proposal is not None:
        return f"evicted by {sl.evicted_by}; {','.join(sl.proposal.cubes)} reserved: `tpufleet reschedule {sl.name}`"
    if sl.evicted_by:
        return f"evicted by {sl.evicted_by}; no replacement reserved: `tpufleet explain {sl.name}`"
    return ""


def _held_out(state: FleetState, fault_ids: Iterable[str]) -> tuple[str, str]:
    """(state, mark) of a component held out by these faults: drained when every one is planned maintenance."""
    planned = all((f := state.fault(fid)) is not None and f.planned for fid in fault_ids)
    return ("drained", DRAINED) if planned else ("out", OUT)


def _cube_cell(
    state: FleetState,
    health: Health,
    cube: str,
    position: int,
    users: list[str],
    reserved: dict[str, list[str]],
    marks: dict[str, str],
) -> CubeCell:
    xyz = (position % CUBE_EDGE, position // CUBE_EDGE % CUBE_EDGE, position // CUBE_EDGE**2)
    faults = tuple(health.cubes_out.get(cube, ()))
    if faults:
        kind, mark = _held_out(state, faults)
    elif users:
        kind, mark = "slice", (marks[users[0]] if len(users) == 1 else SHARED)
    elif cube in reserved:
        kind, mark, users = "reserved", RESERVED, reserved[cube]
    else:
        kind, mark = "free", FREE_DEGRADED if cube in health.degraded else FREE
    return CubeCell(cube, position, xyz, kind, mark, tuple(users), faults, cube in health.degraded)


def _ocs_cells(state: FleetState, health: Health, pod: str) -> list[OcsCell]:
    cells = []
    for ocs in pod_ocs(pod):
        faults = health.ocs_down.get(ocs, [])
        in_use = len(state.ocs.get(ocs, ()))
        if faults:
            kind, mark = _held_out(state, faults)
            kind = "failed" if kind == "out" else kind
        else:
            kind, mark = "ok", OCS_IN_USE if in_use else OCS_IDLE
        cells.append(OcsCell(str(ocs), ocs.dim, ocs.index, kind, mark, in_use))
    return cells


def fleet_map(state: FleetState, pod: str | None = None) -> FleetMap:
    """The map of every pod (or of one: BadInput naming the pods there are)."""
    if pod is not None:
        pod = known_pod(state.fleet, pod)  # (`show map --pod`)
    pods = [p for p in state.fleet.pods if pod is None or p.name == pod]
    health, users = state.health(), cube_users(state)
    reserved = reserved_cubes(state)
    marks = slice_marks(state.slices)
    shown = {p.name for p in pods}
    maps = []
    for p in pods:
        cubes = [_cube_cell(state, health, c, i, users.get(c, []), reserved, marks) for i, c in enumerate(p.cubes)]
        counts = {k: sum(c.state == k for c in cubes) for k in ("free", "slice", "reserved", "out", "drained")}
        maps.append(PodMap(p.name, cubes, _ocs_cells(state, health, p.name), counts, p.generation_name))
    legend = [
        LegendEntry(
            marks[name],
            name,
            sl.shape.text + (" twisted" if sl.shape.twisted else ""),
            sl.state.value,
            "; ".join(filter(None, (job_tag(state, sl), _slice_detail(state, sl)))),
            sl.job,
        )
        for name, sl in sorted(state.slices.items(), key=lambda kv: natural_key(kv[0]))
        if sl.pod in shown
    ]
    return FleetMap(maps, legend)


def ocs_rows_by_dim(pod_map: PodMap) -> dict[str, list[OcsCell]]:
    """The OCS strip: one row of switches per dimension, in index order."""
    return {d: sorted((o for o in pod_map.ocs if o.dim == d), key=lambda o: o.index) for d in DIMS}
