"""Reach checks: the fewest pairs the `auto` candidates of `candidates.candidates` would leave unroutable, found
without making a table set (`tolerant.left_unrepaired` replays each candidate's wild-first repair with validity
alone), so a blast radius's verdict that no candidate serves every pair costs a fraction of the repairs. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpufleet.routing.candidates import Variant, broken_of, ocs_patterns, variants_of
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.topology import ChipGraph


def fewest_left(shape: Shape, expected: ChipGraph, alive: ChipGraph, max_vcs: int | None) -> int | None:
    """The fewest pairs any `auto` candidate of `candidates` leaves unroutable when every one leaves some, else
    None; found without making a table set (`tolerant.left_unrepaired`), so a verdict that no candidate serves
    every pair costs a fraction of the repairs. None too when which candidates are made depends on their loads
    (order pairs, added only when no single order is good enough).

    The live graph's first candidate is checked alone, the others two at a time (numpy lets go of the GIL in its
    gathers); the first candidate that routes every pair ends the search.
    """
    from concurrent.futures import ThreadPoolExecutor

    from tpufleet.routing import steps
    from tpufleet.routing.balanced import BALANCE_LIMIT

    if bool((alive == expected).all()):
        return None
    balance = [False, True] if shape.twisted and len(expected) <= BALANCE_LIMIT else [False]
    singles, mixed, pairs = variants_of(shape, expected, alive, max_vcs, balance)
    if pairs:
        return None
    graphs = [alive, *(graph for graph, _ in ocs_patterns(shape, expected, alive))]
    checks = [(graph, variant) for graph in graphs for variant in singles + mixed]
    steps.plan("reach", len(checks))
    orders = _SharedOrders()
    # The live graph's first candidate alone first: when it routes every pair (a reroute), nothing else runs.
    lefts = [_left_of(shape, expected, *checks[0], orders)]
    steps.advance("reach")
    if lefts[0] == 0:
        steps.unplan("reach", len(checks) - 1)
        return None
    with ThreadPoolExecutor(max_workers=REACH_THREADS, thread_name_prefix="reach") as pool:
        futures = [pool.submit(_left_of, shape, expected, graph, variant, orders) for graph, variant in checks[1:]]
        for done, future in enumerate(futures, start=2):
            lefts.append(future.result())
            steps.advance("reach")
            if lefts[-1] == 0:
                for rest in futures:
                    rest.cancel()
                steps.unplan("reach", len(checks) - done)
                return None
    found = [left for left in lefts if left is not None]
    return min(found) if found else None


REACH_THREADS = 2


class _SharedOrders:
    """`tolerant.shuffled` orders by pair count, made once for the candidates with as many broken pairs."""

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
            if count not in self._made:
                self._made[count] = shuffled(count)
            return self._made[count]


def _left_of(
    shape: Shape, expected: ChipGraph, graph: ChipGraph, variant: Variant, orders: _SharedOrders
) -> int | None:
    """Pairs the variant's repair for `graph` would leave unroutable; None when it is no candidate (the same tables
    as plain wild-first, see `_made`)."""
    from tpufleet.routing.tolerant import left_unrepaired

    broken, orders_used, mask = broken_of(shape, expected, graph, variant)
    if variant[0] is not None and orders_used == 1:
        return None
    if len(broken) == 0:
        return 0
    return left_unrepaired(graph, broken, order=orders.get(len(broken)), bad=mask)
