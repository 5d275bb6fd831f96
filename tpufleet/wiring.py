"""The slice's chip graph as it is really wired and as healthy as it really is, and discovery (pure).

Like libtpunet at slice start: every chip's six ports are resolved through the cube's electrical mesh or,
at a cube face, through the OCS cross-connect in place; failed OCS, optical links, electrical links and chips
remove links (a link fault takes both directions of the cable). Discovery then checks the result against the
requested shape and lists every missing or miswired link.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpufleet.health import Health
from tpufleet.ids import DIMS, face_index
from tpufleet.model import Fleet
from tpufleet.shapes import Shape, parse_shape
from tpufleet.topology import PORTS, coordinates, neighbors


@dataclass
class SliceGraph:
    shape: Shape
    nbr: "object"  # np.ndarray [N, 6] of actual neighbours, -1 where no usable link
    expected: "object"  # np.ndarray [N, 6] of the requested shape
    chip_names: list[str]  # slice chip id -> "c07/1,2,3"
    missing: list[str] = field(default_factory=list)
    miswired: list[str] = field(default_factory=list)
    reachable: int = 0

    @property
    def matches_shape(self) -> bool:
        return not self.miswired


def slice_shape(sl: dict) -> Shape:
    return parse_shape(sl["shape"], sl["twisted"])


def chip_layout(sl: dict) -> tuple[list[str], list[tuple[int, int, int]]]:
    """For slice chip ids 0..N-1: its cube and its coordinates inside the cube."""
    shape = slice_shape(sl)
    xyz = coordinates(shape.dims)
    if shape.is_subcube:
        ox, oy, oz = sl.get("origin") or (0, 0, 0)
        cube = sl["cubes"][0]
        return [cube] * len(xyz), [(int(x) + ox, int(y) + oy, int(z) + oz) for x, y, z in xyz]
    at = {tuple(v): c for c, v in sl["coords"].items()}
    cubes, local = [], []
    for x, y, z in xyz:
        cubes.append(at[(int(x) // 4, int(y) // 4, int(z) // 4)])
        local.append((int(x) % 4, int(y) % 4, int(z) % 4))
    return cubes, local


def build(sl: dict, fleet: Fleet, ocs_state: dict, health: Health) -> SliceGraph:
    import numpy as np

    shape = slice_shape(sl)
    expected = neighbors(shape)
    cubes, local = chip_layout(sl)
    index = {(c, xyz): i for i, (c, xyz) in enumerate(zip(cubes, local))}
    pod = sl["pod"]
    pod_cubes = fleet.pod_by_name[pod].cubes
    pos = fleet.cube_position
    by_north: dict[str, dict[int, int]] = {}
    by_south: dict[str, dict[int, int]] = {}
    for key, pairs in ocs_state.items():
        if key.startswith(pod + "/") and key not in health.ocs_down:
            by_north[key] = {n: s for n, s in pairs}
            by_south[key] = {s: n for n, s in pairs}
    actual = np.full_like(expected, -1)
    names = [f"{c}/{x},{y},{z}" for c, (x, y, z) in zip(cubes, local)]
    for i, (cube, xyz) in enumerate(zip(cubes, local)):
        if (cube, *xyz) in health.chips_down:
            continue
        for port in range(6):
            d, sign = port // 2, (1 if port % 2 == 0 else -1)
            other = list(xyz)
            other[d] += sign
            if 0 <= other[d] < 4:
                j = index.get((cube, tuple(other)), -1)  # outside a sub-cube box: no link
                if j >= 0 and not _ici_down(health, cube, xyz, tuple(other), PORTS[port]):
                    actual[i, port] = j
                continue
            if shape.is_subcube:
                continue
            dim = DIMS[d]
            fi = face_index(dim, *xyz)
            key = f"{pod}/{dim}/{fi}"
            if sign > 0:
                peer_port = by_north.get(key, {}).get(pos[cube])
                polarity, peer_polarity = "out", "in"
            else:
                peer_port = by_south.get(key, {}).get(pos[cube])
                polarity, peer_polarity = "in", "out"
            if peer_port is None or peer_port >= len(pod_cubes):
                continue
            peer = pod_cubes[peer_port]
            if f"{cube}/{dim}/{fi}/{polarity}" in health.links_down or f"{peer}/{dim}/{fi}/{peer_polarity}" in health.links_down:
                continue
            other[d] = 0 if sign > 0 else 3
            j = index.get((peer, tuple(other)), -2)
            actual[i, port] = j
    graph = SliceGraph(shape, actual, expected, names)
    _discover(graph)
    return graph


def _ici_down(health: Health, cube, a, b, direction) -> bool:
    if not health.ici_down:
        return False
    back = ("-" if direction[0] == "+" else "+") + direction[1]
    return (cube, *a, direction) in health.ici_down or (cube, *b, back) in health.ici_down or (cube, *b) in health.chips_down


def _discover(graph: SliceGraph) -> None:
    """Compare the wiring with the requested shape; BFS from chip 0 to count what is reachable."""
    import numpy as np

    from tpufleet.topology import bfs_distances

    actual, expected, names = graph.nbr, graph.expected, graph.chip_names
    wrong = np.nonzero((actual != expected) & (actual != -1))
    for i, p in zip(*wrong):
        got = "a chip outside the slice" if actual[i, p] == -2 else names[actual[i, p]]
        graph.miswired.append(f"{names[i]} {PORTS[p]} reaches {got}, expected {names[expected[i, p]]}")
    gone = np.nonzero((actual == -1) & (expected >= 0))
    for i, p in zip(*gone):
        graph.missing.append(f"{names[i]} {PORTS[p]} -> {names[expected[i, p]]}")
    actual[actual == -2] = -1
    graph.reachable = int(np.count_nonzero(bfs_distances(actual, 0) >= 0))
