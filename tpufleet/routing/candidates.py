"""Candidate table sets for a slice with faults, ranked by maximum all-to-all link load, pure.

`candidates` makes wild-first repairs (`tolerant.wild_first`) of several table families:

* one dimension order for every destination, taking the broken dimensions first (`single_orders`);
* per-destination dimension orders (`choose_orders`): with a dead x link, a destination outside the broken x rings
  is reached x-last, so every packet enters x only in the destination's own (healthy) ring; destinations inside
  broken rings keep x-first. Per broken dimension, the pair "first or last" (`order_pairs`) fits the hardware's 3
  VCs when the two orders' blocks overlap or their legs are placed one by one (`cdg.verdict` decides); with two
  broken dimensions, up to 512 chips, also all six orders (`all_orders`: healthy dimension first), which fit 3
  VCs only with legs placed one by one; the orders' own blocks (`max_vcs` 5 and more) as a last family;
* on twisted tori above PAIRS_LIMIT_TWISTED chips with one broken dimension, the broken dimension last for the
  destinations whose ring is whole and a load-aware tree for each one inside a broken ring (`routing.split`): within
  3 VCs where the order pairs need 4 (one x OCS down: twisted 8x8x16 1303 against 1443, 8x16x16 3338 against 3548);
  with two broken dimensions, up to SPLIT_TWO_LIMIT chips, trees for one's broken rings and the other's broken
  routes wild-first (x and z OCS down: twisted 8x8x16 1441 against 1535);
* on tori up to RELIEVE_LIMIT chips with broken rings in all three dimensions, one dimension order whose routes may
  start with wild pre-legs along every dimension in the order's sequence (`routing.preleg_mesh`; where those leave
  a pair unreached, along its middle dimension only, `routing.preleg`), by load-aware trees, relieved: 8x8x8
  with x/3, y/5 and z/2 down 572 against 638;
* for optical-link faults, the same made for the whole OCS's failure pattern (`ocs_patterns`): a link never
  routes worse than its OCS.

The caller (`report.evaluate`) keeps the first that is deadlock-free within the VC budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from tpufleet.routing import dor
from tpufleet.routing.analysis import RouteTables
from tpufleet.routing.ceiling import Pruned, check
from tpufleet.routing.dimension_orders import (
    all_orders,
    broken_first_alternating,
    choose_orders,
    dead_dims_of,
    order_pairs,
    single_orders,
)
from tpufleet.routing.patterns import ocs_patterns
from tpufleet.routing.split_relieve import SPLIT_GOOD
from tpufleet.routing.structured import DorBase
from tpufleet.routing.tolerant import RouteInfo, base_load, broken_pairs, wild_first
from tpufleet.routing.tree_families import (
    MESH_GOOD,
    preleg_made,
    prelegs_apply,
    split_made,
    splits_apply,
    twisted_mesh_apply,
    twisted_mesh_made,
    whole_ocs_only,
)
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray
    from tpufleet.routing.dor import HopTable, Order, PortTable
    from tpufleet.routing.reach import Skipping
    from tpufleet.topology import ChipGraph

    Load = npt.NDArray[np.int64]  # [N * 6] units per directed link

LOAD_AWARE_PENALTY = 8.0  # broken routes a destination may keep to avoid a hotter link, per unit of load
LOAD_AWARE_LIMIT = 2048  # chips; above this the load-aware order choice costs more than it tends to win


def _repair(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    algorithm: str,
    per_destination_orders: list[Order] | None,
    penalty: float | None = None,
    order: Order = dor.DEFAULT_ORDER,
    balanced: bool = False,
    alternate: int | None = None,
    ceiling: float | None = None,
) -> tuple[RouteTables, RouteInfo]:
    import numpy as np

    variant = Variant(per_destination_orders, penalty, order, balanced, alternate)
    P, L, dest_class, orders, broken = _base_tables(shape, expected, alive, variant)
    info: RouteInfo = {"broken_by_faults": len(broken), "repaired_wild": 0, "orders_used": len(np.unique(dest_class))}
    wild: BoolArray | None = None
    load: Load | None = None
    if len(broken):
        plain = None if per_destination_orders is not None else expected
        if algorithm == "dor":
            load = base_load(P, L, alive, broken, shape, plain) if _plain_dor(shape, expected, alive) else None
            P.ravel()[broken] = -2
            L.ravel()[broken] = -1
        else:
            paths = None
            if _by_rings(shape, expected, alive, variant):
                from tpufleet.routing.rings import RingPaths

                paths = RingPaths(shape, order)
            start = base_load(P, L, alive, broken, shape, plain, paths)
            check(ceiling, start, alive, broken, info["orders_used"])
            wild, left, load = wild_first(P, L, alive, broken, base=start, paths=paths)
            info["max_load"] = float(load.max())
            info["repaired_wild"] = int(len(broken) - len(left))
    _drop_dead_chips(P, L, expected, alive)
    rt = RouteTables(shape, alive, P, L, wild, dest_class, orders, algorithm)
    if _by_rings(shape, expected, alive, variant):
        rt.base = DorBase(order, alive, load)  # only broken pairs changed: the rings give every figure
    return rt, info


def _base_tables(
    shape: Shape, expected: ChipGraph, alive: ChipGraph, variant: Variant
) -> tuple[PortTable, HopTable, npt.NDArray[np.int64], list[Order], npt.NDArray[np.int64]]:
    """The tables a variant's repair starts from, every chip's dimension-order class, the orders, and the pairs
    the faults break in them."""
    import numpy as np

    from tpufleet.routing.balanced import balanced_twisted_tables

    per_destination_orders, penalty, order, balanced, alternate = variant
    if per_destination_orders is not None:
        orders = per_destination_orders or None
        return choose_orders(shape, expected, alive, penalty, orders, balanced, alternate)
    P, L = balanced_twisted_tables(shape, order) if balanced else dor.tables(shape, order)
    dest_class = np.zeros(len(expected), dtype=np.int64)
    if _by_rings(shape, expected, alive, variant):
        from tpufleet.routing.rings import broken_by_runs

        return P, L, dest_class, [order], broken_by_runs(shape, order, expected, alive)  # the same set, by rings
    return P, L, dest_class, [order], broken_pairs(P, expected, alive)


def _by_rings(shape: Shape, expected: ChipGraph, alive: ChipGraph, variant: Variant) -> bool:
    """The variant starts from the plain dimension-order tables of an untwisted torus that only lacks links: its
    broken pairs come from the dead links' rings (`rings.broken_by_runs`), no table needed."""
    per_destination_orders, _, _, balanced, _ = variant
    return per_destination_orders is None and not balanced and _plain_dor(shape, expected, alive)


