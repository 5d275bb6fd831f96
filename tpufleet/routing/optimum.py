"""The healthy optimum of all-to-all traffic: the least maximum link load any routing of a whole slice reaches.

Uniform all-to-all (one unit per ordered pair of distinct chips), any routing, any split of a pair over paths.
Two lower bounds hold for every routing:

* the cut bound: cutting the rings of dimension d into two halves of a and b chips leaves, per direction,
  a * b * (N / k) ** 2 pairs to cross 2 * N / k links on a torus (N / k on a mesh), so the max load is at least
  a * b * N / (2 * k) on a torus and a * b * N / k on a mesh (N k / 8 on an even torus: 512 on 8x8x8);
* the distance bound: every routing spends at least the sum of all hop distances, over the links.

When the tool's own healthy tables already reach the larger bound, that is the optimum (untwisted tori and
meshes: minimal dimension-order routes with ties split evenly). Otherwise (twisted tori) the exact LP is solved:
a wrapped slice is a Cayley graph of its chip group (the unit steps along x, y and z commute), whose translations
map a port's links onto the same port's links. An optimal routing invariant under the translations exists (the
average of the translated copies of any optimal one), and it is fixed by one destination's flow f: the load of a
link of port p is then the sum of f over every link of port p. So the LP is: minimise U over a flow f to chip 0
that every other chip sends one unit into, with sum_{links of port p} f <= U for the six ports; N * 6 variables
(12,289 on twisted 8x16x16), solved by HiGHS. benchmarks/routing_quality.py solves the full LP reduced by every
automorphism, as the independent check.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tpufleet.topology import ChipGraph

LP_LIMIT = 8192  # chips: the translation LP of a bigger slice is left to its bound


@dataclass(frozen=True)
class Optimum:
    load: float  # the healthy optimum of the all-to-all max link load (or its best lower bound when not exact)
    exact: bool
    basis: str  # "cut bound" (reached by the tool's tables), "distance bound" (reached), "LP", or "bound"


def cut_bound(shape: Shape) -> float:
    """The larger of the bisection bounds of the slice's dimensions (see the module docstring); 0 for a twisted
    torus, whose twist adds links across those cuts (its distance bound and LP stand instead)."""
    if shape.twisted:
        return 0.0
    n = shape.chips
    best = 0.0
    for k in shape.dims:
        if k < 2:
            continue
        a, b = k // 2, k - k // 2
        best = max(best, a * b * n / (2 * k) if shape.wraps else a * b * n / k)
    return best


def kept_at_most(shape: Shape, live: ChipGraph, healthy_load: float) -> float | None:
    """An upper bound on the all-to-all share any routing of the live graph `live` keeps (the healthy tables' max
    link load `healthy_load` over its max link load), found without routing: cut the rings of a dimension of k
    chips into halves of a and k - a planes; the a * (k - a) * (N / k) ** 2 pairs from one half to the other
    cross the live links of the cut in that direction (the + links leaving its last plane, the - links leaving
    its first), so any max load is at least that over their number. A missing cable leaves fewer. None for a
    twisted torus (its twist adds links across those cuts) and a mesh."""
    if shape.twisted or not shape.wraps or healthy_load <= 0:
        return None
    best = 1.0
    for across, links in _ring_cuts(shape, live):
        best = min(best, healthy_load * float(links) / across)
    return best


def live_cut_bound(shape: Shape, live: ChipGraph) -> float:
    """A lower bound on the all-to-all max link load of any routing of the live graph `live`: the most pairs per
    live link across one of `kept_at_most`'s cuts (inf when a cut has none); 0 for a twisted torus and a mesh.
    8x8x8 with x/3, y/5 and z/2 down: 546.13, the LP optimum."""
    if shape.twisted or not shape.wraps:
        return 0.0
    return max((across / links if links else float("inf") for across, links in _ring_cuts(shape, live)), default=0.0)


def _ring_cuts(shape: Shape, live: ChipGraph) -> Iterator[tuple[int, int]]:
    """(pairs across, the fewer live links across, either way) of each cut of a wrapped slice's rings in halves
    (see `kept_at_most`)."""
    import numpy as np

    from tpufleet.topology import coordinates

    xyz = coordinates(shape.dims)
    for d, k in enumerate(shape.dims):
        if k < 2:
            continue
        a, across = k // 2, (k // 2) * (k - k // 2) * (shape.chips // k) ** 2
        plus = np.bincount(xyz[live[:, 2 * d] >= 0, d], minlength=k)  # live links from plane x to x + 1
        minus = np.bincount(xyz[live[:, 2 * d + 1] >= 0, d], minlength=k)  # from plane x to x - 1
        for p in range(k):  # one half: planes p .. p + a - 1
            leaving = plus[(p + a - 1) % k] + minus[p]
            entering = plus[(p - 1) % k] + minus[(p + a) % k]
            yield across, int(min(leaving, entering))


def distance_bound(nbr: ChipGraph, shape: Shape | None = None) -> float:
    """Sum of all pairwise hop distances over the live directed links."""
    import numpy as np

    from tpufleet.routing.distances import graph_distances

    links = int((nbr >= 0).sum())
    n = len(nbr)
    if not links or n < 2:
        return 0.0
    g = graph_distances(nbr.astype(np.int32), shape)
    return float(g.mean_hops * n * (n - 1) / links)


def healthy_optimum(shape: Shape, expected: ChipGraph, tables_load: float) -> Optimum:
    """The healthy all-to-all optimum of `shape` (whose whole graph is `expected`), given the max load of the
    tool's own healthy tables: that load when it reaches a lower bound, else the translation LP (exact), else
    the bound."""
    import numpy as np

    graph = np.ascontiguousarray(expected, dtype=np.int32)
    return _healthy_optimum(shape, round(float(tables_load), 6), graph.tobytes(), graph.shape)


@lru_cache(maxsize=32)
def _healthy_optimum(shape: Shape, tables_load: float, graph: bytes, rows: tuple[int, ...]) -> Optimum:
    import numpy as np

    expected = np.frombuffer(graph, dtype=np.int32).reshape(rows)
    if tables_load <= cut_bound(shape) + 1e-6:
        return Optimum(tables_load, True, "cut bound")
    bound = max(cut_bound(shape), distance_bound(expected, shape))
    if tables_load <= bound + 1e-6:
        return Optimum(tables_load, True, "distance bound")
    if shape.wraps and len(expected) <= LP_LIMIT and is_cayley(expected):
        return Optimum(translation_lp(expected), True, "LP")
    return Optimum(bound, False, "bound")


def is_cayley(nbr: ChipGraph) -> bool:
    """Every port is a permutation of the chips (no missing link) and the unit steps commute: the slice is a
    Cayley graph of the group they generate, whose translations keep each port's links."""
    import numpy as np

    if (nbr < 0).any():
        return False
    chips = np.arange(len(nbr))
    steps = [nbr[:, p] for p in range(nbr.shape[1])]
    if any(len(np.unique(s)) != len(nbr) for s in steps):
        return False
    inverse_ok = all((nbr[nbr[:, 2 * d], 2 * d + 1] == chips).all() for d in range(nbr.shape[1] // 2))
    return inverse_ok and all((a[b] == b[a]).all() for a in steps for b in steps)


def translation_lp(nbr: ChipGraph) -> float:
    """The exact all-to-all optimum of a Cayley graph `nbr` (see the module docstring), by HiGHS."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n, ports = nbr.shape
    src = np.repeat(np.arange(n), ports)
    dst = nbr.ravel().astype(np.int64)
    port = np.tile(np.arange(ports), n)
    e = len(src)
    cols = np.arange(e)
    inc = sp.csr_matrix((np.r_[np.ones(e), -np.ones(e)], (np.r_[src, dst], np.r_[cols, cols])), shape=(n, e))
    a_eq = sp.hstack([inc, sp.csr_matrix((n, 1))], format="csr")
    b_eq = np.ones(n)
    b_eq[0] = -(n - 1)
    per_port = sp.csr_matrix((np.ones(e), (port, cols)), shape=(ports, e))
    a_ub = sp.hstack([per_port, sp.csr_matrix(-np.ones((ports, 1)))], format="csr")
    c = np.zeros(e + 1)
    c[-1] = 1.0
    upper = np.full(e + 1, np.inf)
    upper[:e][src == 0] = 0.0  # flow to chip 0 never needs to leave it
    bounds = np.stack([np.zeros(e + 1), upper], axis=1)
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(ports), A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs-ipm")
    if res.status != 0:
        raise RuntimeError(f"healthy optimum LP not solved: {res.message}")
    return float(res.fun)
