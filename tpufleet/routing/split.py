"""Tables for a twisted torus with one broken dimension (or two: `split_tables`' trees_for), within the hardware's
3 VCs: the broken dimension last for the destinations whose own ring is whole, and a load-aware tree for each
destination inside a broken ring, pure.

With the broken dimension d last (order B = (a, b, d)) a route enters d in the destination's own ring, so every
destination outside the broken rings keeps every route whole, and its tables are the plain dimension-order ones.
The destinations inside broken rings (the set H) cannot be reached that way: their ring is cut. Their routes take
d first instead, in the source's ring (order A = (d, a, b)), then the other two dimensions in B's order. Both
orders on their own dateline VC pairs need 4 VCs (`dimension_orders.order_pairs` on twisted tori); here A's legs after d
never cross a wraparound except on their last hop, so they need one VC, and the whole set fits 3: B's legs and A's
d leg on dateline pairs, A's later legs on a VC of their own (every dependency then runs from B's legs to the d legs
to A's later legs, an order without a cycle). Which VCs those are is left to the usual placement (`cdg.verdict`,
legs placed one by one), which checks the channel graph: nothing here is trusted for deadlock freedom.

The other way round also fits 3 (`later_pairs`): A's d leg on a VC of its own, never across a wraparound but on its
last hop, and A's later legs on B's dateline pairs, across a wraparound where that is the short way (A's a and b
come in B's order, so they add no dependency B's legs lack; nothing leads back into the d legs' VC). Which of the
two carries less depends on the slice: with the later legs on the pairs twisted 8x16x16 with an x OCS down carries
3338 against 3371, 12x24x24 16868 against 18039, 16x16x32 with a z OCS down 21451 against 21825; 8x8x16 1317
against 1303 (every d leg from one half of a broken ring's dimension to the other then crosses the middle link).

Each tree of H is built outward from its destination, one hop count at a time: a chip joins through a neighbour
already in the tree when the hop keeps the route's legs in A's order (one direction a leg, at most one wraparound on
the d leg, none mid-leg on the later ones, or the other way round), choosing among such neighbours the route whose
busiest link is lightest under the load so far (ties: the lightest sum). Chips no such route reaches (in a broken
ring, with the cut between them and every way out in d) take a wild first hop to a neighbour in the tree, as
`tolerant.wild_first` does.
Trees are built one destination at a time (a batch at a time above SINGLE_LIMIT chips) against the load so far,
twice (the second pass rebuilds each against all the others).

Measured (one x OCS down, all-to-all max link load within 3 VCs): twisted 8x8x16 1303 against 1443 for the best
single order (the healthy optimum 1189.3), twisted 8x16x16 3338 against 3548 (2976; 3371 without later_pairs).
What keeps them from more is in the README (Benchmarks, "Twisted tori with one OCS down").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray, Int64Array
    from tpufleet.routing.dor import HopTable, Order, PortTable
    from tpufleet.shapes import Shape
    from tpufleet.topology import ChipGraph

BATCH = 8  # destinations of H whose trees are built against one load, above SINGLE_LIMIT chips
# chips: one tree at a time up to this size (twisted 8x8x16: 1303 against 1317 in batches of 8, 1.0 s against 0.5 s)
SINGLE_LIMIT = 1024
PASSES = 2
CHAIN_ROUNDS = 4  # rounds of wild first hops, each to a chip reached in an earlier one (as `tolerant.wild_first`)
_LAST = 3  # the phase of the destination itself: after every leg
_NONE = 1 << 62


def split_orders(broken: int) -> list[tuple[Order, Order]]:
    """(B, A) pairs for broken dimension `broken`: B takes it last, A first, the other two in the same order."""
    a, b = [d for d in range(3) if d != broken]
    return [((a, b, broken), (broken, a, b)), ((b, a, broken), (broken, b, a))]


def split_tables(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    b_order: Order,
    a_order: Order,
    later_pairs: bool = False,
    trees_for: ChipGraph | None = None,
) -> tuple[PortTable, HopTable, BoolArray, Int64Array, Int64Array]:
    """(P, L, wild, class per destination (0: B, 1: A), all-to-all load per directed link) for `alive`.

    `later_pairs`: the trees' later legs may cross a wraparound (once a leg), their d leg only on its last hop; else
    the other way round. `trees_for`, with a second broken dimension e: the graph with d's dead links alone, whose
    broken B routes decide which destinations get trees; B = (e, h, d) then meets e's dead links on its first leg,
    in the source's ring, and those routes take a wild first hop out of it (`tolerant.wild_first`), against the
    trees' load. Pairs no route reaches are unroutable (-2), as in the other families."""
    import numpy as np

    from tpufleet.routing import dor
    from tpufleet.routing.analysis import Levels, RouteTables, flow, link_load
    from tpufleet.routing.tolerant import broken_pairs, wild_first

    n = len(expected)
    P, L = dor.tables(shape, b_order)
    inside = np.unique(broken_pairs(P, expected, alive if trees_for is None else trees_for) // n)
    dest_class = np.zeros(n, dtype=np.int64)
    dest_class[inside] = 1
    whole = np.ones((n, n), dtype=bool)
    whole[inside] = False
    rest = np.empty(0, dtype=np.int64)
    if trees_for is not None:
        broken = broken_pairs(P, expected, alive)
        rest = broken[~np.isin(broken // n, inside)]
        whole.ravel()[rest] = False
    plain = RouteTables(shape, alive, P, L)
    weight, _ = flow(plain, whole, Levels(L), masks=False)
    load = link_load(plain, weight).ravel().astype(np.int64)
    wild = np.zeros((n, n), dtype=bool)
    trees = _Trees(shape, alive, a_order, later_pairs)
    size = 1 if n <= SINGLE_LIMIT else BATCH
    batches = np.array_split(inside, max(1, -(-len(inside) // size)))
    build_in_passes(trees, batches, PASSES, load, (P, L, wild))
    if len(rest):
        repaired, _, load = wild_first(P, L, alive, rest, base=load)
        wild |= repaired
    return P, L, wild, dest_class, load


def build_in_passes(
    trees: _Trees,
    batches: list[Int64Array],
    passes: int,
    load: Int64Array,
    tables: tuple[PortTable, HopTable, BoolArray],
) -> None:
    """Each batch's trees built against `load` (updated in place: the other batches' trees, this batch's own of the
    pass before taken out), `passes` times over, into the rows of `tables` (ports, hops, wild flags)."""
    P, L, wild = tables
    carried: dict[int, Int64Array] = {}
    for _ in range(passes):
        for i, batch in enumerate(batches):
            if i in carried:
                load -= carried[i]
            port, hops, flags = trees.build(batch, load)
            carried[i] = trees.load(batch, port, hops)
            load += carried[i]
            P[batch], L[batch], wild[batch] = port, hops, flags


class _Trees:
    """Trees of order A's routes to a batch of destinations ([D, N] arrays, one row a destination)."""

    def __init__(self, shape: Shape, alive: ChipGraph, order: Order, later_pairs: bool) -> None:
        import numpy as np

        from tpufleet.routing.analysis import datelines

        self.later_pairs = later_pairs  # the later legs (phases 1, 2) may cross a wraparound, not the first
        self.alive = alive.astype(np.int64)
        self.n = len(alive)
        self.phase_array = np.asarray([order.index(d) for d in range(3)], dtype=np.int64)
        self.date = datelines(shape)

    def build(self, dest: Int64Array, load: Int64Array) -> tuple[PortTable, HopTable, BoolArray]:
        """(ports, hop counts, wild flags) [D, N] of the trees to `dest`, chosen against `load` ([N * 6])."""
        import numpy as np

        rows = np.arange(len(dest))
        s = _State(len(dest), self.n)
        s.phase[rows, dest], s.hops[rows, dest], s.port[rows, dest] = _LAST, 0, -1
        links = load.reshape(self.n, 6)
        frontier = (rows, dest.astype(np.int64))
        while len(frontier[0]):
            frontier = self._layer(s, frontier, links)
        self._wild_hops(s, links)
        unreached = s.hops < 0
        s.port[unreached] = -2
        return s.port.astype(np.int8), s.hops.astype(np.int16), s.wild

    def _offers(
        self, s: _State, frontier: tuple[Int64Array, Int64Array]
    ) -> tuple[Int64Array, Int64Array, Int64Array, Int64Array]:
        """Every live link into a chip of `frontier` from a chip not yet in its tree: flat (destination row, chip)
        indices of both ends, the joining chip and the port it would take."""
        import numpy as np

        from tpufleet.constants import OPPOSITE

        r, c = frontier
        uu = self.alive[c][:, np.asarray(OPPOSITE)].ravel()  # [F * 6] the chip that reaches c through port p
        port = np.tile(np.arange(6), len(c))
        at_c = np.repeat(r * self.n + c, 6)
        at_u = at_c - c.repeat(6) + uu  # in bounds even for a dead port (-1), which the mask drops
        ok = (uu >= 0) & (s.hops.reshape(-1)[at_u] < 0)
        return at_c[ok], at_u[ok], uu[ok], port[ok]

    def _layer(
        self, s: _State, frontier: tuple[Int64Array, Int64Array], links: npt.NDArray[np.int64]
    ) -> tuple[Int64Array, Int64Array]:
        """The chips joining through a chip of `frontier` (the last to join: rows, chips), which they return."""
        import numpy as np

        hops, phases, wrapped_from = s.hops.reshape(-1), s.phase.reshape(-1), s.wrapped.reshape(-1)
        at_c, at_u, uu, port = self._offers(s, frontier)
        phase, wraps = self.phase_array[port // 2], self.date.reshape(-1)[uu * 6 + port]
        c_phase, c_wrapped = phases[at_c], wrapped_from[at_c]
        same_leg = (c_phase == phase) & (s.direction.reshape(-1)[at_c] == 1 - 2 * (port % 2))
        # one leg: at most one wraparound on a leg with a dateline pair, none but the last hop on the others
        paired = (phase > 0) if self.later_pairs else (phase == 0)
        same_leg &= ~wraps | (paired & ~c_wrapped)
        ok = same_leg | (phase < c_phase)
        at_c, at_u, uu, port, same_leg, wraps, c_wrapped = (
            a[ok] for a in (at_c, at_u, uu, port, same_leg, wraps, c_wrapped)
        )
        hop_load = links.reshape(-1)[uu * 6 + port]
        key = np.maximum(hop_load, s.path_max.reshape(-1)[at_c])
        total = hop_load + s.path_sum.reshape(-1)[at_c]
        if not len(at_u):
            return at_u, uu
        pick = _lightest(at_u, key, total, port)
        at_u, uu, port = at_u[pick], uu[pick], port[pick]
        s.port.reshape(-1)[at_u], phases[at_u] = port, self.phase_array[port // 2]
        s.direction.reshape(-1)[at_u] = np.where(port % 2 == 0, 1, -1)
        wrapped_from[at_u] = np.where(same_leg[pick], c_wrapped[pick] | wraps[pick], wraps[pick])
        hops[at_u] = hops[at_c[pick]] + 1
        s.path_max.reshape(-1)[at_u], s.path_sum.reshape(-1)[at_u] = key[pick], total[pick]
        rr = (at_u - uu) // self.n
        return rr, uu

    def _wild_hops(self, s: _State, links: npt.NDArray[np.int64]) -> None:
        """Chips no route of order A reaches take a wild first hop to a neighbour in the tree (lightest busiest
        link, then fewest hops); later rounds may step to a chip of an earlier round (a chain)."""
        import numpy as np

        for _ in range(CHAIN_ROUNDS):
            open_ = s.hops < 0
            if not open_.any():
                return
            best = np.full(s.hops.shape, _NONE, dtype=np.int64)
            pick = np.full(s.hops.shape, -1, dtype=np.int64)
            for p in range(6):
                nb = self.alive[:, p]
                nxt = np.where(nb >= 0, nb, 0)
                ok = open_ & (nb >= 0) & (s.hops[:, nxt] >= 0) & self._may_lead_into(s, nxt, p)
                key = np.maximum(links[:, p], s.path_max[:, nxt]) * 256 + s.hops[:, nxt]
                take = ok & (key < best)
                best, pick = np.where(take, key, best), np.where(take, p, pick)
            joined = pick >= 0
            if not joined.any():
                return
            r, c = np.nonzero(joined)
            nxt = self.alive[c, pick[r, c]]
            s.port[r, c], s.hops[r, c] = pick[r, c], s.hops[r, nxt] + 1
            s.path_max[r, c] = best[r, c] // 256
            s.wild[r, c] = True
            self._joined_wild(s, r, c, pick[r, c])

    def _may_lead_into(self, s: _State, nxt: Int64Array, port: int) -> npt.NDArray[np.bool_] | bool:
        """[D, N] (or True for all): whether a wild first hop through `port` may lead into the route of `nxt`."""
        return True

    def _joined_wild(self, s: _State, rows: Int64Array, chips: Int64Array, ports: Int64Array) -> None:
        """What a subclass records of the chips that just joined by a wild first hop (nothing here)."""

    def load(self, dest: Int64Array, port: PortTable, hops: HopTable) -> Int64Array:
        """All-to-all load ([N * 6]) of the trees: each chip's hop carries its whole subtree."""
        import numpy as np

        d, n = len(dest), self.n
        h = hops.reshape(-1).astype(np.int64)
        ports = port.reshape(-1).astype(np.int64)
        weight = (h >= 0).astype(np.int64)
        weight[np.arange(d) * n + dest] = 0
        out = np.zeros(n * 6, dtype=np.int64)
        # (destination, chip) flat indices grouped by hop count: one sort, not one scan of the trees a level
        by_hops = np.argsort(h, kind="stable")
        top = int(h.max(initial=0))
        bounds = np.searchsorted(h[by_hops], np.arange(top + 2))
        for level in range(top, 0, -1):
            at = by_hops[bounds[level] : bounds[level + 1]]
            c = at % n
            p, w = ports[at], weight[at]
            out += np.bincount(c * 6 + p, weights=w, minlength=n * 6).astype(np.int64)
            weight += np.bincount(at - c + self.alive[c, p], weights=w, minlength=d * n).astype(np.int64)
        return out


def _lightest(at: Int64Array, key: Int64Array, total: Int64Array, port: Int64Array) -> Int64Array:
    """The index of each chip's (`at`) choice: the lightest busiest link, then sum, then port. One number orders
    the three (a chip reaches a neighbour through one port, so no two tie): a minimum per chip, not a sort of every
    offer."""
    import numpy as np

    spans = (int(key.max()) + 1) * (int(total.max()) + 1) * 6
    if spans >= 1 << 62:  # beyond int64: sort by each figure in turn (the same choice)
        order = np.lexsort((port, total, key, at))
        return order[np.unique(at[order], return_index=True)[1]]
    rank = (key * (int(total.max()) + 1) + total) * 6 + port
    best = np.full(int(at.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, at, rank)
    return np.flatnonzero(rank == best[at])


class _State:
    """Per destination and chip: the hop taken, the leg it belongs to, and the route's figures so far."""

    def __init__(self, d: int, n: int) -> None:
        import numpy as np

        self.phase = np.full((d, n), -1, dtype=np.int64)  # the leg (position in order A) of the chip's first hop
        self.direction = np.zeros((d, n), dtype=np.int64)
        self.wrapped = np.zeros((d, n), dtype=bool)  # the leg crosses a wraparound from here on
        self.hops = np.full((d, n), -1, dtype=np.int64)
        self.port = np.full((d, n), -2, dtype=np.int64)
        self.path_max = np.zeros((d, n), dtype=np.int64)  # the busiest link of the route from here
        self.path_sum = np.zeros((d, n), dtype=np.int64)
        self.wild = np.zeros((d, n), dtype=bool)