def broken_of(
    shape: Shape, expected: ChipGraph, alive: ChipGraph, variant: Variant
) -> tuple[npt.NDArray[np.int64], int, BoolArray | None]:
    """The pairs a variant's starting tables lose to the faults, how many dimension orders they use, and the
    pairs as an N * N mask where the rings give them (without the tables; None otherwise)."""
    import numpy as np

    if _by_rings(shape, expected, alive, variant):
        from tpufleet.routing.rings import broken_mask_by_runs

        mask = broken_mask_by_runs(shape, variant.order, expected, alive)
        return np.flatnonzero(mask), 1, mask
    _, _, dest_class, _, broken = _base_tables(shape, expected, alive, variant)
    return broken, len(np.unique(dest_class)), None


def _plain_dor(shape: Shape, expected: ChipGraph, alive: ChipGraph) -> bool:
    """The tables of `order` are the closed-form ones of an untwisted torus, and `alive` only lacks links."""
    return shape.wraps and not shape.twisted and bool(((alive == expected) | (alive < 0)).all())


def _drop_dead_chips(P: PortTable, L: HopTable, expected: ChipGraph, alive: ChipGraph) -> None:
    """A chip with no live link neither sends nor receives."""
    import numpy as np

    for chip in np.flatnonzero((alive < 0).all(axis=1) & (expected >= 0).any(axis=1)):
        P[chip, :], L[chip, :] = -2, -1
        P[:, chip], L[:, chip] = -2, -1
        P[chip, chip], L[chip, chip] = -1, 0


