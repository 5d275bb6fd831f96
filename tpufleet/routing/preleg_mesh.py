"""Pre-leg trees whose wild hops keep one dimension order among themselves, pure.

`routing.preleg` lets a route start with a pre-leg along the order's middle dimension only. Here a route may start
with pre-legs along every dimension, in the order's own sequence (zxy: along z, then x, then y; each one direction,
no wraparound), before its legs in order on the dateline pairs. On the wild VC that is dimension-order routing on a
mesh, which closes no cycle, and nothing enters the wild VC from the dateline pairs, so the tables fit 3 VCs.

The wild first hops of chips no route reaches keep that rule too (`_MeshTrees._may_lead_into`): a wild hop leads into a
leg (any hop, a wraparound too), or into a wild hop of a later dimension (or the same dimension and direction),
itself crossing no wraparound. A wild hop across a wraparound is followed by legs only, so one may lead into it:
no cycle on the wild VC passes it. Before, a wild first hop into a chip whose route starts with a pre-leg of any
dimension closed channel cycles as soon as pre-legs were allowed along two dimensions (745 or more, 11 VCs).
Where a tree leaves chips unreached, its destination's tree is built again taking a pre-leg hop only where no hop
in order is offered; should chips still be unreached, there are no such tables in that order, and the caller tries
the other orders of `tree_families.THREE_OCS_ORDERS`, then `routing.preleg`'s (x/0, y/0 and z/0 down, whose corner
chip has its three rings cut and so has the opposite corner, is reached through its neighbour's wild hop across a
wraparound, 578; x/12, y/12 and z/13 is not reached in zxy, and is in zyx, 557).

8x8x8 with x/3, y/5 and z/2 down: the trees alone 668, relieved within the same rule (`relieve.relieve` with
`wild_order`) in passes 572, against 604 for the middle dimension's pre-legs; the LP optimum is 546.13.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpufleet.routing.preleg import ORDER, _PreLegTrees, built

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import Int64Array
    from tpufleet.routing.analysis import RouteTables
    from tpufleet.routing.dor import Order, PortTable
    from tpufleet.routing.split import _State
    from tpufleet.shapes import Shape
    from tpufleet.topology import ChipGraph

# destinations whose trees are built against one load (8x8x8, three OCS, three passes: 8 relieves to 612, 4 and 2 to 589,
# 2 at 1.4x the CPU)
MESH_BATCH = 4
STUCK_PENALTY = 1 << 20  # a tree built again for its unreached chips: a pre-leg hop only where nothing else is offered


def mesh_preleg_tables(
    shape: Shape, graph: ChipGraph, alive: ChipGraph, order: Order = ORDER, ring_steps: PortTable | None = None
) -> tuple[RouteTables, Int64Array] | None:
    """(tables on `alive`, all-to-all load per directed link) of `order`'s trees made for `graph`, pre-legs along
    every dimension in `order`'s sequence; None when some chip cannot reach some destination that way. With
    `ring_steps` ([t, s] a port, or -1), a chip whose ring step to t has a given first hop takes it wherever the
    trees' rules allow (`_PreLegTrees._off_ring_step`)."""
    import numpy as np

    from tpufleet.routing.analysis import RouteTables

    n = len(graph)
    trees = _MeshTrees(shape, graph, order, tuple(order))
    trees.ring_steps = ring_steps
    P, L, wild, load = built(trees, n, MESH_BATCH)
    stuck = np.flatnonzero((P == -2).any(axis=1))
    if len(stuck):
        trees.pre_penalty = STUCK_PENALTY
        load -= trees.load(stuck, P[stuck], L[stuck])
        port, hops, flags = trees.build(stuck, load)
        load += trees.load(stuck, port, hops)
        P[stuck], L[stuck], wild[stuck] = port, hops, flags
        if (port == -2).any():
            return None
    return RouteTables(shape, alive, P, L, wild, np.zeros(n, dtype=np.int64), [order], "auto"), load


class _MeshTrees(_PreLegTrees):
    """Pre-leg trees whose wild first hops keep the pre-legs' dimension order (see the module docstring)."""

    def _joined_wild(self, s: _State, rows: Int64Array, chips: Int64Array, ports: Int64Array) -> None:
        """A chip that joined by a wild first hop counts as starting a pre-leg of that hop's dimension: a later
        chain round leads into it by the same rule (`_may_lead_into`)."""
        import numpy as np

        s.phase[rows, chips] = self.pre_phase[ports // 2]
        s.direction[rows, chips] = np.where(ports % 2 == 0, 1, -1)

    def _may_lead_into(self, s: _State, nxt: Int64Array, port: int) -> npt.NDArray[np.bool_]:
        """[D, N]: whether a wild first hop through `port` may lead into the route of chip `nxt`: into a leg (any
        hop), or into a wild hop it may precede (of a later dimension, or of the same one and direction; itself
        crossing no wraparound)."""
        import numpy as np

        phase = s.phase[:, nxt]
        mine = self.pre_phase[port // 2]
        wraps = self.date.reshape(-1)[np.arange(self.n) * 6 + port][None, :]
        same_way = s.direction[:, nxt] == 1 - 2 * (port % 2)
        into_pre = (phase < 0) & ~wraps & ((mine < phase) | ((mine == phase) & same_way))
        may: npt.NDArray[np.bool_] = (phase >= 0) | into_pre
        return may
