"""Fault-tolerant tables: find the routes a fault breaks, then repair them without losing deadlock freedom.

Broken pairs are found from the dead links upward: a pair (t, s) is broken iff its route crosses a dead link,
i.e. s lies in the subtree, inside destination t's routing tree, of a chip whose table entry uses a dead link.
That costs time in proportion to the broken pairs, not to N^2.

Repairs, in order (which tables they start from, and which of the results is kept: `candidates`):

* ``wild-first``: a chip whose route is broken takes one non-minimal first hop to a live neighbour whose own
  route is intact, then follows that neighbour's table. Among the valid neighbours it picks, in batches, the
  one whose whole path carries the least detour traffic so far (ties: shorter, then spread by a hash).
* fallback chains: a broken chip with no intact neighbour hops to a neighbour that was itself repaired in an
  earlier round (a chain of wild hops, each on the next wild VC). What is still unreachable is reported.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypedDict

from tpufleet.constants import OPPOSITE
from tpufleet.routing.analysis import RouteTables
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray
    from tpufleet.routing.dor import HopTable, PortTable
    from tpufleet.routing.rings import RingPaths
    from tpufleet.topology import ChipGraph

    Load = npt.NDArray[np.int64]  # [N * 6] units per directed link

BATCHES = 8
MAX_BATCHES = 256  # 16x16x16, one OCS: 128 batches would save 0.1-0.2 s for +0.25% max load, 64: 0.3 s for +0.6%
MAX_CHAIN_ROUNDS = 4
REACH_CHUNK = 1 << 18  # broken pairs checked at once in a reach check's first round (a few MB of temporaries)


class _RouteCounts(TypedDict):
    broken_by_faults: int
    repaired_wild: int
    orders_used: int


class RouteInfo(_RouteCounts, total=False):
    """What `route` did: pairs the faults broke, pairs repaired with wild hops, dimension orders in use."""

    max_load: float  # the repaired tables' max all-to-all link load, when wild-first ran
    strategy: str  # `auto` only: the variant kept
    made_for: ChipGraph  # `auto` only: the graph the tables were made for (live, or an OCS's failure pattern)
    relieved: int  # table entries repointed off the busiest links (`routing.relieve`)


def dead_links(expected: ChipGraph, alive: ChipGraph) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """(chips, ports) of links the healthy shape has but the live graph lacks (or wires elsewhere)."""
    import numpy as np

    s, p = np.nonzero((expected >= 0) & (alive != expected))
    return s, p


def broken_pairs(P: PortTable, expected: ChipGraph, alive: ChipGraph) -> npt.NDArray[np.int64]:
    """Flat indices t * N + s of pairs whose route in P crosses a dead link (upward search from dead links)."""
    import numpy as np

    n = len(expected)
    ds, dp = dead_links(expected, alive)
    if len(ds) == 0:
        return np.empty(0, dtype=np.int64)
    # every (t, a) whose own entry uses a dead link (a, p)
    seeds: list[npt.NDArray[np.int64]] = []
    for a, p in zip(ds.tolist(), dp.tolist(), strict=True):
        t = np.flatnonzero(P[:, a] == p)
        seeds.append(t.astype(np.int64) * n + a)
    # No deduplication needed: an entry is found only from its own next hop, which is one entry.
    frontier = np.concatenate(seeds) if seeds else np.empty(0, dtype=np.int64)
    bad = np.zeros(n * n, dtype=bool)
    bad[frontier] = True
    Pf = P.ravel()
    while len(frontier):
        t, a = np.divmod(frontier, n)
        found = []
        for port in range(6):
            # a chip c forwards to a through `port` iff a = expected[c, port], i.e. c = expected[a, opposite]
            c = expected[a, OPPOSITE[port]]
            ok = c >= 0
            idx = t[ok] * n + c[ok]
            idx = idx[(Pf[idx] == port) & ~bad[idx]]
            found.append(idx)
        frontier = np.concatenate(found)
        bad[frontier] = True
    return np.flatnonzero(bad)


def base_load(
    P: PortTable,
    L: HopTable,
    alive: ChipGraph,
    broken: npt.NDArray[np.int64],
    shape: Shape,
    expected: ChipGraph | None = None,
    paths: RingPaths | None = None,
) -> Load:
    """All-to-all load of the pairs the faults leave intact (flat [N * 6]).

    For the plain DOR tables of a torus: the healthy load (by symmetry, from 8 chips' routes) less the routes of
    the broken pairs, walked on the healthy graph (or counted by ring runs, `paths`); otherwise one sweep over
    all pairs.
    """
    import numpy as np

    from tpufleet.routing.analysis import swept_load
    from tpufleet.routing.loads import pair_load, symmetric, symmetric_load

    n = len(alive)
    if expected is not None and symmetric(shape):
        healthy = RouteTables(shape, expected, P, L)
        t, s = np.divmod(broken, n)
        if paths is not None:
            return symmetric_load(healthy).ravel().astype(np.int64) - paths.count(s, t, n * 6)
        total = symmetric_load(healthy) - pair_load(healthy, s, t)
        return total.ravel().astype(np.int64)
    intact = np.ones(n * n, dtype=bool)
    intact[broken] = False
    return swept_load(RouteTables(shape, alive, P, L), intact.reshape(n, n)).ravel().astype(np.int64)


def wild_first(
    P: PortTable,
    L: HopTable,
    alive: ChipGraph,
    broken: npt.NDArray[np.int64],
    seed: int = 0,
    *,
    base: Load,
    paths: RingPaths | None = None,
) -> tuple[BoolArray, npt.NDArray[np.int64], Load]:
    """Repair broken pairs in place with wild first hops (and chains).

    Returns (wild mask, unroutable pair indices, link load): the load is `base` plus every repaired route, which is
    the repaired tables' exact all-to-all load when `base` is the load of the intact pairs.

    `base` is the load already on each link (flat [N * 6]); the choice minimizes the most loaded link of the
    whole new route, so detours spread over the neighbouring rings instead of piling onto one.

    `paths`, given when P is the plain dimension-order table of an untwisted torus, answers the first round's
    route questions from ring runs instead of walks (every neighbour offered then is on its intact route).
    """
    import numpy as np

    from tpufleet.routing import walked

    n = len(alive)
    wild = np.zeros(P.shape, dtype=bool)
    if len(broken) == 0:
        return wild, broken, base
    Pf, Lf, Wf = P.ravel(), L.ravel(), wild.ravel()
    bad = np.zeros(n * n, dtype=bool)
    bad[broken] = True
    extra = base.copy()
    todo = broken[shuffled(len(broken), seed)]
    limit = int(L.max()) + 2 * MAX_CHAIN_ROUNDS + 4
    for round_no in range(MAX_CHAIN_ROUNDS):
        if not len(todo):
            break
        if round_no == 0 and paths is not None:
            if _first_round(P, L, wild, alive, broken, todo, bad, extra, paths, batch_count(len(todo)), seed):
                todo = np.empty(0, dtype=np.int64)
                break
            todo = todo[bad[todo]]
            if len(todo) == len(broken):
                break
            continue
        bounds = _batch_bounds(len(todo))
        fixed_any, left = walked.repair_round(alive, todo, bounds, bad, extra, limit, (Pf, Lf, Wf), round_no)
        todo = np.concatenate(left)
        if not fixed_any:
            break
    Pf[todo] = -2
    Lf[todo] = -1
    return wild, todo, extra


def batch_count(pairs: int) -> int:
    """How many batches a round of `wild_first` cuts its `pairs` broken pairs into."""
    return min(max(BATCHES, min(MAX_BATCHES, pairs // 32)), pairs)


@lru_cache(maxsize=2)
def shuffled(count: int, seed: int = 0) -> npt.NDArray[np.integer[Any]]:
    """The order `wild_first` takes `count` broken pairs in: ``rng.permutation(broken)`` is
    ``broken[shuffled(len(broken), seed)]`` (the shuffle's swaps depend on the length alone, not on what is
    shuffled), so checks of several candidates with as many broken pairs share one. Indices are 32-bit: half the
    memory of the permutation numpy makes of a count, the same order. Read-only, and the last two are kept: the
    candidates of one fault mostly break as many pairs (a full pod: a shuffle of millions takes 30-70 ms).

    >>> a = shuffled(5); b = shuffled(5)
    >>> a is b, sorted(a.tolist()), a.flags.writeable
    (True, [0, 1, 2, 3, 4], False)
    """
    import numpy as np

    order: npt.NDArray[np.integer[Any]] = np.arange(count, dtype=np.int32 if count < 2**31 else np.int64)
    np.random.default_rng(seed).shuffle(order)
    order.flags.writeable = False
    return order


def left_unrepaired(
    alive: ChipGraph,
    broken: npt.NDArray[np.int64],
    seed: int = 0,
    order: npt.NDArray[np.integer[Any]] | None = None,
    bad: BoolArray | None = None,
) -> int:
    """How many of the `broken` pairs `wild_first` (the same seed) leaves unroutable, found without making a route.

    Whether a pair gets repaired does not depend on the loads, which only choose among its valid first hops: a
    first hop is valid when it is a live link to the target or to a neighbour that has a route to it. In the first
    round that route must be an intact one, so which pairs it repairs is fixed before its first batch; in later
    rounds a neighbour repaired in an earlier batch serves too, so they are replayed batch for batch, in the
    repair's order (`order`: `shuffled(len(broken), seed)`, made when not given). Every pair not broken has a
    route in the tables a repair starts from (they route every pair of the healthy graph), so the tables
    themselves are not needed. `bad`: the same pairs as an N * N mask, when the caller has one (changed here).

    >>> from tpufleet.routing import dor
    >>> from tpufleet.shapes import parse_shape
    >>> from tpufleet.topology import neighbors
    >>> shape = parse_shape("4x4x4")
    >>> healthy = neighbors(shape)
    >>> P, _ = dor.tables(shape)
    >>> alive = healthy.copy()
    >>> alive[0, 0] = alive[1, 1] = -1  # the x link between chips 0 and 1, both ways: every pair repaired
    >>> left_unrepaired(alive, broken_pairs(P, healthy, alive))
    0
    >>> alive[0, :] = -1; alive[healthy[0], [1, 0, 3, 2, 5, 4]] = -1  # chip 0 cut off: 63 pairs each way
    >>> left_unrepaired(alive, broken_pairs(P, healthy, alive))
    126
    """
    import numpy as np

    n = len(alive)
    if len(broken) == 0:
        return 0
    if bad is None:
        bad = np.zeros(n * n, dtype=bool)
        bad[broken] = True
    index = _pair_index(n)
    hops = _first_hops(alive, index)
    cuts = -(-len(broken) // REACH_CHUNK)
    first = np.concatenate([_reachable(bad, hops, *_rows(part, n, index)) for part in np.array_split(broken, cuts)])
    if first.all() or not first.any():
        return 0 if first.all() else len(broken)
    bad[broken] = ~first
    order = shuffled(len(broken), seed) if order is None else order
    return chain_rounds(alive, broken[order[~first[order]]], bad)  # the pairs round one left, in the repair's order


def chain_rounds(alive: ChipGraph, todo: npt.NDArray[np.integer[Any]], bad: BoolArray) -> int:
    """How many of the pairs `todo` (flat t * N + s, in the repair's order) the chain rounds of `wild_first` leave
    unroutable, `bad` marking the pairs without a route as those rounds start (changed here): they are replayed
    batch for batch, a pair repaired in an earlier batch serving the later ones (see `left_unrepaired`). The
    flat indices may number only some destinations' rows (`bitrows.LeftRows`): a pair's hops stay in its row."""
    from itertools import pairwise

    import numpy as np

    n = len(alive)
    index = np.int32 if len(bad) < 2**31 else np.int64  # 32-bit while the pairs fit: half the memory traffic
    hops = _first_hops(alive, index)
    todo = todo.astype(index, copy=False)
    low = n - 1 if n & (n - 1) == 0 else None  # a power of two: the source is the low bits
    for _ in range(1, MAX_CHAIN_ROUNDS):
        stuck = np.empty(len(todo), dtype=bool)
        for a, b in pairwise(_batch_bounds(len(todo))):
            batch = todo[a:b]
            s = batch & low if low is not None else batch % n  # per batch: no round-long arrays of sources
            nexts = np.take(hops, s, axis=1)  # one gather for the six ports of the batch
            nexts += batch - s  # + the row's start
            held = np.logical_and.reduce(np.take(bad, nexts), axis=0)
            stuck[a:b] = held
            bad[batch] = held  # all of the batch were without a route: those repaired now have one
        todo = np.compress(stuck, todo)
        if stuck.all() or not len(todo):
            break
    return len(todo)


def _batch_bounds(pairs: int) -> list[int]:
    """Where `np.array_split` cuts `pairs` into `batch_count(pairs)` batches (the first ones a pair longer)."""
    count = batch_count(pairs)
    size, longer = divmod(pairs, count)
    return [i * size + min(i, longer) for i in range(count + 1)]


def _pair_index(n: int) -> type[np.signedinteger[Any]]:
    """The integer type of flat pair indices: 32-bit while N * N fits (half the memory traffic of the gathers)."""
    import numpy as np

    return np.int32 if n * n < 2**31 else np.int64


def _first_hops(alive: ChipGraph, index: type[np.signedinteger[Any]]) -> npt.NDArray[np.signedinteger[Any]]:
    """[port, chip] the chip a first hop reaches; a dead port points back at the chip itself: the pair being
    checked is still broken, so it never counts."""
    import numpy as np

    chips = np.arange(len(alive), dtype=index)
    hops: npt.NDArray[np.signedinteger[Any]] = np.where(alive >= 0, alive, chips[:, None]).astype(index).T.copy()
    return hops


def _reachable(
    bad: BoolArray, hops: npt.NDArray[np.signedinteger[Any]], t: npt.NDArray[Any], s: npt.NDArray[Any]
) -> BoolArray:
    """Pairs (t is the target's row start t * n, s the source) with a first hop to a pair not broken."""
    import numpy as np

    if len(s) > 1 << 14:  # many pairs (the first round): port by port, no [6, pairs] temporaries
        stuck: BoolArray = np.take(bad, t + np.take(hops[0], s))
        for hop in hops[1:]:
            stuck &= np.take(bad, t + np.take(hop, s))
        return ~stuck
    nexts = np.take(hops, s, axis=1)  # a batch of a chain round: one gather for the six ports, fewer calls
    nexts += t
    every: BoolArray = np.logical_and.reduce(np.take(bad, nexts), axis=0)
    return ~every


def _rows(
    pairs: npt.NDArray[np.integer[Any]], n: int, index: type[np.signedinteger[Any]]
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """(row start t * n, source s) of flat pair indices."""
    from tpufleet.routing.bitrows import split

    flat: npt.NDArray[Any] = pairs.astype(index, copy=False)
    _, s = split(flat, n)
    return flat - s, s


def _first_round(
    P: PortTable, L: HopTable, wild: BoolArray, alive: ChipGraph, broken: npt.NDArray[np.int64],
    todo: npt.NDArray[np.int64], bad: BoolArray, extra: Load, paths: RingPaths, batches: int, seed: int,
) -> bool:  # fmt: skip
    """wild-first's first round by ring runs (`wildrings.first_round`), or its choices replayed from the cache
    the caller installed (`memo`); True when it repaired every broken pair. Fully repaired choices are offered
    back to the cache."""
    from tpufleet.routing import memo
    from tpufleet.routing.wildrings import first_round, replay

    n = len(alive)
    cache = memo.current()
    tag = memo.key(paths.dims, paths.order, seed, BATCHES, MAX_CHAIN_ROUNDS, alive, broken, extra) if cache else ""
    kept = cache.get(tag) if cache is not None else None
    if kept is not None and replay(broken, kept, n, alive, (P, L, wild), bad, extra, paths):
        return True
    left, _ = first_round(todo, n, alive, (P, L, wild), bad, extra, paths, batches)
    done = not any(len(part) for part in left)
    if done and cache is not None:
        cache.put(tag, P.ravel()[broken])
    return done
