"""Order pairs for a large slice that no default candidate can serve, pure (but for a memo of its answers).

`candidates` makes per-destination order pairs (`dimension_orders.order_pairs`) only up to a size limit (2,048
chips, 9,216 with one broken dimension): above it they cost seconds more a repair, and `routes --thorough` makes
them. But with OCS down in several dimensions every default candidate may leave pairs unroutable where an order
pair routes them all: on a TPU v5p 16x16x16 with an OCS down in each of x, y and z, every single order leaves 16
pairs and each order pair none, keeping 0.727 of the healthy all-to-all throughput within 3 VCs. Without them the
slice would be moved, or `routes` would store nothing, for want of tables `--thorough` makes.

Reach checks (`reach`) find that case without a repair (about 1 s on that slice, against 8 s a repair); only then,
and only the order pairs that route every pair, are made, ranked as `candidates` ranks them: the tables
`--thorough` keeps there, since it drops the candidates that leave pairs. Answers are kept for the live graphs last
asked about: a blast radius asks first whether any candidate routes every pair (`reach.fewest_left`), then for the
tables (`candidates`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from tpufleet.routing.candidates import Variant, variants_of
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.topology import ChipGraph

NOTE = ", order pairs (no single order serves every pair)"  # how the rescued tables were made, in their strategy
_KEPT = 4  # live graphs whose answer is kept
_answers: dict[str, list[Variant]] = {}
_answering = threading.Lock()


def withheld(shape: Shape, expected: ChipGraph, alive: ChipGraph, max_vcs: int | None) -> list[Variant]:
    """The order-pair variants `candidates` leaves out by size on this live graph: [] where it makes them anyway,
    on twisted tori and meshes (their order pairs need 4 VCs or gain nothing: `dimension_orders`), and where
    optical links are down apart from whole OCS (`candidates` then makes each OCS's failure pattern too, which the
    rescue would have to make as well to keep what `--thorough` keeps: left to `--thorough`)."""
    from tpufleet.routing.patterns import ocs_patterns

    if shape.twisted or not shape.wraps or bool((alive == expected).all()) or ocs_patterns(shape, expected, alive):
        return []
    if variants_of(shape, expected, alive, max_vcs, [False])[2]:
        return []
    return variants_of(shape, expected, alive, max_vcs, [False], thorough=True)[2]


def rescuing(
    shape: Shape, expected: ChipGraph, alive: ChipGraph, max_vcs: int | None, defaults_leave: bool | None = None
) -> list[Variant]:
    """The withheld order pairs (`withheld`) that route every pair, when every default candidate leaves some;
    [] otherwise. `defaults_leave`: whether every default candidate leaves pairs, when the caller knows."""
    from tpufleet.routing import memo
    from tpufleet.routing.reach import defaults_left, routing_every_pair

    variants = withheld(shape, expected, alive, max_vcs)
    if not variants:
        return []
    key = memo.key(shape.text, shape.twisted, max_vcs, repr(variants), expected, alive)
    with _answering:  # one answer made at a time (`serve` routes in its request threads)
        if key not in _answers:
            if defaults_leave is None:
                defaults_leave = defaults_left(shape, expected, alive, max_vcs) is not None
            while len(_answers) >= _KEPT:
                del _answers[next(iter(_answers))]
            _answers[key] = routing_every_pair(shape, expected, alive, variants) if defaults_leave else []
        return _answers[key]


def rescued(summary: dict[str, object]) -> bool:
    """The tables of this routing summary were made here: `--thorough` makes the same ones (it adds only these
    order pairs above the size limit, and drops the candidates that leave pairs), so it need not be tried."""
    return NOTE in str(summary.get("strategy", ""))
