"""Candidate tables built on load-aware trees, pure: the split tables of twisted tori (`routing.split`) and the
pre-leg tables of tori with broken rings in all three dimensions (`routing.preleg_mesh`, `routing.preleg`).
`candidates` decides when to make them (`splits_apply`, `prelegs_apply`) and ranks them with the repaired
dimension orders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from tpufleet.routing import dimension_orders
from tpufleet.routing.analysis import RouteTables
from tpufleet.routing.dimension_orders import broken_dims, dead_dims_of
from tpufleet.routing.tolerant import RouteInfo, dead_links
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.routing.candidates import Ranked
    from tpufleet.routing.dor import Order, PortTable
    from tpufleet.topology import ChipGraph

# chips: from this size on, split tables with the trees' later legs on dateline pairs too (twisted 8x16x16 3371 ->
# 3338 with an x OCS down; on 8x8x16 x/9 1436 -> 1317 and y/14 1332 -> 1317, where x/3 keeps 1303, for 1.2x the CPU)
LATER_PAIRS_MIN_CHIPS = 1024
# chips: split tables with two broken dimensions on twisted tori (`_split_two_made`; measured up to 8x16x16: two
# builds, 0.5-1.5 s each, beside 1.4-4.2 s for the single orders)
SPLIT_TWO_LIMIT = 2048


def splits_apply(shape: Shape, expected: ChipGraph, graph: ChipGraph, max_vcs: int | None) -> bool:
    """`routing.split` tables are made for `graph`: a twisted torus above PAIRS_LIMIT_TWISTED chips (below it the
    order pairs are made, and relieved single orders carry less: twisted 4x8x8 with one OCS down 191 against 204)
    with one broken dimension, and room for 3 VCs (on untwisted tori the order pairs fit 3 VCs on their own). At any
    size: two to three times the CPU time, for hours degraded (twisted 16x16x32 with a z OCS down 0.890 of the
    healthy optimum against 0.807, 36 s against 20 before the later-leg trees, which add 1.25x; 12x24x24 with an x
    OCS down 0.895 against 0.818, 26 s against 16, then 1.14x)."""
    broken = broken_dims(expected, graph)
    return (
        shape.twisted
        and len(expected) > dimension_orders.PAIRS_LIMIT_TWISTED  # (looked up at each call: tests lower it)
        and (max_vcs is None or max_vcs >= 3)
        and (broken == 1 or (broken == 2 and len(expected) <= SPLIT_TWO_LIMIT))
    )


def split_made(shape: Shape, expected: ChipGraph, alive: ChipGraph, graph: ChipGraph, note: str) -> list[Ranked]:
    """The `routing.split` tables of each (B, A) order pair for `graph` (see `candidates._made`), then, from LATER_PAIRS_MIN_CHIPS
    chips, those of the lighter pair with the trees' dateline pairs on their later legs (`split.split_tables`, later_pairs; the other pair's would cost
    one tree build more, and on twisted 8x16x16 with an x OCS down, where these are the lightest, the lighter pair's
    are): every destination inside a broken ring routed by its tree; a pair whose tree route starts with a wild hop
    counts as broken and repaired."""
    from tpufleet.routing import steps
    from tpufleet.routing.split import split_orders
    from tpufleet.routing.split_relieve import relieved_in_turn

    if broken_dims(expected, graph) == 2:
        return _split_two_made(shape, expected, alive, graph, note)
    (broken,) = dead_dims_of(expected, graph)
    pairs = split_orders(broken)
    later = len(expected) >= LATER_PAIRS_MIN_CHIPS
    steps.plan("repair", len(pairs) + later)
    out = [_split_one(shape, expected, alive, graph, note, pair, False) for pair in pairs]
    if later:
        lighter = min(range(len(pairs)), key=lambda i: out[i][0])
        out.append(_split_one(shape, expected, alive, graph, note, pairs[lighter], True))
    return relieved_in_turn(shape, expected, graph, out)


def _split_two_made(shape: Shape, expected: ChipGraph, alive: ChipGraph, graph: ChipGraph, note: str) -> list[Ranked]:
    """With two broken dimensions d and e: for each as d, B = (e, h, d), A = (d, e, h), the trees for d's broken
    rings with their later legs on dateline pairs, e's broken routes repaired wild-first (`split.split_tables`,
    trees_for). Twisted 8x8x16 with x/3 and z/2 down 1441 against 1535 for the best single order; 8x16x16 3577
    against 3976."""
    from tpufleet.routing import steps

    dims = sorted(dead_dims_of(expected, graph))
    steps.plan("repair", 2)
    out = []
    for d, e in (dims, dims[::-1]):
        (h,) = {0, 1, 2} - {d, e}
        trees_for = graph.copy()
        others = [p for p in range(graph.shape[1]) if p // 2 != d]
        trees_for[:, others] = expected[:, others]  # e's links whole: only d's dead links decide the trees
        how = f"{'xyz'[d]} last, destinations in its broken rings by trees, {'xyz'[e]} wild-first"
        out.append(_split_one(shape, expected, alive, graph, note, ((e, h, d), (d, e, h)), True, trees_for, how))
    return out


def _split_one(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    graph: ChipGraph,
    note: str,
    orders: tuple[Order, Order],
    later_pairs: bool,
    trees_for: ChipGraph | None = None,
    how: str = "broken dimension last, destinations in broken rings by trees",
) -> Ranked:
    """One `routing.split` candidate (see `split_made`) of the (B, A) `orders`."""
    import numpy as np

    from tpufleet.routing import steps
    from tpufleet.routing.split import split_tables

    b_order, a_order = orders
    P, L, wild, dest_class, load = split_tables(shape, expected, graph, b_order, a_order, later_pairs, trees_for)
    steps.advance("repair")
    left = int(np.count_nonzero(P == -2))
    repaired = int(np.count_nonzero(wild))
    rt = RouteTables(shape, alive, P, L, wild, dest_class, [b_order, a_order], "auto")
    orders_used = len(np.unique(dest_class))
    how += note
    info: RouteInfo = {
        "broken_by_faults": repaired + left,
        "repaired_wild": repaired,
        "orders_used": orders_used,
        "strategy": how,
        "max_load": float(load.max()),
        "made_for": graph,
    }
    return (float(load.max()), orders_used), rt, info


def whole_ocs_only(shape: Shape, expected: ChipGraph, alive: ChipGraph, patterns: list[tuple[ChipGraph, str]]) -> bool:
    """Every dead link is optical (at a cube boundary) and its OCS's whole pattern is dead (`ocs_patterns` adds
    nothing): the faults are whole OCS."""
    import numpy as np

    from tpufleet.constants import CUBE_EDGE
    from tpufleet.topology import coordinates

    if patterns:
        return False
    chips, ports = dead_links(expected, alive)
    local = coordinates(shape.dims)[chips, ports // 2] % CUBE_EDGE
    return bool(np.where(ports % 2 == 0, local == CUBE_EDGE - 1, local == 0).all())


def prelegs_apply(shape: Shape, expected: ChipGraph, graph: ChipGraph, max_vcs: int | None) -> bool:
    """`routing.preleg` tables are made for `graph`, whole OCS down (the caller's condition: no optical links of an
    OCS alone, whose patterns are made on their own by `report._with_whole_ocs`): a torus up to RELIEVE_LIMIT chips
    (their load is what the relieving makes of them) with broken rings in all three dimensions, and room for 3 VCs.
    8x8x8 with x/3, y/5 and z/2 down: 572 against 638 for the best single order, relieved."""
    from tpufleet.routing.relieve import RELIEVE_LIMIT

    return (
        shape.wraps
        and not shape.twisted
        and len(expected) <= RELIEVE_LIMIT
        and (max_vcs is None or max_vcs >= 3)
        and broken_dims(expected, graph) == 3
    )


def preleg_made(shape: Shape, expected: ChipGraph, alive: ChipGraph, graph: ChipGraph, note: str) -> Ranked:
    """Pre-leg tables for `graph` (see `candidates._made`), their busiest links relieved here (leaves): pre-legs
    along every dimension (`routing.preleg_mesh`) in `routing.preleg.ORDER` where they reach every pair within 3
    VCs, else in THREE_OCS_ORDERS (`_other_orders_relieved`), else along the middle one (`routing.preleg`). The
    trees alone rank below the single orders, and only the first table set a graph that fits is relieved later."""
    from tpufleet.routing import steps

    steps.plan("repair", 1)
    made = (
        _mesh_relieved(shape, expected, alive, graph)
        or _other_orders_relieved(shape, expected, alive, graph)
        or _middle_relieved(shape, expected, alive, graph)
    )
    steps.advance("repair")
    rt, max_load, moved, how = made
    return _ranked(rt, max_load, moved, how + note, graph)


Relieved = tuple[RouteTables, float, int, str]  # tables, all-to-all max load, entries relieved, how made

PRE_VCS = 3  # what the pre-leg tables are made to fit (`prelegs_apply` makes them only with room for it)


class Passes(NamedTuple):
    """How long `_mesh_relieved` relieves again from where the last pass stopped, each pass lowering the maximum
    or the links at it (twisted 8x16x16, one x OCS, order yzx: 3239 after 7 passes, 3201 after 14, 3169 after 30):
    at most `most` passes, until the load is `good` or less, or `misses` passes in a row kept nothing (none
    lighter, or none within the VCs; 0: never stops on that)."""

    most: int = 7
    good: float = 0.0
    misses: int = 0


THREE_OCS_PASSES = Passes()  # 8x8x8 with x/3, y/5 and z/2 down: 572 after seven
# on twisted tori a pass costs 0.2-1.5 s at 1,024 chips (4.5-5.7 s for one moving tens of thousands of entries),
# 0.5-4 s at 2,048, and they keep finding: twisted 8x16x16, one x OCS, order yzx 3239 after 7 passes, 3201 after
# 14, 3169 after 30 (two misses in a row at most)
TWISTED_PASSES = Passes(most=30, misses=5)
# chips: pre-leg trees on twisted tori with `thorough` (8x16x16 with one OCS down: 20-70 s an order; 16x16x32 not
# measured)
TWISTED_MESH_LIMIT = 2048
# chips: where the fault path makes them for a slice's floor (`dimension_orders.thorough_may_help`): 10-12 s of CPU
# on 8x8x16 (12-20 s before the orders were chosen by the broken dimension); on 8x16x16 37-90 s, too long for
# `inject-fault` to wait
TWISTED_MESH_FAULT_LIMIT = 1024
# the dimension orders `twisted_mesh_made` tries, in turn. Twisted 8x8x16 over nine single OCS: yzx kept MESH_GOOD of
# the bound for each of the six x and y OCS (1230-1236) but no z OCS (1289-1295), zyx each z OCS (1221-1222); the
# three other orders were never the lightest by more than 3. 8x16x16: x/3 yzx 3239, zyx 3262, zxy 3348 (xzy, yxz,
# xyz 3511-3718); y/3 zyx 3130, yzx 3373; z/3 zyx 3098, yzx 3252.
TWISTED_MESH_ORDERS: tuple[Order, ...] = ((1, 2, 0), (2, 1, 0), (2, 0, 1))
# with ring steps kept (`ring_step_ports`), the orders tried: those whose last dimension has no dead link, in this
# sequence. A broken dimension last sends a neighbour across its dead link the long way round its ring (15 hops on
# twisted 8x8x16), and the modelled all-reduce takes 1.96-1.99x the healthy time; otherwise 1.63-1.71x (the split
# tables 1.61x), all-to-all 1223-1245 over nine single OCS (0.955-0.972 of the healthy optimum).
RING_KEEPING_ORDERS: tuple[Order, ...] = ((2, 0, 1), (2, 1, 0), (1, 2, 0))
# with x and y broken none of those ends in a whole dimension, so the trees are made in yxz (twisted 8x8x16, x/3 and
# y/5: 1296 and the all-reduce 2.00x, the split tables' figure; in TWISTED_MESH_ORDERS, each ending in x or y, 1299
# and 2.57x; xyz 1296 at 1.3x the CPU)
XY_BROKEN_ORDERS: tuple[Order, ...] = ((1, 0, 2),)
MESH_GOOD = 0.96  # of the live graph's distance bound: an order relieved to this load ends the search
# the orders of the pre-leg trees in every dimension where those in `routing.preleg.ORDER` (zxy) leave a pair
# unreached or do not fit 3 VCs (5 of 60 sets of three OCS on 8x8x8 drawn at random): zyx, then xyz, then yzx. On
# those five, zyx kept MESH_GOOD of the cut bound on three (557-568), xyz on x/0, y/0, z/6 (557, after zyx left a
# pair unreached), yzx on x/7, y/15, z/2 (584; xyz 589); the middle dimension's pre-legs carried 586-604.
THREE_OCS_ORDERS: tuple[Order, ...] = ((2, 1, 0), (0, 1, 2), (1, 2, 0))


def twisted_mesh_apply(
    shape: Shape, expected: ChipGraph, graph: ChipGraph, max_vcs: int | None, thorough: bool
) -> bool:
    """Pre-leg trees in every dimension are made for a twisted torus with whole OCS down, with room for 3 VCs, above
    RELIEVE_LIMIT chips (below, the other candidates are relieved too and carry as little or less: twisted 4x4x8,
    one x OCS: 76 against 78; 4x8x8: 191 both): by default with two broken dimensions up to TWISTED_MESH_FAULT_LIMIT
    chips, relieved by default only to the split tables' own stop (`split_relieve.SPLIT_GOOD` of the distance bound:
    0.92 of the LP optimum, within 1.0002 of the bound there; twisted 8x8x16, x/3 and z/2: the trees 1672, relieved
    twice 1281, 0.834 -> 0.939 of the LP, 2.3 -> 6.7 s of CPU; to MESH_GOOD 1243 in 7.8 s), where the split tables
    keep 0.83-0.84 of the LP; with `thorough`, one or two, up to TWISTED_MESH_LIMIT (relieving them
    takes seconds: 5-12 s of CPU an order on 8x8x16, 20-70 s on 8x16x16)."""
    from tpufleet.routing.relieve import RELIEVE_LIMIT

    limit, dims = (TWISTED_MESH_LIMIT, (1, 2)) if thorough else (TWISTED_MESH_FAULT_LIMIT, (2,))
    return (
        shape.twisted
        and RELIEVE_LIMIT < len(expected) <= limit
        and (max_vcs is None or max_vcs >= PRE_VCS)
        and broken_dims(expected, graph) in dims
    )


def twisted_mesh_made(
    shape: Shape, expected: ChipGraph, alive: ChipGraph, prefer: RouteTables | None = None, good: float = MESH_GOOD
) -> list[Ranked]:
    """`routing.preleg_mesh`'s trees for a twisted torus, relieved in passes (`_mesh_relieved`), in the dimension
    orders of TWISTED_MESH_ORDERS (with `prefer`, RING_KEEPING_ORDERS) in turn until one keeps `good` of the live
    graph's distance bound (a lower bound of the LP optimum); the lightest. Which order relieves well depends on the
    fault: where the relieving finds a deep move (tens of thousands of entries in one pass) the load drops to
    0.96-0.98 of the bound, else it stays near 0.92. Empty when none can be made within 3 VCs. `prefer`: the tables
    whose ring steps the trees keep where their rules allow (`ring_step_ports`: the lightest other candidate's, so
    the ring collectives lose less)."""
    from tpufleet.routing.optimum import distance_bound

    enough = distance_bound(alive, shape) / good
    steps, orders = None, TWISTED_MESH_ORDERS
    if prefer is not None:
        dead = dead_dims_of(expected, alive)
        steps = ring_step_ports(prefer, expected)
        orders = tuple(o for o in RING_KEEPING_ORDERS if o[-1] not in dead) or XY_BROKEN_ORDERS
    passes = TWISTED_PASSES._replace(good=enough)
    made = _lightest_order(shape, expected, alive, alive, orders, passes, steps)
    if made is None:
        return []
    rt, max_load, moved, how = made
    return [_ranked(rt, max_load, moved, how, alive)]


def _other_orders_relieved(shape: Shape, expected: ChipGraph, alive: ChipGraph, graph: ChipGraph) -> Relieved | None:
    """Where the trees in `routing.preleg.ORDER` leave a pair unreached or do not fit: those of THREE_OCS_ORDERS in
    turn, relieved in TWISTED_PASSES until one keeps MESH_GOOD of the cut bound of `alive`; the lightest."""
    from tpufleet.routing.optimum import live_cut_bound

    good = live_cut_bound(shape, alive) / MESH_GOOD
    return _lightest_order(shape, expected, alive, graph, THREE_OCS_ORDERS, TWISTED_PASSES._replace(good=good))


def ring_step_ports(rt: RouteTables, expected: ChipGraph) -> PortTable:
    """[t, s]: the port `rt`'s route of a ring step from s to t starts by, for the steps two hops or more long
    (`loads.ring_step_pairs`; a step to a neighbour goes straight in every table set); -1 elsewhere."""
    import numpy as np

    from tpufleet.routing.loads import ring_step_pairs

    src, dst = ring_step_pairs(rt.shape, expected)
    long = rt.L[dst, src] >= 2
    out: PortTable = np.full(rt.P.shape, -1, dtype=np.int8)
    out[dst[long], src[long]] = rt.P[dst[long], src[long]]
    return out


def _lightest_order(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    graph: ChipGraph,
    orders: tuple[Order, ...],
    passes: Passes,
    ring_steps: PortTable | None = None,
) -> Relieved | None:
    """`_mesh_relieved` in each of `orders` in turn until one is relieved to `passes.good` or less; the lightest,
    its order named in how it was made (None when no order's trees reach every pair within PRE_VCS)."""
    from tpufleet.routing import steps

    best: tuple[Relieved, Order] | None = None
    for order in orders:
        steps.plan("repair", 1)
        made = _mesh_relieved(shape, expected, alive, graph, order, passes, ring_steps)
        steps.advance("repair")
        if made is not None and (best is None or made[1] < best[0][1]):
            best = made, order
        if best is not None and best[0][1] <= passes.good:
            break
    if best is None:
        return None
    (rt, max_load, moved, how), order = best
    return rt, max_load, moved, f"{how}, dimension order {''.join('xyz'[d] for d in order)}"


def _ranked(rt: RouteTables, max_load: float, moved: int, how: str, graph: ChipGraph) -> Ranked:
    """The rank key, tables and how they were made (`candidates._made`'s form) of relieved tree tables."""
    import numpy as np

    left = int(np.count_nonzero(rt.P == -2))
    repaired = 0 if rt.wild is None else int(np.count_nonzero(rt.wild))
    info: RouteInfo = {
        "broken_by_faults": repaired + left,
        "repaired_wild": repaired,
        "orders_used": 1,
        "strategy": how,
        "max_load": max_load,
        "made_for": graph,
        "relieved": moved,
    }
    return (max_load, 1), rt, info


def _middle_relieved(shape: Shape, expected: ChipGraph, alive: ChipGraph, graph: ChipGraph) -> Relieved:
    """`routing.preleg`'s trees, relieved once (leaves)."""
    from tpufleet.routing.preleg import preleg_tables
    from tpufleet.routing.relieve import relieve

    rt, load = preleg_tables(shape, graph, alive)
    max_load, moved = float(load.max()), 0
    done = relieve(rt, graph, expected, leaves=True)
    if done is not None and done.max_load < max_load:
        rt, max_load, moved = done.tables, float(done.max_load), done.moved
    return rt, max_load, moved, "one dimension order, wild pre-legs by trees"


def _mesh_relieved(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    graph: ChipGraph,
    order: Order | None = None,
    passes: Passes = THREE_OCS_PASSES,
    ring_steps: PortTable | None = None,
) -> Relieved | None:
    """`routing.preleg_mesh`'s trees in `order` (default: `routing.preleg.ORDER`) relieved in `passes` within their
    wild order, each pass kept only when it is lighter and still fits PRE_VCS; None when the trees leave a pair
    unreached or do not fit."""
    from tpufleet.routing.fitting import analyzed, fits
    from tpufleet.routing.preleg import ORDER
    from tpufleet.routing.preleg_mesh import mesh_preleg_tables
    from tpufleet.routing.relieve import relieve

    order = ORDER if order is None else order
    made = mesh_preleg_tables(shape, graph, alive, order, ring_steps)
    if made is None or not fits(analyzed(made[0], PRE_VCS)[0], PRE_VCS):
        return None
    rt, max_load, moved, misses = made[0], float(made[1].max()), 0, 0
    for seed in range(passes.most):  # each from the last kept, in another order: a pass finding nothing is no end
        if max_load <= passes.good or misses == passes.misses > 0:
            break
        done = relieve(rt, graph, expected, leaves=True, seed=seed, wild_order=order)
        if done is None or not fits(analyzed(done.tables, PRE_VCS)[0], PRE_VCS):
            misses += 1
            continue
        rt, max_load, moved, misses = done.tables, float(done.max_load), moved + done.moved, 0
    return rt, max_load, moved, "one dimension order, wild pre-legs in every dimension by trees"
