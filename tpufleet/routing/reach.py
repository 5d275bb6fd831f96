"""Reach checks: the fewest pairs the `auto` candidates of `candidates.candidates` would leave unroutable, found
without making a table set (`tolerant.left_unrepaired` replays each candidate's wild-first repair with validity
alone), so a blast radius's verdict that no candidate serves every pair costs a fraction of the repairs. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from tpufleet.routing.bitrows import (
    LeftRows,
    TorusBits,
    broken_words,
    first_round_left,
    left_rows,
    popcount,
    repair_order,
    torus_bits,
)
from tpufleet.routing.candidates import Variant, broken_of, variants_of
from tpufleet.routing.patterns import ocs_patterns
from tpufleet.routing.tree_families import splits_apply
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.constants import BoolArray
    from tpufleet.routing.bitrows import Words
    from tpufleet.routing.dor import Order
    from tpufleet.topology import ChipGraph


def fewest_left(shape: Shape, expected: ChipGraph, alive: ChipGraph, max_vcs: int | None) -> int | None:
    """The fewest pairs any `auto` candidate of `candidates` leaves unroutable when every one leaves some, else
    None; found without making a table set (`tolerant.left_unrepaired`), so a verdict that no candidate serves
    every pair costs a fraction of the repairs. None too when which candidates are made depends on their loads
    (order pairs, added only when no single order is good enough), and when the order pairs withheld by size
    route every pair where the others leave some (`routing.rescue`: then they are made).
    """
    from tpufleet.routing.rescue import rescuing

    left = defaults_left(shape, expected, alive, max_vcs)
    if left is not None and rescuing(shape, expected, alive, max_vcs, defaults_leave=True):
        return None
    return left


def defaults_left(shape: Shape, expected: ChipGraph, alive: ChipGraph, max_vcs: int | None) -> int | None:
    """`fewest_left` of the candidates `candidates` makes by default (no rescue).

    The candidates are checked in order, the first that routes every pair ending the search; the live graph's
    first one alone (a reroute waits for nothing else), then a thread prepares each next candidate while this one
    replays the chain rounds of the one before (`_checked`).
    """
    from tpufleet.routing import steps
    from tpufleet.routing.balanced import BALANCE_LIMIT

    if bool((alive == expected).all()):
        return None
    balance = [False, True] if shape.twisted and len(expected) <= BALANCE_LIMIT else [False]
    singles, mixed, pairs = variants_of(shape, expected, alive, max_vcs, balance)
    if pairs:
        return None
    graphs = [alive, *(graph for graph, _ in ocs_patterns(shape, expected, alive))]
    if any(splits_apply(shape, expected, graph, max_vcs) for graph in graphs):
        return None  # `routing.split` tables are made too, whose reach is not replayed here
    # each graph as bit rows once (None: not a plain torus), for all its candidates
    bits = [_Graph(graph, torus_bits(shape, expected, graph)) for graph in graphs]
    checks = [(graph, variant) for graph in bits for variant in singles + mixed]
    steps.plan("reach", len(checks))
    lefts: list[int | None] = []
    for done, left in enumerate(_checked(shape, expected, checks), start=1):
        steps.advance("reach")
        if left == 0:
            steps.unplan("reach", len(checks) - done)
            return None
        lefts.append(left)
    found = [left for left in lefts if left is not None]
    return min(found) if found else None


def routing_every_pair(shape: Shape, expected: ChipGraph, alive: ChipGraph, variants: list[Variant]) -> list[Variant]:
    """The variants whose wild-first repair on `alive` would route every pair (reach checks, no table made)."""
    from tpufleet.routing import steps

    graph = _Graph(alive, torus_bits(shape, expected, alive))
    steps.plan("reach", len(variants))
    lefts = []
    for left in _checked(shape, expected, [(graph, variant) for variant in variants]):
        steps.advance("reach")
        lefts.append(left)
    return [variant for variant, left in zip(variants, lefts, strict=True) if left == 0]


REACH_THREADS = 2  # 1: no thread ahead: each check made whole, one after the other
AHEAD = 4  # checks prepared ahead of the one whose chain rounds run (a few MB each on a full pod)


class _Graph(NamedTuple):
    """A graph the candidates are made for, and the same as bit rows (None: not a plain torus)."""

    nbr: ChipGraph
    bits: TorusBits | None


Check = tuple[_Graph, Variant]


class _Left(NamedTuple):
    """A candidate on bit rows whose first round left pairs (`rows`) and repaired others, of `broken` (`words`)."""

    alive: ChipGraph
    bits: TorusBits
    words: Words
    broken: int
    rows: LeftRows


class _ChainJob(NamedTuple):
    """A candidate whose first round left pairs: its chain rounds to replay (`tolerant.chain_rounds`) on those
    pairs in the repair's order (`todo`, numbering the rows of `bad`: `bitrows.LeftRows`)."""

    alive: ChipGraph
    todo: npt.NDArray[np.int32]
    bad: BoolArray


