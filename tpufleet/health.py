"""What is unusable right now, derived from the open faults (pure).

A failed or drained machine, chip or electrical link takes its whole cube out of the pool (seed 002 §3.3);
an optical link or OCS fault leaves the cubes in the pool and only makes ports unusable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpufleet.ids import ChipId, IciId, LinkId, OcsId, parse_target


@dataclass
class Health:
    cubes_out: dict[str, list[str]] = field(default_factory=dict)  # cube -> fault ids
    ocs_down: dict[str, list[str]] = field(default_factory=dict)  # "pod0/x/5" -> fault ids
    links_down: dict[str, list[str]] = field(default_factory=dict)  # "c07/x/5/out" -> fault ids
    chips_down: set[tuple[str, int, int, int]] = field(default_factory=set)
    ici_down: set[tuple[str, int, int, int, str]] = field(default_factory=set)
    open_faults: list[dict] = field(default_factory=list)

    def cube_ok(self, cube: str) -> bool:
        return cube not in self.cubes_out

    def link_ok(self, link: LinkId) -> bool:
        return f"{link.cube}/{link.dim}/{link.index}/{link.polarity}" not in self.links_down


def health_of(doc: dict) -> Health:
    h = Health()
    for fault in doc["faults"]:
        if fault["cleared"]:
            continue
        h.open_faults.append(fault)
        target, fid = parse_target(fault["target"]), fault["id"]
        if isinstance(target, OcsId):
            h.ocs_down.setdefault(target.key, []).append(fid)
        elif isinstance(target, LinkId):
            key = f"{target.cube}/{target.dim}/{target.index}/{target.polarity}"
            h.links_down.setdefault(key, []).append(fid)
        else:
            h.cubes_out.setdefault(target.cube, []).append(fid)
            if isinstance(target, ChipId):
                h.chips_down.add((target.cube, target.x, target.y, target.z))
            elif isinstance(target, IciId):
                h.ici_down.add((target.cube, target.x, target.y, target.z, target.direction))
    return h
