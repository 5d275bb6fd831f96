"""The routing tables a collective runs on, read-only: a slice's stored tables or the healthy DOR ones of a shape,
and the walk of messages along them.

Stored tables are ``routes/SLICE.npz`` as ``tpufleet routes`` writes them (tpufleet/routing/export.py): the
per-chip view ``port[s, t]`` (0..5 = +x,-x,+y,-y,+z,-z; -1 this chip; -2 unroutable), ``neighbors`` (the live
chip graph the tables were made for) and ``meta`` (JSON: shape, twisted, algorithm, made). The state layer reads
them (``tpufleet.state.routetables``) and builds `Tables` with `stored`; members needed only by some models (the
hop counts) are read when first asked for, through the reader it hands over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import Int64Array
    from tpufleet.fleetstate import RouteRecord

UNROUTABLE = -2


@dataclass
class Tables:
    shape: Shape
    port_table: npt.NDArray[np.int8] | None  # [s, t] output port of chip s for destination t (None: not made yet)
    nbr: npt.NDArray[np.int32]  # [N, 6] live chip graph
    healthy_nbr: npt.NDArray[np.int32]  # [N, 6] the shape's whole graph (the logical rings are built on it)
    source: str  # "stored", "assumed-healthy" or "sparse" (a capacity-limited copy)
    meta: dict[str, Any] = field(default_factory=dict)
    read_hops: Callable[[], npt.NDArray[np.int16]] | None = None  # the stored [s, t] hops, read when first needed
    hops: npt.NDArray[np.int16] | None = None  # [s, t] hop count, -1 unroutable; read on demand

    @property
    def n(self) -> int:
        return len(self.nbr)

    @property
    def port(self) -> npt.NDArray[np.int8]:
        """The whole [s, t] table; healthy tables of a shape are only made when a route needs more than one hop."""
        if self.port_table is None:
            from tpufleet.routing import dor

            P, L = dor.tables(self.shape)
            self.port_table, self.hops = P.T.copy(), L.T.copy()
        return self.port_table

    def hop_table(self) -> npt.NDArray[np.int16]:
        """[s, t] hops of every route (read from the stored file on first use: all-to-all and sparse tables)."""
        import numpy as np

        if self.hops is None and self.port_table is None:
            self.port  # noqa: B018  (makes the healthy tables, hops included)
        if self.hops is None:
            assert self.read_hops is not None, "tables without hops are stored ones"
            self.hops = self.read_hops().astype(np.int16)
        return self.hops

    @property
    def degraded(self) -> bool:
        """Some link of the shape is missing from the graph the tables were made for."""
        return bool((self.nbr != self.healthy_nbr).any())


def healthy(shape: Shape) -> Tables:
    """The healthy dimension-order tables of a shape (what `routes` makes for a whole slice).

    Minimal routes between neighbours are their direct link, so rings of neighbours are walked without the
    N x N tables; they are made (about a second on 4,096 chips) only when a longer route is asked for.
    """
    from tpufleet.topology import neighbors

    nbr = neighbors(shape)
    meta = {"shape": shape.text, "twisted": shape.twisted, "algorithm": "dor"}
    return Tables(shape, None, nbr, nbr, "assumed-healthy", meta)


def healthy_as_routed(shape: Shape) -> Tables:
    """The tables `routes` stores for a whole slice of the shape: `healthy`'s dimension order, or on a twisted
    torus the lighter of plain and balanced dimension order (`routing.healthy.healthy_tables`), so that a degraded
    slice's slowdown is against the tables it ran on before its faults."""
    if not shape.twisted:
        return healthy(shape)
    from tpufleet.routing.healthy import healthy_tables
    from tpufleet.topology import neighbors

    nbr = neighbors(shape)
    P, L = healthy_tables(shape, nbr)
    meta = {"shape": shape.text, "twisted": True, "algorithm": "dor"}
    return Tables(shape, P.T.copy(), nbr, nbr, "assumed-healthy", meta, hops=L.T.copy())


def _direct(
    t: Tables, src: Int64Array, dst: Int64Array
) -> tuple[Int64Array, Int64Array, Int64Array, npt.NDArray[np.bool_]] | None:
    """`walk` for healthy tables not yet made, when every message goes to a neighbour (None otherwise)."""
    import numpy as np

    hit = t.nbr[src] == dst[:, None]  # [m, 6]
    moving = src != dst
    if not bool((hit.any(axis=1) | ~moving).all()):
        return None
    idx = np.flatnonzero(moving).astype(np.int64)
    port = np.argmax(hit[idx], axis=1).astype(np.int64)
    return idx, src[idx] * 6 + port, moving.astype(np.int64), np.ones(len(src), dtype=bool)


