"""The split tables of twisted tori (`routing.split`) relieved when they are made, pure.

Their busiest links are relieved by moving leaves (`relieve.relieve` with dest_orders): a chip whose route to t
carries no other chip's takes a first hop to another neighbour, which keeps t's dimension order and crosses no
wraparound, and goes on as that neighbour's route. The hop adds one channel dependency, as a hop of t's order on
its first VC would, so the tables stay within their 3 VCs (checked: a set that needs more is kept as made). The
routes the ring collectives use never move, so their times stay the split tables' own.

Measured on twisted 8x8x16 (one OCS down, all-to-all max link load, the healthy optimum 1189.33): x/3 1303 ->
1271, y/3 1304 -> 1270, z/3 1315 -> 1294 for the lightest set, its later-leg set (1352) -> 1267; which set
relieves well depends on the fault, so the sets are relieved in turn until one is within SPLIT_GOOD of the live
graph's distance bound. Over nine single OCS (x/0, x/3, x/9, y/0, y/3, y/14, z/0, z/3, z/7): 1257-1275 (0.933-0.946
of the healthy optimum; 1303-1325 before), the modelled 1 GiB all-reduce 1.61x the healthy time as before, 3.6-5.0 s
of CPU a `routes` against 2.5-2.8 s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.analysis import RouteTables
    from tpufleet.routing.candidates import Ranked
    from tpufleet.routing.relieve import I64, Tree
    from tpufleet.shapes import Shape
    from tpufleet.topology import ChipGraph

# chips: split tables relieved up to this size (twisted 8x8x16: 0.6-2.3 s of CPU a set; 8x16x16 below; not measured
# above, where `routing.split` alone takes 3-54 s)
SPLIT_RELIEVE_LIMIT = 2048
# chips: above this, a set's rounds end once it is within SPLIT_GOOD of the distance bound (twisted 8x16x16, one OCS
# down: relieved on, the rounds cost 0.2-0.3 s each near the end, 12-35 s of CPU a `routes` for 3119-3189; stopped,
# 6.4-8.8 s for 3234, against 3.8-4.1 s for 3297-3338 as made)
SPLIT_FULL_LIMIT = 1024
# of the live graph's distance bound: a set relieved to this load ends the search (twisted 8x8x16: 1195.79 / 0.925
# = 1292.7, 0.92 of the healthy optimum)
SPLIT_GOOD = 0.925
SPLIT_VCS = 3  # what the split tables are made to fit (`tree_families.splits_apply`)


def relieved_in_turn(shape: Shape, expected: ChipGraph, graph: ChipGraph, made: list[Ranked]) -> list[Ranked]:
    """`made` (`tree_families.split_made`'s sets for `graph`), each in turn relieved where that makes it lighter
    within SPLIT_VCS (the lightest first, then the others from the last made: the later-leg set, made from the
    lighter pair, relieves best where the lightest does not, twisted 8x8x16 with z/0, z/3 or z/7 down), until one
    is within SPLIT_GOOD of `graph`'s distance bound; the rest as made. Above SPLIT_FULL_LIMIT chips a set's rounds
    end there too. Up to SPLIT_RELIEVE_LIMIT chips; above, `made` itself."""
    from tpufleet.routing.optimum import distance_bound

    if len(expected) > SPLIT_RELIEVE_LIMIT:
        return made
    good = distance_bound(graph, shape) / SPLIT_GOOD
    stop = good if len(expected) > SPLIT_FULL_LIMIT else None
    out = list(made)
    lightest = min(range(len(made)), key=lambda i: made[i][0])
    for i in [lightest, *(i for i in reversed(range(len(made))) if i != lightest)]:
        out[i] = _relieved(made[i], expected, graph, stop) or made[i]
        if out[i][0][0] <= good:
            break
    return out


def _relieved(ranked: Ranked, expected: ChipGraph, graph: ChipGraph, stop: float | None) -> Ranked | None:
    """One set relieved, its rank key and how it was made updated; None when that is no lighter or does not fit
    SPLIT_VCS; with `stop`, its rounds end at or under that load."""
    from tpufleet.routing.fitting import analyzed, fits
    from tpufleet.routing.relieve import relieve

    (load, used), rt, info = ranked
    done = relieve(rt, graph, expected, leaves=True, dest_orders=True, stop_at=stop)
    if done is None or done.max_load >= load or not fits(analyzed(done.tables, SPLIT_VCS)[0], SPLIT_VCS):
        return None
    how = f"{info['strategy']}, busiest links relieved"
    return (
        (done.max_load, used),
        done.tables,
        {**info, "strategy": how, "max_load": done.max_load, "relieved": done.moved},
    )


def dest_ranks(rt: RouteTables) -> I64:
    """[t, d]: dimension d's place in destination t's dimension order."""
    import numpy as np

    ranks = np.array([np.argsort(np.asarray(order)) for order in rt.orders], dtype=np.int64)
    classes = rt.dest_class if rt.dest_class is not None else np.zeros(rt.n, dtype=np.int64)
    out: I64 = ranks[classes]
    return out


def keeps_dest_order(tree: Tree, t: I64, s: I64, port: I64, w: I64) -> npt.NDArray[np.bool_]:
    """Whether s's hop through `port` to w, followed by w's hop towards t, keeps t's dimension order: w is t, or
    w's hop is no wild one and of a later dimension in that order (or the same port); and s's hop crosses no
    wraparound. The moved hop starts its route (a leaf's), travels on the wild VC, and the route goes on as w's
    own from there, so the hop adds one dependency, as a hop of t's order on its first VC would."""
    import numpy as np

    assert tree.dest_rank is not None and tree.wraps is not None
    after = tree.P[t, w].astype(np.int64)
    rank = tree.dest_rank[t]
    rows = np.arange(len(t))
    ordered = (rank[rows, port // 2] < rank[rows, np.maximum(after, 0) // 2]) | (port == after)
    keeps: npt.NDArray[np.bool_] = (w == t) | (ordered & ~tree.wild[t, w] & ~tree.wraps[s * 6 + port])
    return keeps


def under_top(tree: Tree, t: I64, s: I64, port: I64, amount: I64, top: int) -> npt.NDArray[np.bool_]:
    """Which of a batch's moves (s to its neighbour through `port`, towards t) to make: in turn, those whose new
    route keeps every link under `top` with the moves before it added (each was checked alone, and a batch's moves
    on the same link would together carry it over: twisted 8x8x16, one x OCS, rounds undone at 1297 otherwise)."""
    import numpy as np

    n, Pf, nf = tree.n, tree.P.ravel(), tree.nbr.ravel()
    move, link = [np.arange(len(t))], [s * 6 + port]
    at = np.arange(len(t))
    cur = nf[link[0]].astype(np.int64)
    while len(at):  # the rest of each new route: w's own
        going = cur != t[at]
        at, cur = at[going], cur[going]
        hop = cur * 6 + Pf[t[at] * n + cur]
        move.append(at)
        link.append(hop)
        cur = nf[hop].astype(np.int64)
    m, k = np.concatenate(move), np.concatenate(link)
    by = np.lexsort((m, k))  # by link, then in the batch's order
    m, k = m[by], k[by]
    added = np.cumsum(amount[m])
    first = np.r_[0, np.flatnonzero(np.diff(k)) + 1]
    start = np.repeat(first, np.diff(np.r_[first, len(k)]))
    before = added - amount[m] - (added[start] - amount[m[start]])  # the earlier moves' amounts on the link
    over = np.zeros(len(t), dtype=bool)
    over[m[tree.load[k] + before + amount[m] >= top]] = True
    out: npt.NDArray[np.bool_] = ~over
    return out
