"""Checking and measuring routing tables: arrival, link load, virtual channels and deadlock freedom.

All passes visit (destination, chip) pairs level by level in the order of their hop count, so every per-pair
quantity that flows along routes (arrival, carried traffic, the set of virtual channels in use) is computed in
a few vectorized sweeps over the N^2 table, without walking pairs one by one; a route never leaves its
destination's row, so the sweeps run block of rows by block, each block's arrays small enough to stay in cache.

Virtual-channel rule (the data behind ``vcs``): a dimension-order hop travels on VC ``base + k`` where ``k``
counts the wraparound (dateline) links crossed since the packet entered the current dimension, and ``base``
is its dimension order's first VC; non-minimal "wild" hops share the one VC ``wild_base``, and the hop after a
wild one starts again at its order's first VC. A repair's wild hops come first on a route (nothing depends on a
wild channel but another wild hop, so a single wild VC is deadlock-free whenever the wild hops' own dependencies
are acyclic); a relieved entry (`routing.relieve`) may be taken mid-route, which adds dependencies into the wild
VC: the check below decides either way. With ``RouteTables.wild_layers`` the packet's j-th wild hop takes VC
``wild_base + j`` instead: more VCs, never a cycle among wild hops. The orders' blocks come one after another and
the wild VCs after them, unless a tighter packing is also acyclic (`cdg.verdict`): blocks overlapping, wild hops on
a dateline VC, or each order's legs placed one by one (``base`` per order and dimension, the wild VC, plus j, per
order and dimension: `routing.legs`); ``vc_blocks`` says which. The channel dependency graph (CDG) is built from
the tables under this rule and searched for a cycle.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from collections.abc import Iterator

    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray, IntArray
    from tpufleet.routing.dor import HopTable, Order, PortTable
    from tpufleet.routing.structured import DorBase
    from tpufleet.topology import ChipGraph


@dataclass
class RouteTables:
    shape: Shape
    nbr: ChipGraph  # [N, 6] the live chip graph the tables were made for
    P: PortTable  # [t, s] int8 port; -1 deliver; -2 unroutable
    L: HopTable  # [t, s] int16 hops; -1 unroutable
    wild: BoolArray | None = None  # [t, s] bool: a non-minimal entry (a repair's first hop, or a relieved one)
    dest_class: npt.NDArray[np.int64] | None = None  # [N] index into `orders` per destination
    orders: list[Order] = field(default_factory=lambda: [(0, 1, 2)])
    algorithm: str = "dor"
    wild_layers: bool = False  # each wild hop of a chain on the next VC (see the module docstring)
    base: DorBase | None = None  # set by the maker when the tables are plain DOR plus repairs (fast analysis)

    @property
    def n(self) -> int:
        return len(self.nbr)


def datelines(shape: Shape) -> BoolArray:
    """[N, 6] bool: the link leaving through this port is a wraparound (the dateline of its ring)."""
    import numpy as np

    from tpufleet.topology import coordinates

    xyz = coordinates(shape.dims)
    out = np.zeros((len(xyz), 6), dtype=bool)
    if shape.wraps:
        for d in range(3):
            out[:, 2 * d] = xyz[:, d] == shape.dims[d] - 1
            out[:, 2 * d + 1] = xyz[:, d] == 0
    return out


class Levels:
    """Flat pair indices (t * N + s) grouped by hop count, from one stable sort.

    `pos[i]` is pair i's position inside its level. Built on first use: `verify` and `flow` sweep blocks of
    destinations with their own small sorts (`_Block`), so callers that only pass a `Levels` to them pay nothing.
    """

    def __init__(self, L: HopTable) -> None:
        self._L = L

    @functools.cached_property
    def _built(self) -> tuple[IntArray, npt.NDArray[np.intp], int, IntArray]:
        import numpy as np

        flat = self._L.ravel()
        itype: type[np.signedinteger[Any]] = np.int64 if flat.size >= 2**31 else np.int32
        top = int(flat.max())
        # numpy's stable sort is a radix sort on 8-bit keys: 2.6x faster than on the table's 16 bits (16x16x16)
        keys = flat.astype(np.int8) if top <= np.iinfo(np.int8).max else flat
        order: IntArray = np.argsort(keys, kind="stable").astype(itype)
        # level k (from -1 = unroutable up to the longest route) is order[bounds[k + 1]:bounds[k + 2]]
        bounds = np.searchsorted(flat[order], np.arange(-1, top + 2), side="left")
        bounds = np.append(bounds, len(flat))[: top + 3]
        pos: IntArray = np.empty(flat.size, dtype=itype)
        for k in range(top + 2):
            lo, hi = bounds[k], bounds[k + 1]
            pos[order[lo:hi]] = np.arange(hi - lo, dtype=itype)
        return order, bounds, top, pos

    @property
    def order(self) -> IntArray:
        return self._built[0]

    @property
    def bounds(self) -> npt.NDArray[np.intp]:
        return self._built[1]

    @property
    def max(self) -> int:
        return self._built[2]

    @property
    def pos(self) -> IntArray:
        return self._built[3]

    def at(self, k: int) -> IntArray:
        import numpy as np

        if k < -1 or k > self.max:
            return np.empty(0, dtype=self.order.dtype)
        return self.order[self.bounds[k + 1] : self.bounds[k + 2]]


BLOCK_PAIRS = 1 << 19  # (destination, chip) pairs swept together: one block's arrays stay in the CPU's caches


class _Block:
    """The pairs of destinations lo..hi-1 (rows of the tables), by hop count, each with its successor.

    Every pass below follows routes towards one destination, so it runs row block by row block: a block's stable
    sort and arrays are small enough to stay in cache, where one sort of all N^2 pairs (85 M on 9,216 chips) and
    its N^2 index arrays do not.
    """

    def __init__(self, rt: RouteTables, lo: int, hi: int) -> None:
        import numpy as np

        n = rt.n
        self.n, self.lo, self.hi = n, lo, hi
        P = rt.P[lo:hi]
        self.P = P.ravel()
        self.L = rt.L[lo:hi].ravel()
        self.top = int(self.L.max())
        # numpy's stable sort is a radix sort on 8-bit keys: 2.6x faster than on the table's 16 bits (16x16x16)
        keys = self.L.astype(np.int8) if self.top < np.iinfo(np.int8).max else self.L
        self.order = np.argsort(keys, kind="stable").astype(np.int32)
        # level k (from -1 = unroutable up to the longest route) is order[bounds[k + 1]:bounds[k + 2]]
        levels = np.arange(-1, self.top + 2).astype(keys.dtype)  # the keys' own type: no converted copy of them
        self.bounds = np.searchsorted(keys[self.order], levels, side="left").tolist()
        # the pair's successor in the block, (t - lo) * n + next chip; -1 where there is no port or no link
        ports = np.arange(n, dtype=np.int32)[None, :] * 6 + np.maximum(P, 0)
        nxt = rt.nbr.ravel()[ports]
        rows = (np.arange(hi - lo, dtype=np.int32) * n)[:, None]
        self.succ = np.where((P >= 0) & (nxt >= 0), nxt + rows, -1).ravel()
        self.ports = ports.ravel()  # s * 6 + port: the link the entry leaves on (port 0 where it has none)
        self.diag = np.arange(hi - lo) * n + np.arange(lo, hi)

    def at(self, k: int) -> npt.NDArray[np.int32]:
        return self.order[self.bounds[k + 1] : self.bounds[k + 2]]


def _blocks(rt: RouteTables) -> Iterator[_Block]:
    n = rt.n
    rows = max(1, BLOCK_PAIRS // max(n, 1))
    for lo in range(0, n, rows):
        yield _Block(rt, lo, min(n, lo + rows))


def _arrives(b: _Block) -> BoolArray:
    """`verify` of one block."""
    import numpy as np

    arrives = np.zeros(len(b.L), dtype=bool)
    arrives[b.diag] = True
    for k in range(1, b.top + 1):
        idx = b.at(k)
        nxt = b.succ[idx]
        good = nxt >= 0
        nxt = np.maximum(nxt, 0)
        arrives[idx] = good & (b.L[nxt] == k - 1) & arrives[nxt]
    return arrives


def verify(rt: RouteTables, levels: Levels | None = None) -> BoolArray:
    """[t, s] bool: walking the tables from s really reaches t.

    Proof by induction on the recorded hop count: a pair arrives iff its next chip is a live neighbour whose own
    entry for t records one hop fewer and itself arrives. (`levels` is accepted for callers that made one.)
    """
    import numpy as np

    n = rt.n
    arrives = np.empty(n * n, dtype=bool)
    for b in _blocks(rt):
        arrives[b.lo * n : b.hi * n] = _arrives(b)
    return arrives.reshape(n, n)


class _Hops:
    """What the VC bit sets of a sweep read besides the tables' ports: datelines, wild entries, their layering."""

    def __init__(self, rt: RouteTables) -> None:
        self.date = datelines(rt.shape).ravel()
        self.wild = rt.wild
        self.layers = rt.wild_layers