def stored(
    meta: dict[str, Any],
    port: npt.NDArray[np.int8],
    nbr: npt.NDArray[np.int32],
    file: str,
    read_hops: Callable[[], npt.NDArray[np.int16]] | None = None,
) -> Tables:
    """A slice's stored tables from their decoded members (`meta`, `port`, `neighbors`); BadStateFile naming
    `file` when they are not the tables of a slice shape."""
    import numpy as np

    from tpufleet.shapes import validate_dims
    from tpufleet.topology import neighbors

    try:
        dims = tuple(int(v) for v in str(meta["shape"]).split("x"))
        shape = validate_dims((dims[0], dims[1], dims[2]), bool(meta.get("twisted", False)))
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise BadStateFile(file, "meta.shape", meta.get("shape", NO_VALUE), f"is not a slice shape ({exc})") from None
    n = shape.chips
    if port.shape != (n, n) or port.dtype != np.int8 or nbr.shape != (n, 6):
        raise BadStateFile(file, "port", list(port.shape), f"does not fit a {shape.text} slice of {n} chips")
    # Walks index the neighbours by port and the chips by neighbour: a value out of range is damage, not a route
    not_a_port = (port < -2) | (port >= nbr.shape[1])
    if bool(not_a_port.any()):
        raise BadStateFile(file, "port", int(port[not_a_port][0]), f"is not a port (-2 to {nbr.shape[1] - 1})")
    if not np.issubdtype(nbr.dtype, np.integer) or not bool(((nbr >= -1) & (nbr < n)).all()):
        raise BadStateFile(file, "neighbors", str(nbr.dtype), f"are not chips of the slice (-1 to {n - 1})")
    return Tables(shape, port, nbr.astype(np.int32), neighbors(shape), "stored", meta, read_hops=read_hops)


# Why tables are stale while the indexed ones wait under a temporary name (a command killed between its commit and
# renaming them in): the file holds the ones before them
WAITING_REASON = "the file holds older tables than the indexed ones, which the next change installs"


def not_indexed(meta: dict[str, Any], name: str, entry: RouteRecord, waiting: bool = False) -> str | None:
    """Why stored tables (their `meta`) are not the ones slice `name`'s index `entry` names, or None when they are.
    Files are moved by hand: a copy of another slice's tables must not be taken for the slice's own, nor tables newer
    or other than indexed. An entry that records its tables' id (`tables_id`, written since 0.3) is compared by it:
    exact, where the time made (to the second) let the slice's own older tables put back within that second pass.
    `waiting`: the indexed tables still wait under a temporary name, so the file holds the ones before them, and only
    its owner and serial are compared."""
    owner = meta.get("slice")
    if owner is not None and owner != name:
        return f"holds the tables of slice {owner!r}, not of {name!r}"
    at = meta.get("serial")
    if type(at) is int and at >= entry.serial:
        return f"holds tables made at serial {at}, after their index entry was committed (serial {entry.serial})"
    if waiting:
        return None
    if meta.get("made") != entry.made:
        return f"holds tables made at {meta.get('made')!r}, not the ones indexed (made at {entry.made!r})"
    if entry.tables_id is not None and meta.get("tables_id") != entry.tables_id:
        return f"holds other tables made at {entry.made!r}, not the ones indexed (their id differs)"
    return None


def walk(
    t: Tables, src: npt.ArrayLike, dst: npt.ArrayLike
) -> tuple[Int64Array, Int64Array, Int64Array, npt.NDArray[np.bool_]]:
    """Follow every message (src[i] -> dst[i]) along the tables.

    Returns (message index per hop, directed link id chip*6+port per hop, hops per message, delivered per message).
    A message is not delivered when some chip on its way has no entry for the destination (-2) or no live link.
    """
    import numpy as np

    cur = np.asarray(src, dtype=np.int64).copy()
    to = np.asarray(dst, dtype=np.int64)
    if t.port_table is None and (quick := _direct(t, cur, to)) is not None:
        return quick
    m = len(cur)
    hops = np.zeros(m, dtype=np.int64)
    ok = np.ones(m, dtype=bool)
    idx = np.arange(m, dtype=np.int64)
    msgs: list[Int64Array] = []
    links: list[Int64Array] = []
    for _ in range(4 * t.n + 8):  # a route longer than this loops
        moving = cur[idx] != to[idx]
        idx = idx[moving]
        if not len(idx):
            break
        c = cur[idx]
        p = t.port[c, to[idx]].astype(np.int64)
        nxt = np.where(p >= 0, t.nbr[c, np.maximum(p, 0)], -1)
        bad = nxt < 0
        ok[idx[bad]] = False
        idx, c, p, nxt = idx[~bad], c[~bad], p[~bad], nxt[~bad]
        msgs.append(idx)
        links.append(c * 6 + p)
        cur[idx] = nxt
        hops[idx] += 1
    else:
        ok[idx[cur[idx] != to[idx]]] = False
    empty = np.empty(0, dtype=np.int64)
    return (np.concatenate(msgs) if msgs else empty, np.concatenate(links) if links else empty, hops, ok)
