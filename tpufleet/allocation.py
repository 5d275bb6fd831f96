"""Choosing cubes (or machines inside a cube) for a slice, and giving each cube its grid coordinate (pure).

Any healthy free cubes of one pod will do for a multi-cube slice: the OCS makes physical position irrelevant.
Sub-cube slices are boxes of whole machines (2x2x1 chips) inside one cube, placed best-fit.

>>> from tpufleet.shapes import parse_shape
>>> grid_coords(parse_shape("8x8x8"), ["c03", "c01", "c02", "c00", "c04", "c05", "c06", "c07"])["c01"]
(0, 0, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from tpufleet.constants import CUBE_EDGE, MACHINES_PER_CUBE
from tpufleet.errors import BadInput, Refused, refuse_repeats
from tpufleet.health import Health
from tpufleet.ids import machine_of, meant
from tpufleet.model import Fleet, Pod, cubes_held, known_pod
from tpufleet.shapes import Shape, Vec, check_generation, require_allocatable

MachineUsage = Mapping[str, set[int]]  # cube -> machines already held in it
Wirable = Literal["ports", "ports+ocs", "pool"]  # what `allocate` asks of free cubes beyond being in the pool
ALL_MACHINES = frozenset(range(MACHINES_PER_CUBE))


class Occupant(Protocol):
    """Anything that holds cubes: a slice of the state, a job of the simulator, an allocation."""

    @property
    def cubes(self) -> Sequence[str]: ...

    @property
    def machines(self) -> Sequence[int]: ...  # empty: every machine of each cube


@dataclass
class Allocation:
    """Where a slice sits or would sit: pod, cubes with their grid positions, machines of a sub-cube slice."""

    pod: str
    cubes: tuple[str, ...]
    coords: dict[str, Vec]
    machines: tuple[int, ...] = ()
    origin: Vec | None = None

    def record(self) -> dict[str, object]:
        out: dict[str, object] = {
            "pod": self.pod,
            "cubes": list(self.cubes),
            "coords": {c: list(v) for c, v in self.coords.items()},
        }
        if self.machines:
            out["machines"], out["origin"] = list(self.machines), list(self.origin or (0, 0, 0))
        return out


def grid_coords(shape: Shape, cubes: Sequence[str]) -> dict[str, Vec]:
    """Row-major cube coordinates in the (a, b, c) cube grid, in the order the cubes are given."""
    _, b, c = shape.cube_grid
    out = {}
    for n, cube in enumerate(cubes):
        cx, rest = divmod(n, b * c)
        cy, cz = divmod(rest, c)
        out[cube] = (cx, cy, cz)
    return out


def machine_usage(occupants: Iterable[Occupant]) -> dict[str, set[int]]:
    """cube -> machines held there; an occupant without machines holds all of them."""
    used: dict[str, set[int]] = {}
    for occupant in occupants:
        for cube in occupant.cubes:
            used.setdefault(cube, set()).update(occupant.machines or ALL_MACHINES)
    return used


def _subcube_boxes(shape: Shape) -> Iterator[tuple[Vec, tuple[int, ...]]]:
    """Every placement of the shape's machine box inside a cube: (origin chip, machine numbers)."""
    a, b, c = shape.dims
    for ox in range(0, CUBE_EDGE - a + 1, 2):
        for oy in range(0, CUBE_EDGE - b + 1, 2):
            for oz in range(0, CUBE_EDGE - c + 1):
                machines = sorted(
                    {
                        machine_of(x, y, z)
                        for x in range(ox, ox + a)
                        for y in range(oy, oy + b)
                        for z in range(oz, oz + c)
                    }
                )
                yield (ox, oy, oz), tuple(machines)


