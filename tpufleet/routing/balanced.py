"""Load-balanced minimal dimension-order tables for healthy twisted tori, pure.

A twisted torus is a Cayley graph of an abelian group, so a route is fixed by its remaining offset ``g = t - s``
and, for tie-splitting, the parity class of the chip it is at. Many offsets have several shortest routes (round
the helix or straight across); the plain rule (`dor.offset_moves`) always takes the latest phase, which piles
traffic onto the untwisted dimension (twisted 4x4x8: max all-to-all load 82 against an optimum of 73.33).

Here every (parity class, offset) state picks its first move among those that keep the route shortest and in
dimension order (never back to an earlier dimension, never reversing inside one), so the tables stay minimal
and deadlock-free with the dateline VCs. States are settled shortest first, so a state's whole route is known
when it is chosen: its hop counts per (parity class of the chip, port) are its first hop plus its successor's.
Because routes depend only on offset and class, the all-to-all load of every link of one class and port is the
sum of those counts over all states; each state takes the move that keeps the largest such sum lowest (ties:
the smaller sum of squares, so load spreads evenly).

>>> from tpufleet.shapes import parse_shape
>>> from tpufleet.routing.analysis import RouteTables
>>> from tpufleet.routing.loads import symmetric_load
>>> from tpufleet.topology import neighbors
>>> shape = parse_shape("4x4x8", twisted=True)
>>> P, L = balanced_twisted_tables(shape)
>>> int(symmetric_load(RouteTables(shape, neighbors(shape), P, L)).max())
78
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from tpufleet.constants import OPPOSITE
from tpufleet.routing.dor import DEFAULT_ORDER, Order
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.dor import HopTable, PortTable

CLASSES = 8  # parity of x, y, z
BALANCE_LIMIT = 4096  # chips; the settling loop is per state, so larger slices keep the plain rule


@lru_cache(maxsize=16)
def balanced_moves(shape: Shape, order: Order = DEFAULT_ORDER) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int32]]:
    """[8, N] first move per (parity class, offset), and [N] distances, as `dor.offset_moves` returns them.

    Kept per (shape, order), read-only: the settling loop is Python per state (about 45 ms on twisted 8x8x16, 8*N
    states of six moves), and every fault analysis of a twisted slice makes the tables of each order it tries (a
    fleet simulation asked for them 119 times in twelve days). A few KiB each: [8, N] bytes and [N] distances.

    >>> from tpufleet.shapes import parse_shape
    >>> moves, dist = balanced_moves(parse_shape("4x4x8", twisted=True))
    >>> balanced_moves(parse_shape("4x4x8", twisted=True))[0] is moves, moves.flags.writeable, moves.shape
    (True, False, (8, 128))
    """
    import numpy as np

    from tpufleet.routing.dor import _restricted_bfs
    from tpufleet.topology import neighbors

    nbr = neighbors(shape)
    n = len(nbr)
    dist = _restricted_bfs(nbr, [0, 1, 2, 3, 4, 5])
    rank = {d: i for i, d in enumerate(order)}
    moves = np.full((CLASSES, n), -1, dtype=np.int8)
    first_rank = np.full((CLASSES, n), 3, dtype=np.int8)  # the identity (offset 0) has no move: rank past all
    counts = np.zeros((CLASSES, n, CLASSES * 6), dtype=np.int32)
    total = np.zeros(CLASSES * 6, dtype=np.int64)
    for g in np.argsort(dist, kind="stable")[1:].tolist():
        for cls in range(CLASSES):
            best: tuple[int, int, int, int, int] | None = None
            for p in range(6):
                g2 = int(nbr[g, OPPOSITE[p]])
                if g2 < 0 or dist[g2] != dist[g] - 1:
                    continue
                d = p // 2
                cls2 = cls ^ (1 << (2 - d))
                r2 = int(first_rank[cls2, g2])
                if rank[d] > r2 or (rank[d] == r2 and moves[cls2, g2] != p):
                    continue  # back to an earlier dimension, or reversing inside one
                here = cls * 6 + p
                after = total + counts[cls2, g2]
                after[here] += 1
                key = (int(after.max()), int((after * after).sum()), p, cls2, g2)
                if best is None or key < best:
                    best = key
            assert best is not None  # a shortest path exists, and its dimension-sorted form is allowed
            _, _, p, cls2, g2 = best
            moves[cls, g] = p
            first_rank[cls, g] = rank[p // 2]
            counts[cls, g] = counts[cls2, g2]
            counts[cls, g, cls * 6 + p] += 1
            total += counts[cls, g]
    moves.setflags(write=False)
    dist.setflags(write=False)
    return moves, dist


def balanced_twisted_tables(shape: Shape, order: Order = DEFAULT_ORDER) -> tuple[PortTable, HopTable]:
    """Tables (P[t, s], L[t, s]) from `balanced_moves`."""
    from tpufleet.routing.dor import tables_from_moves

    return tables_from_moves(shape, *balanced_moves(shape, order))