def _codes(b: _Block, hops: _Hops) -> npt.NDArray[np.uint8]:
    """Per pair of the block, what its hop does to the VC bits it passes on (see the module docstring): with bit 1
    set they start again at 1, else they shift left by bit 0 (a dateline crossed in the same dimension, or the
    next wild VC of a layered chain)."""
    import numpy as np

    nxt = np.maximum(b.succ, 0)
    same_dim = (b.P[nxt] >> 1) == (b.P >> 1)
    cross = hops.date[b.ports]
    if hops.wild is None:
        reset, shift = ~same_dim, cross
    else:
        rows = hops.wild[b.lo : b.hi].ravel()
        w_here, w_next = rows, rows[nxt]
        both = w_here & w_next
        reset = ~both & (w_here | w_next | ~same_dim)
        shift = np.where(both, hops.layers, cross)
    codes: npt.NDArray[np.uint8] = shift.astype(np.uint8) | (reset.astype(np.uint8) << np.uint8(1))
    return codes


def _carried(
    b: _Block, routable: BoolArray, hops: _Hops | None
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8] | None]:
    """`flow` of one block: traffic carried per pair hop, and (with `hops`) VC bit sets per pair hop.

    Levels from the longest routes down: a pair's traffic and bits are final before it passes them on.
    """
    import numpy as np

    weight = routable.astype(np.int32)
    weight[b.diag] = 0
    mask = (weight > 0).astype(np.uint8) if hops is not None else None
    codes = _codes(b, hops) if hops is not None else None
    for k in range(b.top, 1, -1):
        idx = b.at(k)
        w = weight[idx]
        nxt = b.succ[idx]
        live = (w > 0) & (nxt >= 0)
        if not live.all():
            idx, w, nxt = idx[live], w[live], nxt[live]
        np.add.at(weight, nxt, w)
        if mask is not None and codes is not None:
            c = codes[idx]
            _pass_bits(mask, nxt, np.where(c >> 1, np.uint8(1), mask[idx] << (c & np.uint8(1))))
    return weight, mask


