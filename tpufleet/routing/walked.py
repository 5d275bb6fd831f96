"""Wild-first repairs on any tables, batch for batch as `tolerant.wild_first` does them, with every candidate's
route walked once for a chunk of batches instead of once a batch, pure.

In the first round a broken pair may only step to a neighbour whose own route is intact: which candidates are
valid is fixed before the first batch (a pair the round repairs turns wild, and wild pairs are never candidates
then), and an intact route reads only table entries of pairs that are not broken, which the round never changes.
So a candidate's links, hop count and tie-break are the same whenever its batch comes; only the loads change. A
chunk's candidates are walked together, their links kept step by step (padded with the first hop's link), and a
batch then costs a gather and a maximum. In a chain round a candidate valid as its chunk starts stays valid (a
pair only ever gains a route, and a route once made never changes), so the same holds for it; a neighbour
repaired in an earlier batch of the chunk is walked in its batch, as before. Should a route read an entry of a
pair still broken or cross a dead link (broken pairs handed over that are not closed upstream), that chunk is
repaired batch by batch, walking (`_repair_batch`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpufleet.routing.wildrings import take_picks

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray, IntArray
    from tpufleet.routing.dor import PortTable
    from tpufleet.topology import ChipGraph

    I64 = npt.NDArray[np.int64]
    Load = npt.NDArray[np.int64]  # [N * 6] units per directed link
    Flat = tuple[npt.NDArray[np.int8], npt.NDArray[np.int16], npt.NDArray[np.bool_]]

CHUNK_PAIRS = 1 << 14  # broken pairs whose candidates are walked at once (a few MB a step)


@dataclass
class _Walked:
    """A chunk's valid candidates, by pair then port (the order `np.nonzero` gives the batch repair)."""

    rows: I64  # the pair's index in the chunk
    ports: I64
    static: I64  # the cost without the load: hops * 8 + jitter
    links: I64  # [1 + steps, k]: the first hop's link, then the route's link per step (the first hop's past its end)
    length: I64  # steps of the route
    pairs: I64  # the chunk's pairs (flat t * N + s), and the order that sorts them
    order: I64
    routes: I64  # [pairs, 1 + limit]: a pair's links once repaired in the round (its first hop's past the end)
    route_length: I64


def repair_round(
    alive: npt.NDArray[np.int32], todo: I64, bounds: list[int], bad: npt.NDArray[np.bool_], extra: I64,
    limit: int, flat: Flat, round_no: int,
) -> tuple[bool, list[I64]]:  # fmt: skip
    """Round `round_no` of `wild_first` over `todo`, cut at `bounds` into batches; whether any pair was repaired,
    and the pairs left, batch by batch."""
    import numpy as np

    fixed_any, left = False, []
    first, batches = 0, len(bounds) - 1
    while first < batches:
        last = max(first + 1, int(np.searchsorted(bounds, bounds[first] + CHUNK_PAIRS, side="right")) - 1)
        start = bounds[first]
        walked = _walk(alive, todo[start : bounds[last]], bad, limit, flat, round_no)
        for b in range(first, last):
            batch = todo[bounds[b] : bounds[b + 1]]
            if walked is None:
                fixed, rest = _repair_batch(flat[0], alive, batch, round_no, bad, extra, limit, flat)
            else:
                fixed, rest = _pick(walked, batch, bounds[b] - start, (alive, bad, extra), limit, flat, round_no)
            fixed_any |= fixed
            left.append(rest)
        first = last
    return fixed_any, left


def _walk(
    alive: npt.NDArray[np.int32], chunk: I64, bad: npt.NDArray[np.bool_], limit: int, flat: Flat, round_no: int
) -> _Walked | None:
    """Every candidate of the pairs `chunk` valid as the chunk starts, and its route's links; None when a route
    reads the entry of a pair still broken."""
    import numpy as np

    Pf, Lf, Wf = flat
    n = len(alive)
    t, s = np.divmod(chunk, n)
    cand = alive[s]
    valid = cand >= 0
    cidx = t[:, None] * n + np.maximum(cand, 0)
    valid &= ~bad[cidx]
    valid &= (cand == t[:, None]) | (Pf[cidx] >= 0)
    if round_no == 0:
        valid &= ~Wf[cidx]
    rows, ports = np.nonzero(valid)
    w = cand[rows, ports].astype(np.int64)
    tt = t[rows]
    first = s[rows] * 6 + ports
    jitter = (s[rows] * 7 + tt * 13 + ports * 5 + round_no) % 6
    static = Lf[tt * n + w].astype(np.int64) * 8 + jitter
    steps = _route_links(Pf, alive.ravel(), bad, w, tt, first, limit)
    if steps is None:
        return None
    links, length = steps
    routes = np.zeros((len(chunk), limit + 1), dtype=np.int64)
    made = _Walked(rows.astype(np.int64), ports.astype(np.int64), static, links, length, chunk, np.argsort(chunk), routes,
        np.zeros(len(chunk), dtype=np.int64))  # fmt: skip
    return made


