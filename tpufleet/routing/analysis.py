"""Checking and measuring routing tables: arrival, link load, virtual channels and deadlock freedom.

All passes visit (destination, chip) pairs level by level in the order of their hop count, so every per-pair
quantity that flows along routes (arrival, carried traffic, the set of virtual channels in use) is computed in
a few vectorized sweeps over the N^2 table, without walking pairs one by one.

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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

from tpufleet.shapes import Shape

if TYPE_CHECKING:
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

    `pos[i]` is pair i's position inside its level, so sums into the next level can use `bincount` instead of
    the much slower unbuffered `ufunc.at`.
    """

    def __init__(self, L: HopTable) -> None:
        import numpy as np

        flat = L.ravel()
        itype: type[np.signedinteger[Any]] = np.int64 if flat.size >= 2**31 else np.int32
        top = int(flat.max())
        # numpy's stable sort is a radix sort on 8-bit keys: 2.6x faster than on the table's 16 bits (16x16x16)
        keys = flat.astype(np.int8) if top <= np.iinfo(np.int8).max else flat
        order: IntArray = np.argsort(keys, kind="stable").astype(itype)
        # level k (from -1 = unroutable up to the longest route) is order[bounds[k + 1]:bounds[k + 2]]
        bounds = np.searchsorted(flat[order], np.arange(-1, top + 2), side="left")
        self.bounds: npt.NDArray[np.intp] = np.append(bounds, len(flat))[: top + 3]
        self.order = order
        self.max = top
        pos: IntArray = np.empty(flat.size, dtype=itype)
        for k in range(top + 2):
            lo, hi = self.bounds[k], self.bounds[k + 1]
            pos[order[lo:hi]] = np.arange(hi - lo, dtype=itype)
        self.pos = pos

    def at(self, k: int) -> IntArray:
        import numpy as np

        if k < -1 or k > self.max:
            return np.empty(0, dtype=self.order.dtype)
        return self.order[self.bounds[k + 1] : self.bounds[k + 2]]


def _step(rt: RouteTables, idx: IntArray) -> tuple[IntArray, IntArray, npt.NDArray[np.int8], IntArray]:
    """For flat pair indices: (t, s, port, next chip); next chip is -1 where the entry has no port."""
    import numpy as np

    n = rt.n
    t, s = np.divmod(idx, n)
    p = rt.P.ravel()[idx]
    ok = p >= 0
    nxt = rt.nbr.ravel()[s * 6 + np.where(ok, p, 0)]
    nxt = np.where(ok, nxt, -1)
    return t, s, p, nxt


def verify(rt: RouteTables, levels: Levels | None = None) -> BoolArray:
    """[t, s] bool: walking the tables from s really reaches t.

    Proof by induction on the recorded hop count: a pair arrives iff its next chip is a live neighbour whose own
    entry for t records one hop fewer and itself arrives.
    """
    import numpy as np

    levels = levels or Levels(rt.L)
    n = rt.n
    arrives = np.zeros(n * n, dtype=bool)
    arrives[np.arange(n) * n + np.arange(n)] = True
    Lf = rt.L.ravel()
    for k in range(1, levels.max + 1):
        idx = levels.at(k)
        t, _s, _p, nxt = _step(rt, idx)
        good = nxt >= 0
        tn = t * n + np.where(good, nxt, 0)
        arrives[idx] = good & (Lf[tn] == k - 1) & arrives[tn]
    return arrives.reshape(n, n)


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
    """
    import numpy as np

    n = rt.n
    diag = np.arange(n) * n + np.arange(n)
    weight = routable.ravel().astype(np.int32)
    weight[diag] = 0
    mask: npt.NDArray[np.uint8] | None = None
    if masks:
        mask = (weight > 0).astype(np.uint8)
        date = datelines(rt.shape)
    wild = rt.wild
    for k in range(levels.max, 1, -1):
        idx = levels.at(k)
        below = levels.at(k - 1)
        size = len(below)
        t, s, p, nxt = _step(rt, idx)
        w = weight[idx]
        live = w > 0
        target = t * n + np.where(live, nxt, t)  # dead pairs point at the diagonal, which sits at level 0
        tpos = np.where(live, levels.pos[target], 0)
        weight[below] += np.bincount(tpos, weights=w, minlength=size)[:size].astype(np.int32)
        if mask is not None:  # VC bit sets wanted (`masks`)
            _q, w_next, w_here, same_dim, cross = _transitions(rt, s, p, np.where(live, nxt, s), t, wild, date)
            m = mask[idx]
            if w_here is None or w_next is None:  # wild is None
                shifted = np.where(same_dim, m << cross.astype(np.uint8), np.uint8(1))
            else:
                dor_dor = ~w_here & ~w_next
                shifted = np.where(dor_dor & same_dim, m << cross.astype(np.uint8), 1)
                shifted = np.where(w_here & w_next, (m << 1) if rt.wild_layers else m, shifted)
            shifted = np.where(live, shifted, 0).astype(np.uint8)
            acc = np.zeros(size, dtype=np.uint8)
            bits = int(np.bitwise_or.reduce(shifted)) if len(shifted) else 0
            for b in range(bits.bit_length()):
                if not (bits >> b) & 1:
                    continue
                bit = (shifted >> b) & 1
                if b == 0 and bits == 1:
                    acc[tpos[bit > 0]] = 1  # a plain scatter: every hit sets the same bit
                else:
                    hit = np.bincount(tpos, weights=bit, minlength=size)[:size] > 0
                    acc |= hit.astype(np.uint8) << b
            mask[below] |= acc
    return weight, (mask.reshape(n, n) if mask is not None else None)


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


def pair_load(rt: RouteTables, sources: npt.ArrayLike, targets: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Units per directed link for one unit from each source to its target, by walking the tables."""
    import numpy as np

    n = rt.n
    load = np.zeros(n * 6, dtype=np.int64)
    cur, t = np.asarray(sources, dtype=np.int64), np.asarray(targets, dtype=np.int64)
    for _ in range(int(rt.L.max()) + 2):
        moving = cur != t
        if not moving.any():
            break
        cur, t = cur[moving], t[moving]
        p = rt.P[t, cur].astype(np.int64)
        good = p >= 0
        cur, t, p = cur[good], t[good], p[good]
        np.add.at(load, cur * 6 + p, 1)
        cur = rt.nbr[cur, p].astype(np.int64)
    return load.reshape(n, 6)