def _pass_bits(mask: npt.NDArray[np.uint8], nxt: npt.NDArray[np.int32], shifted: npt.NDArray[np.uint8]) -> None:
    """OR each hop's outgoing VC bits into its successor's set."""
    import numpy as np

    bits = int(np.bitwise_or.reduce(shifted)) if len(shifted) else 0
    for bit in range(bits.bit_length()):
        if (bits >> bit) & 1:
            # a plain scatter: every hit ORs in the same bit, so repeated targets agree
            hit = nxt if shifted.min() == bits else nxt[(shifted & np.uint8(1 << bit)) > 0]
            mask[hit] |= np.uint8(1 << bit)


def _block_load(b: _Block, weight: npt.NDArray[np.int32]) -> npt.NDArray[np.float64]:
    """Flat [N * 6] all-to-all units per directed link from one block's carried traffic."""
    import numpy as np

    w = np.where(b.P >= 0, weight, 0)
    return np.bincount(b.ports, weights=w, minlength=b.n * 6).astype(np.float64, copy=False)


@dataclass
class Analysis:
    routable: BoolArray
    load: npt.NDArray[np.float64]  # [N, 6] all-to-all units per directed link
    vcs: int = 0
    deadlock_free: bool | None = None
    cycle: list[str] = field(default_factory=list)
    vc_blocks: dict[str, Any] = field(default_factory=dict)