def _route_links(
    Pf: npt.NDArray[np.int8], nbr: npt.NDArray[np.int32], bad: npt.NDArray[np.bool_], start: I64, t: I64,
    first: I64, limit: int,
) -> tuple[I64, I64] | None:  # fmt: skip
    """[1 + steps, k] links of the routes from `start` to `t` (row 0 `first`, and `first` past a route's end), and
    each route's steps, as `_walk_max` walks them; None when one reads a broken pair's entry or steps onto a dead
    link."""
    import numpy as np

    n = len(nbr) // 6
    rows = [first]
    length = np.zeros(len(start), dtype=np.int64)
    at, cur, row = np.arange(len(start)), start.copy(), t * n
    for _ in range(limit):
        moving = cur != t[at]
        at, cur, row = at[moving], cur[moving], row[moving]
        if not len(at):
            break
        if bad[row + cur].any():
            return None
        p = Pf[row + cur].astype(np.int64)
        keep = p >= 0
        at, cur, row, p = at[keep], cur[keep], row[keep], p[keep]
        if not len(at):
            break
        link = cur * 6 + p
        step = first.copy()
        step[at] = link
        rows.append(step)
        length[at] += 1
        cur = nbr[link].astype(np.int64)
        if (cur < 0).any():  # onto a dead link: a pair left out of the broken ones
            return None
    return np.stack(rows), length


def _pick(
    walked: _Walked, batch: I64, offset: int, state: tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_], I64],
    limit: int, flat: Flat, round_no: int,
) -> tuple[bool, I64]:  # fmt: skip
    """One batch (pairs `offset`.. of the chunk): each pair's cheapest candidate on the current load, as
    `_repair_batch` picks it; its route added to the load. Whether any was repaired, and the pairs left."""
    import numpy as np

    alive, bad, extra = state
    n, k = len(alive), len(batch)
    e0, e1 = (int(e) for e in np.searchsorted(walked.rows, [offset, offset + k]))
    rows, ports = walked.rows[e0:e1] - offset, walked.ports[e0:e1]
    cost = np.full((k, 6), np.iinfo(np.int64).max, dtype=np.int64)
    which = np.full((k, 6), -1, dtype=np.int64)  # the candidate walked; -2 - r: the chunk's pair r repaired since
    if e1 > e0:
        worst = np.take(extra, walked.links[:, e0:e1]).max(axis=0)
        cost[rows, ports] = worst * 512 + walked.static[e0:e1]
        which[rows, ports] = np.arange(e0, e1)
    t, s = np.divmod(batch, n)
    if round_no:  # a chain round: neighbours repaired since the chunk started serve too
        _newly_valid(cost, which, (t, s), walked, state, limit, flat, round_no)
    pick = np.argmin(cost, axis=1)
    chosen = which[np.arange(k), pick]
    ok = chosen != -1
    if not ok.any():
        return False, batch
    take_picks(batch[ok], t[ok], s[ok], pick[ok], alive, flat, bad, extra, n)
    fixed = np.arange(offset, offset + k)[ok]
    _record(walked, fixed, chosen[ok], s[ok] * 6 + pick[ok], limit)
    links = walked.routes[fixed, 1:]
    on = np.arange(1, limit + 1) < walked.route_length[fixed][:, None]
    extra += np.bincount(links[on], minlength=len(extra))
    return True, batch[~ok]


def _record(walked: _Walked, fixed: I64, chosen: I64, first: I64, limit: int) -> None:
    """The routes of the chunk's pairs `fixed` (their first hops `first`, then the `chosen` candidate's route:
    walked, or -2 - r for the chunk's pair r repaired in an earlier batch), as a walk of `limit` steps from the
    neighbour reads them."""
    import numpy as np

    routes, length = walked.routes, walked.route_length
    routes[fixed] = first[:, None]
    mine = chosen >= 0
    steps = len(walked.links)
    routes[fixed[mine], 1:steps] = walked.links[1:, chosen[mine]].T
    length[fixed[mine]] = 1 + walked.length[chosen[mine]]
    later = -2 - chosen[~mine]
    routes[fixed[~mine], 1:] = routes[later, :limit]
    length[fixed[~mine]] = 1 + np.minimum(length[later], limit)