def symmetric_load(rt: RouteTables) -> npt.NDArray[np.float64]:
    """All-to-all load of translation-invariant tables on a torus with even sides, from 8 chips' routes.

    Healthy DOR tables depend only on the offset t - s and the parity of s, so moving every pair by an even
    offset maps routes onto routes. Summing over those moves, the load of link (a, p) is the number of hops
    through port p, at chips of a's parity, on the routes from one chip of each parity class to every chip.
    """
    import numpy as np

    from tpufleet.topology import coordinates

    n = rt.n
    xyz = coordinates(rt.shape.dims)
    cls = (xyz[:, 0] % 2) * 4 + (xyz[:, 1] % 2) * 2 + (xyz[:, 2] % 2)
    reps = [int(np.flatnonzero(cls == c)[0]) for c in range(8)]
    sources = np.repeat(reps, n)
    targets = np.tile(np.arange(n), 8)
    per_link = pair_load(rt, sources, targets)  # [N, 6]
    counts = np.zeros((8, 6))
    np.add.at(counts, cls, per_link)
    load: npt.NDArray[np.float64] = counts[cls]
    return load


def symmetric(shape: Shape) -> bool:
    return shape.wraps and all(d % 2 == 0 for d in shape.dims)


def ring_allreduce_load(rt: RouteTables, expected_nbr: ChipGraph) -> npt.NDArray[np.int64]:
    """Every chip sends one unit to each of its ring neighbours in every dimension (bidirectional rings)."""
    import numpy as np

    s, p = np.nonzero(expected_nbr >= 0)
    return pair_load(rt, s, expected_nbr[s, p])


def _transitions(
    rt: RouteTables,
    s: IntArray,
    p: npt.NDArray[np.int8],
    nxt: IntArray,
    t: IntArray,
    wild: BoolArray | None,
    date: BoolArray,
) -> tuple[npt.NDArray[np.int8], BoolArray | None, BoolArray | None, BoolArray, BoolArray]:
    """Per pair: (next hop's port, next hop is wild, this hop is wild, same dimension?, crosses a dateline?)."""
    import numpy as np

    n = rt.n
    q = rt.P.ravel()[t * n + nxt]
    w_here = wild.ravel()[t * n + s] if wild is not None else None
    w_next = wild.ravel()[t * n + nxt] if wild is not None else None
    same_dim = (q >> 1) == (p >> 1)
    cross = date.ravel()[s * 6 + np.maximum(p, 0)]
    return q, w_next, w_here, same_dim, cross


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
    for lo in range(0, n, 256):  # row blocks (destinations) keep temporaries small
        hi = min(n, lo + 256)
        Pb, mb = P[lo:hi], mask[lo:hi]
        p = np.maximum(Pb, 0).astype(ktype)
        nxt = nbr_flat[chips[None, :] * 6 + p]
        onward = (Pb >= 0) & (mb > 0) & (nxt != chips[lo:hi, None]) & (nxt >= 0)
        nxt = np.maximum(nxt, 0)
        q = np.take_along_axis(Pb, nxt, axis=1).astype(ktype)
        flags = np.zeros(1, dtype=ktype)
        if wild is not None:
            wb = wild[lo:hi]
            flags = wb.astype(ktype) * 2 + np.take_along_axis(wb, nxt, axis=1)
        key = layout.encode(chips[None, :], p, q, cls_of[lo:hi, None], flags, mb)
        key[~onward] = layout.space
        present[key.ravel()] = True
    keys = np.flatnonzero(present[: layout.space]).astype(np.int64)
    vcs, free, cycle, blocks = cdg.verdict(rt, keys, layout)
    # the verdict numbers the orders in use; the tables' file lists every order it may name (-1: unused)
    per_order: dict[str, list[Any]] = {}
    for name, unused in (("order_first_vc", -1), ("leg_first_vc", [-1] * 3), ("wild_vc", [-1] * 3)):
        per_order[name] = [unused] * len(rt.orders)
        for used, vc in zip(used_classes.tolist(), blocks[name], strict=True):
            per_order[name][used] = vc
    return vcs, free, cycle, {**blocks, **per_order}


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
    """The pair-by-pair analysis (also the oracle of the fast one)."""
    levels = Levels(rt.L)
    routable = verify(rt, levels)
    weight, mask = flow(rt, routable, levels, masks=deadlock)
    result = Analysis(routable, link_load(rt, weight))
    if mask is not None:  # flow returns the VC masks iff `deadlock`
        result.vcs, result.deadlock_free, result.cycle, result.vc_blocks = deadlock_check(rt, mask)
    return result
