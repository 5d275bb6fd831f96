"""The fleet as the simulation sees it (what is placed where, what is out, the OCS cross-connects) and placing a
shape on it through the same allocation and cross-connect planning code as the CLI."""

from __future__ import annotations

import itertools
import math
from collections import ChainMap, Counter
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from tpufleet import allocation, xconnect
from tpufleet.allocation import Allocation
from tpufleet.constants import DIMS, FACE_LINKS, STATIC_CUBE_GRID
from tpufleet.errors import Refused
from tpufleet.health import Health
from tpufleet.ids import OcsId
from tpufleet.model import Fleet
from tpufleet.shapes import Shape, Vec
from tpufleet.simulation.log import Stats

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

FAULT_ID = "sim"  # what the health view names as the fault holding a component out
_NONE: frozenset[xconnect.Pair] = frozenset()
_Out = TypeVar("_Out", str, OcsId)  # what a fault holds out: a cube or an OCS
SLICE_SEP = "\x1f"  # joins a multislice job's id and a slice number into a key (no job id holds it)


def slice_key(job_id: str, k: int) -> str:
    """The occupancy key of slice k >= 1 of a multislice job (slice 0 is held under the job's id)."""
    return f"{job_id}{SLICE_SEP}{k}"


class Placement:
    """Occupancy, health and cross-connects of the fleet, and where a shape fits.

    `static` places multi-cube shapes only on a contiguous box of the pod's fixed cube torus. `fit_shortcuts`
    skips a pod with too few free healthy cubes before asking the allocator (the same answer; off only for the
    benchmark baseline). `spare_cubes` healthy free cubes of each pod are kept back for jobs a fault displaced.

    The machines in use are kept up to date as jobs are placed and released (`used`), and the cross-connects
    per pod, so placing one job costs the same in a 16-pod fleet as in one pod (recounting every running job's
    machines, and copying every pod's OCS state, on each placement made a fleet's run grow with its square)."""

    def __init__(
        self, fleet: Fleet, static: bool, stats: Stats, fit_shortcuts: bool = True, spare_cubes: int = 0
    ) -> None:
        self.fleet = fleet
        self.static = static
        self.stats = stats
        self.fit_shortcuts = fit_shortcuts
        self.spare_cubes = spare_cubes
        self.placed: dict[str, Allocation] = {}  # job id -> where it is (or waits in place for a repair)
        self.used: dict[str, set[int]] = {}  # cube -> machines held by `placed`; a cube is free iff absent
        self.cube_faults: Counter[str] = Counter()  # open faults holding each cube out
        self.machines_out: dict[tuple[str, int], list[float]] = {}  # when each open fault or drain of a machine ends
        self.ocs_faults: Counter[OcsId] = Counter()  # open faults of each OCS
        self.link_faults: Counter[str] = Counter()  # open optical-link faults of each cube
        self.ocs_by_pod: dict[str, dict[OcsId, frozenset[xconnect.Pair]]] = {p.name: {} for p in fleet.pods}
        self._box_cache: dict[Vec, npt.NDArray[np.int64]] = {}
        self._health: Health | None = None  # the health view, made again only after a fault or repair
        self._ocs_of_pod: dict[str, list[tuple[OcsId, int]]] = {}  # pod -> its OCS in `ocs_order`, with dimension

    @property
    def ocs_state(self) -> dict[OcsId, frozenset[xconnect.Pair]]:
        """Every pod's cross-connects in one mapping."""
        return {ocs: pairs for state in self.ocs_by_pod.values() for ocs, pairs in state.items()}

    # ---- health ---------------------------------------------------------------------------------------------
    def _count_out(self, open_faults: Counter[_Out], key: _Out, by: int) -> None:
        """One open fault more (`by` 1) or fewer (-1) holding `key` out: the health view is made again."""
        open_faults[key] += by
        self._health = None

    def take_out(self, cube: str, machine: int, until: float) -> None:
        """A fault or drain of one machine of the cube, until `until` (its repair), holds the cube out."""
        self._count_out(self.cube_faults, cube, 1)
        self.machines_out.setdefault((cube, machine), []).append(until)

    def bring_back(self, cube: str, machine: int) -> None:
        """The machine's earliest-ending open fault or drain is over."""
        self._count_out(self.cube_faults, cube, -1)
        ends = self.machines_out[cube, machine]
        ends.remove(min(ends))
        if not ends:
            del self.machines_out[cube, machine]

    def back_by(self, held: list[Allocation]) -> float | None:
        """When the last machine of these slices that is out now comes back; None when none is out."""
        ends = [
            max(until)
            for (cube, machine), until in self.machines_out.items()
            if any(cube in a.cubes and (not a.machines or machine in a.machines) for a in held)
        ]
        return max(ends, default=None)

    def fail_link(self, cube: str) -> None:
        self.link_faults[cube] += 1

    def repair_link(self, cube: str) -> None:
        self.link_faults[cube] -= 1
        if not self.link_faults[cube]:
            del self.link_faults[cube]

    def fail_ocs(self, ocs: OcsId) -> None:
        self._count_out(self.ocs_faults, ocs, 1)

    def repair_ocs(self, ocs: OcsId) -> None:
        self._count_out(self.ocs_faults, ocs, -1)

    def health(self) -> Health:
        """What is out now (shared between calls until the next fault or repair: do not change it)."""
        if self._health is None:
            self._health = Health(
                cubes_out={c: [FAULT_ID] for c, n in self.cube_faults.items() if n > 0},
                ocs_down={k: [FAULT_ID] for k, n in self.ocs_faults.items() if n > 0},
            )
        return self._health

    # ---- occupancy ------------------------------------------------------------------------------------------
    def hold(self, job_id: str, alloc: Allocation) -> None:
        self.release(job_id)  # a job restarting in place holds its block again
        self.placed[job_id] = alloc
        for cube in alloc.cubes:
            self.used.setdefault(cube, set()).update(alloc.machines or allocation.ALL_MACHINES)

    def release(self, job_id: str) -> None:
        alloc = self.placed.pop(job_id, None)
        if alloc is None:
            return
        for cube in alloc.cubes:
            left = self.used[cube]
            left.difference_update(alloc.machines or allocation.ALL_MACHINES)
            if not left:
                del self.used[cube]

    def free_cubes(self, pod: str, health: Health, used: Mapping[str, set[int]]) -> list[str]:
        return [c for c in self.fleet.pod_by_name[pod].cubes if c not in used and health.cube_ok(c)]

    # ---- placing --------------------------------------------------------------------------------------------
    def place(
        self, shape: Shape, rerouting: bool, spares: bool = False, beside: list[Allocation] | None = None
    ) -> Allocation | None:
        """Where the shape goes now, its cross-connects made; None if it fits nowhere. `rerouting`: the job has
        fault-tolerant routing, so a down OCS does not keep it out of a pod; `spares`: it may take spare cubes;
        `beside`: a spread job's other slices (the pods holding fewest of them are tried first)."""
        pods = self._pods_for(beside) if beside is not None else None
        return self._find(shape, rerouting, self.used, spares, commit=True, pods=pods)

    def find(
        self, shape: Shape, rerouting: bool, spares: bool = False, beside: list[Allocation] | None = None
    ) -> Allocation | None:
        """Where `place` would put the shape now (the same answer from the same state); nothing is changed."""
        pods = self._pods_for(beside) if beside is not None else None
        return self._find(shape, rerouting, self.used, spares, commit=False, pods=pods)

    def would_fit(
        self,
        shape: Shape,
        rerouting: bool,
        without: Collection[str],
        spares: bool = False,
        plus: Collection[Allocation] = (),
    ) -> bool:
        """Whether the shape would fit if the jobs `without` (every slice of them) were gone and the allocations
        `plus` were held too; nothing is changed. Their machines are taken off (or put on) a view of the usage,
        not recounted from every job placed."""
        changed: dict[str, set[int]] = {}
        for job_id in without:
            keys = itertools.takewhile(lambda k: k in self.placed, (slice_key(job_id, k) for k in itertools.count(1)))
            for key in [job_id, *keys]:
                alloc = self.placed.get(key)
                if alloc is None:
                    continue
                machines = set(alloc.machines or allocation.ALL_MACHINES)
                for cube in alloc.cubes:
                    changed[cube] = changed.get(cube, self.used.get(cube, set())) - machines
        for alloc in plus:
            for cube in alloc.cubes:
                changed[cube] = changed.get(cube, self.used.get(cube, set())) | set(
                    alloc.machines or allocation.ALL_MACHINES
                )
        return self._find(shape, rerouting, _Without(self.used, changed), spares, commit=False) is not None

    def place_slices(
        self, shape: Shape, count: int, rerouting: bool, spares: bool = False, spread: bool = False
    ) -> list[Allocation] | None:
        """Where a multislice job's `count` slices go, all or none, their cross-connects made (undone if not all
        fit). `spread`: each slice to the pod holding fewest of the job's slices so far (ties: the fleet's order)."""
        if not self._room_for(shape, count, spares):
            return None
        ocs_before, changes_before = dict(self.ocs_by_pod), self.stats.xconnect_changes
        taken: dict[str, set[int]] = {}  # what the slices placed so far hold, over what is held already
        used = ChainMap(taken, self.used)
        placed: list[Allocation] = []
        for _ in range(count):
            order = self._pods_for(placed) if spread else None
            alloc = self._find(shape, rerouting, used, spares, commit=True, pods=order)
            if alloc is None:
                self.ocs_by_pod, self.stats.xconnect_changes = ocs_before, changes_before
                return None
            placed.append(alloc)
            for cube in alloc.cubes:
                taken[cube] = used.get(cube, set()) | set(alloc.machines or allocation.ALL_MACHINES)
        return placed

    def _room_for(self, shape: Shape, count: int, spares: bool) -> bool:
        """Whether the pods' free healthy cubes (less the spares kept) could hold `count` slices at all: a
        necessary condition, counted before the allocator is asked (a waiting multislice job asks often)."""
        if shape.is_subcube or not self.fit_shortcuts:
            return True
        health, keep = self.health(), 0 if spares else self.spare_cubes
        fits = sum(
            max(0, len(self.free_cubes(p.name, health, self.used)) - keep) // shape.cubes for p in self.fleet.pods
        )
        return fits >= count

    def _pods_for(self, placed: list[Allocation]) -> list[str]:
        held = [a.pod for a in placed]
        return sorted((p.name for p in self.fleet.pods), key=held.count)

    def _find(
        self,
        shape: Shape,
        rerouting: bool,
        used: Mapping[str, set[int]],
        spares: bool,
        commit: bool,
        pods: list[str] | None = None,
    ) -> Allocation | None:
        health = self.health()
        multi = not shape.is_subcube
        keep = 0 if spares else self.spare_cubes
        if multi and not rerouting and self.link_faults:  # a cube with a failed optical link cannot be wired whole
            # One dict, not a ChainMap: the allocator asks every cube `in used`, and a ChainMap asks each map in turn
            used = {**used, **{c: set(allocation.ALL_MACHINES) for c in self.link_faults}}
        for pod in [self.fleet.pod_by_name[p] for p in pods] if pods is not None else self.fleet.pods:
            if multi and not rerouting and any(ocs.pod == pod.name for ocs in health.ocs_down):
                continue
            free = self.free_cubes(pod.name, health, used) if keep or (multi and self.fit_shortcuts) else []
            if multi and self.fit_shortcuts and len(free) - keep < shape.cubes:
                continue
            alloc = self._allocate(shape, pod.name, health, used)
            if alloc is None or (keep and len(set(free) - set(alloc.cubes)) < keep):
                continue
            if multi:
                state = self.ocs_by_pod[pod.name]
                plan = self._plan(shape, alloc, state, health, rerouting)
                if plan.blocked:
                    continue
                if commit:
                    self.ocs_by_pod[pod.name] = _apply(state, plan.changes)
                    summary = plan.summary
                    self.stats.xconnect_changes += summary["add"] + summary["remove"]
            return alloc
        return None

    def _plan(
        self, shape: Shape, alloc: Allocation, state: xconnect.OcsState, health: Health, rerouting: bool
    ) -> xconnect.Plan:
        """`xconnect.plan`, diffing each distinct (wanted pairs, current pairs) once: the 16 OCS of a dimension
        want the same pairs (`xconnect.wanted_pairs` gives every one of them its dimension's list) and, unless one
        was down, hold the same ones, so 3 diffs usually stand for 48. The pod's OCS are listed in order once."""
        per_dim = self._pairs_by_dim(shape, alloc.coords)
        pod = self.fleet.cube_pod[next(iter(alloc.coords))]
        down = health.ocs_down
        deferred = [ocs for ocs, _ in self._ocs_in_order(pod) if ocs in down] if rerouting and down else []
        seen: dict[tuple[int, frozenset[xconnect.Pair]], xconnect.OcsChange] = {}
        changes = []
        for ocs, d in self._ocs_in_order(pod):
            if deferred and ocs in down:
                continue
            current = state.get(ocs, _NONE)
            one = seen.get((d, current))
            if one is None:
                one = seen[d, current] = xconnect.diff({ocs: per_dim[d]}, state)[0]
            changes.append(xconnect.OcsChange(ocs, one.add, one.remove, one.keep))
        blocked: list[str] = []
        if down or health.links_down:  # nothing can be unusable while nothing is out
            wanted = {ocs: per_dim[d] for ocs, d in self._ocs_in_order(pod) if not (deferred and ocs in down)}
            blocked = xconnect.unusable(wanted, self.fleet, health)
        return xconnect.Plan(changes, blocked, deferred)

    def _pairs_by_dim(self, shape: Shape, coords: Mapping[str, Vec]) -> list[list[xconnect.Pair]]:
        """The pairs every OCS of each dimension wants, as `xconnect.wanted_pairs` lists them."""
        pos = self.fleet.cube_position
        per_dim: list[list[xconnect.Pair]] = [[], [], []]
        for cube, nbrs in xconnect.cube_neighbors(shape, coords).items():
            for d, nb in enumerate(nbrs):
                per_dim[d].append((pos[cube], pos[nb]))
        return [sorted(pairs) for pairs in per_dim]

    def _ocs_in_order(self, pod: str) -> list[tuple[OcsId, int]]:
        if pod not in self._ocs_of_pod:
            every = [(OcsId(pod, dim, i), d) for d, dim in enumerate(DIMS) for i in range(FACE_LINKS)]
            self._ocs_of_pod[pod] = sorted(every, key=lambda item: xconnect.ocs_order(item[0]))
        return self._ocs_of_pod[pod]

    def _allocate(self, shape: Shape, pod: str, health: Health, used: Mapping[str, set[int]]) -> Allocation | None:
        if self.static and not shape.is_subcube:
            return self._static_box(shape, pod, set(self.free_cubes(pod, health, used)))
        try:
            return allocation.allocate(shape, self.fleet, used, health, pod=pod, wirable="pool")  # judged here
        except Refused:  # not in this pod
            return None

    # ---- static pods ----------------------------------------------------------------------------------------
    def _static_box(self, shape: Shape, pod: str, free: set[str]) -> Allocation | None:
        """The first box of free cubes of the pod's fixed cube torus that holds the shape, in any orientation."""
        import numpy as np

        cubes = self.fleet.pod_by_name[pod].cubes
        if len(cubes) != math.prod(STATIC_CUBE_GRID):
            return None
        mask = np.array([c in free for c in cubes])
        boxes = self._boxes(shape.cube_grid)
        fits = np.flatnonzero(mask[boxes].all(axis=1))
        if not len(fits):
            return None
        box = tuple(cubes[i] for i in boxes[fits[0]])
        return Allocation(pod, box, allocation.grid_coords(shape, box))

    def _boxes(self, sides: Vec) -> npt.NDArray[np.int64]:
        """Every box of the static cube torus with these sides, any orientation: [box, cube] pod positions."""
        import numpy as np

        if sides not in self._box_cache:
            g0, g1, g2 = STATIC_CUBE_GRID
            boxes = []
            for dims in sorted(set(itertools.permutations(sides))):
                cells = list(itertools.product(*(range(n) for n in dims)))
                for o0, o1, o2 in itertools.product(range(g0), range(g1), range(g2)):
                    position = [((o0 + a) % g0, (o1 + b) % g1, (o2 + c) % g2) for a, b, c in cells]
                    boxes.append([(x * g1 + y) * g2 + z for x, y, z in position])
            self._box_cache[sides] = np.array(boxes, dtype=np.int64)
        return self._box_cache[sides]


