"""Accelerator generations (TPU v4, TPU v5p, TPU7x): what differs from one pod to the next, as typed data.

A `Generation` is read from a profile document (`tpufleet/data/generations/NAME.yaml`, read and schema-checked by
`tpufleet.state.generations`, converted by `tpufleet.generations_document`); every figure there carries its public source or an ``ASSUMPTION:`` with the
reasoning, and `Generation.sources` keeps them. What no generation changes stays in `tpufleet.constants` (the
4x4x4 cube, six ports a chip, sixteen links a cube face). This module touches no file.

The shape rule is xpk's ``generate_tpu_topologies`` (``src/xpk/core/system_characteristics.py``), the list GKE's
tooling accepts for each generation:

1. the sub-cube shapes 2x2x1, 2x2x2, 2x2x4 and 2x4x4, exactly as written (meshes inside one cube);
2. otherwise every side a multiple of 4, at most 256 (``max_side``);
3. sides non-decreasing, A <= B <= C, where the generation asks for it (v5p, TPU7x; v4 takes any order);
4. at most ``max_cubes`` cubes of 4x4x4 (v4 64, v5p 140, TPU7x 144);
5. twisted only for the families the generation offers, (4k, 4k, 8k) and (4k, 8k, 8k), sides in that order.

>>> from tpufleet.generations_document import _EXAMPLE, from_document
>>> gen = from_document(_EXAMPLE, "example.yaml")
>>> gen.check_shape((16, 24, 24)), gen.cubes_of((16, 24, 24))
(None, 144)
>>> gen.check_shape((20, 24, 28))
Traceback (most recent call last):
...
tpufleet.errors.BadInput: bad shape 20x24x28 for tpu7x: 210 cubes, at most 144
>>> len(gen.accepted_shapes()), len(gen.accepted_shapes(twisted=True))
(432, 7)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple, get_args

from tpufleet.constants import CHIPS_PER_CUBE, CUBE_EDGE, DIMS
from tpufleet.errors import BadInput

__all__ = [
    "FIGURES",
    "SCHEMA_VERSION",
    "SIDE_ORDERS",
    "TWIST_FAMILIES",
    "FaultDefaults",
    "Figure",
    "Generation",
    "RepairHours",
    "SideOrder",
    "TwistFamily",
    "is_assumption",
    "shape_text",
]

SCHEMA_VERSION: Final = 1
Vec = tuple[int, int, int]
SideOrder = Literal["any", "non-decreasing"]
SIDE_ORDERS: tuple[SideOrder, ...] = get_args(SideOrder)
TwistFamily = Literal["4k,4k,8k", "4k,8k,8k"]
TWIST_FAMILIES: tuple[TwistFamily, ...] = get_args(TwistFamily)
REPAIR_KINDS: Final = ("host", "link", "ocs", "drain")
ASSUMPTION: Final = "ASSUMPTION:"
NAME_PATTERN: Final = r"^[a-z0-9][a-z0-9-]{0,31}\Z"
LABEL_PATTERN: Final = r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?\Z"  # a Kubernetes label value, lower case
MAX_SOURCE_CHARS: Final = 1000
MAX_POD_CUBES: Final = 4096  # a sanity bound on a profile, far above any pod (TPU7x: 144)


class Figure(NamedTuple):
    """How one figure of a profile document is checked: its kind and, for numbers, its inclusive range."""

    kind: Literal["int", "number", "label", "shape", "shapes", "side_order", "twists", "hours"]
    low: float = 0.0
    high: float = 0.0


# Every figure of a profile document (a dotted path -> its check). The state layer builds the JSON Schema from this
# table, so the schema and `generations_document.from_document` hold the same ranges. Bandwidths in bytes per second, one direction.
FIGURES: Final[Mapping[str, Figure]] = {
    "gke_accelerator": Figure("label"),
    "machine_type": Figure("label"),
    "host_shape": Figure("shape"),
    "pod.chips": Figure("int", CHIPS_PER_CUBE, MAX_POD_CUBES * CHIPS_PER_CUBE),
    "pod.cubes": Figure("int", 1, MAX_POD_CUBES),
    "pod.ocs": Figure("int", 1, 1024),
    "pod.ocs_ports": Figure("int", 2, 2 * MAX_POD_CUBES),
    "slices.max_cubes": Figure("int", 1, MAX_POD_CUBES),
    "slices.max_side": Figure("int", CUBE_EDGE, 4096),
    "slices.side_order": Figure("side_order"),
    "slices.subcube_shapes": Figure("shapes"),
    "slices.twisted": Figure("twists"),
    "ici.links_per_chip": Figure("int", 1, 64),
    "ici.link_bandwidth": Figure("number", 1.0e6, 1.0e15),
    "chip.peak_bf16_flops": Figure("number", 1.0e9, 1.0e18),
    "chip.hbm_bytes": Figure("int", 1, 2**50),
    "chip.hbm_bandwidth": Figure("number", 1.0e6, 1.0e15),
    "dcn.chip_bandwidth": Figure("number", 1.0e6, 1.0e15),
    "faults.host_per_day": Figure("number", 0.0, 1.0),
    "faults.link_per_day": Figure("number", 0.0, 1.0),
    "faults.ocs_per_day": Figure("number", 0.0, 1.0),
    "faults.drain_per_day": Figure("number", 0.0, 1.0),
    "faults.repair_hours": Figure("hours", 0.001, 8760.0),
}
SECTIONS: Final = ("pod", "slices", "ici", "chip", "dcn", "faults")
TOP_KEYS: Final = ("schema_version", "name", "title", "gke_accelerator", "machine_type", "host_shape", *SECTIONS)


@dataclass(frozen=True)
class RepairHours:
    """Hours to repair a component (or to finish a planned drain)."""

    host: float
    link: float
    ocs: float
    drain: float


@dataclass(frozen=True)
class FaultDefaults:
    """Default failure rates (per component per day) and repair times of a generation."""

    host_per_day: float
    link_per_day: float
    ocs_per_day: float
    drain_per_day: float
    repair_hours: RepairHours


@dataclass(frozen=True)
class Generation:
    """One accelerator generation: its labels, pod, wiring, slice-shape rule, interconnect, chip and faults."""

    name: str
    title: str
    gke_accelerator: str  # the value of node label cloud.google.com/gke-tpu-accelerator
    machine_type: str
    host_shape: Vec  # the chips of one host (VM), e.g. 2x2x1
    pod_chips: int
    pod_cubes: int
    ocs_count: int
    ocs_ports: int  # per OCS, half on the north side and half on the south
    max_slice_cubes: int
    max_side: int
    side_order: SideOrder
    subcube_shapes: tuple[Vec, ...]
    twist_families: tuple[TwistFamily, ...]
    ici_links_per_chip: int
    ici_link_bandwidth: float  # bytes/s per link, one direction
    peak_bf16_flops: float  # FLOP/s per chip
    hbm_bytes: int
    hbm_bandwidth: float  # bytes/s per chip
    dcn_chip_bandwidth: float  # bytes/s per chip, one direction
    faults: FaultDefaults
    sources: tuple[tuple[str, str], ...]  # (figure path, its source or ASSUMPTION) in FIGURES order

    @property
    def chips_per_host(self) -> int:
        return math.prod(self.host_shape)

    @property
    def hosts_per_cube(self) -> int:
        return CHIPS_PER_CUBE // self.chips_per_host

    @property
    def ocs_per_dim(self) -> int:
        return self.ocs_count // len(DIMS)

    @property
    def ports_per_side(self) -> int:
        """Cubes one OCS can serve: one out link (north) and one in link (south) each."""
        return self.ocs_ports // 2

    def source(self, figure: str) -> str:
        """The public source of a figure (a dotted path of FIGURES), or its ASSUMPTION with the reasoning."""
        return dict(self.sources)[figure]

    def assumptions(self) -> dict[str, str]:
        """The figures that rest on an assumption rather than a public figure."""
        return {path: text for path, text in self.sources if is_assumption(text)}

    def cubes_of(self, dims: Vec) -> int:
        """Cubes a slice of these sides takes: 1 for a sub-cube shape (it lives inside one cube)."""
        if tuple(dims) in self.subcube_shapes:
            return 1
        return math.prod(d // CUBE_EDGE for d in dims)

    def twistable(self, dims: Vec) -> bool:
        """Whether this generation offers a twisted torus of these sides (in the order given)."""
        family = _family(dims)
        return family is not None and family in self.twist_families

    def accepts(self, dims: Vec, twisted: bool = False) -> bool:
        """Whether `check_shape` passes."""
        return _problem(self, dims, twisted) is None

    def check_shape(self, dims: Vec, twisted: bool = False) -> None:
        """Refuse (BadInput naming the rule and the generation) a shape this generation's slices cannot have.

        >>> from tpufleet.generations_document import _EXAMPLE, from_document
        >>> gen = from_document(_EXAMPLE, "example.yaml")
        >>> gen.check_shape((6, 8, 8))
        Traceback (most recent call last):
        ...
        tpufleet.errors.BadInput: bad shape 6x8x8 for tpu7x: sides must be multiples of 4 (or a sub-cube shape 2x2x1, 2x2x2, 2x2x4, 2x4x4)
        """
        problem = _problem(self, dims, twisted)
        if problem is not None:
            label = shape_text(dims) + (" twisted" if twisted else "")
            raise BadInput(f"bad shape {label} for {self.name}: {problem}")

    def accepted_shapes(self, twisted: bool = False) -> tuple[Vec, ...]:
        """Every (A, B, C) a slice may have (sorted), or every twisted one: xpk's list for this generation."""
        shapes = [*self.subcube_shapes, *self._whole_cube_shapes()]
        if twisted:
            shapes = [d for d in shapes if self.twistable(d)]
        return tuple(sorted(set(shapes)))

    def _whole_cube_shapes(self) -> Iterator[Vec]:
        """Sides multiples of 4 up to max_side, at most max_slice_cubes cubes, ordered where the rule says so."""
        top, limit, ordered = self.max_side // CUBE_EDGE, self.max_slice_cubes, self.side_order == "non-decreasing"
        for a in range(1, min(top, limit) + 1):
            for b in range(a if ordered else 1, min(top, limit // a) + 1):
                for c in range(b if ordered else 1, min(top, limit // (a * b)) + 1):
                    yield (CUBE_EDGE * a, CUBE_EDGE * b, CUBE_EDGE * c)


def _family(dims: Vec) -> TwistFamily | None:
    """The twisted family of these sides, (4k, 4k, 8k) or (4k, 8k, 8k) in that order, if any."""
    a, b, c = dims
    if a < 1 or a % CUBE_EDGE:
        return None
    if b == a and c == 2 * a:
        return "4k,4k,8k"
    if b == 2 * a and c == 2 * a:
        return "4k,8k,8k"
    return None


def _problem(gen: Generation, dims: Vec, twisted: bool) -> str | None:
    """What is wrong with the shape for this generation (the rule, in the module docstring's order), or None."""
    if len(dims) != 3:
        return "a shape has three sides, AxBxC"
    if any(d < 1 for d in dims):
        return "every side must be at least 1"
    subcubes = ", ".join(shape_text(s) for s in gen.subcube_shapes)
    if tuple(dims) not in gen.subcube_shapes:
        if max(dims) > gen.max_side:
            return f"a side is over {gen.max_side}"
        if any(d % CUBE_EDGE for d in dims):
            return f"sides must be multiples of {CUBE_EDGE} (or a sub-cube shape {subcubes})"
        if gen.side_order == "non-decreasing" and not dims[0] <= dims[1] <= dims[2]:
            return "sides must be non-decreasing, A <= B <= C (e.g. " + shape_text(tuple(sorted(dims))) + ")"
        cubes = gen.cubes_of(dims)
        if cubes > gen.max_slice_cubes:
            return f"{cubes} cubes, at most {gen.max_slice_cubes}"
    if twisted and not gen.twistable(dims):
        offered = " and ".join(f"({f})" for f in gen.twist_families) or "no shape"
        return f"twisted tori exist only for {offered}, sides in that order"
    return None


def shape_text(dims: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in dims)


def is_assumption(source: str) -> bool:
    return source.lstrip().startswith(ASSUMPTION)