Answer = int | None  # pairs left; None: no candidate
Prepared = Answer | _ChainJob


class _Orders:
    """The repair orders of one search by pair count (`tolerant.shuffled`), made once for the candidates with as
    many broken pairs (a full pod's shuffle of millions takes 40-80 ms), by whichever thread asks first, or ahead
    of time in a thread of their own (`ahead`: numpy shuffles without the GIL); the last ORDERS_KEPT kept, each
    10-15 MB there: the candidates of one graph mostly break as many pairs."""

    ORDERS_KEPT = 3

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._locks: dict[int, threading.Lock] = {}
        self._made: dict[int, npt.NDArray[np.integer[Any]]] = {}

    def get(self, count: int) -> npt.NDArray[np.integer[Any]]:
        import threading

        from tpufleet.routing.tolerant import shuffled

        with self._lock:
            mine = self._locks.setdefault(count, threading.Lock())
        with mine:  # one shuffle per count; other counts are shuffled meanwhile
            with self._lock:
                made = self._made.pop(count, None)
            made = shuffled(count) if made is None else made
            with self._lock:
                self._made[count] = made  # the most recent last
                while len(self._made) > self.ORDERS_KEPT:
                    del self._made[next(iter(self._made))]
            return made

    def ahead(self, count: int) -> None:
        """Start the order of `count` in a thread unless it is made or being made (`get` then waits for it)."""
        import threading

        with self._lock:
            if count in self._made or count in self._locks:
                return
            self._locks[count] = threading.Lock()
        threading.Thread(target=self.get, args=(count,), name="reach-order", daemon=True).start()


def _checked(shape: Shape, expected: ChipGraph, checks: list[Check]) -> Iterator[Answer]:
    """Each check's pairs left, in order, in three stages: the first round (`_first_round`: on bit rows, a few
    whole-array passes), the repair's order for the pairs it left (`_ordered`: a shuffle and passes over millions
    of pairs, which let go of the GIL) and the chain rounds (`_finished`: many small passes, which two threads
    would only take turns at). The first check's first round runs alone (a reroute it decides waits for nothing
    else); then a thread makes the next checks' first two stages, ahead of this one, which orders the first check
    and replays every check's chain rounds. Checks off bit rows (twisted tori, per-destination orders) are each
    made whole, two at a time, as they always were (`_pooled`)."""
    orders = _Orders()
    if not any(_on_bits(check) for check in checks):
        yield from _pooled(shape, expected, checks, orders)
        return
    first = _first_round(shape, expected, checks[0], orders)
    if REACH_THREADS < 2:
        yield _finished(_ordered(first, orders))
        for check in checks[1:]:
            yield _finished(_ordered(_first_round(shape, expected, check, orders), orders))
        return
    if not isinstance(first, _Left):
        yield first  # the caller stops here on a 0: nothing else runs
    ahead = _Ahead(_prepared(shape, expected, checks[1:], orders), len(checks) - 1)
    try:
        if isinstance(first, _Left):
            yield _finished(_ordered(first, orders))
        for made in ahead:
            yield _finished(made)
    finally:
        ahead.stop()


def _pooled(shape: Shape, expected: ChipGraph, checks: list[Check], orders: _Orders) -> Iterator[Answer]:
    """Checks off bit rows, each made whole (`_whole`): the first alone, the others REACH_THREADS at a time (numpy
    lets go of the GIL in their large gathers), in order."""
    from concurrent.futures import ThreadPoolExecutor

    yield _whole(shape, expected, checks[0], orders)
    with ThreadPoolExecutor(max_workers=REACH_THREADS, thread_name_prefix="reach") as pool:
        futures = [pool.submit(_whole, shape, expected, check, orders) for check in checks[1:]]
        try:
            for future in futures:
                yield future.result()
        finally:
            for rest in futures:
                rest.cancel()


def _prepared(shape: Shape, expected: ChipGraph, checks: list[Check], orders: _Orders) -> Iterator[Prepared]:
    """The checks' first two stages, in order; each next check's first round comes before this one's order, so
    the shuffle it needs is made meanwhile in a thread of its own (`_Orders.ahead`)."""
    firsts = (_first_round(shape, expected, check, orders) for check in checks)
    upcoming = next(firsts, None)
    for _ in checks:
        current, upcoming = upcoming, next(firsts, None)
        if isinstance(upcoming, _Left):
            orders.ahead(upcoming.broken)
        yield _ordered(current, orders)