def _newly_valid(
    cost: I64, which: I64, pairs: tuple[I64, I64], walked: _Walked,
    state: tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_], I64], limit: int, flat: Flat, round_no: int,
) -> None:  # fmt: skip
    """Cost (as `_repair_batch` has it) of the batch's candidates that were not valid as the chunk started and are
    now: their neighbour's pair, repaired in an earlier batch of this chain round, is one of the chunk's, whose
    route is kept (-2 - its place in the chunk, in `which`)."""
    import numpy as np

    alive, bad, extra = state
    Pf, Lf, _ = flat
    n = len(alive)
    t, s = pairs
    cand = alive[s]
    valid = (cand >= 0) & (which == -1)
    cidx = t[:, None] * n + np.maximum(cand, 0)
    valid &= ~bad[cidx]
    valid &= (cand == t[:, None]) | (Pf[cidx] >= 0)
    rows, ports = np.nonzero(valid)
    if not len(rows):
        return
    w = cand[rows, ports].astype(np.int64)
    tt = t[rows]
    order = walked.order
    later = order[np.searchsorted(walked.pairs, tt * n + w, sorter=order)]
    path = np.take(extra, walked.routes[later, :limit]).max(axis=1)
    first = extra[s[rows] * 6 + ports]
    hops = Lf[tt * n + w].astype(np.int64)
    jitter = (s[rows] * 7 + tt * 13 + ports * 5 + round_no) % 6
    cost[rows, ports] = (np.maximum(first, path) * 64 + hops) * 8 + jitter
    which[rows, ports] = -2 - later


def _repair_batch(
    P: PortTable, alive: ChipGraph, batch: npt.NDArray[np.int64], round_no: int, bad: BoolArray,
    extra: Load, limit: int, flat: tuple[npt.NDArray[np.int8], npt.NDArray[np.int16], BoolArray],
) -> tuple[bool, npt.NDArray[np.int64]]:  # fmt: skip
    """One batch of broken pairs (flat indices `t * n + s`) in one round of `wild_first`: each takes
    the first hop to a neighbour whose whole new route has the lightest busiest link. Returns whether any pair was
    repaired, and the pairs left broken."""
    import numpy as np

    Pf, Lf, Wf = flat
    n = len(alive)
    t, s = np.divmod(batch, n)
    cand = alive[s]  # [k, 6]
    valid = cand >= 0
    cidx = t[:, None] * n + np.maximum(cand, 0)
    valid &= ~bad[cidx]
    valid &= (cand == t[:, None]) | (Pf[cidx] >= 0)
    if round_no == 0:
        valid &= ~Wf[cidx]  # first round: only neighbours on their own intact route
    k = len(batch)
    cost = np.full((k, 6), np.iinfo(np.int64).max, dtype=np.int64)
    rows, ports = np.nonzero(valid)
    if len(rows):
        w = cand[rows, ports].astype(np.int64)
        tt = t[rows]
        first = extra[s[rows] * 6 + ports]
        path = _walk_max(P, alive, extra, w, tt, limit)
        hops = Lf[tt * n + w].astype(np.int64)
        jitter = (s[rows] * 7 + tt * 13 + ports * 5 + round_no) % 6
        cost[rows, ports] = (np.maximum(first, path) * 64 + hops) * 8 + jitter
    pick = np.argmin(cost, axis=1)
    ok = valid[np.arange(k), pick]
    if not ok.any():
        return False, batch
    wb, tb = take_picks(batch[ok], t[ok], s[ok], pick[ok], alive, (Pf, Lf, Wf), bad, extra, n)
    _walk_add(P, alive, extra, wb, tb, limit)
    return True, batch[~ok]


def _walk_max(P: PortTable, nbr: ChipGraph, extra: Load, start: IntArray, t: IntArray, limit: int) -> Load:
    """Max detour traffic on the links of the routes from `start` to `t` (vectorized walk)."""
    import numpy as np

    n = len(nbr)
    cur = start.copy()
    worst = np.zeros(len(cur), dtype=np.int64)
    for _ in range(limit):
        moving = cur != t
        if not moving.any():
            break
        p = P.ravel()[t * n + cur]
        step = moving & (p >= 0)
        if not step.any():
            break
        link = cur * 6 + np.maximum(p, 0)
        worst = np.where(step, np.maximum(worst, extra[link]), worst)
        cur = np.where(step, nbr.ravel()[link], cur)
    return worst


def _walk_add(P: PortTable, nbr: ChipGraph, extra: Load, start: IntArray, t: IntArray, limit: int) -> None:
    import numpy as np

    n = len(nbr)
    cur, t = start.copy(), t.copy()
    for _ in range(limit):
        moving = cur != t
        cur, t = cur[moving], t[moving]
        if not len(cur):
            break
        p = P.ravel()[t * n + cur]
        keep = p >= 0
        cur, t, p = cur[keep], t[keep], p[keep]
        link = cur * 6 + p
        np.add.at(extra, link, 1)
        cur = nbr.ravel()[link]
