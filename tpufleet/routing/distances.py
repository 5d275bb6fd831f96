"""Exact hop distances of a chip graph, for every ordered pair at once (bit-parallel BFS), pure.

``reach[v]`` holds, as a bit set over sources, every chip within k hops of v; one more level ORs in the sets of
v's in-neighbours. With N/64 words a row, a 4096-chip slice costs a few 2 MiB gathers per level, so the graph's
own diameter and mean hop count come cheaply even when faults make it irregular (a Cayley-graph shortcut no
longer applies).

>>> from tpufleet.shapes import parse_shape
>>> from tpufleet.topology import neighbors
>>> d = graph_distances(neighbors(parse_shape("4x4x8", twisted=True)))
>>> d.diameter, round(d.mean_hops, 4), d.unreachable_pairs
(6, 3.4646, 0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.shapes import Shape


@dataclass(frozen=True)
class GraphDistances:
    diameter: int  # longest shortest path between two chips that can reach each other
    mean_hops: float  # mean over ordered pairs of distinct chips that can reach each other
    unreachable_pairs: int  # ordered pairs of distinct chips with no path at all


def _in_neighbours(nbr: npt.NDArray[np.int32]) -> npt.NDArray[np.int64]:
    """[N, 6]: the chips with a link into each chip (-1 padding)."""
    import numpy as np

    n = len(nbr)
    src, port = np.nonzero(nbr >= 0)
    dst = nbr[src, port].astype(np.int64)
    order = np.argsort(dst, kind="stable")
    src, dst = src[order], dst[order]
    slot = np.arange(len(dst)) - np.searchsorted(dst, dst, side="left")
    out = np.full((n, max(6, int(slot.max()) + 1 if len(slot) else 6)), -1, dtype=np.int64)
    out[dst, slot] = src
    return out


def graph_distances(nbr: npt.NDArray[np.int32], shape: Shape | None = None) -> GraphDistances:
    """Diameter, mean hops and unreachable pairs of the live graph.

    With the shape of an untwisted torus, a graph that a translation maps onto itself (a healthy torus, or the
    periodic pattern of OCS failures: the same links missing at every cube) has the same distances from every
    chip of an orbit, so only one chip per orbit is a BFS source, and its sums count for the whole orbit.
    """
    import numpy as np

    n = len(nbr)
    sources = np.arange(n)
    if shape is not None and shape.wraps and not shape.twisted:
        sources = orbit_representatives(shape, nbr)
    words = (len(sources) + 63) // 64
    reach = np.zeros((n + 1, words), dtype=np.uint64)  # row n stays empty: where missing in-neighbours point
    bit = np.arange(len(sources))
    reach[sources, bit // 64] = np.left_shift(np.uint64(1), (bit % 64).astype(np.uint64))
    inn = _in_neighbours(nbr)
    inn[inn < 0] = n
    grown = np.empty_like(reach)
    gathered = np.empty((n, words), dtype=np.uint64)
    known, total, level = len(sources), 0, 0
    while True:
        grown[:] = reach
        for p in range(inn.shape[1]):
            np.take(reach, inn[:, p], axis=0, out=gathered)
            grown[:n] |= gathered
        count = int(np.bitwise_count(grown).sum())
        if count == known:
            break
        level += 1
        total += level * (count - known)
        known, (reach, grown) = count, (grown, reach)
    orbit = n // len(sources)  # every source stands for this many chips (translations act freely)
    known, total = known * orbit, total * orbit
    pairs = known - n
    return GraphDistances(level, total / pairs if pairs else 0.0, n * n - known)


def orbit_representatives(shape: Shape, nbr: npt.NDArray[np.int32]) -> npt.NDArray[np.intp]:
    """Chips with every coordinate below its dimension's period: the smallest divisor k of the side such that
    moving every chip k along that dimension maps the graph onto itself."""
    import numpy as np

    from tpufleet.topology import coordinates

    xyz = coordinates(shape.dims).astype(np.int64)
    dims = np.array(shape.dims)
    periods = []
    for d, size in enumerate(shape.dims):
        for k in range(1, size + 1):
            if size % k == 0 and _invariant(nbr, xyz, dims, d, k):
                periods.append(k)
                break
    keep = np.all(xyz < np.array(periods), axis=1)
    return np.flatnonzero(keep)


def _invariant(
    nbr: npt.NDArray[np.int32], xyz: npt.NDArray[np.int64], dims: npt.NDArray[np.int64], d: int, k: int
) -> bool:
    import numpy as np

    if k == dims[d]:
        return True
    moved = xyz.copy()
    moved[:, d] = (moved[:, d] + k) % dims[d]
    shift = np.ravel_multi_index(tuple(moved.T), tuple(dims))
    image = np.where(nbr >= 0, shift[np.maximum(nbr, 0)], -1)
    return bool((nbr[shift] == image).all())
