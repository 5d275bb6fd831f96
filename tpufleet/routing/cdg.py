"""The channel dependency graph (CDG) from distinct hop keys, and its verdict: VCs used, acyclic or one cycle.

A key packs (chip, in port, out port, order class, wild flags, VC bit set) of one hop followed by another; the
keys of a table set are few (tens per chip), however many pairs share them. `verdict` expands them into
channel-to-channel edges under the VC rule of `tpufleet.routing.analysis` and looks for a cycle by strongly
connected components (scipy), which also name one concrete cycle when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tpufleet.topology import PORTS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from scipy.sparse import csr_matrix

    from tpufleet.constants import BoolArray, IntArray
    from tpufleet.routing.analysis import RouteTables


@dataclass(frozen=True)
class Layout:
    """The VCs the keys can name: `per_class` dateline VCs for each order class and the wild VCs (placed by a
    `_Packing`: separate blocks, or overlapping ones); and the key encoding."""

    n: int
    classes: int
    bits_dor: int  # union of the VC bit sets of dimension-order hops
    bits_wild: int  # union of the VC bit sets of wild hops

    @property
    def per_class(self) -> int:
        return max(1, self.bits_dor.bit_length())

    @property
    def wild_base(self) -> int:
        return self.classes * self.per_class

    @property
    def mbits(self) -> int:
        return max(1, max(self.bits_dor, self.bits_wild).bit_length())

    @property
    def space(self) -> int:
        return self.n * 36 * self.classes * 4 * (1 << self.mbits)

    @property
    def ktype(self) -> type[np.signedinteger[Any]]:
        import numpy as np

        return np.int64 if self.space >= 2**31 else np.int32

    def encode(self, s: IntArray, p: IntArray, q: IntArray, cls: IntArray, flags: IntArray, m: Any) -> IntArray:
        """Key of a hop at chip s through port p, then port q; flags = 2 * (this hop wild) + (next hop wild)."""
        key = (((s * 6 + p) * 6 + q) * self.classes + cls) * 4 + flags
        key *= 1 << self.mbits
        key += m
        return key


def verdict(
    rt: RouteTables, keys: npt.NDArray[np.int64], layout: Layout
) -> tuple[int, bool, list[str], dict[str, Any]]:
    """(VCs used, deadlock free?, one cycle if not, VC layout) from the sorted distinct keys.

    The layout of separate blocks (one per order class, then the wild VCs) is tried first. When it needs more VCs
    than one order and one wild VC, tighter packings are tried, fewest VCs first: order blocks that overlap (the
    class of rank r on VCs r*stride + k, in any sequence of the classes) and wild hops sharing a dateline VC; and,
    before any packing that needs more than that, legs placed one by one (`legs.place`: each order's dimensions,
    and its wild hops by dimension, on VCs of their own). Whether a packing is deadlock-free depends on the
    routes, not on a rule, so each is decided by the same cycle search and the first acyclic one is kept.
    """

    hops = _Hops.of(rt, keys, layout)
    separate = _Packing(tuple(range(layout.classes)), layout.per_class, layout.wild_base)
    vcs, src, dst = hops.edges(*separate.bases(layout), separate.vcs(layout))
    size = rt.n * 6 * vcs
    blocks = separate.blocks(layout, vcs)
    free, cycle = _scc_cycle(src, dst, size, vcs)  # one search: the verdict, and the cycle when there is one
    if not free:
        # Packing identifies channels, which keeps every cycle (a hop always changes link): no packing can help.
        # (Placing legs could still split the one wild VC by order and dimension; the caller's remedy for wild hops
        # closing a cycle is a VC per wild hop of a chain instead, `RouteTables.wild_layers`.)
        return vcs, free, cycle, blocks
    least = layout.per_class + 1
    if vcs > least:
        placed_tried = layout.classes == 1  # one order: nothing to place leg by leg
        for packing in _packings(layout, vcs):
            if packing.vcs(layout) > least and not placed_tried:
                placed_tried = True
                if (placed := _legs_placed(hops, layout, least)) is not None:
                    return placed
            packed, psrc, pdst = hops.edges(*packing.bases(layout), packing.vcs(layout))
            if packed < vcs and acyclic(psrc, pdst, rt.n * 6 * packed):
                return packed, True, [], packing.blocks(layout, packed)
        if not placed_tried and (placed := _legs_placed(hops, layout, least)) is not None:
            return placed
    return vcs, True, [], blocks


def _legs_placed(hops: _Hops, layout: Layout, vcs: int) -> tuple[int, bool, list[str], dict[str, Any]] | None:
    """The verdict of legs placed one by one within `vcs` VCs (`legs.place`), if the search finds a placement."""
    import numpy as np

    from tpufleet.routing import legs

    placed = legs.place(hops, layout, vcs)
    if placed is None:
        return None
    vc_in, vc_out = hops.vcs_of(*placed)
    used = int(max(vc_in.max(), vc_out.max())) + 1 if len(vc_in) else 1
    wild = len(np.unique(np.concatenate([vc_in[hops.wild_in], vc_out[hops.wild_out]])))
    return used, True, [], legs.blocks(layout, *placed, wild)


@dataclass(frozen=True)
class _Packing:
    """Where each order class's dateline VCs start (rank * stride) and the first wild VC."""

    rank: tuple[int, ...]  # per order class, its position in the packing
    stride: int
    wild_at: int

    def top(self, layout: Layout) -> int:
        return (layout.classes - 1) * self.stride + layout.per_class

    def vcs(self, layout: Layout) -> int:
        wild = layout.bits_wild.bit_length()
        return max(self.top(layout), self.wild_at + wild) if wild else self.top(layout)

    def bases(self, layout: Layout) -> tuple[IntArray, IntArray]:
        """[class, dimension] first VC of dimension-order hops, and of wild hops."""
        import numpy as np

        first = np.asarray(self.rank, dtype=np.int64) * self.stride
        return np.repeat(first[:, None], 3, axis=1), np.full((layout.classes, 3), self.wild_at, dtype=np.int64)

    def blocks(self, layout: Layout, vcs: int) -> dict[str, Any]:
        """The VC layout as reported: block sizes, each order's first VC and the first wild VC, and the same per
        dimension (`legs.blocks`), here alike for every dimension of an order."""
        top = self.top(layout)
        first = [r * self.stride for r in self.rank]
        return {
            "per_order": layout.per_class,
            "orders": layout.classes,
            "wild": vcs - self.wild_at if self.wild_at >= top else layout.bits_wild.bit_length(),
            "order_first_vc": first,
            "first_wild_vc": self.wild_at,
            "leg_first_vc": [[vc] * 3 for vc in first],
            "wild_vc": [[self.wild_at] * 3 for _ in first],
        }