def _max_load(rt: RouteTables) -> float:
    from tpufleet.routing.analysis import Levels, flow, link_load, verify

    levels = Levels(rt.L)
    weight, _ = flow(rt, verify(rt, levels), levels, masks=False)
    return float(link_load(rt, weight).max())


def candidates(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    algorithm: str = "auto",
    max_vcs: int | None = None,
    thorough: bool = False,
    turned: bool = False,
    ceiling: float | None = None,
) -> list[tuple[RouteTables, RouteInfo]]:
    """Table sets for the live graph `alive` of a slice whose healthy graph is `expected`, best first.

    ``dor``: healthy dimension-order routes; pairs a fault breaks are unroutable. ``wild-first``: those pairs
    take a wild first hop (see module docstring). ``auto``: wild-first in each dimension order that takes the
    broken dimensions first, and per-destination dimension orders (chosen by fewest broken routes, and, up to
    LOAD_AWARE_LIMIT chips, load-aware) when `max_vcs` leaves room for two orders; for optical-link faults also
    the same made for the whole OCS's failure pattern. Ranked by maximum all-to-all link load (ties: fewer
    dimension orders, so fewer virtual channels), without those that leave pairs unroutable when one routes
    every pair (`routable_first`); the caller keeps the first whose virtual channels fit.
    `thorough`: order pairs whatever the slice's size (`order_pairs`). `turned`: `alive` is a fault's canonical
    form, whose tables are turned back onto the live graph, so no pre-leg trees (`routing.preleg`): their pre-legs
    keep off the canonical form's wraparounds, which turned back lie elsewhere, and the live graph's own are made
    whenever the turned tables do not fit (on 8x8x8 with x/3, y/5 and z/2 down they were made twice, 9.3 s of CPU
    against 5.4 made once). `ceiling`: no wild-first candidate proved to reach it is made (`routing.ceiling`), so
    the first that fits is the same whenever it is lighter than `ceiling` (untwisted tori, above the good-enough
    load); the list may then be empty.
    """
    from tpufleet.routing.balanced import BALANCE_LIMIT

    healthy = bool((alive == expected).all())
    balance = [False, True] if shape.twisted and algorithm == "auto" and len(expected) <= BALANCE_LIMIT else [False]
    if healthy and len(balance) > 1:
        return _ranked_healthy(shape, expected, alive)
    if healthy or algorithm in ("dor", "wild-first"):
        rt, info = _repair(shape, expected, alive, algorithm if not healthy else "dor", None)
        rt.algorithm = algorithm
        return [(rt, info)]
    from tpufleet.routing.reach import Skipping

    singles, mixed, pairs = variants_of(shape, expected, alive, max_vcs, balance, thorough)
    from tpufleet.routing.rescue import NOTE, rescuing

    rescue = [] if pairs or thorough or turned else rescuing(shape, expected, alive, max_vcs)
    if rescue:  # every other candidate leaves pairs these route: only they are made
        return routable_first(_made(shape, expected, alive, alive, NOTE, rescue, Skipping(shape, expected)))
    good_enough = _good_enough_load(shape, expected) if pairs else 0.0
    if shape.twisted or (ceiling is not None and ceiling <= good_enough):  # whether pairs are made; `lightest`
        ceiling = None
    ranked: list[Ranked] = []
    skipping = Skipping(shape, expected)
    patterns = ocs_patterns(shape, expected, alive)
    pruned: list[int] = []  # pairs left unroutable by each candidate not made (`ceiling`)
    for graph, note in [(alive, ""), *patterns]:
        made = _made(shape, expected, alive, graph, note, singles, skipping, (ceiling, pruned))
        # Decided per graph, from that graph's own tables: an optical link's candidates then include exactly
        # those its whole OCS's failure gets alone, so the link never routes worse than the OCS. Tables that
        # leave pairs unroutable are no answer, however light.
        if pairs and min((item[0][0] for item in made if not _left(item[2])), default=float("inf")) > good_enough:
            made += _made(shape, expected, alive, graph, note, pairs, skipping, (ceiling, pruned))
        ranked += made + _made(shape, expected, alive, graph, note, mixed, skipping, (ceiling, pruned))
        if splits_apply(shape, expected, graph, max_vcs):
            ranked += split_made(shape, expected, alive, graph, note)
    if (
        not turned
        and whole_ocs_only(shape, expected, alive, patterns)
        and prelegs_apply(shape, expected, alive, max_vcs)
    ):
        ranked.append(preleg_made(shape, expected, alive, alive, ""))
    if whole_ocs_only(shape, expected, alive, patterns) and twisted_mesh_apply(
        shape, expected, alive, max_vcs, thorough
    ):
        lightest = min(ranked, key=lambda item: item[0])[1] if ranked else None  # its ring steps kept
        ranked += twisted_mesh_made(shape, expected, alive, lightest, MESH_GOOD if thorough else SPLIT_GOOD)
    return routable_first(ranked, 0 in pruned)