def allocate(
    shape: Shape,
    fleet: Fleet,
    used: MachineUsage,
    health: Health,
    pod: str | None = None,
    cubes: Sequence[str] | None = None,
    wirable: Wirable = "ports",
    holders: Mapping[str, str] | None = None,
    degraded_last: bool = False,
) -> Allocation:
    """Cubes for the shape: the given ones, else the first free ones of the first pod that has enough that can be
    wired (`wirable`: "ports" skips cubes with a failed or drained optical link, which `plan-xconnect` refuses, and
    tries pods with every OCS up first; "ports+ocs" is "ports" for a slice without fault-tolerant routing: a pod
    with an OCS down can take it, but it waits for the repair to be wired; "pool" only asks that cubes be in the pool, for
    a caller that judges the wiring itself, as the fleet simulation does). `holders`: for a given cube already held,
    who holds it (`held by slice a`), as the refusal names it. `degraded_last` (a move): DEGRADED cubes after the
    healthy ones, as `plan-spares` holds them back; a new slice takes the free cubes in order."""
    require_allocatable(shape)
    if pod is not None:
        pod = known_pod(fleet, pod)
    if cubes:
        return _take_given(shape, fleet, used, health, pod, cubes, holders or {})
    pods = fitting_pods(shape, [fleet.pod_by_name[pod]] if pod else list(fleet.pods))
    if shape.is_subcube:
        return _best_fit_subcube(shape, pods, used, health)
    usable = health.cube_ok if wirable == "pool" else health.cube_wirable
    pods = [fleet.pod_by_name[name] for name in wirable_first([p.name for p in pods], health, wirable, shape)]
    reports = []
    for p in pods:
        free = [c for c in p.cubes if c not in used and usable(c)]
        free.sort(key=health.last_resort if degraded_last else lambda c: c in health.maintenance)  # stable
        if len(free) - health.held.get(p.name, 0) >= shape.cubes:
            chosen = tuple(free[: shape.cubes])
            return Allocation(p.name, chosen, grid_coords(shape, chosen))
        out = sum(1 for c in p.cubes if c not in used and not health.cube_ok(c))  # `status`: out of the pool
        notes = _held_note(p.name, health) + (f", {out} out of the pool" if out else "") + _ports_note(p, used, health)
        reports.append(f"{p.name}: {len(free)} healthy free{notes}")
    raise Refused(f"not enough healthy free cubes for {shape}: need {shape.cubes}; " + "; ".join(reports))


def wirable_first(
    pods: Sequence[str],
    health: Health,
    wirable: Wirable,
    shape: Shape | None = None,
    held: Mapping[str, int] | None = None,
) -> list[str]:
    """The pods in the order to try them (stable: ties keep the order given). `held`: a spread job's slices in each
    pod, fewest first. Pods with every OCS up come first for a slice without fault-tolerant routing ("ports+ocs":
    it waits for an OCS's repair to be wired), before the spread; for one with it ("ports") after the spread, as
    the tie-break: it runs rerouted around the OCS, below its healthy throughput (perhaps below its floor) while a
    healthy pod had room. A sub-cube shape uses no OCS, and "pool" (a caller that judges the wiring itself) asks
    nothing of them."""
    counts = held or {}
    if wirable == "pool" or (shape is not None and shape.is_subcube):
        return sorted(pods, key=lambda p: counts.get(p, 0))
    down = {o.pod for o in health.ocs_down}
    if wirable == "ports+ocs":
        return sorted(pods, key=lambda p: (p in down, counts.get(p, 0)))
    return sorted(pods, key=lambda p: (counts.get(p, 0), p in down))


def _held_problem(pod: Pod, cubes: Sequence[str], used: MachineUsage, health: Health) -> list[str]:
    """Why the given cubes would leave the pod fewer free cubes than its unplaced node pools hold (none if not)."""
    room = health.room(pod.name, pod.cubes, [*used, *cubes])
    if room >= 0:
        return []
    held = health.held[pod.name]
    return [
        f"{pod.name} would keep {room + held} free cube(s), and node pools tpufleet has not placed hold {held}"
        " (import k8s)"
    ]


def _held_note(pod: str, health: Health) -> str:
    held = health.held.get(pod, 0)
    return f", {held} of them held by node pools tpufleet has not placed (import k8s)" if held else ""


def _ports_note(pod: Pod, used: MachineUsage, health: Health) -> str:
    """The free cubes in the pool left out for an optical link down, when there are any."""
    held = [c for c in pod.cubes if c not in used and health.cube_ok(c) and not health.cube_wirable(c)]
    return f" ({len(held)} more with an optical link down: {', '.join(held[:4])})" if held else ""


def fitting_pods(shape: Shape, pods: Sequence[Pod]) -> list[Pod]:
    """The pods whose generation's shape rule takes `shape` (a pod without one: the rule parsing applied); if
    none does, the first refusal (BadInput naming the rule and the generation)."""
    fit: list[Pod] = []
    refusal: BadInput | None = None
    for p in pods:
        try:
            check_generation(shape, p.generation)
        except BadInput as exc:
            refusal = refusal or exc
            continue
        fit.append(p)
    if not fit and refusal is not None:
        raise refusal
    return fit


