"""Candidates proved too heavy to be kept are not made (pure).

A wild-first repair only adds routes to the load of the pairs its starting tables keep intact
(`tolerant.base_load`), so the busiest link of that load is a lower bound of the repaired tables' maximum
all-to-all load. Where the caller keeps the tables made for a graph only when they are strictly lighter than a
load it already has (`report._with_own_where_poor`: the live graph's own tables against its turned ones), a
candidate whose bound reaches that load can never be the one kept, nor rank before it: its repair is skipped.
How many pairs it would leave unroutable is still counted (`tolerant.left_unrepaired`, exact, a fraction of a
repair), since whether some candidate routes every pair decides which are dropped (`candidates.routable_first`)
and which are worth making (`reach.Skipping`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.topology import ChipGraph


class Pruned(Exception):
    """A candidate not made: the load its repair starts from already reaches the ceiling."""

    def __init__(self, left: int, orders_used: int) -> None:
        super().__init__(left, orders_used)
        self.left = left  # pairs its repair would leave unroutable
        self.orders_used = orders_used


def check(
    ceiling: float | None,
    start: npt.NDArray[np.int64],
    alive: ChipGraph,
    broken: npt.NDArray[np.int64],
    orders_used: int,
) -> None:
    """Raise `Pruned` when the repair of `broken` on `alive`, starting from the load `start`, cannot end below
    `ceiling` (None: no ceiling)."""
    from tpufleet.routing.tolerant import left_unrepaired

    if ceiling is not None and len(broken) and int(start.max()) >= ceiling:
        raise Pruned(left_unrepaired(alive, broken), orders_used)
