"""Slice shapes: parsing, the Cloud TPU validity rule, twists and the cube grid.

>>> s = parse_shape("4x4x8", twisted=True)
>>> s.dims, s.chips, s.cubes, s.cube_grid
((4, 4, 8), 128, 2, (1, 1, 2))
>>> s.twist
((0, 0, 4), (0, 0, 4), (0, 0, 0))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpufleet.constants import CHIPS_PER_CUBE, CHIPS_PER_MACHINE, CUBE_EDGE, MAX_SLICE_CHIPS
from tpufleet.errors import BadInput, shown

if TYPE_CHECKING:
    from tpufleet.generations import Generation

SUBCUBE_SHAPES = ((2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4))
MAX_SIDE = 9999  # chips along one side of a shape as written (the largest slice rule allows far fewer)

Vec = tuple[int, int, int]


@dataclass(frozen=True)
class Shape:
    dims: Vec
    twisted: bool = False

    def __str__(self) -> str:
        return "x".join(map(str, self.dims)) + (" twisted" if self.twisted else "")

    @property
    def text(self) -> str:
        return "x".join(map(str, self.dims))

    @property
    def chips(self) -> int:
        a, b, c = self.dims
        return a * b * c

    @property
    def is_subcube(self) -> bool:
        """Smaller than a cube: a mesh of whole machines inside one cube, no OCS, no wraparound."""
        return self.chips < CHIPS_PER_CUBE

    @property
    def wraps(self) -> bool:
        return not self.is_subcube

    @property
    def cubes(self) -> int:
        return 1 if self.is_subcube else self.chips // CHIPS_PER_CUBE

    @property
    def machines(self) -> int:
        return max(1, self.chips // CHIPS_PER_MACHINE)

    @property
    def cube_grid(self) -> Vec:
        if self.is_subcube:
            return (1, 1, 1)
        return tuple(d // CUBE_EDGE for d in self.dims)  # type: ignore[return-value]

    @property
    def twist(self) -> tuple[Vec, Vec, Vec]:
        """Per dimension, the shift (in chips) applied to the other coordinates on crossing its + wraparound."""
        zero = (0, 0, 0)
        if not self.twisted:
            return (zero, zero, zero)
        a, b, c = self.dims
        if b == a and c == 2 * a:  # (4k, 4k, 8k): x and y wraps shifted by 4k in z
            return ((0, 0, a), (0, 0, a), zero)
        return ((0, a, a), zero, zero)  # (4k, 8k, 8k): x wrap shifted by (0, 4k, 4k)

    def cube_twist(self) -> tuple[Vec, Vec, Vec]:
        """The twist in whole cubes (shifts are multiples of the cube edge)."""
        return tuple(tuple(v // CUBE_EDGE for v in t) for t in self.twist)  # type: ignore[return-value]


@dataclass(frozen=True)
class ShapeText:
    """A shape as written, its rule applied once the pod is known (`parse_shape` with the pod's generation)."""

    text: str
    twisted: bool = False

    def under(self, generation: Generation | None) -> Shape:
        return parse_shape(self.text, self.twisted, generation)


def twistable(dims: Vec) -> bool:
    a, b, c = dims
    if a % CUBE_EDGE or a == 0:
        return False
    return (b == a and c == 2 * a) or (b == 2 * a and c == 2 * a)


def validate_dims(dims: Vec, twisted: bool = False, text: str | None = None) -> Shape:
    _quoted = shown(text or "x".join(map(str, dims)))
    if any(d < 1 for d in dims):
        raise BadInput(f"bad shape {_quoted}: every side must be at least 1")
    a, b, c = dims
    if dims != (2, 2, 1):  # one machine is the documented exception to A <= B <= C
        if not a <= b <= c:
            raise BadInput(f"bad shape {_quoted}: sides must be ordered A <= B <= C")
        small, whole = all(d <= CUBE_EDGE for d in dims), all(d % CUBE_EDGE == 0 for d in dims)
        if not (small or whole):
            raise BadInput(f"bad shape {_quoted}: sides must all be <= 4 or all be multiples of 4")
    if a * b * c > MAX_SLICE_CHIPS:
        raise BadInput(f"bad shape {_quoted}: {a * b * c} chips is over the {MAX_SLICE_CHIPS}-chip limit of a slice")
    if twisted and not twistable(dims):
        raise BadInput(f"bad shape {_quoted}: twisted tori exist only for (4k,4k,8k) and (4k,8k,8k)")
    return Shape(dims, twisted)


def canonical_dims(dims: Vec) -> Vec:
    """The sides in the canonical order A <= B <= C (one machine is 2x2x1), as GKE and xpk accept any order.

    >>> canonical_dims((8, 4, 4)), canonical_dims((1, 2, 2))
    ((4, 4, 8), (2, 2, 1))
    """
    a, b, c = sorted(dims)
    return (2, 2, 1) if (a, b, c) == (1, 2, 2) else (a, b, c)


def parse_dims(text: str) -> Vec:
    """The sides of 'AxBxC' in canonical order (8x4x4 is 4x4x8); only the syntax is checked, not a shape rule.

    >>> parse_dims(" 8x4X4 ")
    (4, 4, 8)
    >>> parse_dims("99999x4x4")
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad shape '99999x4x4': side '99999' is too large (at most 9999)
    """
    m = re.fullmatch(r"[ \t]*([0-9]+)[ \t]*[xX][ \t]*([0-9]+)[ \t]*[xX][ \t]*([0-9]+)[ \t]*", text or "")
    if not m:
        raise BadInput(f"bad shape {shown(text)}: expected AxBxC, e.g. 4x4x8")
    for side in m.groups():
        if len(side.lstrip("0")) > len(str(MAX_SIDE)) or int(side) > MAX_SIDE:  # no int() of a thousand digits
            raise BadInput(f"bad shape {shown(text)}: side {shown(side)} is too large (at most {MAX_SIDE})")
    a, b, c = (int(g) for g in m.groups())
    return canonical_dims((a, b, c))


def parse_shape(text: str, twisted: bool = False, generation: Generation | None = None) -> Shape:
    """Parse 'AxBxC' in any order of sides (reported canonically: 8x4x4 is 4x4x8) and apply the shape rule: the
    generation's (`Generation.check_shape`, on the canonical sides) or, without one, the Cloud TPU rule above.

    >>> parse_shape("8x4x4").dims
    (4, 4, 8)
    """
    dims = parse_dims(text)
    if generation is None:
        return validate_dims(dims, twisted, text.strip())
    return generation_shape(dims, twisted, generation)


def generation_shape(dims: Vec, twisted: bool, generation: Generation) -> Shape:
    """The shape, if slices of this generation can have it (BadInput naming the rule and the generation)."""
    generation.check_shape(dims, twisted)
    chips = dims[0] * dims[1] * dims[2]
    if chips > MAX_SLICE_CHIPS:
        text = "x".join(map(str, dims))
        raise BadInput(
            f"bad shape {text} for {generation.name}: {chips} chips is over the {MAX_SLICE_CHIPS}-chip limit"
        )
    return Shape(dims, twisted)


def check_generation(shape: Shape, generation: Generation | None) -> Shape:
    """`shape`, if a pod of this generation can hold it (None: the built-in v4 model, whose rule parsing applied)."""
    if generation is not None:
        generation_shape(shape.dims, shape.twisted, generation)
    return shape


def require_allocatable(shape: Shape) -> Shape:
    """`shape`, if a slice can have it (BadInput otherwise): `topology` and `allocate` accept the same shapes."""
    if not allocatable(shape):
        raise BadInput(
            f"bad shape {shape.text!r}: a slice smaller than a cube must be one of "
            + ", ".join("x".join(map(str, d)) for d in SUBCUBE_SHAPES)
        )
    return shape


def allocatable(shape: Shape) -> bool:
    """Sub-cube slices must be whole machines (2x2x1 blocks) that fit in one cube."""
    if not shape.is_subcube:
        return True
    return shape.dims in SUBCUBE_SHAPES
