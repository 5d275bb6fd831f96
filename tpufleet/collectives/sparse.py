"""Sparse routing tables: every chip holds at most N destinations.

The "Exploring the limits of concurrency in ML training on Google TPUs" paper (section 1) ran a 4,096-chip
TPU-v3 multipod whose routing tables had only 1,024 entries: each chip saw only the chips on its own rows and
columns, which was enough for peak all-reduce throughput. Here a chip keeps, in this order of priority: the
members of its own rings of each dimension (the rings dimension-by-dimension collectives run on; on a twisted
torus these include the helix), every destination it forwards for on the routes between ring members, and then
the nearest other destinations while room is left. The rest are marked not directly routable (-2). The chip
itself is not counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpufleet.collectives.schedules import dim_phases
from tpufleet.collectives.tables import UNROUTABLE, Tables, walk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.analysis import RouteTables
    from tpufleet.topology import ChipGraph

ORDER = (0, 1, 2)


def ring_entries(t: Tables) -> npt.NDArray[np.bool_]:
    """[s, t] True where chip s needs an entry for t so that every ring member reaches every other (forwarding
    chips included)."""
    import numpy as np

    need = np.zeros((t.n, t.n), dtype=bool)
    for ph in dim_phases(t.shape, ORDER, t.healthy_nbr):
        m = ph.size
        a, b = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
        keep = a != b
        src, dst = ph.rings[:, a[keep]].ravel(), ph.rings[:, b[keep]].ravel()
        msg, links, _hops, _ok = walk(t, src, dst)
        need[links // 6, dst[msg]] = True
    np.fill_diagonal(need, False)
    return need


def sparse(t: Tables, capacity: int) -> tuple[Tables, int]:
    """A copy of the tables in which each chip keeps at most `capacity` destinations; and how many ring entries
    (the most any chip needs) did not fit."""
    import numpy as np

    need = ring_entries(t)
    hops = t.hop_table().astype(np.int64)
    routable = (t.port >= 0) & ~np.eye(t.n, dtype=bool)
    rank = np.where(need, 0, 1 + np.where(hops >= 0, hops, t.n)) * t.n + np.arange(t.n)[None, :]
    rank = np.where(routable, rank, np.iinfo(np.int64).max)
    keep = np.zeros_like(need)
    k = min(capacity, t.n - 1)
    if k > 0:
        chosen = np.argpartition(rank, k - 1, axis=1)[:, :k]
        rows = np.arange(t.n)[:, None]
        keep[rows, chosen] = routable[rows, chosen]
    port = np.where(keep, t.port, np.int8(UNROUTABLE)).astype(np.int8)
    np.fill_diagonal(port, -1)
    missing = int((need & ~keep).sum(axis=1).max())
    meta = {**t.meta, "table_capacity": capacity}
    kept_hops = np.where(keep, hops, -1).astype(np.int16)
    np.fill_diagonal(kept_hops, 0)
    return Tables(t.shape, port, t.nbr, t.healthy_nbr, "sparse", meta, hops=kept_hops), missing


def sparse_route_tables(rt: RouteTables, expected: ChipGraph, capacity: int) -> tuple[RouteTables, int]:
    """`sparse` for the routing layer's tables (for `routes --table-capacity N` to export): the same tables with
    at most `capacity` destinations a chip, the others -2; and the ring entries that did not fit."""
    import dataclasses

    import numpy as np

    t = Tables(
        rt.shape, np.ascontiguousarray(rt.P.T), rt.nbr, expected, "stored", {}, hops=np.ascontiguousarray(rt.L.T)
    )
    kept, missing = sparse(t, capacity)
    P, L = np.ascontiguousarray(kept.port.T), np.ascontiguousarray(kept.hop_table().T)
    return dataclasses.replace(rt, P=P, L=L), missing