def routable_first(ranked: list[Ranked], routable: bool = False) -> list[tuple[RouteTables, RouteInfo]]:
    """The candidates by rank; when one routes every pair (`routable`: or one not made), none that leaves pairs
    unroutable: however light, such tables strand the pairs they leave (ranked by load alone they came first)."""
    ranked = sorted(ranked, key=lambda item: item[0])
    if routable or any(not _left(info) for _, _, info in ranked):
        ranked = [item for item in ranked if not _left(item[2])]
    return [(rt, info) for _, rt, info in ranked]


def _left(info: RouteInfo) -> int:
    """Pairs a wild-first candidate leaves unroutable."""
    return info["broken_by_faults"] - info["repaired_wild"]


class Variant(NamedTuple):
    """How the tables a wild-first repair starts from are made (`_base_tables`)."""

    orders: list[Order] | None  # per-destination orders to choose among ([]: `choose_orders`' own); None: one order
    penalty: float | None  # the per-destination choice is load-aware, a broken route costing this much
    order: Order  # the one order (or the first of `orders`)
    balanced: bool  # a twisted torus's load-balanced tables
    alternate: int | None = None  # ties between two orders go by the parity of this dimension's coordinate


def variants_of(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    max_vcs: int | None,
    balance: list[bool],
    thorough: bool = False,
) -> tuple[list[Variant], list[Variant], list[Variant]]:
    """What `candidates` makes for each graph: single orders, per-destination orders on separate VC blocks, and
    the order pairs it adds when no single order is good enough."""
    dead_dims = dead_dims_of(expected, alive)
    singles = [
        Variant(None, None, order, even)
        for order in single_orders(dead_dims, len(expected), shape.twisted)
        for even in balance
    ]
    mixed: list[Variant] = []
    if max_vcs is None or max_vcs >= 2 * (2 if shape.wraps else 1) + 1:  # every order, on separate VC blocks
        mixed += [Variant([], None, dor.DEFAULT_ORDER, False)]
        if len(expected) <= LOAD_AWARE_LIMIT:
            mixed += [Variant([], LOAD_AWARE_PENALTY, dor.DEFAULT_ORDER, False)]
    pairs = order_pairs(shape, len(expected), dead_dims, max_vcs, thorough)
    pairs += all_orders(len(expected), dead_dims) if pairs and not shape.twisted else []
    pair_variants = [Variant(p, None, p[0], even) for p in pairs for even in balance]
    alternating = broken_first_alternating(dead_dims) if pairs and not shape.twisted else None
    if alternating is not None:
        pair_variants.append(Variant(alternating[0], None, alternating[0][0], False, alternating[1]))
    return singles, mixed, pair_variants


