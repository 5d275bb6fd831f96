"""Link loads of traffic other than the sweeps' all-to-all (pure), by walking the tables: given pairs
(`pair_load`), all-to-all from one chip of each parity class on translation-invariant tables (`symmetric_load`),
and each chip to its ring neighbours (`ring_allreduce_load`). `routing.analysis` sweeps every pair at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.analysis import RouteTables
    from tpufleet.shapes import Shape
    from tpufleet.topology import ChipGraph


def pair_load(rt: RouteTables, sources: npt.ArrayLike, targets: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Units per directed link for one unit from each source to its target, by walking the tables."""
    import numpy as np

    n = rt.n
    load = np.zeros(n * 6, dtype=np.int64)
    cur, t = np.asarray(sources, dtype=np.int64), np.asarray(targets, dtype=np.int64)
    for _ in range(int(rt.L.max()) + 2):
        moving = cur != t
        if not moving.any():
            break
        cur, t = cur[moving], t[moving]
        p = rt.P[t, cur].astype(np.int64)
        good = p >= 0
        cur, t, p = cur[good], t[good], p[good]
        np.add.at(load, cur * 6 + p, 1)
        cur = rt.nbr[cur, p].astype(np.int64)
    return load.reshape(n, 6)


def symmetric_load(rt: RouteTables) -> npt.NDArray[np.float64]:
    """All-to-all load of translation-invariant tables on a torus with even sides, from 8 chips' routes.

    Healthy DOR tables depend only on the offset t - s and the parity of s, so moving every pair by an even
    offset maps routes onto routes. Summing over those moves, the load of link (a, p) is the number of hops
    through port p, at chips of a's parity, on the routes from one chip of each parity class to every chip.
    """
    import numpy as np

    from tpufleet.topology import coordinates

    n = rt.n
    xyz = coordinates(rt.shape.dims)
    cls = (xyz[:, 0] % 2) * 4 + (xyz[:, 1] % 2) * 2 + (xyz[:, 2] % 2)
    reps = [int(np.flatnonzero(cls == c)[0]) for c in range(8)]
    sources = np.repeat(reps, n)
    targets = np.tile(np.arange(n), 8)
    per_link = pair_load(rt, sources, targets)  # [N, 6]
    counts = np.zeros((8, 6))
    np.add.at(counts, cls, per_link)
    load: npt.NDArray[np.float64] = counts[cls]
    return load


def symmetric(shape: Shape) -> bool:
    return shape.wraps and all(d % 2 == 0 for d in shape.dims)


def ring_step_pairs(shape: Shape, expected: ChipGraph) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(sources, destinations) of every step of the rings the collectives schedule (the snake ring, and every
    dimension's rings in every order: on twisted tori some members are two or three hops apart), both ways round."""
    import itertools

    import numpy as np

    from tpufleet.collectives.schedules import dim_phases, snake_ring

    rings = [snake_ring(shape, expected)]
    for order in itertools.permutations(range(3)):
        rings += [phase.rings for phase in dim_phases(shape, order, expected)]
    a = np.concatenate([r.ravel() for r in rings])
    b = np.concatenate([np.roll(r, -1, axis=1).ravel() for r in rings])
    return np.concatenate([a, b]), np.concatenate([b, a])


def ring_allreduce_load(rt: RouteTables, expected_nbr: ChipGraph) -> npt.NDArray[np.int64]:
    """Every chip sends one unit to each of its ring neighbours in every dimension (bidirectional rings)."""
    import numpy as np

    s, p = np.nonzero(expected_nbr >= 0)
    return pair_load(rt, s, expected_nbr[s, p])