@overload
def flow(
    rt: RouteTables, routable: BoolArray, levels: Levels, masks: Literal[True] = True
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]: ...
@overload
def flow(
    rt: RouteTables, routable: BoolArray, levels: Levels, masks: Literal[False]
) -> tuple[npt.NDArray[np.int32], None]: ...
@overload
def flow(
    rt: RouteTables, routable: BoolArray, levels: Levels, masks: bool = True
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8] | None]: ...
def flow(
    rt: RouteTables, routable: BoolArray, levels: Levels, masks: bool = True
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8] | None]:
    """One sweep from the longest routes down: traffic carried per pair hop, and VC bit sets per pair hop.

    weight[t, s]: how many sources' packets to t leave s on its table entry (all-to-all, one unit per pair);
    mask[t, s]: bit set of relative VC indices those packets use on that hop (see the module docstring).
    `routable` says which pairs send; a sending pair's route must arrive (`verify`).
    """
    import numpy as np

    n = rt.n
    weight = np.empty(n * n, dtype=np.int32)
    mask = np.empty(n * n, dtype=np.uint8) if masks else None
    hops = _Hops(rt) if masks else None
    sends = routable.ravel()
    for b in _blocks(rt):
        rows = slice(b.lo * n, b.hi * n)
        weight[rows], bits = _carried(b, sends[rows], hops)
        if mask is not None and bits is not None:
            mask[rows] = bits
    return weight, (mask.reshape(n, n) if mask is not None else None)


def swept_load(rt: RouteTables, routable: BoolArray) -> npt.NDArray[np.float64]:
    """`link_load` of `flow`'s traffic for the pairs `routable` says send, without the N^2 traffic table."""
    import numpy as np

    n = rt.n
    total = np.zeros(n * 6, dtype=np.float64)
    sends = routable.ravel()
    for b in _blocks(rt):
        total += _block_load(b, _carried(b, sends[b.lo * n : b.hi * n], None)[0])
    return total.reshape(n, 6)


def link_load(rt: RouteTables, weight: npt.NDArray[np.number[Any]]) -> npt.NDArray[np.float64]:
    """[N, 6] all-to-all units per directed link, from the per-pair carried traffic."""
    import numpy as np

    n = rt.n
    total = np.zeros(n * 6, dtype=np.float64)
    base = np.arange(n, dtype=np.int32) * 6
    w2 = weight.reshape(n, n)
    for lo in range(0, n, 512):  # row blocks keep temporaries small
        P = rt.P[lo : lo + 512]
        key = base[None, :] + np.maximum(P, 0)
        w = np.where(P >= 0, w2[lo : lo + 512], 0)
        total += np.bincount(key.ravel(), weights=w.ravel(), minlength=n * 6)
    return total.reshape(n, 6)