def _cubes_by_pod(fleet: Fleet, cubes: Sequence[str], pod: str | None) -> str:
    """Why the given cubes cannot make one slice: the pod of each (cubes of one pod named as a run), so
    `--cubes c00,c01 --pod pod1` says the cubes are pod0's, not that they are in several pods."""
    by_pod: dict[str, list[str]] = {}
    for cube in cubes:
        by_pod.setdefault(fleet.cube_pod[cube], []).append(cube)
    where = "; ".join(f"{', '.join(cs)} in {p}" for p, cs in by_pod.items())
    if len(by_pod) > 1:
        return f"a slice's cubes must all be in one pod ({where})"
    return f"the cubes are not in --pod {pod} ({where})"


def _take_given(
    shape: Shape,
    fleet: Fleet,
    used: MachineUsage,
    health: Health,
    pod: str | None,
    cubes: Sequence[str],
    holders: Mapping[str, str],
) -> Allocation:
    refuse_repeats("--cubes", cubes)
    for cube in cubes:
        if cube not in fleet.cube_pod:
            said = meant(cube, fleet.cube_pod) or f" ({cubes_held(fleet)})"
            raise BadInput(f"bad option --cubes: unknown cube {cube!r}{said}")
    pods = {fleet.cube_pod[c] for c in cubes}
    if len(pods) > 1 or (pod and pod not in pods):
        raise BadInput(f"bad option --cubes: {_cubes_by_pod(fleet, cubes, pod)}")
    fitting_pods(shape, [fleet.pod_by_name[p] for p in pods])
    if len(cubes) != shape.cubes:
        raise BadInput(f"bad option --cubes: {shape} needs {shape.cubes} cube(s), {len(cubes)} given")
    problems = [
        f"{c} is out of the pool (faults {', '.join(health.cubes_out[c])})" for c in cubes if not health.cube_ok(c)
    ]
    if not shape.is_subcube:  # a whole-cube slice cables every face: a failed or drained port is refused at wiring
        problems += [
            f"{c} has a failed or drained optical port (faults "
            + ", ".join(i for link, ids in health.links_down.items() if link.cube == c for i in ids)
            + ")"
            for c in cubes
            if health.cube_ok(c) and not health.cube_wirable(c)
        ]
        unknown = "held by a slice, or reserved for an evicted slice's move"
        problems += [f"{c} is already allocated ({holders.get(c, unknown)})" for c in cubes if c in used]
        problems += _held_problem(fleet.pod_by_name[next(iter(pods))], cubes, used, health)
    if len(problems) == 1:
        raise Refused(f"cannot use the given cubes for {shape}: {problems[0]}")
    if problems:  # one line each, under the error's (not repeated in it)
        raise Refused(f"cannot use the given cubes for {shape}: {len(problems)} problems", problems)
    if shape.is_subcube:
        return _best_fit_subcube(shape, [fleet.pod_by_name[pods.pop()]], used, health, only=cubes[0])
    return Allocation(pods.pop(), tuple(cubes), grid_coords(shape, cubes))


def _best_fit_subcube(
    shape: Shape, pods: Sequence[Pod], used: MachineUsage, health: Health, only: str | None = None
) -> Allocation:
    best: tuple[tuple[bool, bool, int, int, int], str, str, Vec, tuple[int, ...]] | None = None
    for i, p in enumerate(pods):
        # a whole free cube a torus can use is one the pod's unplaced node pools may hold, when they hold all it
        # has left (a cube with a port down is none they could use)
        fresh_ok = health.free_room(p.name, p.cubes, used) > 0
        for j, cube in enumerate(p.cubes):
            if (only and cube != only) or not health.cube_ok(cube):
                continue
            taken = used.get(cube, set())
            if len(taken) >= MACHINES_PER_CUBE or (not taken and not fresh_ok and health.cube_wirable(cube)):
                continue
            for origin, machines in _subcube_boxes(shape):
                if taken.isdisjoint(machines):
                    # Best fit: the fullest cube that still fits keeps whole cubes free for big slices; among
                    # equals the first in the fleet's order (c64 before c100, as names they sort the other way);
                    # a DEGRADED cube only when no healthy one fits, one under announced maintenance after it
                    key = (*health.last_resort(cube), -len(taken), i, j)
                    if best is None or key < best[0]:
                        best = (key, p.name, cube, origin, machines)
                    break
    if best is None:
        where = f" in {only}" if only else ""
        notes = "".join(_held_note(p.name, health) for p in pods)
        raise Refused(f"no free healthy room{where} for a {shape} sub-cube slice ({shape.machines} machines){notes}")
    _, pod, cube, origin, machines = best
    return Allocation(pod, (cube,), {cube: (0, 0, 0)}, machines, origin)
