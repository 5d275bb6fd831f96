"""Per-ring closed forms of dimension-order routing on a regular torus, with some links dead, pure.

On an untwisted torus a dimension-order route runs, in each dimension, along one ring: from where it enters
that dimension to the destination's coordinate. Everything the channel-dependency check needs about such a hop
is therefore a 1-D question about one ring of at most 16 chips, asked for every (ring, position, target
coordinate): is the rest of the run free of dead links, and which virtual channels do the packets use here?

A hop's VC index counts the datelines crossed since the packet entered the dimension. Packets reach position
``x`` heading for ``b`` from every entry position ``e`` upstream whose run to ``x`` is free of dead links: such
a packet's route is intact (its own source's route crosses no dead link), so its table entries are the plain
ones; a packet whose run from ``e`` crosses a dead link was rerouted before it got here. Packets that join a
route after a wild first hop start the dimension afresh at the joining chip, like that chip's own packet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.topology import ChipGraph


@dataclass(frozen=True)
class RingTables:
    """One dimension's rings: ``ring[s]`` and ``pos[s]`` place chip s; arrays are [ring, position, target]."""

    dim: int
    size: int
    ring: npt.NDArray[np.int64]  # [N] ring of each chip along this dimension
    pos: npt.NDArray[np.int64]  # [N] the chip's coordinate in this dimension
    direction: npt.NDArray[np.int8]  # [size, size] +1 / -1 / 0, as the tables route (ties by parity)
    run_ok: npt.NDArray[np.bool_]  # the run from the position to the target crosses no dead link
    vc_bits: npt.NDArray[np.uint8]  # bit set of VC indices packets use on the hop leaving the position


def ring_tables(shape: Shape, graph: ChipGraph, d: int) -> RingTables:
    """The 1-D tables of dimension d on the live graph `graph` (a dead link is a -1 entry)."""
    import numpy as np

    from tpufleet.routing.dor import _ring
    from tpufleet.topology import coordinates

    n = shape.dims[d]
    xyz = coordinates(shape.dims).astype(np.int64)
    others = [k for k in range(3) if k != d]
    ring = xyz[:, others[0]] * shape.dims[others[1]] + xyz[:, others[1]]
    rings = len(xyz) // n
    at = np.zeros((rings, n), dtype=np.int64)  # chip at (ring, position)
    at[ring, xyz[:, d]] = np.arange(len(xyz))
    live = np.stack([graph[at, 2 * d] >= 0, graph[at, 2 * d + 1] >= 0], axis=-1)  # [ring, pos, + / -]
    direction, _ = _ring(n, n > 1)
    # every entry position walking to every target at once: [entry, target] positions, [ring, entry, target] runs
    x = np.repeat(np.arange(n)[:, None], n, axis=1)
    targets = np.broadcast_to(np.arange(n)[None, :], (n, n))
    run_ok = np.ones((rings, n, n), dtype=bool)
    crossed = np.zeros((n, n), dtype=np.int64)
    bits = np.zeros((n * n, rings), dtype=np.uint8)  # [position * n + target, ring]
    for _ in range(n):
        step = direction[x, targets]
        e, t = np.nonzero(step)
        if not len(e):
            break
        at = x[e, t]
        # packets from several entries may pass one hop: their VC bits are or-ed
        np.bitwise_or.at(bits, at * n + t, (run_ok[:, e, t] << crossed[e, t][None, :]).T.astype(np.uint8))
        side = (step[e, t] < 0).astype(np.int64)
        run_ok[:, e, t] &= live[:, at, side]
        crossed[e, t] += ((at == n - 1) & (side == 0)) | ((at == 0) & (side == 1))
        x[e, t] = (at + step[e, t]) % n
    return RingTables(d, n, ring, xyz[:, d], direction, run_ok, np.ascontiguousarray(bits.T).reshape(rings, n, n))