def _packings(layout: Layout, beat: int) -> list[_Packing]:
    """Packings using fewer than `beat` VCs, fewest first: order blocks overlapping by a stride (in every
    sequence of the classes, up to 3 of them), wild VCs anywhere in or after them."""
    from itertools import permutations

    ranks = list(permutations(range(layout.classes))) if layout.classes <= 3 else [tuple(range(layout.classes))]
    out: list[tuple[int, int, _Packing]] = []
    for stride in range(1, layout.per_class + 1):
        top = (layout.classes - 1) * stride + layout.per_class
        for wild_at in range(top + 1) if layout.bits_wild else (top,):
            for rank in ranks:
                packing = _Packing(rank, stride, wild_at)
                vcs = packing.vcs(layout)
                if vcs < beat:
                    out.append((vcs, len(out), packing))
    out.sort(key=lambda item: item[:2])
    return [packing for *_, packing in out]


@dataclass(frozen=True)
class _Hops:
    """Every (key, VC bit) of the tables decoded once: the link a packet is on and the link it takes next, and
    what their VCs are made of: the order class, each hop's dimension, whether it is wild, and the VC offset on
    top of the first VC of its kind (the bit itself; after a dateline one more; a wild hop of a layered chain one
    more; a turn, or a hop after a wild one, none)."""

    link_in: IntArray
    link_out: IntArray
    cls: IntArray
    dim_in: IntArray
    dim_out: IntArray
    wild_in: npt.NDArray[np.bool_]
    wild_out: npt.NDArray[np.bool_]
    off_in: IntArray
    off_out: IntArray

    @classmethod
    def of(cls, rt: RouteTables, keys: npt.NDArray[np.int64], layout: Layout) -> _Hops:
        import numpy as np

        from tpufleet.routing.analysis import datelines

        rest, m = np.divmod(keys, 1 << layout.mbits)
        rest, fl = np.divmod(rest, 4)
        rest, klass = np.divmod(rest, layout.classes)
        rest, q = np.divmod(rest, 6)
        s, p = np.divmod(rest, 6)
        w_here, w_next = (fl >> 1).astype(bool), (fl & 1).astype(bool)
        nb = rt.nbr[s, p].astype(np.int64)
        same_dim = (q // 2) == (p // 2)
        cross = datelines(rt.shape)[s, p].astype(np.int64)
        chain_step = 1 if rt.wild_layers else 0
        parts = []
        for b in range(layout.mbits):
            has = ((m >> b) & 1).astype(bool)
            if not has.any():
                continue
            hw, hn = w_here[has], w_next[has]
            out_bit = np.where(hw & hn, b + chain_step, np.where(~hw & ~hn & same_dim[has], b + cross[has], 0))
            bit = np.full(int(has.sum()), b, dtype=np.int64)
            parts.append(
                (s[has] * 6 + p[has], nb[has] * 6 + q[has], klass[has], p[has] // 2, q[has] // 2, hw, hn, bit, out_bit)
            )
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return cls(empty, empty, empty, empty, empty, empty.astype(bool), empty.astype(bool), empty, empty)
        return cls(*(np.concatenate([part[i] for part in parts]) for i in range(9)))

    def vcs_of(self, dor_first: IntArray, wild_first: IntArray) -> tuple[IntArray, IntArray]:
        """(VC in, VC out) per hop pair, given the first VC of each [class, dimension] for both kinds of hop."""
        import numpy as np

        vc_in = np.where(self.wild_in, wild_first[self.cls, self.dim_in], dor_first[self.cls, self.dim_in])
        vc_out = np.where(self.wild_out, wild_first[self.cls, self.dim_out], dor_first[self.cls, self.dim_out])
        return vc_in + self.off_in, vc_out + self.off_out

    def edges(
        self, dor_first: IntArray, wild_first: IntArray, vcs: int
    ) -> tuple[int, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(VCs used, channel-dependency edges src -> dst); a channel is link * VCs + VC."""
        vc_in, vc_out = self.vcs_of(dor_first, wild_first)
        if len(vc_in):
            # A channel the bit sets could not name (a very long wild chain) still counts: size by what is used.
            vcs = max(vcs, int(max(vc_in.max(), vc_out.max())) + 1)
        return vcs, self.link_in * vcs + vc_in, self.link_out * vcs + vc_out


def acyclic(src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64], size: int) -> bool:
    """True if the graph has no cycle through two or more nodes (self-loops are ignored, as strongly connected
    components of one node are).

    By strongly connected components (scipy's, in C): acyclic exactly when every component is one node. Peeling
    (Kahn's algorithm in numpy) took a round per link of the longest dependency chain and was 3-4x slower on the
    graphs the VC placement search checks (about a hundred per analysis).
    """
    return _components(src, dst, size)[1] == size


def _components(
    src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64], size: int
) -> tuple[csr_matrix, int, npt.NDArray[np.int32]]:
    """(graph without self-loops, number of strongly connected components, component of each node)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    keep = src != dst
    graph = csr_matrix((np.ones(int(keep.sum()), dtype=np.int8), (src[keep], dst[keep])), shape=(size, size))
    count, labels = connected_components(graph, directed=True, connection="strong")
    return graph, int(count), labels


def _scc_cycle(src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64], size: int, vcs: int) -> tuple[bool, list[str]]:
    """(acyclic?, one concrete cycle, in the largest strongly connected component) by strongly connected
    components."""
    import numpy as np

    graph, count, labels = _components(src, dst, size)
    if count == size:
        return True, []
    return False, _one_cycle(graph, labels, int(np.argmax(np.bincount(labels))), vcs)


def _one_cycle(graph: csr_matrix, labels: npt.NDArray[np.int32], comp: int, vcs: int) -> list[str]:
    """A concrete dependency cycle inside one strongly connected component, as channel names."""
    import numpy as np

    members: set[int] = set(np.nonzero(labels == comp)[0].tolist())
    start = min(members)
    seen: dict[int, int | None] = {start: None}
    stack = [start]
    path_of = {start: [start]}
    while stack:
        node = stack.pop()
        for nb in graph.indices[graph.indptr[node] : graph.indptr[node + 1]]:
            nb = int(nb)
            if nb not in members:
                continue
            if nb == start:
                cycle = path_of[node] + [start]
                return [_channel_name(c, vcs) for c in cycle]
            if nb not in seen:
                seen[nb] = node
                path_of[nb] = path_of[node] + [nb]
                stack.append(nb)
    return [_channel_name(start, vcs)]


def _channel_name(chan: int, vcs: int) -> str:
    link, vc = divmod(chan, vcs)
    chip, port = divmod(link, 6)
    return f"chip {chip} {PORTS[port]} vc{vc}"


class Channels:
    """The distinct keys of a table set's hops, gathered block of destinations by block while a sweep has their
    VC bit sets at hand (`analysis.analyze_pairs`), and its verdict at the end.

    The key's width for VC bits follows the bits seen so far; keys found before a wider bit set shows up are moved
    to the wider encoding (they are few). Whichever blocks come first, the keys and the layout are those of the
    whole table set at once (`analysis.deadlock_check`).
    """

    def __init__(self, rt: RouteTables) -> None:
        import numpy as np

        n = rt.n
        dest_class = rt.dest_class if rt.dest_class is not None else np.zeros(n, dtype=np.int64)
        self.used_classes = np.unique(dest_class)
        remap = np.full(int(dest_class.max()) + 1, -1, dtype=np.int64)
        remap[self.used_classes] = np.arange(len(self.used_classes))
        self.cls_of = remap[dest_class]
        self.rt = rt
        self.bits = [0, 0, False, False]  # VC bits of dimension-order hops, of wild hops; any of each seen
        self.layout = Layout(n, len(self.used_classes), 0, 0)
        self.present = np.zeros(self.layout.space, dtype=bool)

    def add(
        self, lo: int, P: IntArray, ports: IntArray, succ: IntArray, mask: npt.NDArray[np.uint8], diag: IntArray
    ) -> None:
        """The keys of the block of destination rows from `lo`: flat rows of the ports, each entry's link
        (s * 6 + port), its successor in the block (-1: none), VC bit sets, and the rows' own diagonal entries."""
        import numpy as np

        n = self.rt.n
        wild = self.rt.wild.ravel()[lo * n : lo * n + len(P)] if self.rt.wild is not None else None
        self._widen(mask, wild)
        layout, ktype = self.layout, self.layout.ktype
        onward = (mask > 0) & (succ >= 0) & (succ.reshape(len(diag), n) != diag[:, None]).ravel()
        nxt = np.maximum(succ, 0)
        # `Layout.encode` term by term, in place over the whole block (most of its entries are onward hops)
        vcs = 1 << layout.mbits
        key = ports.astype(ktype) * 6
        key += P[nxt]
        key *= layout.classes * 4 * vcs
        if layout.classes > 1:
            key.reshape(len(diag), n)[...] += (self.cls_of[lo : lo + len(diag)] * 4 * vcs).astype(ktype)[:, None]
        if wild is not None:
            key += wild.astype(ktype) * (2 * vcs)
            key += wild[nxt].astype(ktype) * vcs
        key += mask
        self.present[key[onward]] = True

    def _widen(self, mask: npt.NDArray[np.uint8], wild: BoolArray | None) -> None:
        import numpy as np

        bits = self.bits
        if wild is None:
            bits[0] |= int(np.bitwise_or.reduce(mask)) if len(mask) else 0
            bits[2] = bits[2] or len(mask) > 0
        else:  # which (VC bit set, wild) pairs occur, in one pass
            seen = np.flatnonzero(np.bincount(mask.astype(np.int16) * 2 + wild, minlength=2))
            for value, is_wild in zip((seen >> 1).tolist(), (seen & 1).tolist(), strict=True):
                bits[is_wild] |= value
                bits[2 + is_wild] = True
        self._recode(Layout(self.layout.n, self.layout.classes, bits[0], bits[1]))

    def _recode(self, layout: Layout) -> None:
        """Move the keys found so far to `layout`'s width of VC bits."""
        import numpy as np

        if layout.mbits == self.layout.mbits:
            self.layout = layout
            return
        old = np.flatnonzero(self.present).astype(np.int64)
        low = (1 << self.layout.mbits) - 1
        self.present = np.zeros(layout.space, dtype=bool)
        self.present[(old >> self.layout.mbits << layout.mbits) + (old & low)] = True
        self.layout = layout

    def verdict(self) -> tuple[int, bool, list[str], dict[str, Any]]:
        """`analysis.deadlock_check`'s answer for the keys of every block added."""
        import numpy as np

        dor_bits, wild_bits, any_dor, any_wild = self.bits
        if any_wild:  # as `analysis.deadlock_check` counts them: no dimension-order hop still names VC bit 0
            dor_bits = dor_bits if any_dor else 1
        self._recode(Layout(self.layout.n, self.layout.classes, dor_bits, wild_bits if any_wild else 0))
        keys = np.flatnonzero(self.present).astype(np.int64)
        return per_order(self.rt, self.used_classes, *verdict(self.rt, keys, self.layout))


def per_order(
    rt: RouteTables, used_classes: IntArray, vcs: int, free: bool, cycle: list[str], blocks: dict[str, Any]
) -> tuple[int, bool, list[str], dict[str, Any]]:
    """The verdict with its VC layout per order of the tables' file: the verdict numbers the orders in use, the
    file lists every order it may name (-1: unused)."""
    out: dict[str, list[Any]] = {}
    for name, unused in (("order_first_vc", -1), ("leg_first_vc", [-1] * 3), ("wild_vc", [-1] * 3)):
        out[name] = [unused] * len(rt.orders)
        for used, vc in zip(used_classes.tolist(), blocks[name], strict=True):
            out[name][used] = vc
    return vcs, free, cycle, {**blocks, **out}
