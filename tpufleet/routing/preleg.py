"""Tables for a torus with broken rings in all three dimensions (an OCS down in each), within the hardware's 3 VCs:
one dimension order on its dateline pairs, and a wild pre-leg for the routes it cannot take whole, pure.

With one order (a, b, c) and wild first hops (`tolerant.wild_first`) a route whose b leg would cross a broken ring
steps to a neighbouring ring first: all the cut's traffic crosses the cube boundary on the four rings next to the
broken one, in the destination's plane (8x8x8 with x/3, y/5 and z/2 down: 638 relieved, 0.856 of the optimum).
Here every destination gets a tree (built outward from it one hop count at a time, as `routing.split` builds its
own) whose routes may start with a pre-leg along b: wild hops in one direction, never across a wraparound, then
the legs in order (each one direction, at most one wraparound: the dateline pairs). A route whose b leg is cut
crosses the cube boundary in the source's own ring instead, so each source plane takes its share of the cut.

Deadlock freedom: a pre-leg hop is followed only by another of the same pre-leg or by the first leg, so nothing
enters the wild VC from the dateline pairs; along one direction without a wraparound the pre-legs close no cycle
among themselves; and the legs in order close none on their dateline pairs. The placement search checks it
(`cdg.verdict`), and the oracle of `tests/test_routing_preleg.py` confirms it: nothing here is trusted.

A chip takes a pre-leg hop when no hop in order is offered, or when those offers' busiest link is PRE_PENALTY
units heavier (a lower penalty spreads more, but relieved at 28: 601 in 9 VCs). Chips no route reaches take wild
first hops (as `split`'s trees). The trees are built in batches against the load so far, three times; the
caller relieves their busiest links (`tree_families.preleg_made`): the trees alone carry 711 on that slice, relieved
604.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpufleet.routing.split import _Trees, build_in_passes

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray, Int64Array
    from tpufleet.routing.analysis import RouteTables
    from tpufleet.routing.dor import HopTable, Order, PortTable
    from tpufleet.routing.split import _State
    from tpufleet.shapes import Shape
    from tpufleet.topology import ChipGraph

ORDER = (2, 0, 1)  # z, x, y: the order that fits 3 VCs with wild first hops too
PRE_PENALTY = 32  # all-to-all units a pre-leg hop must save on the busiest link (8x8x8: 36 -> 611, 64 -> 618)
# destinations whose trees are built against one load (2 passes: 4 relieved 610, 16 needs 10 VCs, 1 takes 3.4x the CPU)
BATCH = 8
PASSES = 3  # 2: 746 alone, 608 relieved; 4: 608; 5: 605
_NO_PRE = 99  # the pre-leg phase of a dimension without one
# all-to-all units a hop off a ring step's given route costs (`ring_steps`): taken only where no other is legal
RING_PENALTY = 1 << 20


def preleg_tables(
    shape: Shape, graph: ChipGraph, alive: ChipGraph, order: Order = ORDER
) -> tuple[RouteTables, Int64Array]:
    """(tables on `alive`, all-to-all load per directed link) of `order`'s trees made for `graph` (the live graph,
    or an OCS's failure pattern), pre-legs along the order's middle dimension."""
    import numpy as np

    from tpufleet.routing.analysis import RouteTables

    n = len(graph)
    P, L, wild, load = built(_PreLegTrees(shape, graph, order, (order[1],)), n, BATCH)
    rt = RouteTables(shape, alive, P, L, wild, np.zeros(n, dtype=np.int64), [order], "auto")
    return rt, load


def built(trees: _Trees, n: int, batch: int) -> tuple[PortTable, HopTable, BoolArray, Int64Array]:
    """(ports, hop counts, wild flags, all-to-all load per directed link) of `trees` to every one of the `n`
    chips, built `batch` destinations at a time against the load of the others, PASSES times over."""
    import numpy as np

    P = np.empty((n, n), dtype=np.int8)
    L = np.empty((n, n), dtype=np.int16)
    wild = np.zeros((n, n), dtype=bool)
    load = np.zeros(n * 6, dtype=np.int64)
    batches = np.array_split(np.arange(n), max(1, n // batch))
    build_in_passes(trees, batches, PASSES, load, (P, L, wild))
    return P, L, wild, load


class _PreLegTrees(_Trees):
    """`split._Trees` with the legs of one order on dateline pairs and wild pre-legs before them, along the
    dimensions of `pre` in that sequence (each one direction, no wraparound)."""

    def __init__(self, shape: Shape, alive: ChipGraph, order: Order, pre: tuple[int, ...]) -> None:
        import numpy as np

        super().__init__(shape, alive, order, later_pairs=False)
        self.pre_phase = np.full(3, _NO_PRE, dtype=np.int64)
        for position, dim in enumerate(pre):
            self.pre_phase[dim] = position - len(pre)  # before the first leg (phase 0): one pre-leg is phase -1
        self.pre_penalty = PRE_PENALTY
        self.ring_steps: PortTable | None = None  # [t, s] the port a ring step's route should start by, or -1
        self.dest: Int64Array = np.zeros(0, dtype=np.int64)

    def build(self, dest: Int64Array, load: Int64Array) -> tuple[PortTable, HopTable, BoolArray]:
        self.dest = dest
        return super().build(dest, load)

    def _off_ring_step(self, at_u: Int64Array, port: Int64Array) -> Int64Array | int:
        """RING_PENALTY for an offer at a chip whose ring step to this destination `ring_steps` starts by another
        port (a chip keeps the route the collectives' rings use wherever the trees' rules allow it)."""
        if self.ring_steps is None:
            return 0
        want = self.ring_steps[self.dest[at_u // self.n], at_u % self.n]
        penalty: Int64Array = ((want >= 0) & (port != want)) * RING_PENALTY
        return penalty

    def _layer(
        self, s: _State, frontier: tuple[Int64Array, Int64Array], links: npt.NDArray[np.int64]
    ) -> tuple[Int64Array, Int64Array]:
        """The chips joining through a chip of `frontier` (the last to join: rows, chips), which they return."""
        import numpy as np

        from tpufleet.routing.split import _lightest

        n = self.n
        hops, phases, wrapped_from = s.hops.reshape(-1), s.phase.reshape(-1), s.wrapped.reshape(-1)
        at_c, at_u, uu, port = self._offers(s, frontier)
        in_order, pre_phase = self.phase_array[port // 2], self.pre_phase[port // 2]
        wraps = self.date.reshape(-1)[uu * 6 + port]
        c_phase, c_wrapped = phases[at_c], wrapped_from[at_c]
        same_way = s.direction.reshape(-1)[at_c] == 1 - 2 * (port % 2)
        # a leg in order: one direction, at most one wraparound (its dateline pair); it never follows a pre-leg
        same_leg = (c_phase == in_order) & same_way & (~wraps | ~c_wrapped)
        legal = same_leg | ((in_order < c_phase) & (c_phase >= 0))
        # a pre-leg hop: one direction, no wraparound, before any leg in order (or more of the same pre-leg)
        pre = ~legal & ~wraps & (pre_phase != _NO_PRE) & (((c_phase == pre_phase) & same_way) | (pre_phase < c_phase))
        keep = legal | pre
        at_c, at_u, uu, port, same_leg, wraps, c_wrapped, pre = (
            a[keep] for a in (at_c, at_u, uu, port, same_leg, wraps, c_wrapped, pre)
        )
        if not len(at_u):
            return at_u, uu
        hop_load = links.reshape(-1)[uu * 6 + port]
        key = np.maximum(hop_load, s.path_max.reshape(-1)[at_c])
        total = hop_load + s.path_sum.reshape(-1)[at_c]
        pick = _lightest(at_u, key + pre * self.pre_penalty + self._off_ring_step(at_u, port), total, port)
        at_u, uu, port, pre = at_u[pick], uu[pick], port[pick], pre[pick]
        s.port.reshape(-1)[at_u] = port
        phases[at_u] = np.where(pre, self.pre_phase[port // 2], self.phase_array[port // 2])
        s.wild.reshape(-1)[at_u] = pre
        s.direction.reshape(-1)[at_u] = np.where(port % 2 == 0, 1, -1)
        wrapped_from[at_u] = np.where(same_leg[pick], c_wrapped[pick] | wraps[pick], wraps[pick])
        hops[at_u] = hops[at_c[pick]] + 1
        s.path_max.reshape(-1)[at_u], s.path_sum.reshape(-1)[at_u] = key[pick], total[pick]
        return (at_u - uu) // n, uu
