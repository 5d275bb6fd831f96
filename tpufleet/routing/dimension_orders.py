"""Dimension orders for the tables of a slice with faults, pure: one order for every destination
(`single_orders`), a pair per broken dimension (`order_pairs`), every order (`all_orders`), and the choice of an
order per destination among them (`choose_orders`). `candidates` repairs the tables each gives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpufleet.routing import dor
from tpufleet.routing.tolerant import broken_pairs, dead_links
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.dor import HopTable, Order, PortTable
    from tpufleet.topology import ChipGraph

PAIRS_LIMIT = 2048  # chips: per-destination order pairs within 3 VCs (see `order_pairs`), unless thorough
# chips: the same with one broken dimension (an OCS, or links of one dimension's OCS), up to a full TPU7x superpod
# (16x24x24 with a y or z OCS down: 0.93 of the healthy throughput against 0.80, at twice the CPU of one order)
PAIRS_LIMIT_ONE_DIM = 9216
PAIRS_LIMIT_TWISTED = 512
# chips: both ways of breaking a destination's tie within a pair; above, the broken dimension first only (8x16x16 and
# 16x16x16 with one OCS down: the same load either way, 0.6-1.6 s a repair)
BOTH_TIES_LIMIT = 1024
ALL_ORDERS_LIMIT = 512  # chips: every dimension order per destination with two broken dimensions (`all_orders`)
MIDDLE_ORDERS_LIMIT = 1024  # chips: single orders with a broken dimension in the middle (`single_orders`)
MIDDLE_ORDERS_LIMIT_TWISTED = 512


def _candidate_orders(dead_dims: set[int]) -> list[Order]:
    orders = [dor.DEFAULT_ORDER]
    for d in sorted(dead_dims):
        a, b = [x for x in dor.DEFAULT_ORDER if x != d]
        for order in ((a, b, d), (d, a, b)):
            if order not in orders:
                orders.append(order)
    return orders


def _tree_weights(shape: Shape, P: PortTable, L: HopTable, expected: ChipGraph) -> npt.NDArray[np.int32]:
    """[t, s] traffic each table entry carries on the healthy graph (all-to-all), for load-aware choices."""
    import numpy as np

    from tpufleet.routing.analysis import Levels, RouteTables, flow

    n = len(expected)
    rt = RouteTables(shape, expected, P, L)
    weight, _ = flow(rt, np.ones((n, n), dtype=bool), Levels(L), masks=False)
    return weight.reshape(n, n)


def choose_orders(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    penalty: float | None = None,
    orders: list[Order] | None = None,
    balanced: bool = False,
    alternate: int | None = None,
) -> tuple[PortTable, HopTable, npt.NDArray[np.int64], list[Order], npt.NDArray[np.int64]]:
    """Per destination, a dimension order: fewest broken routes, and (load-aware) no new hot links.

    Greedy over the destinations whose default-order routes the faults break: each takes the order that keeps
    the most loaded link lowest once its whole routing tree is counted, a broken route costing `penalty`.
    Without a penalty, ties go to the first order; with `alternate` (two orders), to the first where the
    destination's coordinate along that dimension is even and the second where it is odd
    (`broken_first_alternating`).
    """
    import numpy as np

    from tpufleet.routing.balanced import balanced_twisted_tables

    n = len(expected)
    if orders is None:
        orders = _candidate_orders(dead_dims_of(expected, alive))
    per_order = []
    for order in orders:
        Pk, Lk = balanced_twisted_tables(shape, order) if balanced else dor.tables(shape, order)
        bk = broken_pairs(Pk, expected, alive)
        per_order.append((Pk, Lk, bk, np.bincount(bk // n, minlength=n)))
    counts = np.stack([c for *_, c in per_order])  # [orders, n]
    if penalty is None:
        choice = np.argmin(counts, axis=0)
        if alternate is not None:
            from tpufleet.topology import coordinates

            parity = coordinates(shape.dims)[:, alternate] % 2
            choice = np.where(counts[0] == counts[1], parity, choice)
    else:
        choice = np.zeros(n, dtype=np.int64)
        weights = [_tree_weights(shape, Pk, Lk, expected) for Pk, Lk, _, _ in per_order]
        chips = np.arange(n)
        links = [chips[None, :] * 6 + np.maximum(Pk, 0) for Pk, *_ in per_order]
        total = np.zeros(n * 6, dtype=np.int64)
        for t in range(n):
            np.add.at(total, links[0][t], weights[0][t])
        for t in np.argsort(-counts[0], kind="stable"):
            if counts[0, t] == 0:
                break
            np.subtract.at(total, links[0][t], weights[0][t])
            rest = total.max()
            best, best_cost = 0, None
            for k in range(len(orders)):
                touched = total[links[k][t]] + weights[k][t]
                cost = max(rest, touched.max()) + penalty * counts[k, t]
                if best_cost is None or cost < best_cost:
                    best, best_cost = k, cost
            choice[t] = best
            np.add.at(total, links[best][t], weights[best][t])
    P = np.empty_like(per_order[0][0])
    L = np.empty_like(per_order[0][1])
    bad_parts = []
    for k, (Pk, Lk, bk, _) in enumerate(per_order):
        rows = choice == k
        P[rows] = Pk[rows]
        L[rows] = Lk[rows]
        bad_parts.append(bk[rows[bk // n]])
    broken = np.concatenate(bad_parts) if bad_parts else np.empty(0, dtype=np.int64)
    return P, L, choice, orders, np.sort(broken)


def thorough_adds(shape: Shape, chips: int, broken_dims: int | None = None) -> bool:
    """`thorough` makes more candidates for this slice than the default (order pairs above their size limit), with
    `broken_dims` dimensions broken (None: any number)."""
    if shape.twisted:
        return chips > PAIRS_LIMIT_TWISTED
    return chips > (PAIRS_LIMIT_ONE_DIM if broken_dims == 1 else PAIRS_LIMIT)


def thorough_may_help(shape: Shape, chips: int, broken: int | None = None) -> bool:
    """Thorough tables may keep more of this slice's throughput within 3 VCs, with `broken` dimensions broken
    (`broken_dims`; None: any number): order pairs above their size limit on an untwisted torus; on a twisted one
    (whose order pairs need 4 VCs) pre-leg trees in every dimension, relieved, where `tree_families` makes them
    (twisted 8x8x16 with one x OCS down: 0.913 -> 0.965 of the healthy optimum; not on 8x16x16, where they take a
    minute or more: `routes --thorough` makes them there)."""
    if shape.twisted:
        from tpufleet.routing.relieve import RELIEVE_LIMIT
        from tpufleet.routing.tree_families import TWISTED_MESH_FAULT_LIMIT

        return RELIEVE_LIMIT < chips <= TWISTED_MESH_FAULT_LIMIT and broken in (None, 1, 2)
    return shape.wraps and thorough_adds(shape, chips, broken)


def broken_dims(expected: ChipGraph, alive: ChipGraph) -> int:
    """How many dimensions have a dead link."""
    return len(dead_dims_of(expected, alive))


def dead_dims_of(expected: ChipGraph, alive: ChipGraph) -> set[int]:
    """The dimensions with a dead link."""
    return {int(p) // 2 for p in dead_links(expected, alive)[1].tolist()}


def order_pairs(
    shape: Shape, chips: int, dead_dims: set[int], max_vcs: int | None, thorough: bool = False
) -> list[list[Order]]:
    """Per broken dimension d, the two orders a destination may choose between: d first (its route leaves the
    source's ring, where one wild hop can skirt a cut) or d last (it enters d in the destination's own ring, whole
    when the destination is outside the broken rings). Two orders fit 3 VCs when their blocks overlap and wild hops
    share a VC, or their legs are placed one by one (`cdg.verdict` decides): with one OCS down, blocks fit on 8x8x8
    and 8x8x16, legs on 8x16x16 and 16x16x16 (one OCS down there: 0.93 of the healthy throughput against 0.80 with
    one order). Made up to PAIRS_LIMIT chips (8x16x16: 1.5 s against 0.3 s), up to PAIRS_LIMIT_ONE_DIM with one
    broken dimension (a full TPU7x superpod, 16x24x24: 0.93 against 0.80 with a y OCS down, twice the CPU of one
    order; a full TPU v4 pod 0.93 in 3 s of CPU; worth it for a slice that runs degraded for hours), and on any slice when `thorough`; on twisted tori up to PAIRS_LIMIT_TWISTED, as they gain a unit at most
    there (their balanced tables are built for the whole torus)."""
    per_order = 2 if shape.wraps else 1
    if (thorough_adds(shape, chips, len(dead_dims)) and not thorough) or (
        max_vcs is not None and max_vcs < per_order + 1
    ):
        return []
    out: list[list[Order]] = []
    for d in sorted(dead_dims):
        a, b = [x for x in dor.DEFAULT_ORDER if x != d]
        first, last = (d, a, b), (a, b, d)
        out += [[first, last], [last, first]] if chips <= BOTH_TIES_LIMIT else [[first, last]]  # ties: the first
    return out


def all_orders(chips: int, dead_dims: set[int]) -> list[list[Order]]:
    """Every dimension order, for each destination the one that leaves the fewest routes broken, the healthy
    dimension first on ties. With broken x and y rings a destination outside them is reached z first, so both
    broken legs run in its own z plane, where they are whole unless its plane holds the broken rings of that
    dimension, and then the other of x and y goes last (into its own ring); a destination inside broken rings
    starts with that dimension (in the source's ring). Up to four orders: they fit 3 VCs only when their legs
    are placed one by one (`routing.legs`), hence its size limit. Which of the two healthy-first orders takes the
    planes where both keep every route whole decides whether a placement exists (x/3 with y/5 on 8x8x8: one way,
    y/5 with z/2: the other), so both are made. Not on twisted tori, whose balanced single orders relieve better
    (4x8x8 with two OCS down: 193-194 against 204)."""
    from itertools import permutations

    if chips > ALL_ORDERS_LIMIT or len(dead_dims) != 2:
        return []
    ranked = sorted(permutations(range(3)), key=lambda o: (-sum(o.index(d) for d in dead_dims), o))
    orders: list[Order] = [(o[0], o[1], o[2]) for o in ranked]
    return [orders, [orders[1], orders[0], *orders[2:]]]


def single_orders(dead_dims: set[int], chips: int = 0, twisted: bool = False) -> list[Order]:
    """One dimension order for every destination, taking the broken dimensions first.

    A route's last dimension runs in the destination's own ring, so a break there cannot be skirted by a first
    hop into a neighbouring ring; a broken dimension taken first runs in the source's ring, which one wild hop
    can leave. One order keeps the tables within two dateline VCs (plus one for wild hops). Every dimension order
    with a healthy last dimension is made up to MIDDLE_ORDERS_LIMIT chips (a broken dimension in the middle wins on
    small slices: 4x4x4 with one x OCS down 35 against 41; twisted: up to MIDDLE_ORDERS_LIMIT_TWISTED), so that the same fault turned by a symmetry of the
    slice is offered the same orders turned; above it only the broken-first ones (the middle ones gain nothing on
    16x16x16 and cost a repair each). When every dimension is broken, all six orders.
    """
    from itertools import permutations

    healthy = [d for d in dor.DEFAULT_ORDER if d not in dead_dims]
    if not healthy:
        return list(permutations(dor.DEFAULT_ORDER))  # type: ignore[arg-type]
    out: list[Order] = []
    for broken in permutations(sorted(dead_dims)):
        order = (*broken, *healthy)
        out.append((order[0], order[1], order[2]))
    if chips <= (MIDDLE_ORDERS_LIMIT_TWISTED if twisted else MIDDLE_ORDERS_LIMIT):
        out += [o for o in permutations(dor.DEFAULT_ORDER) if o[-1] not in dead_dims and o not in out]  # type: ignore[misc]
    if dor.DEFAULT_ORDER in out:  # the plain tables first, on ties too
        out.remove(dor.DEFAULT_ORDER)
        out.insert(0, dor.DEFAULT_ORDER)
    return out


def broken_first_alternating(dead_dims: set[int]) -> tuple[list[Order], int] | None:
    """With two broken dimensions d < e and a healthy one h: the orders (d, e, h) and (e, d, h), each destination
    taking the one that leaves fewer of its routes broken, and on ties (most destinations) alternating with the
    parity of its h coordinate (`choose_orders`' `alternate`); None otherwise.

    Both broken legs run in the source's h plane and the healthy leg last, so a route breaks only where its
    source's plane holds broken rings. When the two OCS's broken rings share their h planes (x/5 and y/5 on
    8x8x8), the other families leave some destinations no whole order and pile their repairs on one dimension
    (640 against the LP's 546.1); alternating the two orders plane by plane spreads them: 599, relieved 592.
    """
    if len(dead_dims) != 2:
        return None
    d, e = sorted(dead_dims)
    (h,) = set(dor.DEFAULT_ORDER) - dead_dims
    return [(d, e, h), (e, d, h)], h
