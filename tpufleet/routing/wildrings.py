"""The first round of wild-first repairs on plain dimension-order tables of an untwisted torus, batch for batch
as `tolerant.wild_first` does it, with routes read from their ring runs instead of walked, pure.

In the first round a broken pair may only step to a neighbour whose own route is intact, so which candidates are
valid is fixed before the first batch (later batches only make more pairs wild, and those are never candidates)
and every candidate's route is a plain dimension-order one: at most one run per dimension. So everything about a
candidate but the loads is worked out once, a chunk of batches at a time: the cells of the window maxima its
runs read (two a run, as in `RingPaths.route_max`) and its first hop's own cell, whether a dead link lies on
its route (the same cells of a table of dead links), its hop count, and where its runs start in per-ring
difference arrays. The loads are kept in ring-travel order and the window maxima level by level over every
ring at once, so a batch rebuilds them in a few flat operations, reads seven cells a candidate, picks each
pair's cheapest candidate with one segmented minimum (its place among the pair's rides in the cost's low bits),
and adds the picked routes as one difference array. The choices, tables and loads are exactly those of the walk.
The next chunk's candidates, which do not depend on the loads, are made in a second thread meanwhile.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.routing.rings import RingPaths

    I64 = npt.NDArray[np.int64]

CHUNK_PAIRS = 1 << 15  # broken pairs whose candidates are prepared at once (about 15 MB of index arrays)


def first_round(
    todo: I64, n: int, alive: npt.NDArray[np.int32], tables: tuple[npt.NDArray[np.int8], npt.NDArray[np.int16],
    npt.NDArray[np.bool_]], bad: npt.NDArray[np.bool_], extra: I64, paths: RingPaths, batches: int,
) -> tuple[list[I64], bool]:  # fmt: skip
    """Run round one over `todo` in `batches` batches; returns the pairs left and whether any was repaired."""
    import numpy as np

    rings = _RingLoads(paths, alive)
    load = extra[rings.perm]
    sizes = np.full(batches, len(todo) // batches, dtype=np.int64)
    sizes[: len(todo) % batches] += 1  # where np.array_split cuts
    bounds = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(sizes)])
    fixed = np.zeros(len(todo), dtype=bool)
    parts: list[tuple[I64, I64, I64]] = []
    cuts = [0]
    while cuts[-1] < batches:
        first = cuts[-1]
        cuts.append(max(first + 1, int(np.searchsorted(bounds, bounds[first] + CHUNK_PAIRS, side="right")) - 1))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="candidates") as pool:
        # A chunk's candidates do not depend on the loads: the next chunk's are made (numpy lets go of the GIL)
        # while this chunk's batches are picked, which must stay in order.
        def made(i: int) -> Future[_Candidates]:
            return pool.submit(rings.candidates, todo[bounds[cuts[i]] : bounds[cuts[i + 1]]], n, int(bounds[cuts[i]]))

        coming = made(0)
        for i in range(len(cuts) - 1):
            cand = coming.result()
            if i + 2 < len(cuts):
                coming = made(i + 1)
            first, last = cuts[i], cuts[i + 1]
            edges = np.searchsorted(cand.row, bounds[first : last + 1])
            for b in range(first, last):
                e0, e1 = int(edges[b - first]), int(edges[b - first + 1])
                if e1 > e0:
                    chosen = rings.pick(load, cand, e0, e1)
                    parts.append((cand.row[chosen], cand.port[chosen], cand.hops[chosen]))
    P, L, W = (a.ravel() for a in tables)
    for row, port, hops in parts:
        pair = todo[row]
        P[pair], L[pair], W[pair], bad[pair] = port, hops + 1, True, False
        fixed[row] = True
    extra[rings.perm] = load
    return [todo[~fixed]], bool(fixed.any())


@dataclass
class _Candidates:
    """Valid (pair, first hop) candidates of a chunk, by pair then port."""

    row: I64  # the pair's index in `todo`
    port: I64
    link: I64  # the first hop's link (chip * 6 + port)
    hops: I64  # of the neighbour's route
    static: (
        I64  # the cost without the load, then the candidate's place among its pair's: (hops * 8 + jitter) * 8 + place
    )
    pair_first: I64  # where each pair's candidates begin (candidates of a pair are consecutive, in port order)
    cells: I64  # [7, k] window cells: two per run, then the first hop's own
    keys: I64  # [3, k] each run's key (see `_RingLoads.__init__`)


class _RingLoads:
    """Link loads in ring-travel order: per dimension [side, ring, travel index], as `RingPaths` lays them out.

    The i-th run of a route w -> t (dimension d = order[i]) is fixed by its code (w_d, t_d) and its ring, whose
    coordinates are t's in the dimensions before d and w's in the others: a key ``code * rings + ring`` that is a
    sum of one part from w and one from t. Per key, tables give the run's two window cells, its start in the
    difference array, its length and whether it crosses a dead link, so a candidate costs a few lookups.
    """

    def __init__(self, paths: RingPaths, alive: npt.NDArray[np.int32]) -> None:
        import numpy as np

        self.paths = paths
        self.alive = alive
        chips = len(alive)
        self.perm = np.concatenate([paths.links[d][side].ravel() for d in range(3) for side in (0, 1)])
        size = len(self.perm)
        self.levels = max(paths._levels(d) for d in range(3))
        self.first_cell = np.empty(size, dtype=np.int64)  # link -> its place in ring-travel order (level 0)
        self.first_cell[self.perm] = np.arange(size)
        self.first_start = np.empty(size, dtype=np.int64)  # link -> its difference-array index
        # per level k >= 1: for every place, the place 2^(k-1) further round the same ring
        self.ahead: list[I64] = [np.empty(size, dtype=np.int64) for _ in range(self.levels)]
        self.blocks: list[tuple[int, int, int, int]] = []  # (n, rings, load offset, difference-array offset)
        t_off = d_off = 0
        for d in range(3):
            n, rings = paths.dims[d], len(paths.links[d][0])
            self.blocks.append((n, rings, t_off, d_off))
            at = np.arange(2 * rings * n, dtype=np.int64).reshape(2 * rings, n)  # [side, ring] rows
            for side in (0, 1):
                rows = at[side * rings : (side + 1) * rings]
                self.first_start[paths.links[d][side]] = d_off + rows + (rows // n) * n
            for k in range(1, self.levels):
                i = at % n
                self.ahead[k][t_off : t_off + 2 * rings * n] = (at - i + (i + (1 << (k - 1))) % n).ravel() + t_off
            t_off += 2 * rings * n
            d_off += 2 * rings * 2 * n
        self.diff_size = d_off
        # [level, place] window maxima, then a block of zeros (one ring's worth per chip) where an empty run looks
        self.windows = np.zeros(self.levels * size + chips, dtype=np.int64)
        self.cell_bits = len(self.windows).bit_length()
        if 2 * self.cell_bits + max(paths.dims).bit_length() > 62:
            raise ValueError(f"a torus of {chips} chips is too large for packed run tables")
        self.refresh((alive.ravel() < 0)[self.perm].astype(np.int64))
        self.runs = [self._run_tables(i) for i in range(3)]

    def _run_tables(self, i: int) -> tuple[I64, I64, I64, I64, I64, npt.NDArray[np.bool_] | None]:
        """The i-th run's key parts (from w, from t) and, per key: its two cells and length packed in one integer
        (`cell_bits` each, the length above), its start and length, and its dead mark (None when its dimension has
        no dead link); `self.windows` holds the dead links' window maxima."""
        import numpy as np

        from tpufleet.routing.rings import _floor_log2

        d = self.paths.order[i]
        n, rings, t_off, d_off = self.blocks[d]
        o0, o1 = [k for k in range(3) if k != d]
        pos, dims, before = self.paths.pos, self.paths.dims, self.paths.order[:i]
        from_w = pos[d] * n * rings
        from_t = pos[d] * rings
        for other, scale in ((o0, dims[o1]), (o1, 1)):
            if other in before:
                from_t = from_t + pos[other] * scale
            else:
                from_w = from_w + pos[other] * scale
        side, start, length = (a[np.repeat(np.arange(n * n), rings)] for a in self.paths.move[d])
        ring = np.tile(np.arange(rings, dtype=np.int64), n * n) * n
        level = _floor_log2(n)[length]
        base = level * len(self.perm) + t_off + side * rings * n + ring
        empty = self.levels * len(self.perm) + ring
        cell0 = np.where(length > 0, base + start, empty)
        cell1 = np.where(length > 0, base + (start + length - np.left_shift(1, level)) % n, empty)
        dead = (self.windows[cell0] > 0) | (self.windows[cell1] > 0)
        begin = d_off + side * rings * 2 * n + 2 * ring + start
        packed = cell0 | (cell1 << self.cell_bits) | (length << (2 * self.cell_bits))
        return from_w, from_t, packed, begin, length, (dead if dead.any() else None)

    def refresh(self, load: I64) -> None:
        """Window maxima of `load` (ring-travel order) per level k and place: the most loaded of the 2^k links
        from that place on round its ring (`RingPaths.refresh`, for every dimension at once)."""
        import numpy as np

        size = len(self.perm)
        self.windows[:size] = load
        for k in range(1, self.levels):
            prev = self.windows[(k - 1) * size : k * size]
            np.maximum(prev, prev[self.ahead[k]], out=self.windows[k * size : (k + 1) * size])

    def candidates(self, chunk: I64, chips: int, row0: int) -> _Candidates:
        """Every valid candidate of the pairs `chunk` (flat t * N + s; the first is `todo[row0]`): a live first
        hop to a neighbour whose own route to the target crosses no dead link."""
        import numpy as np

        t, s = np.divmod(chunk, chips)
        neighbours = self.alive[s].ravel()
        slot = np.flatnonzero(neighbours >= 0)  # pair * 6 + port
        w = neighbours[slot].astype(np.int64)
        rows = slot // 6
        tt = t[rows]
        ok: npt.NDArray[np.bool_] | None = None
        early: dict[int, I64] = {}  # the keys of the runs checked for dead links
        for i, (from_w, from_t, *_, dead) in enumerate(self.runs):
            if dead is not None:
                early[i] = from_w[w] + from_t[tt]
                crosses = dead[early[i]]
                ok = ~crosses if ok is None else ok & ~crosses
        if ok is not None:
            slot, rows, w, tt = slot[ok], rows[ok], w[ok], tt[ok]
        ports = slot - rows * 6
        m = len(rows)
        keys = np.empty((3, m), dtype=np.int64)
        cells = np.empty((7, m), dtype=np.int64)
        hops = np.zeros(m, dtype=np.int64)
        bits, mask = self.cell_bits, (1 << self.cell_bits) - 1
        for i, (from_w, from_t, packed_cells, *_) in enumerate(self.runs):
            key = keys[i]
            if i in early:
                np.compress(ok, early[i], out=key) if ok is not None else np.copyto(key, early[i])
            else:
                np.add(from_w[w], from_t[tt], out=key)
            packed = np.take(packed_cells, key)
            np.bitwise_and(packed, mask, out=cells[2 * i])
            np.right_shift(packed, bits, out=cells[2 * i + 1])
            cells[2 * i + 1] &= mask
            packed >>= 2 * bits
            hops += packed
        link = (s * 6)[rows] + ports
        np.take(self.first_cell, link, out=cells[6])
        jitter = ((s * 7 + t * 13) % 6)[rows] + ports * 5  # (s * 7 + t * 13 + port * 5) % 6, below
        jitter %= 6
        first = np.flatnonzero(np.diff(rows, prepend=-1))  # rows ascend: each pair's first candidate
        place = np.arange(m) - np.repeat(first, np.diff(first, append=m))
        # the cost is (worst * 64 + hops) * 8 + jitter, then the place, so the least is the lowest port on a tie
        static = (hops * 8 + jitter) * 8 + place
        return _Candidates(rows + row0, ports, link, hops, static, first, cells, keys)

    def pick(self, load: I64, cand: _Candidates, e0: int, e1: int) -> I64:
        """One batch (the pairs of candidates e0..e1): each pair's cheapest candidate on the current load, whose
        routes (first hop included) are then added to `load`. Returns the chosen candidates."""
        import numpy as np

        self.refresh(load)
        cost = np.take(self.windows, cand.cells[:, e0:e1]).max(axis=0)
        cost *= 4096
        cost += cand.static[e0:e1]
        # each pair's cheapest candidate (batches hold whole pairs): its place is the cost's last three bits
        first = cand.pair_first[np.searchsorted(cand.pair_first, e0) : np.searchsorted(cand.pair_first, e1)]
        least = np.minimum.reduceat(cost, first - e0)
        chosen: I64 = first + (least & 7)
        keys = [cand.keys[i][chosen] for i in range(3)]
        starts = [run[3][keys[i]] for i, run in enumerate(self.runs)] + [self.first_start[cand.link[chosen]]]
        ends = [run[4][keys[i]] + starts[i] + self.diff_size for i, run in enumerate(self.runs)]
        ends.append(starts[3] + (1 + self.diff_size))
        marks = np.bincount(np.concatenate(starts + ends), minlength=2 * self.diff_size)
        # every run starts and ends inside its ring's block, so each block's marks sum to zero and one running sum
        # over all of them is each block's own
        laps = np.cumsum(marks[: self.diff_size] - marks[self.diff_size :])
        for n, rings, t_off, d_off in self.blocks:
            block = laps[d_off : d_off + 4 * rings * n].reshape(2 * rings, 2, n)
            load[t_off : t_off + 2 * rings * n] += (block[:, 0] + block[:, 1]).ravel()
        return chosen