def deadlock_check(rt: RouteTables, mask: npt.NDArray[np.uint8]) -> tuple[int, bool, list[str], dict[str, Any]]:
    """(VCs used, deadlock free?, one concrete cycle if not, VC layout) from the channel dependency graph.

    Every (destination, chip) pair whose hop is followed by another contributes the dependencies of its VC bit
    set; pairs are first reduced to distinct (chip, in port, out port, order, wild flags, VC bits) keys, which
    are few, and only those are expanded into channel-to-channel edges (`cdg.verdict`).
    """
    import numpy as np

    from tpufleet.routing import cdg

    n = rt.n
    P = rt.P
    wild = rt.wild
    dest_class = rt.dest_class if rt.dest_class is not None else np.zeros(n, dtype=np.int64)
    used_classes = np.unique(dest_class)
    remap = np.full(int(dest_class.max()) + 1, -1, dtype=np.int64)
    remap[used_classes] = np.arange(len(used_classes))
    if wild is not None and wild.any():
        bits_dor = int(np.bitwise_or.reduce(mask[~wild])) if (~wild).any() else 1
        bits_wild = int(np.bitwise_or.reduce(mask[wild]))
    else:
        bits_dor, bits_wild = int(np.bitwise_or.reduce(mask.ravel())), 0
    layout = cdg.Layout(n, len(used_classes), bits_dor, bits_wild)
    ktype = layout.ktype
    chips = np.arange(n, dtype=ktype)
    present = np.zeros(layout.space + 1, dtype=bool)
    cls_of = remap[dest_class].astype(ktype)
    nbr_flat = rt.nbr.ravel().astype(ktype)
    chips6 = chips * 6
    rows = max(1, min(256, BLOCK_PAIRS // max(n, 1)))
    for lo in range(0, n, rows):  # row blocks (destinations) keep temporaries small
        hi = min(n, lo + rows)
        Pb, mb = P[lo:hi], mask[lo:hi]
        p = np.maximum(Pb, 0).astype(ktype)
        nxt = nbr_flat[chips6[None, :] + p]
        onward = (Pb >= 0) & (mb > 0) & (nxt != chips[lo:hi, None]) & (nxt >= 0)
        # the next entry of the same row, read from the flat rows (take_along_axis builds N x N index arrays)
        succ = (np.maximum(nxt, 0) + (np.arange(hi - lo, dtype=ktype) * n)[:, None])[onward]
        q = Pb.ravel()[succ].astype(ktype)
        flags = np.zeros(1, dtype=ktype)
        if wild is not None:
            wb = wild[lo:hi]
            flags = wb[onward].astype(ktype) * 2 + wb.ravel()[succ]
        cls = np.broadcast_to(cls_of[lo:hi, None], Pb.shape)[onward]
        present[layout.encode(np.broadcast_to(chips, Pb.shape)[onward], p[onward], q, cls, flags, mb[onward])] = True
    keys = np.flatnonzero(present[: layout.space]).astype(np.int64)
    return cdg.per_order(rt, used_classes, *cdg.verdict(rt, keys, layout))


def analyze(rt: RouteTables, deadlock: bool = True) -> Analysis:
    """Arrival, all-to-all load, VCs and deadlock verdict of the tables (the same figures whichever way they are
    computed: pair by pair here, or from the rings when the maker says how the tables were made)."""
    from tpufleet.routing import structured

    if structured.applies(rt):
        fast = structured.analyze(rt, deadlock)
        if fast is not None:
            return fast
    return analyze_pairs(rt, deadlock)


def analyze_pairs(rt: RouteTables, deadlock: bool = True) -> Analysis:
    """The pair-by-pair analysis (also the oracle of the fast one): arrival, traffic, VC bit sets and channel
    dependencies in one sweep per block of destinations (`_Block`), with no N^2 traffic or VC table kept."""
    import numpy as np

    from tpufleet.routing import cdg

    n = rt.n
    routable = np.empty(n * n, dtype=bool)
    hops = _Hops(rt) if deadlock else None
    channels = cdg.Channels(rt) if deadlock else None
    load = np.zeros(n * 6, dtype=np.float64)
    for b in _blocks(rt):
        rows = slice(b.lo * n, b.hi * n)
        routable[rows] = _arrives(b)
        weight, bits = _carried(b, routable[rows], hops)
        load += _block_load(b, weight)
        if channels is not None and bits is not None:  # the block's channel dependencies, while in cache
            channels.add(b.lo, b.P, b.ports, b.succ, bits, b.diag)
    result = Analysis(routable.reshape(n, n), load.reshape(n, 6))
    if channels is not None:
        result.vcs, result.deadlock_free, result.cycle, result.vc_blocks = channels.verdict()
    return result
