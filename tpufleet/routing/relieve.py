"""Relieving the busiest links of a table set: whole subtrees moved off them by a wild hop, pure.

Tables are per destination, so the routes to a destination t form a tree, and the traffic a link (a, p) carries
towards t is the weight of a's subtree (every chip whose route passes a, a included). Under faults the busiest
links are few and all-to-all puts them a few percent above the rest; rerouting the other pairs cannot relieve
them, but repointing a's own entry can: a steps to another live neighbour w (a wild hop) whose route to t neither
passes a (no loop) nor any link that would then carry as much as the busiest. The whole subtree follows.

Rounds: every pair whose own hop is on a link at the current maximum M is a candidate (or, in the `leaves`
variant, every leaf whose route crosses such a link anywhere: it moves alone); in batches (one move per
destination a batch, as subtrees interact) each takes its cheapest neighbour when the subtree's weight fits under
M there, the loads and weights are moved along both paths, and a round counts when it lowers (M, links at M);
a round that does not is undone and ends the search, so the result is never worse than the tables given. Entries
on the routes the ring collectives use never move (`_ring_routes`).

A moved entry is marked wild, so its hop travels on the wild VC and the packet returns to its order's first VC
after it (the rule of `analysis`); unlike a repair's wild first hop it may be taken mid-route, which adds channel
dependencies into the wild VC. The caller decides with the usual channel-dependency check, and keeps the tables
given when the relieved ones need more VCs than allowed.

>>> from tpufleet.shapes import parse_shape
>>> from tpufleet.topology import neighbors
>>> from tpufleet.routing.candidates import candidates
>>> shape = parse_shape("4x4x4")
>>> expected = neighbors(shape)
>>> b = int(expected[0, 0])  # chip 0's +x neighbour
>>> alive = expected.copy(); alive[0, 0] = alive[b, 1] = -1  # the link between them fails, both ways
>>> rt, info = candidates(shape, expected, alive, "wild-first")[0]
>>> info["max_load"]
39.0
>>> relieved = relieve(rt, alive, expected, leaves=True)
>>> relieved.max_load, relieved.moved
(37.0, 36)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.analysis import RouteTables
    from tpufleet.routing.dor import Order
    from tpufleet.topology import ChipGraph

    I64 = npt.NDArray[np.int64]

RELIEVE_LIMIT = 512  # chips: beyond this the rounds cost seconds (8x8x8: 0.2-1.5 s a table set)
RELIEVED_CANDIDATES = 1  # per graph (live, each OCS pattern): the first table sets that fit the VC budget
BATCHES = 32
# with dest_orders, whose batches keep every link under the maximum together: fewer, larger batches (twisted
# 8x8x16, one OCS down: 32 -> 8 batches, x/3 1276 -> 1271, z/3 1271 -> 1267 in 5.1 -> 3.6 s; 4: z/3 1290)
DEST_ORDER_BATCHES = 8
MIN_BATCH = 16  # pairs: smaller batches cost more in overhead than they win in accuracy
MAX_ROUNDS = 200
FAR = 1 << 40  # the cost of a port that is no option


@dataclass
class Relieved:
    tables: RouteTables
    max_load: float
    moved: int  # entries repointed (each marked wild)


@dataclass
class Tree:
    """The tables being relieved: ports, wild marks, the live graph, per-link load and per-pair carried weight."""

    P: npt.NDArray[np.int8]
    wild: npt.NDArray[np.bool_]
    nbr: ChipGraph
    load: I64  # [N * 6]
    weight: I64  # [N * N] flat t * N + s: chips whose route to t passes s (s included)
    kept: npt.NDArray[np.bool_]  # [t, s] entries never repointed: on a collective's ring route (`_ring_routes`)
    # with `relieve(wild_order=...)`: each dimension's place in that order, and which links cross a wraparound
    rank: I64 | None = None
    wraps: npt.NDArray[np.bool_] | None = None
    # with `relieve(dest_orders=True)`: [t, d] dimension d's place in destination t's order (`wraps` set too)
    dest_rank: I64 | None = None

    @property
    def n(self) -> int:
        return len(self.nbr)

    def walk_max(self, t: I64, start: I64) -> I64:
        """The most loaded link of each route start -> t."""
        import numpy as np

        n, Pf, nf = self.n, self.P.ravel(), self.nbr.ravel()
        worst = np.zeros(len(start), dtype=np.int64)
        at = np.flatnonzero(start != t)  # the walks still under way, compacted as they arrive
        cur, t = start[at], t[at]
        for _ in range(n):
            if not len(at):
                break
            link = cur * 6 + Pf[t * n + cur]
            worst[at] = np.maximum(worst[at], self.load[link])
            cur = nf[link].astype(np.int64)
            going = cur != t
            at, cur, t = at[going], cur[going], t[going]
        return worst

    def entering(self, top: int) -> I64:
        """The pairs t * N + s whose own hop is on a link carrying `top` or more (s != t)."""
        import numpy as np

        link = np.flatnonzero(self.load >= top)
        t, k = np.nonzero(self.P[:, link // 6] == (link % 6)[None, :])
        return t.astype(np.int64) * self.n + link[k] // 6

    def behind(self, top: int) -> I64:
        """The pairs t * N + s, sorted, whose route to t crosses a link carrying `top` or more: each destination's
        subtrees under such links, found downwards from them, each pair once (a few thousand pairs where walking
        every route visits all N * N; identical to `walk_max(t, s) >= top`)."""
        import numpy as np

        n = self.n
        into = np.full((n, 6), -1, dtype=np.int64)  # into[c, p ^ 1] = u: u's live link through port p enters c
        u, p = np.nonzero(self.nbr >= 0)  # (read from the links leaving u: one may be dead the other way)
        into[self.nbr[u, p], p ^ 1] = u
        found = np.zeros(n * n, dtype=bool)
        pair = self.entering(top)
        found[pair] = True
        t, c = np.divmod(pair, n)
        while len(t):  # one level down: the chips u whose hop towards t enters c
            t, back = np.repeat(t, 6), np.tile(np.arange(6), len(c))
            u = into[np.repeat(c, 6), back]
            ok = u >= 0
            t, u, back = t[ok], u[ok], back[ok]
            pair = t * n + u
            ok = (self.P.ravel()[pair] == (back ^ 1)) & ~found[pair]  # (under two busy links: found once)
            pair = pair[ok]
            found[pair] = True
            t, c = np.divmod(pair, n)
        return np.flatnonzero(found)

    def passes(self, t: I64, start: I64, chip: I64) -> npt.NDArray[np.bool_]:
        """Whether each route start -> t passes `chip`."""
        import numpy as np

        n, Pf, nf = self.n, self.P.ravel(), self.nbr.ravel()
        cur, hit = start.copy(), np.zeros(len(start), dtype=bool)
        for _ in range(n):
            hit |= cur == chip
            moving = cur != t
            if not moving.any():
                break
            cur = np.where(moving, nf[cur * 6 + np.maximum(Pf[t * n + cur], 0)], cur)
        return hit

    def carry(self, t: I64, start: I64, amount: I64) -> None:
        """Add `amount` to every link of each route start -> t, and to the weight of every chip after start."""
        import numpy as np

        n, Pf, nf = self.n, self.P.ravel(), self.nbr.ravel()
        cur, first = start.copy(), True
        for _ in range(n):
            moving = cur != t
            cur, t, amount = cur[moving], t[moving], amount[moving]
            if not len(cur):
                break
            if not first:
                np.add.at(self.weight, t * n + cur, amount)
            first = False
            link = cur * 6 + Pf[t * n + cur]
            np.add.at(self.load, link, amount)
            cur = nf[link]


def relieve(
    rt: RouteTables,
    graph: ChipGraph,
    expected: ChipGraph,
    leaves: bool,
    seed: int = 0,
    wild_order: Order | None = None,
    dest_orders: bool = False,
    stop_at: float | None = None,
) -> Relieved | None:
    """`rt`'s tables with their busiest links relieved, on the live graph `graph` the tables were made for, by
    moving subtrees or (`leaves`) single leaves, never an entry on a route the ring collectives use (their rings
    laid out on the healthy graph `expected`); None when no round lowered the maximum or the number of links
    carrying it (or a pair does not arrive). With `wild_order` (leaves only: tables whose wild hops keep that
    dimension order among themselves, `routing.preleg_mesh`), a moved leaf's wild hop followed by another wild hop
    keeps it too: a hop of an earlier dimension, or the same dimension and port, and no wraparound. With
    `dest_orders` (leaves only: twisted tori's split tables, `routing.split_relieve`), a moved leaf's hop keeps its
    destination's own dimension order (`split_relieve.keeps_dest_order`), and the moves of a batch together keep
    every link under the maximum (`split_relieve.under_top`). With `stop_at`, the rounds end once the maximum is at
    or under it."""
    import numpy as np

    from tpufleet.routing.analysis import Levels, datelines, flow, link_load, verify

    levels = Levels(rt.L)
    routable = verify(rt, levels)
    if not routable[~np.eye(rt.n, dtype=bool)].all():
        return None
    weight, _ = flow(rt, routable, levels, masks=False)
    tree = Tree(
        rt.P.copy(),
        rt.wild.copy() if rt.wild is not None else np.zeros(rt.P.shape, dtype=bool),
        graph,
        link_load(rt, weight).ravel().astype(np.int64),
        weight.astype(np.int64),
        _ring_routes(rt, expected),
    )
    if wild_order is not None:
        tree.rank = np.argsort(np.asarray(wild_order)).astype(np.int64)
        tree.wraps = datelines(rt.shape).reshape(-1)
    if dest_orders:
        from tpufleet.routing.split_relieve import dest_ranks

        tree.dest_rank = dest_ranks(rt)
        tree.wraps = datelines(rt.shape).reshape(-1)
    rng = np.random.default_rng(seed)
    moved = 0
    for _ in range(MAX_ROUNDS):
        done = _round(tree, rng, leaves)
        moved += done
        if not done or (stop_at is not None and tree.load.max() <= stop_at):
            break
    changed = tree.P != rt.P  # an entry may move twice, or back
    if not moved or not changed.any():
        return None
    if wild_order is None:
        tree.wild[~changed] = rt.wild[~changed] if rt.wild is not None else False
    # else an entry moved back keeps its wild mark: it came back as a wild hop checked against the wild order, and
    # the chip it leads to may have moved since (wild now); marked a leg again, it would lead a leg into a wild hop
    from tpufleet.routing.analysis import RouteTables

    tables = RouteTables(
        rt.shape, rt.nbr, tree.P, _hops(tree), tree.wild, rt.dest_class, rt.orders, rt.algorithm, False, None
    )
    return Relieved(tables, float(tree.load.max()), int(changed.sum()))


def _round(tree: Tree, rng: np.random.Generator, leaves: bool) -> int:
    """One round at the current maximum, of subtrees at the busy links or of leaves behind them: the moves made,
    or 0 (and the tree as it was) when it did not help."""
    import numpy as np

    n = tree.n
    top = int(tree.load.max())
    before = (top, int((tree.load == top).sum()))
    kept = (tree.P.copy(), tree.wild.copy(), tree.load.copy(), tree.weight.copy())
    if leaves:  # a leaf moves alone: wherever on its route the busy link is
        pair = tree.behind(top)
        pair = pair[tree.weight[pair] == 1]
    else:  # a subtree moves off the busy link it enters
        pair = np.unique(tree.entering(top))
    t, s = np.divmod(pair, n)
    open_ = ~tree.kept[t, s]
    t, s = t[open_], s[open_]
    order = rng.permutation(len(t))
    t, s = t[order], s[order]
    moved = 0
    batches = BATCHES if tree.dest_rank is None else DEST_ORDER_BATCHES
    for part in np.array_split(np.arange(len(t)), max(1, min(batches, len(t) // MIN_BATCH))):
        moved += _batch(tree, t[part], s[part], top)
    after = (int(tree.load.max()), int((tree.load == tree.load.max()).sum()))
    if moved and after < before:
        return moved
    tree.P[:], tree.wild[:], tree.load[:], tree.weight[:] = kept
    return 0


def _batch(tree: Tree, t: I64, s: I64, top: int) -> int:
    """Move, of the pairs (t, s) whose route still crosses a link at `top`, those with a neighbour that takes the
    whole subtree under `top`; at most one a destination. Returns how many moved."""
    import numpy as np

    n = tree.n
    still = tree.walk_max(t, s) >= top
    if tree.rank is not None or tree.dest_rank is not None:  # only leaves: one that a pair moved into since the
        # round began has a route to keep
        still &= tree.weight[t * n + s] == 1
    t, s = t[still], s[still]
    amount = tree.weight[t * n + s]
    cost = np.full((len(t), 6), FAR, dtype=np.int64)
    row, port = np.nonzero((tree.nbr[s] >= 0) & (np.arange(6)[None, :] != tree.P[t, s][:, None]))
    w = tree.nbr[s[row], port].astype(np.int64)
    ok = (w == t[row]) | (tree.P[t[row], w] >= 0)
    row, port, w = row[ok], port[ok], w[ok]
    if tree.rank is not None or tree.dest_rank is not None:
        from tpufleet.routing.split_relieve import keeps_dest_order

        keeps = _keeps_wild_order if tree.rank is not None else keeps_dest_order
        ok = keeps(tree, t[row], s[row], port, w)
        row, port, w = row[ok], port[ok], w[ok]
    ok = ~tree.passes(t[row], w, s[row])  # the new route must not come back through the chip that moves
    row, port, w = row[ok], port[ok], w[ok]
    worst = np.maximum(tree.load[s[row] * 6 + port], tree.walk_max(t[row], w))
    cost[row, port] = worst + amount[row]
    port = np.argmin(cost, axis=1)  # the lowest port on a tie
    fits = np.flatnonzero(cost[np.arange(len(t)), port] < top)
    fits = np.sort(fits[np.unique(t[fits], return_index=True)[1]])  # one move a destination
    if tree.dest_rank is not None:
        from tpufleet.routing.split_relieve import under_top

        fits = fits[under_top(tree, t[fits], s[fits], port[fits], amount[fits], top)]
    t, s, port, amount = t[fits], s[fits], port[fits], amount[fits]
    tree.carry(t, s, -amount)
    tree.P[t, s] = port
    tree.wild[t, s] = True
    tree.carry(t, s, amount)
    return len(t)


def _keeps_wild_order(tree: Tree, t: I64, s: I64, port: I64, w: I64) -> npt.NDArray[np.bool_]:
    """Whether s's wild hop through `port` to w, followed by w's hop towards t, keeps the tables' wild order: w's
    hop is in order (or w is t), or it is wild too and comes later in the order (or is the same dimension and
    port), and s's hop crosses no wraparound."""
    import numpy as np

    assert tree.rank is not None and tree.wraps is not None
    after = tree.P[t, w].astype(np.int64)
    after_wild = tree.wild[t, w] & (w != t)
    dim, after_dim = port // 2, np.maximum(after, 0) // 2
    ordered = (tree.rank[dim] < tree.rank[after_dim]) | (port == after)
    keeps: npt.NDArray[np.bool_] = ~after_wild | (ordered & ~tree.wraps[s * 6 + port])
    return keeps


def _ring_routes(rt: RouteTables, expected: ChipGraph) -> npt.NDArray[np.bool_]:
    """[t, s]: the entry lies on a route between consecutive members of a ring the collectives schedule (the
    snake ring, and every dimension's rings in every order: on twisted tori some members are two or three hops
    apart), either way round. Ring all-reduce, all-gather and reduce-scatter send only along these, so the routes
    stay exactly as they are and so does the time of every ring collective. (All-to-all collectives send every
    pair, relieved ones included: direct all-to-all gains, dim-by-dim may lose a few percent.)"""
    import numpy as np

    from tpufleet.routing.loads import ring_step_pairs

    n = rt.n
    out = np.zeros((n, n), dtype=bool)
    cur, t = ring_step_pairs(rt.shape, expected)
    Pf, nf = rt.P.ravel(), rt.nbr.ravel()
    for _ in range(n):
        moving = (cur != t) & (Pf[t * n + cur] >= 0)
        t, cur = t[moving], cur[moving]
        if not len(cur):
            break
        out[t, cur] = True
        cur = nf[cur * 6 + Pf[t * n + cur]]
    return out


def _hops(tree: Tree) -> npt.NDArray[np.int16]:
    """[t, s] hop counts of the tree's routes (-1 unroutable), by pointer doubling over all pairs at once."""
    import numpy as np

    n = tree.n
    t, s = np.divmod(np.arange(n * n, dtype=np.int64), n)
    Pf = tree.P.ravel().astype(np.int64)
    step = Pf >= 0
    succ = np.where(step, t * n + tree.nbr.ravel()[s * 6 + np.maximum(Pf, 0)], np.arange(n * n))
    hops = step.astype(np.int64)
    while True:  # each pass doubles the steps `hops` counts; a target (or unroutable pair) is its own successor
        after = succ[succ]
        if (after == succ).all():
            break
        hops, succ = hops + hops[succ], after
    out = np.where(Pf == -2, -1, hops).astype(np.int16)
    return out.reshape(n, n)