Ranked = tuple[tuple[float, int], RouteTables, RouteInfo]


GOOD_ENOUGH = 0.95  # of the healthy throughput: a single order this good is not worth two orders' seconds


def _good_enough_load(shape: Shape, expected: ChipGraph) -> float:
    """The all-to-all max link load that keeps GOOD_ENOUGH of the healthy throughput."""
    from tpufleet.routing.healthy import healthy_loads

    return healthy_loads(shape, expected, ("all-to-all",))["all-to-all"] / GOOD_ENOUGH


def _made(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    graph: ChipGraph,
    note: str,
    variants: list[Variant],
    skipping: Skipping,
    bound: tuple[float | None, list[int]] = (None, []),
) -> list[Ranked]:
    """Each variant's wild-first tables made for `graph` (the live graph, or an OCS's whole failure pattern),
    with its rank key (max all-to-all load, orders used) and how it was made; not those `skipping` finds would
    be dropped, nor those proved to reach the ceiling `bound[0]` (their pairs left added to `bound[1]`)."""
    from tpufleet.routing import steps

    out: list[Ranked] = []
    steps.plan("repair", len(variants))
    for variant in variants:
        mixed, penalty, order, even, alternate = variant
        if not skipping.worth_making(graph, variant):
            steps.advance("repair")
            continue
        try:
            rt, info = _repair(shape, expected, graph, "wild-first", mixed, penalty, order, even, alternate, bound[0])
        except Pruned as heavy:
            skipping.made(heavy.left)
            steps.advance("repair")
            bound[1].extend([heavy.left] if mixed is None or heavy.orders_used > 1 else [])  # as it would be ranked
            continue
        skipping.made(_left(info))
        steps.advance("repair")
        if mixed is not None and info["orders_used"] == 1:
            continue  # the same tables as plain wild-first
        rt.algorithm = "auto"
        rt.nbr = alive  # tables made for fewer links are valid on the live graph: they never use the others
        plain = (
            ("balanced " if even else "")
            + "wild-first"
            + ("" if order == dor.DEFAULT_ORDER else f", dimension order {''.join('xyz'[d] for d in order)}")
        )
        mixed_how = ("balanced " if even else "") + "per-destination dimension orders + wild-first"
        how = (plain if mixed is None else mixed_how) + note
        # The same routes carry the same load on either graph: the extra links are simply unused.
        load = info.get("max_load", None) or _max_load(rt)
        out.append(((load, info["orders_used"]), rt, {**info, "strategy": how, "max_load": load, "made_for": graph}))
    return out


def _ranked_healthy(shape: Shape, expected: ChipGraph, alive: ChipGraph) -> list[tuple[RouteTables, RouteInfo]]:
    """A healthy twisted torus: the load-balanced minimal tables and the plain ones, lighter first."""
    from tpufleet.routing.loads import symmetric_load

    out: list[tuple[tuple[float, int], RouteTables, RouteInfo]] = []
    for even in (True, False):
        rt, info = _repair(shape, expected, alive, "dor", None, balanced=even)
        rt.algorithm = "auto"
        load = float(symmetric_load(rt).max())
        how = "balanced dimension-order" if even else "dimension-order"
        out.append(((load, 0 if even else 1), rt, {**info, "strategy": how, "max_load": load}))
    out.sort(key=lambda item: item[0])
    return [(rt, info) for _, rt, info in out]


def route(
    shape: Shape, expected: ChipGraph, alive: ChipGraph, algorithm: str = "auto"
) -> tuple[RouteTables, RouteInfo]:
    """The best-ranked table set (see `candidates`), whatever the virtual channels it needs."""
    return candidates(shape, expected, alive, algorithm)[0]
