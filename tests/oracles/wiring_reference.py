"""The slice wiring as first written (chip by chip, port by port): the oracle of `tpufleet.wiring.build`."""

from __future__ import annotations

import numpy as np

from tpufleet.constants import CUBE_EDGE, DIMS
from tpufleet.fleetstate import Slice
from tpufleet.health import Health
from tpufleet.ids import ChipId, OcsId, face_index
from tpufleet.model import Fleet
from tpufleet.topology import PORTS, neighbors
from tpufleet.wiring import SliceGraph, _discover, _ici_down, _optical_down, _port_maps, chip_layout
from tpufleet.xconnect import OcsState


def build_chip_by_chip(sl: Slice, fleet: Fleet, ocs_state: OcsState, health: Health) -> SliceGraph:
    shape = sl.shape
    expected = neighbors(shape)
    cubes, local = chip_layout(sl)
    index = {(c, xyz): i for i, (c, xyz) in enumerate(zip(cubes, local, strict=False))}
    pod_cubes = fleet.pod_by_name[sl.pod].cubes
    pos = fleet.cube_position
    by_north, by_south = _port_maps(sl.pod, ocs_state, health)
    actual = np.full_like(expected, -1)
    names = [f"{c}/{x},{y},{z}" for c, (x, y, z) in zip(cubes, local, strict=False)]
    for i, (cube, xyz) in enumerate(zip(cubes, local, strict=False)):
        if health.chips_down and ChipId(cube, *xyz) in health.chips_down:
            continue
        for port in range(6):
            d, sign = port // 2, (1 if port % 2 == 0 else -1)
            other = list(xyz)
            other[d] += sign
            if 0 <= other[d] < CUBE_EDGE:
                j = index.get((cube, (other[0], other[1], other[2])), -1)  # outside a sub-cube box: no link
                if j >= 0 and not _ici_down(health, cube, xyz, (other[0], other[1], other[2]), PORTS[port]):
                    actual[i, port] = j
                continue
            if shape.is_subcube:
                continue
            ocs = OcsId(sl.pod, DIMS[d], face_index(DIMS[d], *xyz))
            peer_port = (by_north if sign > 0 else by_south).get(ocs, {}).get(pos[cube])
            if peer_port is None or peer_port >= len(pod_cubes):
                continue
            peer = pod_cubes[peer_port]
            if health.links_down and _optical_down(health, ocs, cube, peer, sign):
                continue
            other[d] = 0 if sign > 0 else CUBE_EDGE - 1
            actual[i, port] = index.get((peer, (other[0], other[1], other[2])), -2)
    graph = SliceGraph(shape, actual, expected, names)
    _discover(graph)
    return graph