class RingPaths:
    """Routes of the plain dimension-order tables of an untwisted torus, as at most one ring run per dimension.

    The wild-first repair asks, for thousands of candidate detours per batch, for the most loaded link on a
    neighbour's intact route, and then adds one unit along the chosen ones. Walking each route hop by hop costs
    a table lookup per hop; here a route is cut into its runs (dimension, direction, ring, start, length) by
    arithmetic, and the maximum over a run comes from a doubling table of window maxima per ring, rebuilt from
    the current loads once per batch. The answers are exactly those of the walk.
    """

    def __init__(self, shape: Shape, order: tuple[int, int, int]) -> None:
        import numpy as np

        from tpufleet.routing.dor import _ring
        from tpufleet.topology import coordinates

        self.dims = shape.dims
        self.order = order
        self.xyz = coordinates(shape.dims).astype(np.int64)
        self.links: list[list[npt.NDArray[np.int64]]] = []  # [d][side]: [ring, travel index] -> link id
        self.ring: list[npt.NDArray[np.int64]] = []  # [d]: ring of each chip along d
        self.steps: list[tuple[npt.NDArray[np.int8], npt.NDArray[np.int16]]] = []
        for d in range(3):
            n = shape.dims[d]
            self.steps.append(_ring(n, n > 1))
            others = [k for k in range(3) if k != d]
            ring = self.xyz[:, others[0]] * shape.dims[others[1]] + self.xyz[:, others[1]]
            at = np.zeros((len(self.xyz) // n, n), dtype=np.int64)
            at[ring, self.xyz[:, d]] = np.arange(len(self.xyz))
            # side 0 travels +: index = position; side 1 travels -: index = n - 1 - position
            self.links.append([at * 6 + 2 * d, at[:, ::-1] * 6 + 2 * d + 1])
            self.ring.append(ring)
        self.windows: list[npt.NDArray[np.int64]] = []  # per dimension, see `refresh`
        # per dimension, indexed by (coordinate a) * n + (target coordinate b): side, travel index, length
        self.move: list[tuple[npt.NDArray[np.int64], ...]] = []
        for d in range(3):
            n = shape.dims[d]
            direction, dist = self.steps[d]
            a = np.repeat(np.arange(n), n)
            side = (direction.ravel() < 0).astype(np.int64)
            self.move.append((side, np.where(side == 0, a, n - 1 - a), dist.ravel().astype(np.int64)))
        self.stride = [shape.dims[1] * shape.dims[2], shape.dims[2], 1]
        self.pos = [np.ascontiguousarray(self.xyz[:, d]) for d in range(3)]
        self.pos32 = [p.astype(np.int32) for p in self.pos]
        self.ring32 = [r.astype(np.int32) for r in self.ring]
        self.offsets = [self._offsets(d) for d in range(3)]

    def _levels(self, d: int) -> int:
        """Window levels 2^0 .. 2^(levels-1) that `refresh` builds: every run is shorter than the ring."""
        levels = 1
        while (1 << levels) < self.dims[d]:
            levels += 1
        return levels

    def _offsets(self, d: int) -> tuple[npt.NDArray[np.int32], ...]:
        """Per (coordinate, target coordinate) code of dimension d, what a run adds to ring * n (windows) or to
        ring * 2n (difference array): first and last window index, first difference index, and length."""
        import numpy as np

        n, levels = self.dims[d], self._levels(d)
        rings = len(self.links[d][0])
        side, start, length = self.move[d]
        k = _floor_log2(n)[length]
        block = (side * levels + k) * rings * n
        empty = 2 * levels * rings * n  # a block of zeros after the windows: where an empty run looks
        first = np.where(length > 0, block + start, empty)
        last = np.where(length > 0, block + (start + length - np.left_shift(1, k)) % n, empty)
        lo = side * rings * 2 * n + start
        return tuple(a.astype(np.int32) for a in (first, last, lo, length))

    def _codes(
        self, w: npt.NDArray[np.signedinteger[Any]], t: npt.NDArray[np.signedinteger[Any]]
    ) -> list[tuple[int, npt.NDArray[np.int32], npt.NDArray[np.int32]]]:
        """Per dimension d of the order: (d, run code = start coordinate * n + target coordinate, ring * n) of
        the runs of the routes w -> t (earlier dimensions already at the target's coordinates)."""
        src = [self.pos32[d][w] for d in range(3)]
        dst = [self.pos32[d][t] for d in range(3)]
        out = []
        for i, d in enumerate(self.order):
            n = self.dims[d]
            cur = [dst[k] if k in self.order[:i] else src[k] for k in range(3)]
            o0, o1 = [k for k in range(3) if k != d]
            out.append((d, src[d] * n + dst[d], (cur[o0] * self.dims[o1] + cur[o1]) * n))
        return out

    def route_max(
        self, w: npt.NDArray[np.signedinteger[Any]], t: npt.NDArray[np.signedinteger[Any]]
    ) -> npt.NDArray[np.int64]:
        """The most loaded link on each route w -> t (0 for an empty route), as of the last `refresh`: per run,
        the larger of two overlapping power-of-two windows."""
        import numpy as np

        worst = np.zeros(len(w), dtype=np.int64)
        for d, code, ring in self._codes(w, t):
            first, last, _lo, _length = self.offsets[d]
            table = self.windows[d]
            np.maximum(worst, table[first[code] + ring], out=worst)
            np.maximum(worst, table[last[code] + ring], out=worst)
        return worst

    def count(
        self, w: npt.NDArray[np.signedinteger[Any]], t: npt.NDArray[np.signedinteger[Any]], links: int
    ) -> npt.NDArray[np.int64]:
        """Units per link (flat [links]) of one unit on each route w -> t: a difference array per ring."""
        import numpy as np

        load = np.zeros(links, dtype=np.int64)
        for d, code, ring in self._codes(w, t):
            n = self.dims[d]
            rings = len(self.links[d][0])
            _first, _last, lo, length = self.offsets[d]
            start = lo[code] + 2 * ring  # [side, ring, 2n]: a run never wraps past one lap
            size = 2 * rings * 2 * n
            diff = np.bincount(start, minlength=size) - np.bincount(start + length[code], minlength=size)
            # a run never leaves its ring's block, so each block's marks cancel: one running sum serves them all
            laps = np.cumsum(diff).reshape(2, rings, 2 * n)
            total = laps[:, :, :n] + laps[:, :, n:]
            for s in (0, 1):
                load[self.links[d][s].ravel()] += total[s].ravel()  # each link once: a plain add is exact
        return load

    def refresh(self, load: npt.NDArray[np.int64]) -> None:
        """Window maxima of the current loads, per dimension one flat table [side, level, ring, i]: the most
        loaded of the 2^level links from travel index i on."""
        import numpy as np

        self.windows = []
        for d in range(3):
            table = []
            for side in (0, 1):
                level = load[self.links[d][side]]
                table.append(level)
                span = 1
                while 2 * span < self.dims[d]:
                    doubled = np.concatenate([level, level[:, :span]], axis=1)
                    level = np.maximum(doubled[:, :-span], doubled[:, span:])
                    table.append(level)
                    span *= 2
            # then a block of zeros, where an empty run looks (loads are never negative, so it never wins)
            table.append(np.zeros_like(table[0]))
            self.windows.append(np.stack(table).ravel())


def _floor_log2(n: int) -> npt.NDArray[np.int64]:
    import numpy as np

    lengths = np.arange(n + 1)
    return np.where(lengths > 0, np.floor(np.log2(np.maximum(lengths, 1))), 0).astype(np.int64)


def broken_by_runs(
    shape: Shape, order: tuple[int, int, int], expected: ChipGraph, graph: ChipGraph
) -> npt.NDArray[np.int64]:
    """Flat indices t * N + s of the pairs whose plain dimension-order route crosses a link `graph` lacks
    (`broken_mask_by_runs`, as indices)."""
    import numpy as np

    return np.flatnonzero(broken_mask_by_runs(shape, order, expected, graph))


def broken_mask_by_runs(
    shape: Shape, order: tuple[int, int, int], expected: ChipGraph, graph: ChipGraph
) -> npt.NDArray[np.bool_]:
    """[N * N] bool, flat t * N + s: the pairs whose plain dimension-order route crosses a link `graph` lacks, found
    from each dead link's ring: the routes through the hop leaving position a in direction sigma are the runs
    (e -> b) that contain it, from any source agreeing with a after that dimension, to any target agreeing with
    a before it. The same set `tolerant.broken_pairs` finds by searching up from the dead links."""
    import numpy as np

    from tpufleet.routing.dor import _ring
    from tpufleet.topology import coordinates

    n_chips = len(expected)
    xyz = coordinates(shape.dims).astype(np.int64)
    stride = np.array([shape.dims[1] * shape.dims[2], shape.dims[2], 1])
    bad = np.zeros(n_chips * n_chips, dtype=bool)
    chips, ports = np.nonzero((expected >= 0) & (graph != expected))
    for p in np.unique(ports).tolist():
        d, side = p // 2, p % 2
        i = order.index(d)
        n = shape.dims[d]
        direction, dist = _ring(n, n > 1)
        a = chips[ports == p]
        e, b = np.nonzero((direction < 0) == bool(side) if side else direction > 0)  # runs leaving in this sense
        start = e if side == 0 else n - 1 - e
        at = xyz[a, d] if side == 0 else n - 1 - xyz[a, d]
        hit = ((at[:, None] - start[None, :]) % n) < dist[e, b][None, :]  # [link, run]
        link, run = np.nonzero(hit)
        free_s = _combos(shape.dims, order[:i], stride)  # earlier dimensions: the source's are free
        free_t = _combos(shape.dims, order[i + 1 :], stride)  # later dimensions: the target's are free
        here = xyz[a[link]]
        fixed_s = sum((here[:, k] * stride[k] for k in order[i + 1 :]), np.zeros(len(link), dtype=np.int64))
        fixed_t = sum((here[:, k] * stride[k] for k in order[:i]), np.zeros(len(link), dtype=np.int64))
        s = fixed_s + e[run] * stride[d]
        t = fixed_t + b[run] * stride[d]
        flat = (t[:, None, None] + free_t[None, None, :]) * n_chips + (s[:, None, None] + free_s[None, :, None])
        bad[flat.ravel()] = True
    return bad


def _combos(dims: tuple[int, int, int], free: tuple[int, ...], stride: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Offsets of every combination of coordinates in the `free` dimensions (0 when none is free)."""
    import numpy as np

    out = np.zeros(1, dtype=np.int64)
    for k in free:
        out = (out[:, None] + np.arange(dims[k])[None, :] * stride[k]).ravel()
    return out
