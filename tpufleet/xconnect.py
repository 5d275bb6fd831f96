"""Planning optical cross-connects for a slice (seed 002 §3.4.1), pure.

1. cube coordinates in the (a, b, c) cube grid (given by the allocation);
2. each cube's neighbour along +x, +y, +z, with wraparound and, for twisted tori, the twist;
3. for every neighbour pair A -> B along d and face index i: {A, d, i, out} (north port of OCS {d, i}) to
   {B, d, i, in} (south port);
4. the diff against the OCS's current cross-connects: add, remove (old pairs on a needed port), keep.

>>> from tpufleet.shapes import parse_shape
>>> from tpufleet.model import default_fleet
>>> wanted = wanted_pairs(parse_shape("8x8x8"), default_fleet(), {f"c{i:02d}": [i // 4, i // 2 % 2, i % 2] for i in range(8)})
>>> len(wanted), sum(len(p) for p in wanted.values())
(48, 384)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpufleet.health import Health
from tpufleet.ids import DIMS, FACE_LINKS, LinkId
from tpufleet.model import Fleet
from tpufleet.shapes import Shape

Pair = tuple[int, int]


def cube_neighbors(shape: Shape, coords: dict[str, list[int]]) -> dict[str, tuple[str, str, str]]:
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
                pos = [(p + t) % g for p, t, g in zip(pos, twist[d], grid)]
            nbrs.append(at[tuple(pos)])
        out[cube] = tuple(nbrs)
    return out


def wanted_pairs(shape: Shape, fleet: Fleet, coords: dict[str, list[int]]) -> dict[str, list[Pair]]:
    """OCS key ("pod0/x/5") -> sorted [(north port, south port)] the slice needs."""
    if shape.is_subcube:
        return {}
    pos = fleet.cube_position
    pod = fleet.cube_pod[next(iter(coords))]
    wanted: dict[str, list[Pair]] = {}
    for cube, nbrs in cube_neighbors(shape, coords).items():
        for d, nb in enumerate(nbrs):
            for i in range(FACE_LINKS):
                wanted.setdefault(f"{pod}/{DIMS[d]}/{i}", []).append((pos[cube], pos[nb]))
    return {k: sorted(v) for k, v in wanted.items()}


@dataclass
class OcsChange:
    id: str
    add: list[Pair] = field(default_factory=list)
    remove: list[Pair] = field(default_factory=list)
    keep: int = 0


@dataclass
class Plan:
    changes: list[OcsChange]
    blocked: list[str]
    deferred: list[str] = field(default_factory=list)  # down OCS left for fault-tolerant routing to bridge

    @property
    def summary(self) -> dict[str, int]:
        return {
            "add": sum(len(c.add) for c in self.changes),
            "remove": sum(len(c.remove) for c in self.changes),
            "keep": sum(c.keep for c in self.changes),
        }

    @property
    def has_changes(self) -> bool:
        s = self.summary
        return bool(s["add"] or s["remove"])


def diff(wanted: dict[str, list[Pair]], current: dict[str, list[list[int]]]) -> list[OcsChange]:
    """Per OCS: pairs to add, old pairs that hold a needed port (remove), and how many already stand (keep)."""
    changes = []
    for key in sorted(wanted, key=_ocs_order):
        want = set(wanted[key])
        have = {tuple(p) for p in current.get(key, [])}
        north = {n for n, _ in want}
        south = {s for _, s in want}
        remove = sorted(p for p in have - want if p[0] in north or p[1] in south)
        changes.append(OcsChange(f"ocs:{key}", sorted(want - have), remove, len(want & have)))
    return changes


def _ocs_order(key: str):
    pod, dim, index = key.split("/")
    return (int(pod[3:]), dim, int(index))


def unusable(wanted: dict[str, list[Pair]], fleet: Fleet, health: Health) -> list[str]:
    """Every needed OCS or port that is failed or drained, named by its id."""
    problems = []
    for key in sorted(wanted, key=_ocs_order):
        if key in health.ocs_down:
            problems.append(f"ocs:{key} is down (faults {', '.join(health.ocs_down[key])})")
            continue
        pod, dim, index = key.split("/")
        cubes = fleet.pod_by_name[pod].cubes
        for north, south in wanted[key]:
            for link in (LinkId(cubes[north], dim, int(index), "out"), LinkId(cubes[south], dim, int(index), "in")):
                if not health.link_ok(link):
                    fid = health.links_down[str(link).split(":", 1)[1]]
                    problems.append(f"{link} is down (faults {', '.join(fid)}) on ocs:{key}")
    return problems


def plan(
    shape: Shape, fleet: Fleet, coords: dict[str, list[int]], ocs_state: dict, health: Health, tolerate_down_ocs: bool = False
) -> Plan:
    """The cross-connect plan; with `tolerate_down_ocs` (a slice with fault-tolerant routing) a failed OCS is
    not a refusal: no cube set avoids it, so its pairs are deferred until repair and routing bridges the gap."""
    wanted = wanted_pairs(shape, fleet, coords)
    deferred = []
    if tolerate_down_ocs:
        deferred = sorted((f"ocs:{k}" for k in wanted if k in health.ocs_down), key=lambda k: _ocs_order(k[4:]))
        wanted = {k: v for k, v in wanted.items() if k not in health.ocs_down}
    return Plan(diff(wanted, ocs_state), unusable(wanted, fleet, health), deferred)


def apply(ocs_state: dict, changes: list[OcsChange]) -> dict:
    """A new OCS state with the changes made (the input is not modified)."""
    new = {k: [list(p) for p in v] for k, v in ocs_state.items()}
    for change in changes:
        key = change.id.split(":", 1)[1]
        pairs = {tuple(p) for p in new.get(key, [])}
        pairs -= {tuple(p) for p in change.remove}
        pairs |= {tuple(p) for p in change.add}
        new[key] = [list(p) for p in sorted(pairs)]
        if not new[key]:
            del new[key]
    return new


def owner_of_ports(slices: dict, fleet: Fleet) -> dict[tuple[str, int], str]:
    """(pod, port number) -> slice name, for whole-cube slices."""
    out = {}
    for name, sl in slices.items():
        if not sl.get("machines"):
            for cube in sl["cubes"]:
                out[(sl["pod"], fleet.cube_position[cube])] = name
    return out

