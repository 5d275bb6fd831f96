"""Slurm's `topology/torus3d` (Slurm 26.05; topology.yaml(5), "Torus3d definitions"): each pod a 3D torus of hosts.

Slurm allocates a job as a contiguous box of a torus's coordinates (wrapping around its ends) whose size matches
one of the torus's `placements`. tpufleet gives it:

1. the pod as a grid of cubes, the most cube-like one holding all its cubes (`pod_cube_grid`: 4x6x6 for a TPU7x
   superpod of 144, 4x5x7 for v5p's 140, 4x4x4 for a TPU v4 pod), each cube its 16 hosts as 2x2x4 coordinates
   (a host is 2x2x1 chips; host `m` of a cube sits at x = m % 2, y = m // 2 % 2, z = m // 4, `ids.machine_of`), so
   the torus has (2a, 2b, 4c) coordinates;
2. one region per cube whose 16 machines are all nodes (an imported fleet leaves the others unmapped), its nodes in
   x-major order, as the plugin maps them;
3. a placement per shape the pod's generation offers that fits the torus in some orientation: whole-cube shapes
   anchored on cube boundaries (`anchor_spacing` one cube), sub-cube shapes inside a cube.

Through its optical circuit switches any healthy free cubes of a pod make any slice; Slurm's boxes of this fixed
grid are a subset of those slices (each box is a valid slice), not all of them: what Slurm refuses, `allocate`
may still place.

>>> pod_cube_grid(144), pod_cube_grid(140), pod_cube_grid(64), pod_cube_grid(7)
((4, 6, 6), (4, 5, 7), (4, 4, 4), (1, 1, 7))
>>> host_dims((16, 24, 24)), host_dims((2, 4, 4)), host_dims((4, 2, 2)), host_dims((1, 2, 2))
((8, 12, 24), (1, 2, 4), (2, 1, 2), None)
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

from tpufleet.capacity import pod_shapes
from tpufleet.constants import CUBE_EDGE, MACHINES_PER_CUBE
from tpufleet.errors import Refused
from tpufleet.fleetstate import FleetState
from tpufleet.ids import HostId
from tpufleet.integrations.exports import Names
from tpufleet.integrations.slurm import ordered_hostlist
from tpufleet.model import Pod
from tpufleet.shapes import Vec

__all__ = ["HOST_GRID", "host_dims", "pod_cube_grid", "torus3d_yaml"]

Doc = dict[str, Any]
HOST_GRID: Vec = (2, 2, CUBE_EDGE)  # a cube's hosts: 2x2x1 chips each, so 2 x 2 x 4 of them


def pod_cube_grid(cubes: int) -> Vec:
    """(a, b, c), a <= b <= c, a * b * c == cubes, with the smallest largest side (then the smallest middle)."""
    best = (1, 1, cubes)
    for a in range(1, cubes + 1):
        for b in range(a, cubes // a + 1):
            c, rest = divmod(cubes, a * b)
            if not rest and c >= b and (c, b) < (best[2], best[1]):
                best = (a, b, c)
    return best


def host_dims(chips: Vec) -> Vec | None:
    """A box of chips as a box of hosts (2x2x1 chips), or None when a host would be cut (an odd x or y side)."""
    x, y, z = chips
    return None if x % 2 or y % 2 else (x // 2, y // 2, z)


def _xyz(v: Vec) -> dict[str, int]:
    return {"x": v[0], "y": v[1], "z": v[2]}


def _placement(chips: Vec, torus: Vec) -> Doc | None:
    """The first orientation of the shape whose host box fits the torus (whole cubes on cube boundaries)."""
    whole = all(side % CUBE_EDGE == 0 for side in chips)
    for a, b, c in dict.fromkeys(permutations(chips)):
        hosts = host_dims((a, b, c))
        if hosts is None or any(h > t for h, t in zip(hosts, torus, strict=True)):
            continue
        if whole and any(t % g for t, g in zip(torus, HOST_GRID, strict=True)):
            continue
        doc: Doc = {"dims": _xyz(hosts)}
        if whole:  # a slice is whole cubes: boxes start on a cube's corner
            doc["anchor_spacing"] = _xyz(HOST_GRID)
        return doc
    return None


def _regions(pod: Pod, grid: Vec, names: Names) -> list[Doc]:
    """A region per cube whose 16 machines are nodes, at its place in the cube grid (x fastest)."""
    a, b, _ = grid
    regions = []
    for i, cube in enumerate(pod.cubes):
        hosts = names.machines(cube)
        if len(hosts) != MACHINES_PER_CUBE:
            continue  # Slurm wants every coordinate of a region: a cube with a node missing is left unmapped
        place = (i % a, i // a % b, i // (a * b))
        anchor = tuple(p * g for p, g in zip(place, HOST_GRID, strict=True))
        ordered = sorted(hosts, key=lambda h: h.machine)  # machine_of is x-major within the cube's 2x2x4
        regions.append(
            {
                "anchor": _xyz(anchor),  # type: ignore[arg-type]
                "dims": _xyz(HOST_GRID),
                "nodes": ordered_hostlist(names.node(HostId(cube, h.machine)) for h in ordered),
            }
        )
    return regions


def torus3d_yaml(state: FleetState) -> list[Doc]:
    """topology.yaml with one `torus3d` topology, the cluster's default: a torus per pod that has nodes."""
    names, toruses = Names(state), []
    for pod in state.fleet.pods:
        grid = pod_cube_grid(len(pod.cubes))
        dims: Vec = (grid[0] * HOST_GRID[0], grid[1] * HOST_GRID[1], grid[2] * HOST_GRID[2])
        regions = _regions(pod, grid, names)
        if not regions:
            continue
        placements = [p for s in pod_shapes(pod) if not s.twisted and (p := _placement(s.dims, dims)) is not None]
        unique = list({repr(p): p for p in placements}.values())
        toruses.append({"name": names.block(pod.name), "dims": _xyz(dims), "regions": regions, "placements": unique})
    if not toruses:  # an empty topology would replace the file in use, as `slurm_blocks` refuses for blocks
        raise Refused(
            "no cube has all its 16 machines as nodes of the imported cluster: Slurm's topology/torus3d needs a "
            "region of at least one whole cube; nothing written"
        )
    return [{"topology": "tpufleet-torus3d", "cluster_default": True, "torus3d": {"toruses": toruses}}]
