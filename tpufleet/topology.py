"""Chip-level graphs of tori, twisted tori and meshes, and their distance metrics.

Chips are numbered row-major over slice coordinates: ``id = (x*Y + y)*Z + z``.
Ports are numbered 0..5 as +x, -x, +y, -y, +z, -z; a missing neighbour is -1.

>>> m = metrics(parse_shape("4x4x8", twisted=True))
>>> m["diameter"], round(m["mean_hops"], 4), m["bisection_links"]
(6, 3.4646, 64)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpufleet.constants import DIRECTIONS
from tpufleet.shapes import Shape, parse_shape  # noqa: F401  (parse_shape used by the doctest)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    ChipGraph = npt.NDArray[np.int32]  # [N, 6] the chip reached through each port, -1 where no link

PORTS = DIRECTIONS


def coordinates(dims: tuple[int, ...]) -> npt.NDArray[np.int32]:
    """[N, 3] int array of (x, y, z) for chip ids 0..N-1 (row-major)."""
    import numpy as np

    grids = np.indices(dims).reshape(3, -1).T
    return np.ascontiguousarray(grids, dtype=np.int32)


def neighbors(shape: Shape) -> ChipGraph:
    """[N, 6] int32 neighbour table of the slice's chip graph (-1 where no link)."""
    import numpy as np

    dims = np.array(shape.dims)
    xyz = coordinates(shape.dims).astype(np.int64)
    twist = np.array(shape.twist)
    out = np.full((len(xyz), 6), -1, dtype=np.int32)
    for d in range(3):
        for s, sign in enumerate((1, -1)):
            nxt = xyz.copy()
            nxt[:, d] += sign
            crossed = (nxt[:, d] < 0) | (nxt[:, d] >= dims[d])
            if shape.wraps:
                nxt[:, d] %= dims[d]
                nxt[crossed] += sign * twist[d]
                nxt %= dims
                ok = np.ones(len(xyz), dtype=bool)
            else:
                ok = ~crossed
            ids = np.ravel_multi_index(tuple(np.where(ok[:, None], nxt, 0).T), shape.dims)
            out[:, 2 * d + s] = np.where(ok, ids, -1)
    if not shape.wraps:
        return out
    # A ring of one chip has no link to itself.
    for d in range(3):
        if shape.dims[d] == 1 and not any(shape.twist[d]):
            out[:, 2 * d : 2 * d + 2] = -1
    return out


def bfs_distances(nbr: npt.NDArray[np.integer[Any]], source: int) -> npt.NDArray[np.int32]:
    """Hop distance from `source` to every chip (-1 where unreachable), frontier-at-a-time."""
    import numpy as np

    n = len(nbr)
    dist = np.full(n, -1, dtype=np.int32)
    dist[source] = 0
    frontier = np.array([source])
    level = 0
    while len(frontier):
        level += 1
        cand = nbr[frontier].ravel()
        cand = cand[cand >= 0]
        cand = np.unique(cand[dist[cand] < 0])
        dist[cand] = level
        frontier = cand
    return dist


def _path_sums(n: int, ring: bool) -> tuple[int, int]:
    """(sum of distances over ordered pairs, max distance) on a ring or a path of n nodes."""
    total = 0
    for a in range(n):
        for b in range(n):
            d = abs(a - b)
            total += min(d, n - d) if ring else d
    return total, (n // 2 if ring else n - 1)


def bisection_links(shape: Shape, nbr: npt.NDArray[np.integer[Any]] | None = None) -> int:
    """Fewest bidirectional links cut by a plane perpendicular to one axis that halves the slice."""
    import numpy as np

    nbr = neighbors(shape) if nbr is None else nbr
    xyz = coordinates(shape.dims)
    best: int | None = None
    for d in range(3):
        n = shape.dims[d]
        if n < 2:
            continue
        side = xyz[:, d] < n // 2
        cut = 0
        for port in (0, 2, 4):  # each bidirectional link once, by its + end
            has = nbr[:, port] >= 0
            src = np.nonzero(has)[0]
            cut += int(np.count_nonzero(side[src] != side[nbr[src, port]]))
        best = cut if best is None else min(best, cut)
    return best or 0


def metrics(shape: Shape) -> dict[str, Any]:
    """Chips, cubes, diameter, mean hops over ordered pairs of distinct chips, bisection links."""
    import numpy as np

    nbr = neighbors(shape)
    n = shape.chips
    if shape.wraps:
        # Tori and twisted tori are Cayley graphs: one BFS sees every chip's view.
        dist = bfs_distances(nbr, 0)
        diameter, total = int(dist.max()), float(dist.sum()) * n
    else:
        diameter, total = 0, 0.0
        for size in shape.dims:
            s, m = _path_sums(size, ring=False)
            diameter += m
            total += s * (n // size) ** 2
    mean = total / (n * (n - 1)) if n > 1 else 0.0
    return {
        "shape": shape.text,
        "twisted": shape.twisted,
        "chips": n,
        "cubes": shape.cubes,
        "machines": shape.machines,
        "topology": "twisted torus" if shape.twisted else ("torus" if shape.wraps else "mesh"),
        "diameter": diameter,
        "mean_hops": round(mean, 6),
        "bisection_links": bisection_links(shape, nbr),
        "links": int(np.count_nonzero(nbr >= 0)) // 2,
    }
