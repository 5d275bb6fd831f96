"""Exact analysis of dimension-order tables on a regular torus, with wild repairs, in time of the repairs, pure.

`analysis.analyze` visits all N^2 (destination, chip) pairs; on a 16x16x16 slice that is 16.8 M pairs and
seconds. When the tables are known to be the plain dimension-order tables of an untwisted torus in which only
the pairs a fault broke were changed (to a wild first hop, or to unroutable), every figure follows from the
rings (`tpufleet.routing.rings`) and the changed pairs alone:

* arrival: an unchanged pair's route crosses no dead link (else it would have been broken and changed), so it
  arrives; a wild pair arrives iff its hop is live and its successor arrives one hop nearer;
* load: the healthy load by symmetry, less the broken routes, plus the repaired ones (the repair keeps that sum
  as it goes, `DorBase.load`);
* VC bit sets and channel dependencies: those of unchanged hops from the per-ring tables, enumerated per chip
  over the target's coordinate in the current and the next dimension; those of wild hops pair by pair.

The generic analysis stays the oracle: tests compare the two exactly on many shapes and faults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray
    from tpufleet.routing.analysis import Analysis, RouteTables
    from tpufleet.routing.cdg import Layout
    from tpufleet.routing.dor import Order
    from tpufleet.routing.rings import RingTables
    from tpufleet.topology import ChipGraph

    Keys = list[npt.NDArray[np.int64]]


@dataclass(frozen=True)
class DorBase:
    """How tables were made: `dor.regular_tables(shape, order)` routed on `graph` (the healthy graph less dead
    links), then only pairs whose route crosses a dead link were changed, to a wild hop or to unroutable."""

    order: Order
    graph: ChipGraph
    load: npt.NDArray[np.int64] | None = None  # flat [N * 6] all-to-all load of the routable pairs, if known


def applies(rt: RouteTables) -> bool:
    return rt.base is not None and rt.shape.wraps and not rt.shape.twisted and rt.n > 1


def analyze(rt: RouteTables, deadlock: bool = True) -> Analysis | None:
    """The same `Analysis` as `analysis.analyze`, or None when a wild pair does not arrive (left to it)."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from tpufleet.routing.analysis import Analysis

    wild_idx = np.flatnonzero(rt.wild) if rt.wild is not None else np.empty(0, dtype=np.int64)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdg") as pool:
        # The channel dependencies are read off the tables alone: found on the second core while arrival is
        # checked (numpy lets go of the GIL), and only used when every pair arrives.
        verdict = pool.submit(_deadlock, rt, wild_idx) if deadlock else None
        routable = _routable(rt, wild_idx)
        if not routable.ravel()[wild_idx].all():
            if verdict is not None:
                verdict.cancel()
            return None
        result = Analysis(routable, _load(rt))
        if verdict is not None:
            result.vcs, result.deadlock_free, result.cycle, result.vc_blocks = verdict.result()
    return result


def _routable(rt: RouteTables, wild_idx: npt.NDArray[np.int64]) -> BoolArray:
    """[t, s] arrival (the wild pairs `wild_idx` checked nearest first)."""
    import numpy as np

    n = rt.n
    routable: BoolArray = rt.P != -2
    flat, Lf = routable.ravel(), rt.L.ravel()
    if len(wild_idx):
        order = np.argsort(Lf[wild_idx], kind="stable")
        by_level = wild_idx[order]
        levels = Lf[by_level]
        bounds = np.searchsorted(levels, np.arange(int(levels.max()) + 2))
        for k in range(int(levels.min()), int(levels.max()) + 1):
            idx = by_level[bounds[k] : bounds[k + 1]]
            t, s = np.divmod(idx, n)
            nxt = rt.nbr[s, rt.P.ravel()[idx]].astype(np.int64)
            ok = nxt >= 0
            succ = t * n + np.where(ok, nxt, 0)
            flat[idx] = ok & (Lf[succ] == k - 1) & flat[succ]
    return routable


def _load(rt: RouteTables) -> npt.NDArray[np.float64]:
    import numpy as np

    from tpufleet.routing.loads import symmetric_load

    assert rt.base is not None
    if rt.base.load is None:
        return symmetric_load(rt)
    return rt.base.load.reshape(rt.n, 6).astype(np.float64)


def _deadlock(rt: RouteTables, wild_idx: npt.NDArray[np.int64]) -> tuple[int, bool, list[str], dict[str, Any]]:
    import numpy as np

    from tpufleet.routing import cdg
    from tpufleet.routing.rings import ring_tables

    assert rt.base is not None
    rings = [ring_tables(rt.shape, rt.base.graph, d) for d in range(3)]
    plain, bits_dor = _plain_keys(rt, rings)
    wild_mask = _wild_masks(rt, wild_idx)
    bits_wild = int(np.bitwise_or.reduce(wild_mask)) if len(wild_idx) else 0
    layout = cdg.Layout(rt.n, 1, bits_dor, bits_wild)
    zero = np.zeros(1, dtype=np.int64)
    present = np.zeros(layout.space, dtype=bool)  # distinct keys, sorted, without sorting millions of them
    for s, p, q, m in plain:
        present[layout.encode(s, p, q, zero, zero, m)] = True
    present[_wild_keys(rt, wild_idx, wild_mask, layout)] = True
    return cdg.verdict(rt, np.flatnonzero(present).astype(np.int64), layout)


