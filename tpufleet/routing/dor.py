"""Healthy dimension-order routing (DOR) on tori, twisted tori and meshes, for any dimension order.

Regular tori and meshes have a closed form per dimension: the shorter way round each ring, and a tie (exactly
half a ring away) goes + from an even coordinate and - from an odd one, which loads both directions equally.

Twisted tori are Cayley graphs of an abelian group (Z^3 modulo the twisted lattice), so moves commute and every
shortest path can be reordered into any dimension order. A chip picks its move from the remaining offset
``g = t - s`` alone: the latest phase that still has a shortest route (so a packet never returns to an earlier
dimension), then a direction along which the phase's restricted distance drops by one (ties by parity, as
above). Crossing a twisted wraparound shifts later coordinates, so a phase may run more than once round its
"ring" (a helix); the restricted distances account for that exactly.

>>> from tpufleet.shapes import parse_shape
>>> P, L = tables(parse_shape("4x4x8", twisted=True))
>>> int(L.max()), round(float(L.sum()) / (128 * 127), 4)
(6, 3.4646)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    PortTable = npt.NDArray[np.int8]  # [t, s] output port; -1 deliver, -2 unroutable
    HopTable = npt.NDArray[np.int16]  # [t, s] hop count; -1 unroutable

Order = tuple[int, int, int]  # a dimension order, first dimension first
DEFAULT_ORDER: Order = (0, 1, 2)


def _ring(n: int, wraps: bool) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int16]]:
    """[n_s, n_t] direction (+1/-1/0) and distance tables of one dimension."""
    import numpy as np

    a = np.arange(n)[:, None]
    b = np.arange(n)[None, :]
    if not wraps:
        return np.sign(b - a).astype(np.int8), np.abs(b - a).astype(np.int16)
    fwd, back = (b - a) % n, (a - b) % n
    tie_plus = np.broadcast_to(a % 2 == 0, fwd.shape)
    direction = np.where(fwd < back, 1, np.where(back < fwd, -1, np.where(tie_plus, 1, -1)))
    direction[fwd == 0] = 0
    return direction.astype(np.int8), np.minimum(fwd, back).astype(np.int16)


def regular_tables(shape: Shape, order: Order = DEFAULT_ORDER) -> tuple[PortTable, HopTable]:
    """Closed-form DOR for untwisted tori and meshes: (P[t, s] int8, L[t, s] int16).

    Wherever the first dimension of the order differs, the port depends on that dimension alone, so the table
    is filled block by block (about N^2 writes in all) instead of testing every pair.
    """
    import numpy as np

    dims = shape.dims
    n = shape.chips
    ports: list[npt.NDArray[np.int8]] = []
    dists: list[npt.NDArray[np.int16]] = []
    for d in range(3):
        direction, distance = _ring(dims[d], shape.wraps and dims[d] > 1)
        port = np.where(direction > 0, 2 * d, np.where(direction < 0, 2 * d + 1, -1)).astype(np.int8)
        shape6 = [1] * 6
        shape6[d], shape6[3 + d] = dims[d], dims[d]
        ports.append(port.T.reshape(shape6))  # axes (tx, ty, tz, sx, sy, sz)
        dists.append(distance.T.reshape(shape6))
    P = np.empty(dims + dims, dtype=np.int8)

    def at(fixed: list[tuple[int, int]], fill_value: int | None) -> tuple[slice | int, ...]:
        index: list[slice | int] = [slice(None)] * 6
        for k, v in fixed:
            index[k] = index[3 + k] = fill_value if fill_value is not None else v
        return tuple(index)

    def fill(fixed: list[tuple[int, int]]) -> None:
        d = order[len(fixed)]
        P[at(fixed, None)] = ports[d][at(fixed, 0)]
        if len(fixed) < 2:
            for i in range(dims[d]):
                fill([*fixed, (d, i)])

    fill([])
    L = np.empty(dims + dims, dtype=np.int16)
    np.add(dists[0] + dists[1], dists[2], out=L)  # the sum is written once, straight into the table
    return P.reshape(n, n), L.reshape(n, n)


# chips: the last shape's offsets are kept up to this size (16 MB on 2,048 chips, 340 MB on a TPU7x superpod's
# 9,216: less than the temporaries of making them again, twisted 12x24x24 with one OCS down 33.2 -> 29.1 s of CPU
# and 1.84 -> 1.25 GB peak)
OFFSETS_KEPT_LIMIT = 9216
_kept_offsets: dict[Shape, npt.NDArray[np.int32]] = {}


def group_offsets(shape: Shape) -> npt.NDArray[np.int32]:
    """[t, s] -> id of the group element t - s (the offset), for a torus or twisted torus; read-only.

    The last shape's are kept up to OFFSETS_KEPT_LIMIT chips: a fault analysis of a twisted slice makes the tables
    of several orders, each from the same offsets (0.1-0.2 s each on twisted 8x16x16).

    >>> from tpufleet.shapes import parse_shape
    >>> g = group_offsets(parse_shape("4x4x8", twisted=True))
    >>> g is group_offsets(parse_shape("4x4x8", twisted=True)), g.flags.writeable, g.shape
    (True, False, (128, 128))
    """
    kept = _kept_offsets.get(shape)
    if kept is None:
        kept = _group_offsets(shape)
        kept.flags.writeable = False
        if shape.chips <= OFFSETS_KEPT_LIMIT:
            _kept_offsets.clear()
            _kept_offsets[shape] = kept
    return kept


def _group_offsets(shape: Shape) -> npt.NDArray[np.int32]:
    import numpy as np

    from tpufleet.topology import coordinates

    xyz = coordinates(shape.dims).astype(np.int32)
    X, Y, Z = shape.dims
    (_, txy, txz), (_, _, tyz), _ = shape.twist
    vx = xyz[:, None, 0] - xyz[None, :, 0]
    vy = xyz[:, None, 1] - xyz[None, :, 1]
    vz = xyz[:, None, 2] - xyz[None, :, 2]
    q = np.floor_divide(vx, X)
    vx -= q * X
    vy += q * txy
    vz += q * txz
    q = np.floor_divide(vy, Y)
    vy -= q * Y
    vz += q * tyz
    vz %= Z
    offsets: npt.NDArray[np.int32] = ((vx * Y + vy) * Z + vz).astype(np.int32)
    return offsets


def _restricted_bfs(nbr: npt.NDArray[np.int32], ports: list[int]) -> npt.NDArray[np.int32]:
    import numpy as np

    from tpufleet.topology import bfs_distances

    masked = np.full_like(nbr, -1)
    masked[:, ports] = nbr[:, ports]
    dist = bfs_distances(masked, 0).astype(np.int32)
    dist[dist < 0] = 1 << 20
    return dist


def offset_moves(shape: Shape, order: Order = DEFAULT_ORDER) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int32]]:
    """[8, N] port to take for each parity class of the current chip and each offset, and [N] distances."""
    import numpy as np

    from tpufleet.topology import neighbors

    nbr = neighbors(shape)
    n = len(nbr)
    first, mid, last = order
    full = _restricted_bfs(nbr, [0, 1, 2, 3, 4, 5])
    tail = _restricted_bfs(nbr, [2 * mid, 2 * mid + 1, 2 * last, 2 * last + 1])
    only_last = _restricted_bfs(nbr, [2 * last, 2 * last + 1])
    phase_dim = np.where(only_last == full, last, np.where(tail == full, mid, first))
    phase_dist = np.where(only_last == full, only_last, np.where(tail == full, tail, full))
    restricted = {last: only_last, mid: tail, first: full}
    g = np.arange(n)
    moves = np.full((8, n), -1, dtype=np.int8)
    for d in range(3):
        here = phase_dim == d
        dist_d = restricted[d]
        # moving +d from s changes the offset t - s by -e_d: the node reached from g through port -d
        plus_ok = dist_d[nbr[g, 2 * d + 1]] == phase_dist - 1
        minus_ok = dist_d[nbr[g, 2 * d]] == phase_dist - 1
        for cls in range(8):
            even = ((cls >> (2 - d)) & 1) == 0
            prefer_plus = plus_ok & (~minus_ok | even)
            choice = np.where(prefer_plus, 2 * d, np.where(minus_ok, 2 * d + 1, -1))
            moves[cls, here] = choice[here]
    moves[:, 0] = -1
    return moves, full


def twisted_tables(shape: Shape, order: Order = DEFAULT_ORDER) -> tuple[PortTable, HopTable]:
    return tables_from_moves(shape, *offset_moves(shape, order))


def tables_from_moves(
    shape: Shape, moves: npt.NDArray[np.int8], dist: npt.NDArray[np.int32]
) -> tuple[PortTable, HopTable]:
    """Tables (P[t, s], L[t, s]) of a rule that picks a move by the chip's parity class and the offset t - s."""
    import numpy as np

    from tpufleet.topology import coordinates

    xyz = coordinates(shape.dims)
    cls = ((xyz[:, 0] % 2) << 2 | (xyz[:, 1] % 2) << 1 | (xyz[:, 2] % 2)).astype(np.int64)
    g = group_offsets(shape)
    P = moves[cls[None, :], g]
    L = dist[g].astype(np.int16)
    return P, L


def tables(shape: Shape, order: Order = DEFAULT_ORDER) -> tuple[PortTable, HopTable]:
    """Healthy DOR tables (P[t, s], L[t, s]) for the shape in the given dimension order."""
    if shape.twisted:
        return twisted_tables(shape, order)
    return regular_tables(shape, order)
