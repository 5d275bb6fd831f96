"""The channel dependency graph (CDG) from distinct hop keys, and its verdict: VCs used, acyclic or one cycle.

A key packs (chip, in port, out port, order class, wild flags, VC bit set) of one hop followed by another; the
keys of a table set are few (tens per chip), however many pairs share them. `verdict` expands them into
channel-to-channel edges under the VC rule of `tpufleet.routing.analysis` and looks for a cycle: first by
peeling channels nothing depends on (Kahn's algorithm, in numpy), and only when something is left over by
strongly connected components (scipy), which also names one concrete cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tpufleet.topology import PORTS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from scipy.sparse import csr_matrix

    from tpufleet.routing.analysis import RouteTables

    IntArray = npt.NDArray[np.signedinteger[Any]]

PEEL_ROUNDS = 4096  # a longer dependency chain than this is left to scipy


@dataclass(frozen=True)
class Layout:
    """VC blocks: `per_class` dateline VCs for each order class, then the wild VCs; and the key encoding."""

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
) -> tuple[int, bool, list[str], dict[str, int]]:
    """(VCs used, deadlock free?, one cycle if not, VC layout) from the sorted distinct keys."""
    import numpy as np

    from tpufleet.routing.analysis import datelines

    n, vcs = rt.n, layout.wild_base + layout.bits_wild.bit_length()
    blocks = {"per_order": layout.per_class, "orders": layout.classes, "wild": layout.bits_wild.bit_length()}
    rest, m = np.divmod(keys, 1 << layout.mbits)
    rest, fl = np.divmod(rest, 4)
    rest, cls = np.divmod(rest, layout.classes)
    rest, q = np.divmod(rest, 6)
    s, p = np.divmod(rest, 6)
    w_here, w_next = (fl >> 1).astype(bool), (fl & 1).astype(bool)
    nb = rt.nbr[s, p].astype(np.int64)
    same_dim = (q // 2) == (p // 2)
    cross = datelines(rt.shape)[s, p].astype(np.int64)
    base = cls * layout.per_class
    chain_step = 1 if rt.wild_layers else 0
    parts: list[tuple[npt.NDArray[np.int64], ...]] = []
    for b in range(layout.mbits):
        has = ((m >> b) & 1).astype(bool)
        if not has.any():
            continue
        hw, hn = w_here[has], w_next[has]
        vc_in = np.where(hw, layout.wild_base + b, base[has] + b)
        out_bit = np.where(hw & hn, b + chain_step, np.where(~hw & ~hn & same_dim[has], b + cross[has], 0))
        vc_out = np.where(hn, layout.wild_base + out_bit, base[has] + out_bit)
        parts.append((s[has] * 6 + p[has], vc_in, nb[has] * 6 + q[has], vc_out))
    if not parts:
        return vcs, True, [], blocks
    link_in, vc_in, link_out, vc_out = (np.concatenate([part[i] for part in parts]) for i in range(4))
    # A channel the bit sets could not name (a very long wild chain) still counts: size by what is used.
    vcs = max(vcs, int(max(vc_in.max(), vc_out.max())) + 1)
    blocks["wild"] = vcs - layout.wild_base
    size = n * 6 * vcs
    src, dst = link_in * vcs + vc_in, link_out * vcs + vc_out
    if acyclic(src, dst, size):
        return vcs, True, [], blocks
    return vcs, *_scc_cycle(src, dst, size, vcs), blocks


def acyclic(src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64], size: int) -> bool | None:
    """True if the graph has no cycle through two or more nodes (self-loops are ignored, as strongly connected
    components of one node are); False if one is left after peeling; None if peeling took too many rounds."""
    import numpy as np

    keep = src != dst
    src, dst = src[keep], dst[keep]
    order = np.argsort(src, kind="stable")
    targets = dst[order]
    starts = np.searchsorted(src[order], np.arange(size + 1))
    indeg = np.bincount(dst, minlength=size)
    frontier = np.flatnonzero(indeg == 0)
    peeled = len(frontier)
    for _ in range(PEEL_ROUNDS):
        if not len(frontier):
            return peeled == size
        lo, hi = starts[frontier], starts[frontier + 1]
        count = hi - lo
        total = int(count.sum())
        if total == 0:
            return peeled == size
        # the edge positions of every frontier node, without a Python loop
        pos = np.arange(total) - np.repeat(np.cumsum(count) - count, count) + np.repeat(lo, count)
        hit = targets[pos]
        indeg -= np.bincount(hit, minlength=size)
        frontier = np.unique(hit[indeg[hit] == 0])
        peeled += len(frontier)
    return None


def _scc_cycle(src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64], size: int, vcs: int) -> tuple[bool, list[str]]:
    """(acyclic?, one concrete cycle) by strongly connected components."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    graph = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(size, size))
    _count, labels = connected_components(graph, directed=True, connection="strong")
    sizes = np.bincount(labels)
    if (sizes > 1).any():
        comp = int(np.argmax(sizes))
        return False, _one_cycle(graph, labels, comp, vcs)
    return True, []


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
