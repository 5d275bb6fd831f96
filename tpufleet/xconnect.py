"""Planning optical cross-connects for a slice ("Resiliency at Scale" section 3.4.1), pure.

1. cube coordinates in the (a, b, c) cube grid (given by the allocation);
2. each cube's neighbour along +x, +y, +z, with wraparound and, for twisted tori, the twist;
3. for every neighbour pair A -> B along d and face index i: {A, d, i, out} (north port of OCS {d, i}) to
   {B, d, i, in} (south port);
4. the diff against the OCS's current cross-connects: add, remove (old pairs on a needed port), keep.

An OCS has as many ports a side as its pod's generation gives it (68 of a 136-port Palomar for the built-in TPU
v4 model, 144 of 288 for TPU7x): a cube's position must be below that, else its pairs are blocked. There are
16 OCS per dimension whatever the generation (a cube face has 16 optical links).

>>> from tpufleet.shapes import parse_shape
>>> from tpufleet.model import default_fleet
>>> coords = {f"c{i:02d}": (i // 4, i // 2 % 2, i % 2) for i in range(8)}
>>> wanted = wanted_pairs(parse_shape("8x8x8"), default_fleet(), coords)
>>> len(wanted), sum(len(p) for p in wanted.values())
(48, 384)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tpufleet.constants import DIMS, FACE_LINKS
from tpufleet.health import Health
from tpufleet.ids import LinkId, OcsId
from tpufleet.model import Fleet
from tpufleet.shapes import Shape, Vec

Pair = tuple[int, int]  # (north port, south port)
OcsState = Mapping[OcsId, frozenset[Pair]]


def cube_neighbors(shape: Shape, coords: Mapping[str, Vec]) -> dict[str, tuple[str, str, str]]:
    """cube -> its neighbour cube along +x, +y, +z (wraparound and cube-level twist included)."""
    grid = shape.cube_grid
    at = {tuple(v): cube for cube, v in coords.items()}
    twist = shape.cube_twist()
    out = {}
    for cube, (cx, cy, cz) in coords.items():
        nbrs = []
        for d in range(3):
            pos = [cx, cy, cz]
            pos[d] += 1
            if pos[d] == grid[d]:
                pos[d] = 0
                pos = [(p + t) % g for p, t, g in zip(pos, twist[d], grid, strict=False)]
            nbrs.append(at[tuple(pos)])
        out[cube] = (nbrs[0], nbrs[1], nbrs[2])
    return out


def wanted_pairs(shape: Shape, fleet: Fleet, coords: Mapping[str, Vec]) -> dict[OcsId, list[Pair]]:
    """OCS -> sorted [(north port, south port)] the slice needs."""
    if shape.is_subcube:
        return {}
    pos = fleet.cube_position
    pod = fleet.cube_pod[next(iter(coords))]
    # Every OCS of a dimension gets the same pairs: one per cube, joining it to its neighbour along that dimension.
    per_dim: list[list[Pair]] = [[], [], []]
    for cube, nbrs in cube_neighbors(shape, coords).items():
        for d, nb in enumerate(nbrs):
            per_dim[d].append((pos[cube], pos[nb]))
    return {OcsId(pod, dim, i): sorted(per_dim[d]) for d, dim in enumerate(DIMS) for i in range(FACE_LINKS)}


def ocs_order(ocs: OcsId) -> tuple[int, str, int]:
    """Pods in numeric order (pod2 before pod10), then dimension, then index."""
    return (int(ocs.pod[3:]), ocs.dim, ocs.index)


@dataclass
class OcsChange:
    ocs: OcsId
    add: list[Pair] = field(default_factory=list)
    remove: list[Pair] = field(default_factory=list)
    keep: int = 0


@dataclass
class Plan:
    changes: list[OcsChange]
    blocked: list[str]
    deferred: list[OcsId] = field(default_factory=list)  # down OCS left for fault-tolerant routing to bridge

    @property
    def summary(self) -> dict[str, int]:
        return {
            "add": sum(len(c.add) for c in self.changes),
            "remove": sum(len(c.remove) for c in self.changes),
            "keep": sum(c.keep for c in self.changes),
        }

    @property
    def has_changes(self) -> bool:
        return any(c.add or c.remove for c in self.changes)


def diff(wanted: Mapping[OcsId, list[Pair]], current: OcsState) -> list[OcsChange]:
    """Per OCS: pairs to add, old pairs that hold a needed port (remove), and how many already stand (keep)."""
    changes = []
    for ocs in sorted(wanted, key=ocs_order):
        want = set(wanted[ocs])
        have = current.get(ocs, frozenset())
        north = {n for n, _ in want}
        south = {s for _, s in want}
        remove = sorted(p for p in have - want if p[0] in north or p[1] in south)
        changes.append(OcsChange(ocs, sorted(want - have), remove, len(want & have)))
    return changes


def uncabled(wanted: Mapping[OcsId, list[Pair]], fleet: Fleet) -> list[str]:
    """Every needed port past the OCS's ports on a side (a pod holding more cubes than its generation's OCS serve).

    >>> from tpufleet.model import default_fleet
    >>> uncabled({OcsId("pod0", "x", 0): [(0, 1), (70, 2)]}, default_fleet())
    ['port 70 of ocs:pod0/x/0 is past its 68 ports a side']
    """
    problems = []
    for ocs in sorted(wanted, key=ocs_order):
        limit = fleet.pod_by_name[ocs.pod].ports_per_side
        past = sorted({p for pair in wanted[ocs] for p in pair if p >= limit})
        problems += [f"port {p} of {ocs} is past its {limit} ports a side" for p in past]
    return problems


def unusable(wanted: Mapping[OcsId, list[Pair]], fleet: Fleet, health: Health) -> list[str]:
    """Every needed OCS or port that is failed, drained or not cabled, named by its id."""
    problems = uncabled(wanted, fleet)
    for ocs in sorted(wanted, key=ocs_order):
        if ocs in health.ocs_down:
            problems.append(f"{ocs} is down (faults {', '.join(health.ocs_down[ocs])})")
            continue
        if not health.links_down:
            continue
        cubes = fleet.pod_by_name[ocs.pod].cubes
        for north, south in wanted[ocs]:
            for link in (
                LinkId(cubes[north], ocs.dim, ocs.index, "out"),
                LinkId(cubes[south], ocs.dim, ocs.index, "in"),
            ):
                if not health.link_ok(link):
                    problems.append(f"{link} is down (faults {', '.join(health.links_down[link])}) on {ocs}")
    return problems


def plan(
    shape: Shape,
    fleet: Fleet,
    coords: Mapping[str, Vec],
    ocs_state: OcsState,
    health: Health,
    tolerate_down_ocs: bool = False,
) -> Plan:
    """The cross-connect plan; with `tolerate_down_ocs` (a slice with fault-tolerant routing) a failed OCS is
    not a refusal: no cube set avoids it, so its pairs are deferred until repair and routing bridges the gap."""
    wanted = wanted_pairs(shape, fleet, coords)
    deferred: list[OcsId] = []
    checked = wanted
    if tolerate_down_ocs:
        # a down OCS already holding every pair the slice needs on it needs nothing: kept, not deferred
        standing = {k for k in wanted if k in health.ocs_down and set(wanted[k]) <= ocs_state.get(k, frozenset())}
        deferred = [k for k in wanted if k in health.ocs_down and k not in standing]
        wanted = {k: v for k, v in wanted.items() if k not in deferred}
        checked = {k: v for k, v in wanted.items() if k not in standing}
    return Plan(diff(wanted, ocs_state), unusable(checked, fleet, health), deferred)


def apply(ocs_state: OcsState, changes: list[OcsChange]) -> dict[OcsId, frozenset[Pair]]:
    """A new OCS state with the changes made (the input is not modified); OCS left empty are dropped."""
    new = dict(ocs_state)
    for change in changes:
        pairs = (new.get(change.ocs, frozenset()) - set(change.remove)) | set(change.add)
        if pairs:
            new[change.ocs] = frozenset(pairs)
        else:
            new.pop(change.ocs, None)
    return new


def missing_pairs(shape: Shape, fleet: Fleet, coords: Mapping[str, Vec], ocs_state: OcsState) -> int:
    """Cross-connects a wired slice needs that are not in place (e.g. deferred while an OCS was down)."""
    wanted = wanted_pairs(shape, fleet, coords)
    return sum(len(set(pairs) - ocs_state.get(k, frozenset())) for k, pairs in wanted.items())