class _Ahead:
    """Items of `made`, made in a thread at most AHEAD ahead of the reader, in order; an error in the thread is
    raised in the reader."""

    def __init__(self, made: Iterator[Prepared], count: int) -> None:
        import queue
        import threading

        self._made: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=AHEAD)
        self._halt = threading.Event()
        self._count = count
        self._thread = threading.Thread(target=self._run, args=(made,), name="reach", daemon=True)
        self._thread.start()

    def _run(self, made: Iterator[Prepared]) -> None:
        import queue

        for _ in range(self._count):
            try:
                item: tuple[bool, Any] = (True, next(made))
            except BaseException as exc:  # noqa: BLE001 - handed to the reader, which raises it
                item = (False, exc)
            while not self._halt.is_set():
                try:
                    self._made.put(item, timeout=0.05)
                    break
                except queue.Full:
                    continue
            if self._halt.is_set() or not item[0]:
                return

    def __iter__(self) -> Iterator[Prepared]:
        for _ in range(self._count):
            ok, made = self._made.get()
            if not ok:
                raise made
            yield made

    def stop(self) -> None:
        """The search is over: the thread ends after the item it is making."""
        self._halt.set()
        self._thread.join()


def _finished(made: Prepared) -> Answer:
    from tpufleet.routing.tolerant import chain_rounds

    if not isinstance(made, _ChainJob):
        return made
    return chain_rounds(made.alive, made.todo, made.bad)


def _ordered(made: Answer | _Left, orders: _Orders) -> Prepared:
    """The pairs a first round left, in the repair's order (the shuffle of their count, `bitrows.repair_order`)."""
    if not isinstance(made, _Left):
        return made
    todo = repair_order(made.bits, made.words, made.rows, orders.get(made.broken))
    return _ChainJob(made.alive, todo, made.rows.mask)


def _on_bits(check: Check) -> bool:
    """The check's tables are plain dimension-order ones on a plain torus: its reach check runs on bit rows."""
    graph, variant = check
    return graph.bits is not None and variant.orders is None and not variant.balanced


def _first_round(shape: Shape, expected: ChipGraph, check: Check, orders: _Orders) -> Answer | _Left:
    """On bit rows, the pairs the check's first round left when chains must tell (else its answer); off them, the
    whole check (`_whole`)."""
    graph, variant = check
    if _on_bits(check) and graph.bits is not None:
        return _by_bits(graph.bits, expected, graph.nbr, variant.order)
    return _whole(shape, expected, check, orders)


def _whole(shape: Shape, expected: ChipGraph, check: Check, orders: _Orders) -> Answer:
    """Pairs the variant's repair for the check's graph would leave unroutable, pair by pair
    (`tolerant.left_unrepaired`); None when it is no candidate (the same tables as plain wild-first, see `_made`)."""
    from tpufleet.routing.tolerant import left_unrepaired

    graph, variant = check
    broken, orders_used, mask = broken_of(shape, expected, graph.nbr, variant)
    if variant.orders is not None and orders_used == 1:
        return None
    if len(broken) == 0:
        return 0
    return left_unrepaired(graph.nbr, broken, order=orders.get(len(broken)), bad=mask)


def _by_bits(bits: TorusBits, expected: ChipGraph, alive: ChipGraph, order: Order) -> Answer | _Left:
    """`tolerant.left_unrepaired` of the plain tables of `order` on `alive` up to its chain rounds, with the broken
    pairs and the first round as bit rows (`bitrows`): the count when the first round decides it, else the pairs
    it left."""
    words = broken_words(bits, order, expected, alive)
    count = popcount(words)
    if count == 0:
        return 0
    left = first_round_left(bits, words)
    stuck = popcount(left)
    if stuck in (0, count):  # every pair repaired in the first round, or none (then no chain can start)
        return stuck
    return _Left(alive, bits, words, count, left_rows(bits, left))


class Skipping:
    """Which of `candidates`'s variants are worth a repair. A candidate that leaves pairs unroutable is dropped as
    soon as another routes every pair (`candidates.routable_first`); once the variants made so far include both
    kinds, each next one is first checked here (a tenth of a repair's seconds on a full pod) and not made when it
    would leave pairs: it would be dropped. Before that no check is made, so a fault whose candidates all route
    every pair (the usual case) pays nothing.
    """

    def __init__(self, shape: Shape, expected: ChipGraph) -> None:
        self._shape, self._expected = shape, expected
        self._orders = _Orders()
        self._bits: dict[int, _Graph] = {}
        self.routable = self.unroutable = False

    def worth_making(self, graph: ChipGraph, variant: Variant) -> bool:
        if not (self.routable and self.unroutable):
            return True
        key = id(graph)
        if key not in self._bits:
            self._bits[key] = _Graph(graph, torus_bits(self._shape, self._expected, graph))
        check = (self._bits[key], variant)
        left = _finished(_ordered(_first_round(self._shape, self._expected, check, self._orders), self._orders))
        return left == 0

    def made(self, left: int) -> None:
        """A variant was made and left `left` pairs unroutable."""
        self.routable |= left == 0
        self.unroutable |= left > 0