class _Without(Mapping[str, set[int]]):
    """The machine usage with some cubes' machines changed (a cube left with none is free)."""

    def __init__(self, used: Mapping[str, set[int]], changed: Mapping[str, set[int]]) -> None:
        self.used, self.changed = used, changed

    def __getitem__(self, cube: str) -> set[int]:
        machines = self.changed[cube] if cube in self.changed else self.used[cube]
        if not machines:
            raise KeyError(cube)
        return machines

    def __contains__(self, cube: object) -> bool:  # the allocator asks this of every cube: no KeyError path
        if cube in self.changed:
            return bool(self.changed[cube])  # type: ignore[index]
        return cube in self.used

    def __iter__(self) -> Iterator[str]:
        added = (c for c, machines in self.changed.items() if machines and c not in self.used)
        return itertools.chain((c for c in self.used if self.changed.get(c, True)), added)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _apply(state: xconnect.OcsState, changes: list[xconnect.OcsChange]) -> dict[OcsId, frozenset[xconnect.Pair]]:
    """`xconnect.apply`, working out each distinct (dimension, current pairs) once, as `Placement._plan` diffs
    them: OCS of a dimension that held the same pairs get the same change and so hold the same pairs after."""
    new = dict(state)
    after: dict[tuple[str, frozenset[xconnect.Pair]], frozenset[xconnect.Pair]] = {}
    for change in changes:
        before = state.get(change.ocs, frozenset())
        key = (change.ocs.dim, before)
        if key not in after:
            after[key] = xconnect.apply({change.ocs: before}, [change]).get(change.ocs, frozenset())
        if after[key]:
            new[change.ocs] = after[key]
        else:
            new.pop(change.ocs, None)
    return new