def _plain_keys(rt: RouteTables, rings: list[RingTables]) -> tuple[list[tuple[npt.NDArray[np.int64], ...]], int]:
    """(s, p, q, VC bits) of every unchanged hop followed by another, and the union of their VC bits.

    A hop at s in dimension d towards coordinate b exists unchanged iff the run from s to b is live (take the
    later coordinates equal to s's). If the next chip is already at b, the next hop is in a later dimension d',
    in the direction of some live run from there (dimensions between taken equal to s's).
    """
    import numpy as np

    assert rt.base is not None
    graph, order, n = rt.base.graph, rt.base.order, rt.n
    chips = np.arange(n, dtype=np.int64)
    turn_ports = {d: _live_directions(rings[d]) for d in order}
    out: list[tuple[npt.NDArray[np.int64], ...]] = []
    bits = 0
    for i, d in enumerate(order):
        r = rings[d]
        b = np.arange(r.size)[None, :]
        sd, rg = r.pos[:, None], r.ring[:, None]
        step = r.direction[sd, b].astype(np.int64)
        valid = (b != sd) & r.run_ok[rg, sd, b]
        m = r.vc_bits[rg, sd, b]
        bits |= int(np.bitwise_or.reduce(m[valid])) if valid.any() else 0
        p = 2 * d + (step < 0)
        ends = (sd + step) % r.size == b
        s_all = np.broadcast_to(chips[:, None], valid.shape)
        go = valid & ~ends
        out.append((s_all[go], p[go], p[go], m[go].astype(np.int64)))
        turn = valid & ends
        s_t, p_t, m_t = s_all[turn], p[turn], m[turn].astype(np.int64)
        nxt = graph[s_t, p_t].astype(np.int64)
        for d2 in order[i + 1 :]:
            for side in (0, 1):
                has = turn_ports[d2][nxt, side]
                q = np.full(int(has.sum()), 2 * d2 + side, dtype=np.int64)
                out.append((s_t[has], p_t[has], q, m_t[has]))
    return out, bits


def _live_directions(r: RingTables) -> BoolArray:
    """[N, 2]: some run leaving the chip in the + (resp. -) direction of this dimension is live."""
    import numpy as np

    v = np.arange(r.size)[None, :]
    sd, rg = r.pos[:, None], r.ring[:, None]
    step = r.direction[sd, v]
    ok = r.run_ok[rg, sd, v] & (v != sd)
    return np.stack([(ok & (step > 0)).any(axis=1), (ok & (step < 0)).any(axis=1)], axis=1)


def _wild_masks(rt: RouteTables, wild_idx: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """VC bit sets of the wild pairs: the source's own packet, plus what a chain of wild hops brings."""
    import numpy as np

    n = rt.n
    mask = np.ones(len(wild_idx), dtype=np.uint8)  # every wild pair arrives (checked), so its own packet uses it
    if not len(wild_idx):
        return mask
    assert rt.wild is not None
    t, s = np.divmod(wild_idx, n)
    nxt = rt.nbr[s, rt.P.ravel()[wild_idx]].astype(np.int64)
    succ = t * n + nxt
    chained = np.flatnonzero((nxt != t) & rt.wild.ravel()[succ])
    if not len(chained):
        return mask
    Lf = rt.L.ravel()
    target = np.searchsorted(wild_idx, succ[chained])
    level = Lf[wild_idx[chained]]
    for k in sorted(set(level.tolist()), reverse=True):  # farthest first: a pair's bits are final before use
        at = level == k
        bits = mask[chained[at]]
        np.bitwise_or.at(mask, target[at], (bits << 1).astype(np.uint8) if rt.wild_layers else bits)
    return mask


def _wild_keys(
    rt: RouteTables, wild_idx: npt.NDArray[np.int64], mask: npt.NDArray[np.uint8], layout: Layout
) -> npt.NDArray[np.int64]:
    import numpy as np

    n = rt.n
    if not len(wild_idx):
        return np.empty(0, dtype=np.int64)
    assert rt.wild is not None
    t, s = np.divmod(wild_idx, n)
    p = rt.P.ravel()[wild_idx].astype(np.int64)
    nxt = rt.nbr[s, p].astype(np.int64)
    onward = (mask > 0) & (nxt != t) & (nxt >= 0)
    t, s, p, nxt, m = t[onward], s[onward], p[onward], nxt[onward], mask[onward].astype(np.int64)
    q = rt.P.ravel()[t * n + nxt].astype(np.int64)
    flags = 2 + rt.wild.ravel()[t * n + nxt].astype(np.int64)
    return layout.encode(s, p, q, np.zeros(1, dtype=np.int64), flags, m)
