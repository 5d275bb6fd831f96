"""What is unusable right now, derived from the open faults (pure).

A failed or drained machine, chip or electrical link takes its whole cube out of the pool ("Resiliency at
Scale" section 3.3); an optical link or OCS fault leaves the cubes in the pool and only makes ports unusable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tpufleet.ids import ChipId, IciId, LinkId, OcsId

if TYPE_CHECKING:
    from tpufleet.fleetstate import Fault


@dataclass
class Health:
    cubes_out: dict[str, list[str]] = field(default_factory=dict)  # cube -> ids of the faults holding it out
    ocs_down: dict[OcsId, list[str]] = field(default_factory=dict)
    links_down: dict[LinkId, list[str]] = field(default_factory=dict)
    chips_down: set[ChipId] = field(default_factory=set)
    ici_down: set[IciId] = field(default_factory=set)
    port_cubes: set[str] = field(default_factory=set)  # cubes with a failed or drained optical link
    # pod -> whole cubes the cluster's node pools hold that tpufleet has not placed (`import k8s`): which cubes is
    # unknown, so an allocation leaves that many free in the pod
    held: dict[str, int] = field(default_factory=dict)
    # cubes in the pool whose maintenance the reservation announced for a later window: an allocation takes them
    # last, so a new slice or a move does not land where a drain is due
    maintenance: frozenset[str] = frozenset()
    # cubes whose reservation sub-block or GKE partition is DEGRADED: they serve, but an allocation takes them after
    # the healthy ones (as `plan-spares` holds them back last), so a new slice or a move does not land on them
    degraded: frozenset[str] = frozenset()

    def last_resort(self, cube: str) -> tuple[bool, bool]:
        """The order an allocation takes free cubes in: healthy ones first, a DEGRADED one after them, one under
        announced maintenance last (its drain is due)."""
        return cube in self.maintenance, cube in self.degraded

    def room(self, pod: str, cubes: Iterable[str], used: Iterable[str]) -> int:
        """Free cubes of a pod (its `cubes`; `used` those slices hold) a torus can use (every port working), less
        the cubes its unplaced node pools hold: below 0 when the pools hold more than is free."""
        taken = set(used)
        return sum(1 for c in cubes if c not in taken and self.cube_wirable(c)) - self.held.get(pod, 0)

    def free_room(self, pod: str, cubes: Iterable[str], used: Iterable[str]) -> int:
        """`room`, at least 0: the free cubes an allocation may take."""
        return max(0, self.room(pod, cubes, used))

    def cube_ok(self, cube: str) -> bool:
        return cube not in self.cubes_out

    def cube_wirable(self, cube: str) -> bool:
        """In the pool and every optical port usable: a whole-cube slice cables all of a cube's faces, and
        `plan-xconnect` refuses a failed or drained port whatever the slice's routing."""
        return cube not in self.cubes_out and cube not in self.port_cubes

    def link_ok(self, link: LinkId) -> bool:
        return link not in self.links_down

    def add(self, fault: Fault) -> None:
        """Take one more open fault into account."""
        target, fid = fault.target, fault.id
        if isinstance(target, OcsId):
            self.ocs_down.setdefault(target, []).append(fid)
        elif isinstance(target, LinkId):
            self.links_down.setdefault(target, []).append(fid)
            self.port_cubes.add(target.cube)
        else:
            self.cubes_out.setdefault(target.cube, []).append(fid)
            if isinstance(target, ChipId):
                self.chips_down.add(target)
            elif isinstance(target, IciId):
                self.ici_down.add(target)


def health_of(faults: Iterable[Fault]) -> Health:
    h = Health()
    for fault in faults:
        if fault.is_open:
            h.add(fault)
    return h
