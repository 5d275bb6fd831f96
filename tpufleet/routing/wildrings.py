"""The first round of wild-first repairs on plain dimension-order tables of an untwisted torus, batch for batch
as `tolerant.wild_first` does it, with routes read from their ring runs instead of walked, pure.

In the first round a broken pair may only step to a neighbour whose own route is intact, so which candidates are
valid is fixed before the first batch (later batches only make more pairs wild, and those are never candidates)
and every candidate's route is a plain dimension-order one: at most one run per dimension. Each batch refreshes
the ring window maxima from the current load (`RingPaths.refresh`), reads each candidate's route maximum as two
lookups per run, and adds the chosen routes as difference arrays per ring. The choices, tables and loads are
exactly those of the walk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.rings import RingPaths

    I64 = npt.NDArray[np.int64]


def first_round(
    todo: I64, n: int, alive: npt.NDArray[np.int32], tables: tuple[npt.NDArray[np.int8], npt.NDArray[np.int16],
    npt.NDArray[np.bool_]], bad: npt.NDArray[np.bool_], extra: I64, paths: RingPaths, batches: int,
) -> tuple[list[I64], bool]:  # fmt: skip
    """Run round one over `todo` in `batches` batches; returns the pairs left and whether any was repaired."""
    import numpy as np

    P, L, W = tables
    Pf, Lf, Wf = P.ravel(), L.ravel(), W.ravel()
    valid = _valid(todo, n, alive, bad)
    rows, ports = np.nonzero(valid)
    bounds = np.cumsum([0] + [len(part) for part in np.array_split(np.arange(len(todo)), batches)])
    edges = np.searchsorted(rows, bounds)
    left: list[I64] = []
    fixed_any = False
    for r0, r1, e0, e1 in zip(bounds[:-1], bounds[1:], edges[:-1], edges[1:], strict=True):
        batch = todo[r0:r1]
        t, s = np.divmod(batch, n)
        cost = np.full((r1 - r0, 6), np.iinfo(np.int64).max, dtype=np.int64)
        if e1 > e0:
            rr, pp = rows[e0:e1] - r0, ports[e0:e1]
            tt, ss = t[rr], s[rr]
            w = alive[ss, pp].astype(np.int64)
            paths.refresh(extra)
            worst = np.maximum(extra[ss * 6 + pp], paths.route_max(w, tt))
            jitter = (ss * 7 + tt * 13 + pp * 5) % 6
            cost[rr, pp] = (worst * 64 + Lf[tt * n + w]) * 8 + jitter
        pick = np.argmin(cost, axis=1)
        ok = valid[r0:r1][np.arange(r1 - r0), pick]
        if not ok.any():
            left.append(batch)
            continue
        fixed_any = True
        wb, tb = take_picks(batch[ok], t[ok], s[ok], pick[ok], alive, (Pf, Lf, Wf), bad, extra, n)
        extra += paths.count(wb, tb, len(extra))
        left.append(batch[~ok])
    return left, fixed_any


def take_picks(
    b: I64, tb: I64, sb: I64, pb: I64, alive: npt.NDArray[np.int32],
    flat: tuple[npt.NDArray[np.int8], npt.NDArray[np.int16], npt.NDArray[np.bool_]], bad: npt.NDArray[np.bool_],
    extra: I64, n: int,
) -> tuple[I64, I64]:  # fmt: skip
    """Fix pairs `b` (targets `tb`, sources `sb`) on their picked wild first hop `pb`: port, hop count (one more
    than the rest of the route from the next chip) and wild mark; count the first hops' load. Returns the next
    chips and the targets, whose remaining routes the caller adds to the load its own way."""
    import numpy as np

    Pf, Lf, Wf = flat
    wb = alive[sb, pb].astype(np.int64)
    Pf[b] = pb
    Lf[b] = Lf[tb * n + wb] + 1
    Wf[b] = True
    bad[b] = False
    np.add.at(extra, sb * 6 + pb, 1)
    return wb, tb


def _valid(todo: I64, n: int, alive: npt.NDArray[np.int32], bad: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """[len(todo), 6]: the neighbour through this port is live and its own route to the target intact."""
    import numpy as np

    t, s = np.divmod(todo, n)
    cand = alive[s]
    valid = cand >= 0
    cidx = t[:, None] * n + np.maximum(cand, 0)
    valid &= ~bad[cidx]
    # `wild_first` also asks for a port (or the target itself); every entry of a plain table that is not broken
    # has one, so that second lookup into the N^2 table is left out here.
    return valid