def take_picks(
    b: I64, tb: I64, sb: I64, pb: I64, alive: npt.NDArray[np.int32],
    flat: tuple[npt.NDArray[np.int8], npt.NDArray[np.int16], npt.NDArray[np.bool_]], bad: npt.NDArray[np.bool_],
    extra: I64, n: int,
) -> tuple[I64, I64]:  # fmt: skip
    """Fix pairs `b` (targets `tb`, sources `sb`) on their picked wild first hop `pb`: port, hop count (one more
    than the rest of the route from the next chip) and wild mark; count the first hops' load. Returns the next
    chips and the targets, whose remaining routes the caller adds to the load its own way."""
    import numpy as np

    Pf, Lf, Wf = flat
    wb = alive[sb, pb].astype(np.int64)
    Pf[b] = pb
    Lf[b] = Lf[tb * n + wb] + 1
    Wf[b] = True
    bad[b] = False
    np.add.at(extra, sb * 6 + pb, 1)
    return wb, tb


def replay(
    pairs: I64, ports: npt.NDArray[np.int8], n: int, alive: npt.NDArray[np.int32], tables: tuple[
    npt.NDArray[np.int8], npt.NDArray[np.int16], npt.NDArray[np.bool_]], bad: npt.NDArray[np.bool_], extra: I64,
    paths: RingPaths,
) -> bool:  # fmt: skip
    """Apply first hops kept from an earlier `first_round` that repaired every one of the broken `pairs`: the
    same tables and loads it made. False, with nothing changed, unless every hop is a live link to a neighbour
    whose own route to the target is intact (so every repaired route arrives on live links)."""
    import numpy as np

    if ports.dtype != np.int8 or ports.shape != pairs.shape:
        return False
    if len(ports) and (int(ports.min()) < 0 or int(ports.max()) > 5):
        return False
    t, s = np.divmod(pairs, n)
    port = ports.astype(np.int64)
    w = alive[s, port].astype(np.int64)
    if (w < 0).any() or bad[t * n + np.maximum(w, 0)].any():
        return False
    P, L, W = (a.ravel() for a in tables)
    hops = L[t * n + w]  # the neighbours' own routes, which are not among `pairs`
    P[pairs], L[pairs], W[pairs], bad[pairs] = ports, hops + 1, True, False
    extra += np.bincount(s * 6 + port, minlength=len(extra))
    extra += paths.count(w, t, len(extra))
    return True
