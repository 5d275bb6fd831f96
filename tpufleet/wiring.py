"""The slice's chip graph as it is really wired and as healthy as it really is, and discovery (pure).

Like libtpunet at slice start: every chip's six ports are resolved through the cube's electrical mesh or,
at a cube face, through the OCS cross-connect in place; failed OCS, optical links, electrical links and chips
remove links (a link fault takes both directions of the cable). Discovery then checks the result against the
requested shape and lists every missing or miswired link.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tpufleet.constants import CUBE_EDGE, DIMS
from tpufleet.fleetstate import Slice
from tpufleet.health import Health
from tpufleet.ids import ChipId, IciId, LinkId, OcsId
from tpufleet.model import Fleet
from tpufleet.shapes import Shape, Vec
from tpufleet.topology import PORTS, coordinates, neighbors
from tpufleet.xconnect import OcsState

if TYPE_CHECKING:
    import numpy as np


@dataclass
class SliceGraph:
    shape: Shape
    nbr: np.ndarray  # [N, 6] actual neighbours, -1 where no usable link
    expected: np.ndarray  # [N, 6] neighbours of the requested shape
    chip_names: list[str]  # slice chip id -> "c07/1,2,3"
    missing: list[str] = field(default_factory=list)
    miswired: list[str] = field(default_factory=list)
    reachable: int = 0


def chip_layout(sl: Slice) -> tuple[list[str], list[Vec]]:
    """For slice chip ids 0..N-1: its cube and its coordinates inside the cube."""
    xyz = coordinates(sl.shape.dims).tolist()
    if sl.shape.is_subcube:
        ox, oy, oz = sl.origin or (0, 0, 0)
        return [sl.cubes[0]] * len(xyz), [(x + ox, y + oy, z + oz) for x, y, z in xyz]
    at = {v: c for c, v in sl.coords.items()}
    e = CUBE_EDGE
    cubes = [at[(x // e, y // e, z // e)] for x, y, z in xyz]
    return cubes, [(x % e, y % e, z % e) for x, y, z in xyz]


def _port_maps(
    pod: str, ocs_state: OcsState, health: Health
) -> tuple[dict[OcsId, dict[int, int]], dict[OcsId, dict[int, int]]]:
    """Per working OCS of the pod: north port -> south port, and back."""
    by_north, by_south = {}, {}
    for ocs, pairs in ocs_state.items():
        if ocs.pod == pod and ocs not in health.ocs_down:
            by_north[ocs] = dict(pairs)
            by_south[ocs] = {s: n for n, s in pairs}
    return by_north, by_south


def build(sl: Slice, fleet: Fleet, ocs_state: OcsState, health: Health) -> SliceGraph:
    """Every chip's six ports resolved, in numpy: the cube's mesh for inner ports, the OCS for face ports.

    The health checks that need component ids (failed chips, electrical and optical links) are applied per
    component of the few cubes they concern, so a healthy 4096-chip slice costs a few array passes.
    """
    import numpy as np

    shape = sl.shape
    expected = neighbors(shape)
    cubes, local = chip_layout(sl)
    names = [f"{c}/{x},{y},{z}" for c, (x, y, z) in zip(cubes, local, strict=False)]
    order = list(dict.fromkeys(cubes))  # the slice's cubes, each once
    slot = {c: k for k, c in enumerate(order)}
    cube_of = np.array([slot[c] for c in cubes], dtype=np.int64)
    loc = np.array(local, dtype=np.int64).reshape(-1, 3)
    at = np.full((len(order), CUBE_EDGE, CUBE_EDGE, CUBE_EDGE), -1, dtype=np.int64)
    at[cube_of, loc[:, 0], loc[:, 1], loc[:, 2]] = np.arange(len(cubes))
    actual = np.full_like(expected, -1)
    for port in range(6):
        d, sign = port // 2, (1 if port % 2 == 0 else -1)
        other = loc.copy()
        other[:, d] += sign
        inside = (other[:, d] >= 0) & (other[:, d] < CUBE_EDGE)
        o = other[inside]
        actual[inside, port] = at[cube_of[inside], o[:, 0], o[:, 1], o[:, 2]]
        if not shape.is_subcube:
            _optical_ports(sl, fleet, ocs_state, health, actual, port, ~inside, (cube_of, loc, at, order))
    if health.chips_down or health.ici_down:
        _electrical_health(health, cubes, local, actual, slot, at)
    graph = SliceGraph(shape, actual, expected, names)
    _discover(graph)
    return graph


def _optical_ports(
    sl: Slice,
    fleet: Fleet,
    ocs_state: OcsState,
    health: Health,
    actual: np.ndarray,
    port: int,
    face: np.ndarray,
    where: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]],
) -> None:
    """Face ports through the OCS cross-connect in place; -2 where it reaches a chip outside the slice."""
    import numpy as np

    cube_of, loc, at, order = where
    d, sign = port // 2, (1 if port % 2 == 0 else -1)
    pod_cubes = fleet.pod_by_name[sl.pod].cubes
    slot = {c: k for k, c in enumerate(order)}
    pos = np.array([fleet.cube_position[c] for c in order], dtype=np.int64)
    by_north, by_south = _port_maps(sl.pod, ocs_state, health)
    chips = np.flatnonzero(face)
    a, b = [k for k in range(3) if k != d]
    index = CUBE_EDGE * loc[chips, a] + loc[chips, b]  # face_index: the two other coordinates, in xyz order
    peer_slot = np.full(len(chips), -1, dtype=np.int64)
    peer_ok = np.zeros(len(chips), dtype=bool)
    for i in range(CUBE_EDGE * CUBE_EDGE):
        ocs = OcsId(sl.pod, DIMS[d], i)
        pairs = (by_north if sign > 0 else by_south).get(ocs, {})
        mine = np.flatnonzero(index == i)
        for k in mine.tolist():
            peer_port = pairs.get(int(pos[cube_of[chips[k]]]))
            if peer_port is None or peer_port >= len(pod_cubes):
                continue
            peer = pod_cubes[peer_port]
            if health.links_down and _optical_down(health, ocs, order[cube_of[chips[k]]], peer, sign):
                continue
            peer_ok[k] = True
            peer_slot[k] = slot.get(peer, -1)
    other = loc[chips].copy()
    other[:, d] = 0 if sign > 0 else CUBE_EDGE - 1
    found = at[np.maximum(peer_slot, 0), other[:, 0], other[:, 1], other[:, 2]]
    reached = np.where(peer_slot >= 0, found, -2)
    actual[chips[peer_ok], port] = reached[peer_ok]


def _electrical_health(
    health: Health, cubes: list[str], local: list[Vec], actual: np.ndarray, slot: dict[str, int], at: np.ndarray
) -> None:
    """Remove failed chips (every port) and electrical links that are down or lead to a failed chip."""
    touched = {c.cube for c in health.chips_down} | {i.cube for i in health.ici_down}
    for i, (cube, xyz) in enumerate(zip(cubes, local, strict=False)):
        if cube not in touched:
            continue
        if ChipId(cube, *xyz) in health.chips_down:
            actual[i, :] = -1
            continue
        for port in range(6):
            d, sign = port // 2, (1 if port % 2 == 0 else -1)
            other = list(xyz)
            other[d] += sign
            inner = 0 <= other[d] < CUBE_EDGE and actual[i, port] >= 0
            if inner and _ici_down(health, cube, xyz, (other[0], other[1], other[2]), PORTS[port]):
                actual[i, port] = -1


def _optical_down(health: Health, ocs: OcsId, cube: str, peer: str, sign: int) -> bool:
    """Either end of the fibre path is down: a link fault takes both directions of the cable."""
    mine, theirs = ("out", "in") if sign > 0 else ("in", "out")
    return not (
        health.link_ok(LinkId(cube, ocs.dim, ocs.index, mine))
        and health.link_ok(LinkId(peer, ocs.dim, ocs.index, theirs))
    )


def _ici_down(health: Health, cube: str, a: Vec, b: Vec, direction: str) -> bool:
    if not health.ici_down and not health.chips_down:
        return False
    back = ("-" if direction[0] == "+" else "+") + direction[1]
    return (
        IciId(cube, *a, direction) in health.ici_down
        or IciId(cube, *b, back) in health.ici_down
        or ChipId(cube, *b) in health.chips_down
    )


def _discover(graph: SliceGraph) -> None:
    """Compare the wiring with the requested shape; BFS from chip 0 to count what is reachable."""
    import numpy as np

    from tpufleet.topology import bfs_distances

    actual, expected, names = graph.nbr, graph.expected, graph.chip_names
    wrong = np.nonzero((actual != expected) & (actual != -1))
    for i, p in zip(*wrong, strict=False):
        got = "a chip outside the slice" if actual[i, p] == -2 else names[actual[i, p]]
        graph.miswired.append(f"{names[i]} {PORTS[p]} reaches {got}, expected {names[expected[i, p]]}")
    gone = np.nonzero((actual == -1) & (expected >= 0))
    for i, p in zip(*gone, strict=False):
        graph.missing.append(f"{names[i]} {PORTS[p]} -> {names[expected[i, p]]}")
    actual[actual == -2] = -1
    graph.reachable = int(np.count_nonzero(bfs_distances(actual, 0) >= 0))
