"""A what-if network that needs no fleet: `tpufleet collective --topology 128x32 --wrap y`.

"Exploring the limits of concurrency in ML training on Google TPUs" (MLSys 2021) trains on a TPU-v3 multipod of
4,096 chips in a 128x32 2-D mesh: four 32x32 pods joined along X by cross-pod links, with the pods' torus
wraparound kept in Y only. A topology here is its sides (two or three) and the dimensions that wrap (tori); the
others are meshes (lines). Its tables are dimension-order routes, each dimension in turn, the shorter way round
a torus (ties split by the source's parity, as in `tpufleet.routing.dor`) and straight along a mesh, so a ring
through a mesh dimension closes through the whole line.

>>> parse_topology("128x32"), parse_wrap("y")
((128, 32, 1), (False, True, False))
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tpufleet.constants import DIMS
from tpufleet.errors import BadInput, shown
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.collectives.tables import Tables

MAX_CHIPS = 4096  # the tables are chips x chips (16 MiB of ports at 4,096)
_SIDE = r"[ \t]*([0-9]+)[ \t]*"
_TOPOLOGY = re.compile(rf"{_SIDE}[xX]{_SIDE}(?:[xX]{_SIDE})?")
Wraps = tuple[bool, bool, bool]


def parse_topology(text: str) -> tuple[int, int, int]:
    """'128x32' or '16x16x16': two or three sides of at least one chip, at most MAX_CHIPS chips in all; written
    as a shape is (`allocate --shape`, `topology`: spaces around the sides and a capital X taken).

    >>> parse_topology(" 128X32 ")
    (128, 32, 1)
    """
    match = _TOPOLOGY.fullmatch(text)
    sides = [side for side in match.groups() if side is not None] if match else []
    if not sides or not all(side.strip("0") for side in sides):
        raise BadInput(f"bad option --topology: {shown(text)} is not AxB or AxBxC (sides of whole chips, e.g. 128x32)")
    if any(len(side.lstrip("0")) > len(str(MAX_CHIPS)) for side in sides):  # no int() of a thousand digits
        raise BadInput(f"bad option --topology: {shown(text)} has more than {MAX_CHIPS} chips; model 2 to {MAX_CHIPS}")
    dims = tuple(int(side) for side in sides) + (1,) * (3 - len(sides))
    chips = dims[0] * dims[1] * dims[2]
    if not 2 <= chips <= MAX_CHIPS:
        raise BadInput(f"bad option --topology: {shown(text)} has {chips} chips; model 2 to {MAX_CHIPS}")
    return dims[0], dims[1], dims[2]


def parse_wrap(text: str | None, dims: tuple[int, int, int] = (2, 2, 2)) -> Wraps:
    """'y', 'xy', 'x,z' or '' (every dimension a mesh): the dimensions of `dims` that are tori; a dimension one
    chip deep has no links to wrap."""
    letters = [c for c in (text or "").lower() if c not in ", "]
    if any(c not in DIMS for c in letters) or len(set(letters)) != len(letters):
        raise BadInput(f"bad option --wrap: {text!r} is not a set of dimensions among x, y and z (e.g. y)")
    flat = next((c for c in letters if dims[DIMS.index(c)] == 1), None)
    if flat is not None:
        raise BadInput(f"bad option --wrap: {flat} is one chip deep in this topology; it has no links to wrap")
    return (DIMS[0] in letters, DIMS[1] in letters, DIMS[2] in letters)


def describe(dims: tuple[int, int, int], wraps: Wraps) -> str:
    """'128x32, mesh in x, torus in y'."""
    used = [d for d in range(3) if dims[d] > 1]
    text = "x".join(str(dims[d]) for d in range(3) if d < 2 or dims[d] > 1)
    kinds = [f"{'torus' if wraps[d] else 'mesh'} in {DIMS[d]}" for d in used]
    return f"{text}, {', '.join(kinds)}"


def _graph(dims: tuple[int, int, int], wraps: Wraps) -> object:
    """[N, 6] neighbours: a wrap link only in the dimensions that are tori (and longer than two chips' worth)."""
    import numpy as np

    from tpufleet.topology import coordinates

    xyz = coordinates(dims).astype(np.int64)
    out = np.full((len(xyz), 6), -1, dtype=np.int32)
    for d in range(3):
        if dims[d] == 1:
            continue
        for s, sign in enumerate((1, -1)):
            nxt = xyz.copy()
            nxt[:, d] += sign
            crossed = (nxt[:, d] < 0) | (nxt[:, d] >= dims[d])
            nxt[:, d] %= dims[d]
            ok = ~crossed | wraps[d]
            ids = np.ravel_multi_index(tuple(nxt.T), dims)
            out[:, 2 * d + s] = np.where(ok, ids, -1)
    return out


def _dor(dims: tuple[int, int, int], wraps: Wraps) -> tuple[object, object]:
    """([s, t] output port, [s, t] hops) of dimension-order routing, x then y then z."""
    import numpy as np

    from tpufleet.topology import coordinates

    xyz = coordinates(dims).astype(np.int16)
    n = len(xyz)
    port = np.full((n, n), -1, dtype=np.int8)
    hops = np.zeros((n, n), dtype=np.int16)
    settled = np.zeros((n, n), dtype=bool)
    for d in range(3):
        a, b = xyz[:, d][:, None], xyz[:, d][None, :]
        if wraps[d] and dims[d] > 1:
            fwd, back = (b - a) % dims[d], (a - b) % dims[d]
            plus = (fwd < back) | ((fwd == back) & (a % 2 == 0))
            dist = np.minimum(fwd, back)
        else:
            plus, dist = b > a, np.abs(b - a)
        moving = (dist > 0) & ~settled
        port[moving] = np.where(plus, 2 * d, 2 * d + 1)[moving]
        settled |= dist > 0
        hops += dist.astype(np.int16)
    return port, hops


def what_if_tables(dims: tuple[int, int, int], wraps: Wraps) -> Tables:
    """Healthy dimension-order tables of the topology (`source` 'what-if')."""
    import numpy as np

    from tpufleet.collectives.tables import Tables

    nbr = np.asarray(_graph(dims, wraps))
    port, hops = _dor(dims, wraps)
    meta = {
        "shape": "x".join(map(str, dims)),
        "wrap": "".join(DIMS[d] for d in range(3) if wraps[d]),
        "fold": [not w and n > 2 for w, n in zip(wraps, dims, strict=True)],  # mesh rings folded: two hops at most
    }
    return Tables(Shape(dims), np.asarray(port), nbr, nbr, "what-if", meta, hops=np.asarray(hops))
