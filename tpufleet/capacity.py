"""What still fits: every slice shape a pod's generation offers, placed now and after the worst K cube failures.

A shape fits now when the allocator itself (`allocation.allocate`, the code `allocate` runs) places it: healthy
free cubes for a torus, a free box of machines in a healthy cube for a sub-cube slice (best fit, so packing is the
allocator's own), the generation's shape rule and its twisted tori. After K cube failures, the worst case: an
adversary takes the K cubes that hurt this shape most, so a torus of n cubes still fits when the pod keeps n
healthy free cubes after losing K of them, and a sub-cube shape when at least K + 1 healthy cubes can hold it.
(Cubes are interchangeable to the OCS: any healthy free cubes of a pod make any torus, so counting is exact.)

>>> from tpufleet.health import health_of
>>> from tpufleet.model import default_fleet
>>> fleet = default_fleet(1, 8)
>>> rows = verdicts(fleet.pods[0], fleet, {}, health_of([]), after=3)
>>> [(r.shape, r.twisted, r.now, r.after) for r in rows if r.shape in ("2x2x1", "4x8x8", "8x8x8")]
[('2x2x1', False, True, True), ('4x8x8', False, True, True), ('4x8x8', True, True, True), ('8x8x8', False, True, False)]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tpufleet.allocation import MachineUsage, allocate
from tpufleet.allocation import _subcube_boxes as subcube_boxes  # the allocator's own boxes, not a copy
from tpufleet.constants import CUBE_EDGE
from tpufleet.errors import BadInput, Refused
from tpufleet.health import Health
from tpufleet.model import Fleet, Pod
from tpufleet.shapes import SUBCUBE_SHAPES, Shape, Vec, canonical_dims, check_generation, twistable, validate_dims


@dataclass(frozen=True)
class Verdict:
    shape: str  # canonical AxBxC
    twisted: bool
    cubes: int  # cubes it takes (1 for a sub-cube slice)
    now: bool  # the allocator places it now
    after: bool  # it still fits after the worst `after` cube failures
    why_not: str | None  # the allocator's refusal, when it does not fit now

    def record(self) -> dict[str, object]:
        return {
            "shape": self.shape,
            "twisted": self.twisted,
            "cubes": self.cubes,
            "fits_now": self.now,
            "fits_after": self.after,
            "why_not": self.why_not,
        }


def pod_shapes(pod: Pod) -> list[Shape]:
    """Every shape a slice in this pod may have, sub-cube ones first, then tori by size (twisted after plain)."""
    limit = len(pod.cubes)
    if pod.generation is not None:
        dims = {canonical_dims(d) for d in pod.generation.accepted_shapes()}
    else:  # the built-in TPU v4 model: sides multiples of 4, at most the pod's cubes
        dims = set(SUBCUBE_SHAPES) | set(_whole_cube_dims(limit))
    shapes = []
    for d in sorted(dims, key=lambda d: (_cubes(d), d)):
        for twisted in (False, True):
            if twisted and not twistable(d):
                continue
            try:
                shapes.append(check_generation(validate_dims(d, twisted), pod.generation))
            except BadInput:  # the generation does not offer this twist
                continue
    return [s for s in shapes if s.cubes <= limit]


def _whole_cube_dims(limit: int) -> Iterator[Vec]:
    for a in range(1, limit + 1):
        for b in range(a, limit // a + 1):
            for c in range(b, limit // (a * b) + 1):
                yield (a * CUBE_EDGE, b * CUBE_EDGE, c * CUBE_EDGE)


def _cubes(dims: Vec) -> int:
    return 1 if any(d < CUBE_EDGE for d in dims) else (dims[0] * dims[1] * dims[2]) // CUBE_EDGE**3


def subcube_room(shape: Shape, pod: Pod, used: MachineUsage, health: Health) -> int:
    """How many healthy cubes of the pod have a free box of machines for this sub-cube shape, less the whole
    free cubes the pod's unplaced node pools hold (`Health.held`)."""
    boxes = [set(machines) for _origin, machines in subcube_boxes(shape)]
    room = sum(1 for c in pod.cubes if health.cube_ok(c) and any(box.isdisjoint(used.get(c, set())) for box in boxes))
    wirable_free = sum(1 for c in pod.cubes if not used.get(c) and health.cube_wirable(c))
    return room - min(health.held.get(pod.name, 0), wirable_free)


def verdicts(pod: Pod, fleet: Fleet, used: MachineUsage, health: Health, after: int = 0) -> list[Verdict]:
    """Each shape of the pod: placed now by the allocator, and after the worst `after` cube failures."""
    free = health.free_room(pod.name, pod.cubes, used)  # a torus needs every port
    out = []
    for shape in pod_shapes(pod):
        try:
            allocate(shape, fleet, used, health, pod.name)
            now, why = True, None
        except (Refused, BadInput) as exc:
            now, why = False, str(exc)
        if shape.is_subcube:
            later = now and subcube_room(shape, pod, used, health) > after
        else:
            later = now and free - after >= shape.cubes
        out.append(Verdict(shape.text, shape.twisted, shape.cubes, now, later, why))
    return out
