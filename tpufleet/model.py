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
from tpufleet.errors import BadInput, shown
from tpufleet.generations import Generation
from tpufleet.ids import ChipId, HostId, IciId, LinkId, OcsId, TargetId, cube_name, meant, natural_key
from tpufleet.text import closest


@dataclass(frozen=True)
class Pod:
    """A pod: its cubes in port order and its accelerator generation (None: the built-in TPU v4 model of
    `tpufleet.constants`, a 136-port OCS and the Cloud TPU shape rule of `tpufleet.shapes`)."""

    name: str
    cubes: tuple[str, ...]
    generation: Generation | None = None

    @property
    def ports_per_side(self) -> int:
        """Cubes one OCS of this pod can serve (one north and one south port each): 68 for the built-in v4."""
        return PORTS_PER_SIDE if self.generation is None else self.generation.ports_per_side

    @property
    def ocs_ports(self) -> int:
        return OCS_PORTS if self.generation is None else self.generation.ocs_ports

    @property
    def generation_name(self) -> str | None:
        """The generation's name, None for the built-in TPU v4 model (what outputs leave out)."""
        return None if self.generation is None else self.generation.name


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


def default_fleet(pods: int = 1, cubes_per_pod: int | None = None, generation: Generation | None = None) -> Fleet:
    """`pods` pods of `cubes_per_pod` cubes (default: the generation's pod, 64 for the built-in v4 model).

    >>> default_fleet(2, 4).pods[1].cubes
    ('c04', 'c05', 'c06', 'c07')
    """
    if not 1 <= pods <= MAX_PODS:
        raise BadInput(f"bad option --pods: {shown(str(pods))} is outside 1-{MAX_PODS}")
    return fleet_of([(cubes_per_pod, generation)] * pods)


def fleet_of(pods: list[tuple[int | None, Generation | None]]) -> Fleet:
    """A fleet of pods pod0, pod1, ... given (cubes, generation) each (cubes None: the generation's pod), cube ids
    numbered on across pods; BadInput if a pod has more cubes than its OCS serve (a mixed fleet is allowed).

    >>> fleet = fleet_of([(None, None), (2, None)])
    >>> [len(p.cubes) for p in fleet.pods], fleet.pods[1].cubes
    ([64, 2], ('c64', 'c65'))
    """
    out, first = [], 0
    for p, (cubes, generation) in enumerate(pods):
        count = _pod_cubes(cubes, generation)
        out.append(Pod(f"pod{p}", tuple(cube_name(first + i) for i in range(count)), generation))
        first += count
    return Fleet(tuple(out))


def _pod_cubes(cubes: int | None, generation: Generation | None) -> int:
    """The cubes of one pod: given, or the generation's pod size; at most the ports on one side of its OCS."""
    if generation is None:
        count, limit = CUBES_PER_POD if cubes is None else cubes, PORTS_PER_SIDE
        what = f"OCS has {OCS_PORTS} ports"
    else:
        count, limit = generation.pod_cubes if cubes is None else cubes, generation.ports_per_side
        what = f"a {generation.name} OCS has {generation.ocs_ports} ports"
    if not 1 <= count <= limit:
        raise BadInput(f"bad option --cubes-per-pod: {shown(str(count))} is outside 1-{limit} ({what})")
    return count


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
            axis, step = DIMS.index(direction[1]), 1 if direction[0] == "+" else -1
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
        raise BadInput(f"unknown cube {target.cube!r} in {target} ({cubes_held(fleet)})")
    return target


def cubes_held(fleet: Fleet) -> str:
    """`fleet has 64 cubes: c00-c63`, for the refusal of a cube it lacks (the names it has, first to last)."""
    names = sorted(fleet.cube_pod, key=natural_key)
    span = f": {names[0]}-{names[-1]}" if names else ""
    return f"fleet has {len(names)} cubes{span}"


def known_pod(fleet: Fleet, name: str, option: str = "--pod") -> str:
    """The pod an option names, surrounding spaces aside (as `allocate --pod a, b` reads its list); BadInput naming
    the option, the value and the fleet's pods otherwise: one reading and one message for every `--pod` (each once
    said it its own way, and only `allocate` read `' pod0'`)."""
    pod = name.strip()
    if pod not in fleet.pod_by_name:
        typed = f"pod{pod}" if pod.isascii() and pod.isdigit() else pod.lower()  # a pod's number alone, POD0
        well_formed = typed.startswith("pod") and typed[3:].isascii() and typed[3:].isdigit()
        near = closest(typed, list(fleet.pod_by_name)) if not well_formed else typed if typed != pod else None
        near = near if near in fleet.pod_by_name else None
        said = meant(pod, fleet.pod_by_name) or (
            f" (did you mean {near}?)" if near else f" (pods: {', '.join(fleet.pod_by_name)})"
        )
        raise BadInput(f"bad option {option}: unknown pod {shown(name)}{said}")
    return pod


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
