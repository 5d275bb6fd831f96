"""The fleet inventory ("datacenter model", "Resiliency at Scale" section 3.2): pods, cubes, machines, chips, links, OCS.

Everything here is derived from the list of pods and their cube ids, so the state file stores only that.

>>> fleet = default_fleet()
>>> len(fleet.pods[0].cubes), len(all_ocs(fleet)), len(optical_links(fleet))
(64, 48, 6144)
>>> ocs_port_of(fleet, LinkId("c05", "x", 3, "out"))
(OcsId(pod='pod0', dim='x', index=3), 'north', 5)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from tpufleet.constants import (
    CHIPS_PER_CUBE,
    CUBE_EDGE,
    CUBES_PER_POD,
    DIMS,
    DIRECTIONS,
    FACE_LINKS,
    ICI_LINKS_PER_CUBE,
    MACHINES_PER_CUBE,
    MAX_PODS,
    OCS_PER_POD,
    OCS_PORTS,
    OPTICAL_LINKS_PER_CUBE,
    POLARITIES,
    PORTS_PER_SIDE,
)
from tpufleet.errors import BadInput
from tpufleet.ids import ChipId, HostId, IciId, LinkId, OcsId, TargetId, cube_name


@dataclass(frozen=True)
class Pod:
    name: str
    cubes: tuple[str, ...]


@dataclass(frozen=True)
class Fleet:
    pods: tuple[Pod, ...]

    @cached_property
    def cube_pod(self) -> dict[str, str]:
        return {c: p.name for p in self.pods for c in p.cubes}

    @cached_property
    def cube_position(self) -> dict[str, int]:
        """A cube's position in its pod, which is also its port number on every OCS side."""
        return {c: i for p in self.pods for i, c in enumerate(p.cubes)}

    @cached_property
    def pod_by_name(self) -> dict[str, Pod]:
        return {p.name: p for p in self.pods}

    @property
    def cubes(self) -> list[str]:
        return [c for p in self.pods for c in p.cubes]

    def pod_of(self, cube: str) -> Pod:
        return self.pod_by_name[self.cube_pod[cube]]


def default_fleet(pods: int = 1, cubes_per_pod: int = CUBES_PER_POD) -> Fleet:
    if not 1 <= pods <= MAX_PODS:
        raise BadInput(f"bad option --pods: {pods} is outside 1-{MAX_PODS}")
    if not 1 <= cubes_per_pod <= PORTS_PER_SIDE:
        raise BadInput(
            f"bad option --cubes-per-pod: {cubes_per_pod} is outside 1-{PORTS_PER_SIDE} (OCS has {OCS_PORTS} ports)"
        )
    return Fleet(
        tuple(
            Pod(f"pod{p}", tuple(cube_name(p * cubes_per_pod + i) for i in range(cubes_per_pod))) for p in range(pods)
        )
    )


def cube_chips(cube: str) -> list[ChipId]:
    r = range(CUBE_EDGE)
    return [ChipId(cube, x, y, z) for x in r for y in r for z in r]


def cube_hosts(cube: str) -> list[HostId]:
    return [HostId(cube, m) for m in range(MACHINES_PER_CUBE)]


def cube_ici_links(cube: str) -> list[IciId]:
    """Directed electrical links of the cube's 4x4x4 mesh (no wraparound inside a cube): ICI_LINKS_PER_CUBE."""
    out = []
    for chip in cube_chips(cube):
        xyz = (chip.x, chip.y, chip.z)
        for direction in DIRECTIONS:
            axis, step = "xyz".index(direction[1]), 1 if direction[0] == "+" else -1
            if 0 <= xyz[axis] + step < CUBE_EDGE:
                out.append(IciId(cube, *xyz, direction))
    return out


def cube_optical_links(cube: str) -> list[LinkId]:
    return [LinkId(cube, d, i, pol) for d in DIMS for i in range(FACE_LINKS) for pol in POLARITIES]


def optical_links(fleet: Fleet) -> list[LinkId]:
    return [link for c in fleet.cubes for link in cube_optical_links(c)]


def pod_ocs(pod: str) -> list[OcsId]:
    return [OcsId(pod, d, i) for d in DIMS for i in range(FACE_LINKS)]


def all_ocs(fleet: Fleet) -> list[OcsId]:
    return [o for p in fleet.pods for o in pod_ocs(p.name)]


def ocs_port_of(fleet: Fleet, link: LinkId) -> tuple[OcsId, str, int]:
    """Cabling: link {c, d, i, out} is on the north side of OCS {d, i}, link {c, d, i, in} on its south side,
    both at the port numbered by the cube's position in its pod."""
    pod = fleet.cube_pod[link.cube]
    side = "north" if link.polarity == "out" else "south"
    return OcsId(pod, link.dim, link.index), side, fleet.cube_position[link.cube]


def link_at_port(fleet: Fleet, ocs: OcsId, side: str, port: int) -> LinkId | None:
    """The optical link cabled to a port, or None for one of the spare ports."""
    cubes = fleet.pod_by_name[ocs.pod].cubes
    if not 0 <= port < len(cubes):
        return None
    return LinkId(cubes[port], ocs.dim, ocs.index, "out" if side == "north" else "in")


def check_known(fleet: Fleet, target: TargetId) -> TargetId:
    """Reject a well-formed id that names nothing in this fleet."""
    if isinstance(target, OcsId):
        if target.pod not in fleet.pod_by_name:
            raise BadInput(f"unknown pod {target.pod!r} in {target} (fleet has {', '.join(fleet.pod_by_name)})")
    elif target.cube not in fleet.cube_pod:
        raise BadInput(f"unknown cube {target.cube!r} in {target} (fleet has {len(fleet.cube_pod)} cubes)")
    return target


def inventory_counts(fleet: Fleet) -> dict[str, int]:
    cubes = len(fleet.cubes)
    return {
        "pods": len(fleet.pods),
        "cubes": cubes,
        "machines": cubes * MACHINES_PER_CUBE,
        "chips": cubes * CHIPS_PER_CUBE,
        "ici_links": cubes * ICI_LINKS_PER_CUBE,
        "optical_links": cubes * OPTICAL_LINKS_PER_CUBE,
        "ocs": len(fleet.pods) * OCS_PER_POD,
    }


def component_counts(fleet: Fleet) -> dict[str, int]:
    """How many of each component a daily fault rate applies to: machines, optical links (the cables from a
    cube face to its OCS port, 96 per cube, 6144 per pod) and OCS."""
    cubes = len(fleet.cubes)
    return {
        "host": cubes * MACHINES_PER_CUBE,
        "link": cubes * OPTICAL_LINKS_PER_CUBE,
        "ocs": len(fleet.pods) * OCS_PER_POD,
    }
