"""The healthy reference of a slice (pure): the tool's own healthy tables and their loads, which
`throughput_retained` is measured against, and the pairs a fault breaks in them (`pairs_broken_by_faults`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tpufleet.routing.analysis import RouteTables
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.topology import ChipGraph


def traffic_loads(
    rt: RouteTables,
    expected: ChipGraph,
    traffics: Sequence[str],
    weight_load: npt.NDArray[np.float64] | None = None,
) -> dict[str, float]:
    """The maximum link load of each traffic on tables `rt` (all-to-all from `weight_load`, already counted)."""
    from tpufleet.routing.loads import ring_allreduce_load

    out: dict[str, float] = {}
    for traffic in traffics:
        if traffic == "all-to-all":
            out[traffic] = float(weight_load.max()) if weight_load is not None and weight_load.size else 0.0
        else:
            load = ring_allreduce_load(rt, expected)
            out[traffic] = float(load.max()) if load.size else 0.0
    return out


def healthy_loads(shape: Shape, expected: ChipGraph, traffics: Sequence[str]) -> dict[str, float]:
    """Loads of the tool's own healthy tables (for a twisted torus, the lighter of plain and balanced DOR): the
    reference `throughput_retained` is measured against."""
    return _healthy_reference(shape, expected, traffics)[0]


def healthy_tables(shape: Shape, expected: ChipGraph) -> tuple[Any, Any]:
    """The tool's own healthy tables of a shape, (P, L) as `dor.tables` gives them: the ones `healthy_loads`
    measures and `routes` stores for a whole slice (for a twisted torus, the lighter of plain and balanced DOR)."""
    return _healthy_reference(shape, expected, ("all-to-all",))[1](shape)


def _healthy_reference(
    shape: Shape, expected: ChipGraph, traffics: Sequence[str]
) -> tuple[dict[str, float], Callable[[Shape], tuple[Any, Any]]]:
    """`healthy_loads`, and the maker of the healthy tables they are the loads of."""
    from tpufleet.routing import dor
    from tpufleet.routing.analysis import analyze
    from tpufleet.routing.balanced import BALANCE_LIMIT, balanced_twisted_tables
    from tpufleet.routing.loads import symmetric, symmetric_load

    if symmetric(shape) and not shape.twisted:
        return ring_healthy_loads(shape, expected, traffics), dor.tables
    makers: list[Callable[[Shape], tuple[Any, Any]]] = [dor.tables]
    if shape.twisted and len(expected) <= BALANCE_LIMIT:
        makers.append(balanced_twisted_tables)
    best: tuple[dict[str, float], Callable[[Shape], tuple[Any, Any]]] | None = None
    for make in makers:
        P, L = make(shape)
        rt = RouteTables(shape, expected, P, L)
        a2a = symmetric_load(rt) if symmetric(shape) else analyze(rt, deadlock=False).load
        loads = traffic_loads(rt, expected, traffics, weight_load=a2a)
        if best is None or loads.get("all-to-all", 0.0) < best[0].get("all-to-all", 0.0):
            best = (loads, make)
    assert best is not None
    return best


def healthy_tables_broken(shape: Shape, expected: ChipGraph, alive: ChipGraph) -> int:
    """`pairs_broken_by_faults`: the ordered pairs whose route in the tool's healthy tables (the ones
    `healthy_loads` measures) crosses a link the live graph lacks, whatever tables then route around it."""
    from tpufleet.routing.dor import DEFAULT_ORDER
    from tpufleet.routing.loads import symmetric
    from tpufleet.routing.tolerant import broken_pairs

    if bool((alive == expected).all()):
        return 0
    if symmetric(shape) and not shape.twisted and bool(((alive == expected) | (alive < 0)).all()):
        import numpy as np

        from tpufleet.routing.rings import broken_mask_by_runs

        return int(np.count_nonzero(broken_mask_by_runs(shape, DEFAULT_ORDER, expected, alive)))
    _, make = _healthy_reference(shape, expected, ("all-to-all",))
    P, _ = make(shape)
    return len(broken_pairs(P, expected, alive))


def ring_healthy_loads(shape: Shape, expected: ChipGraph, traffics: Sequence[str]) -> dict[str, float]:
    """`healthy_loads` of an untwisted torus without making its tables: the routes `symmetric_load` and
    `ring_allreduce_load` walk (from one chip of each parity class to all; to every ring neighbour) are counted
    from their ring runs."""
    import numpy as np

    from tpufleet.routing.dor import DEFAULT_ORDER
    from tpufleet.routing.rings import RingPaths
    from tpufleet.topology import coordinates

    n = len(expected)
    paths = RingPaths(shape, DEFAULT_ORDER)
    out: dict[str, float] = {}
    for traffic in traffics:
        if traffic == "all-to-all":
            xyz = coordinates(shape.dims)
            cls = (xyz[:, 0] % 2) * 4 + (xyz[:, 1] % 2) * 2 + (xyz[:, 2] % 2)
            reps = np.array([int(np.flatnonzero(cls == c)[0]) for c in range(8)], dtype=np.int64)
            routes = paths.count(np.repeat(reps, n), np.tile(np.arange(n, dtype=np.int64), 8), n * 6)
            counts = np.zeros((8, 6))
            np.add.at(counts, cls, routes.reshape(n, 6))
            out[traffic] = float(counts[cls].max()) if n else 0.0
        else:
            s, p = np.nonzero(expected >= 0)
            load = paths.count(s.astype(np.int64), expected[s, p].astype(np.int64), n * 6)
            out[traffic] = float(load.max()) if load.size else 0.0
    return out
