"""A slice's stored routing tables weighed again beside new ones (pure): `routes` keeps them when they are lighter.

Tables made around a set of faults never use a link those faults took down, so once one of the faults is cleared
they still route on the live graph, which only gained links. Made afresh for the faults left, the tables can be
heavier (4x4x8 with ocs x/0 and y/3 down: all-to-all max link load 129; x/0 alone: 130), so the stored set is one
more candidate. It is kept only when it routes every pair on live links, is deadlock-free within the VC budget (the
same analysis the router's own candidates get: `figures.fitted_report`), and carries all-to-all with a strictly
lower maximum link load than the new tables. Its figures are then those of the live graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tpufleet.routing.analysis import RouteTables, analyze
from tpufleet.routing.figures import RouteReport, fitted_report
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.tolerant import RouteInfo
    from tpufleet.topology import ChipGraph

KEPT_STRATEGY = "stored tables, still valid and lighter than new ones"


@dataclass(frozen=True)
class StoredRoutes:
    """A slice's stored tables as `routes` wrote them (`routing.export.npz_bytes`), the per-chip view [s, t]."""

    meta: dict[str, Any]
    port: npt.NDArray[np.int8]  # [s, t] output port; -1 this chip, -2 unroutable
    hops: npt.NDArray[np.int16]  # [s, t] hop count; -1 unroutable
    wild: npt.NDArray[np.bool_]  # [s, t] a non-minimal entry
    dest_order: npt.NDArray[np.int8]  # [N] index into `orders` per destination
    orders: npt.NDArray[np.int8]  # [k, 3] the dimension orders
    nbr: npt.NDArray[np.int32] | None = None  # [N, 6] the live chip graph they were made for

    @property
    def chips(self) -> int:
        return int(self.port.shape[0])


def made_for(stored: StoredRoutes, name: str, shape: Shape, wired_serial: int | None) -> bool:
    """The tables were made for this slice as it is now: its name, shape, twist and chip count, and after it was
    last wired (`wired_serial`, the slice's `connected_serial`: a slice wired again may hold other cubes)."""
    meta = stored.meta
    made_at = meta.get("serial")
    return (
        meta.get("slice") == name
        and meta.get("shape") == shape.text
        and meta.get("twisted") is shape.twisted
        and stored.chips == shape.chips
        and isinstance(made_at, int)
        and (wired_serial is None or made_at >= wired_serial)
    )


# The meta fields that say what the tables are (not when they were made): `routes` run again compares them.
SAME_META = ("slice", "shape", "twisted", "algorithm", "vcs", "vc_layout", "wild_layers")


def same_tables(stored: StoredRoutes, rt: RouteTables, meta: dict[str, Any]) -> bool:
    """Whether `rt` (with its `meta`) are the very tables stored, member for member as `export.npz_bytes` writes
    them, made for the same chip graph: storing them again would change nothing but when they were made."""
    import json

    import numpy as np

    if stored.nbr is None or stored.chips != rt.n:
        return False
    wild = rt.wild.T if rt.wild is not None else np.zeros(rt.P.shape, dtype=bool)
    dest = rt.dest_class if rt.dest_class is not None else np.zeros(rt.n, dtype=np.int64)
    wanted = json.loads(json.dumps({k: meta.get(k) for k in SAME_META}))  # as the file's JSON holds them
    return (
        {k: stored.meta.get(k) for k in SAME_META} == wanted
        and np.array_equal(stored.nbr, rt.nbr)
        and np.array_equal(stored.port, rt.P.T)
        and np.array_equal(stored.hops, rt.L.T)
        and np.array_equal(stored.wild, wild)
        and np.array_equal(stored.dest_order, dest.astype(np.int8))
        and np.array_equal(stored.orders, np.array(rt.orders, dtype=np.int8))
    )


def route_tables(stored: StoredRoutes, shape: Shape, alive: ChipGraph) -> RouteTables | None:
    """The stored tables on the live graph `alive`; None when an entry leaves through a link it lacks."""
    import numpy as np

    port = stored.port
    leaving = np.take_along_axis(alive, np.maximum(port, 0), axis=1)  # [s, t] the chip each entry leads to
    if bool(((port >= 0) & (leaving < 0)).any()):
        return None
    wild = np.ascontiguousarray(stored.wild.T, dtype=bool)
    return RouteTables(
        shape,
        alive,
        np.ascontiguousarray(port.T, dtype=np.int8),
        np.ascontiguousarray(stored.hops.T, dtype=np.int16),
        wild if wild.any() else None,
        stored.dest_order.astype(np.int64),
        [(int(a), int(b), int(c)) for a, b, c in stored.orders.tolist()],
        "auto",
    )


def lighter_stored(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    traffics: Sequence[str],
    max_vcs: int,
    stored: StoredRoutes,
    fresh: RouteReport,
) -> RouteReport | None:
    """The report of the stored tables on the live graph when they are to be kept instead of `fresh` (the tables
    just made): every pair routed on live links, deadlock-free within `max_vcs`, and all-to-all strictly lighter
    than `fresh`. None otherwise."""
    import numpy as np

    rt = route_tables(stored, shape, alive)
    if rt is None or np.array_equal(rt.P, fresh.tables.P):
        return None  # a link they need is down, or they are the very tables just made (`routes` run again)
    light = analyze(rt, deadlock=False)  # the load first: the channel graph is checked only for lighter tables
    if not bool(light.routable.all()) or float(light.load.max()) >= all_to_all_load(fresh):
        return None
    return fitted_report(shape, expected, traffics, max_vcs, rt, how_made(rt, expected, alive))


def all_to_all_load(report: RouteReport) -> float:
    """The tables' maximum all-to-all link load (measured when the report did not ask for all-to-all)."""
    load = report.summary["max_link_load"].get("all-to-all")
    if load is not None:
        return float(load)
    return float(analyze(report.tables, deadlock=False).load.max())


def how_made(rt: RouteTables, expected: ChipGraph, alive: ChipGraph) -> RouteInfo:
    """How the stored tables route the live graph, as `candidates` says it of new ones: the pairs whose route in
    the tables' own dimension orders crosses a dead link (all repaired, since every pair arrives), and the wild
    entries no such pair needs (relieved ones, and repairs of faults since cleared)."""
    import numpy as np

    from tpufleet.routing import dor
    from tpufleet.routing.tolerant import broken_pairs

    classes = np.unique(rt.dest_class) if rt.dest_class is not None else np.zeros(1, dtype=np.int64)
    base = rt.P.copy()  # a minimal entry is its order's own; a wild one stands for the order's plain hop
    if rt.wild is not None and rt.dest_class is not None:
        for c in classes.tolist():
            guess = (rt.dest_class == c)[:, None] & rt.wild
            base[guess] = dor.tables(rt.shape, rt.orders[c])[0][guess]
    broken = broken_pairs(base, expected, alive)
    wild = int(rt.wild.sum()) if rt.wild is not None else 0
    wild_broken = int(rt.wild.ravel()[broken].sum()) if rt.wild is not None else 0
    return {
        "broken_by_faults": len(broken),
        "repaired_wild": len(broken),
        "orders_used": len(classes),
        "strategy": KEPT_STRATEGY,
        "relieved": wild - wild_broken,
    }
