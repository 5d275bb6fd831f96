"""From a slice's live graph to the documented routing figures (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tpufleet.routing.analysis import RouteTables
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.topology import ChipGraph

TRAFFICS = ("all-to-all", "all-reduce")


@dataclass
class RouteReport:
    tables: RouteTables
    summary: dict[str, Any]  # the documented figures (JSON-shaped)
    unroutable: list[tuple[int, int]] = field(default_factory=list)
    cycle: list[str] = field(default_factory=list)


def _loads(
    rt: RouteTables,
    expected: ChipGraph,
    traffics: Sequence[str],
    weight_load: npt.NDArray[np.float64] | None = None,
) -> dict[str, float]:
    from tpufleet.routing.analysis import ring_allreduce_load

    out: dict[str, float] = {}
    for traffic in traffics:
        if traffic == "all-to-all":
            out[traffic] = float(weight_load.max()) if weight_load is not None and weight_load.size else 0.0
        else:
            load = ring_allreduce_load(rt, expected)
            out[traffic] = float(load.max()) if load.size else 0.0
    return out


def healthy_loads(shape: Shape, expected: ChipGraph, traffics: Sequence[str]) -> dict[str, float]:
    from tpufleet.routing import dor
    from tpufleet.routing.analysis import analyze, symmetric, symmetric_load

    P, L = dor.tables(shape)
    rt = RouteTables(shape, expected, P, L)
    a2a = symmetric_load(rt) if symmetric(shape) else analyze(rt, deadlock=False).load
    return _loads(rt, expected, traffics, weight_load=a2a)


def evaluate(
    shape: Shape,
    expected: ChipGraph,
    alive: ChipGraph,
    algorithm: str = "auto",
    traffics: Sequence[str] = TRAFFICS,
    deadlock_check: bool = True,
) -> RouteReport:
    """Tables plus every documented figure: routable pairs, lengths, VCs, deadlock, loads, throughput kept."""
    import numpy as np

    from tpufleet.routing.analysis import analyze
    from tpufleet.routing.tolerant import route

    rt, info = route(shape, expected, alive, algorithm)
    a = analyze(rt, deadlock=deadlock_check)
    n = rt.n
    off_diag = ~np.eye(n, dtype=bool)
    ok = a.routable & off_diag
    lengths = rt.L[ok]
    loads = _loads(rt, expected, traffics, weight_load=a.load)
    healthy = healthy_loads(shape, expected, traffics)
    retained = {k: (round(healthy[k] / loads[k], 4) if loads[k] else 1.0) for k in traffics}
    bad_t, bad_s = np.nonzero(~a.routable & off_diag)
    summary = {
        "chips": n,
        "algorithm": algorithm,
        "strategy": info.get("strategy", algorithm if info["broken_by_faults"] else "dimension-order"),
        "routable_pairs": int(ok.sum()),
        "unroutable_pairs": len(bad_t),
        "diameter": int(lengths.max()) if lengths.size else 0,
        "mean_hops": round(float(lengths.mean()), 6) if lengths.size else 0.0,
        "vcs": a.vcs if deadlock_check else None,
        "deadlock_free": a.deadlock_free if deadlock_check else None,
        "max_link_load": loads,
        "healthy_max_link_load": healthy,
        "throughput_retained": retained,
        "pairs_broken_by_faults": info["broken_by_faults"],
        "pairs_repaired_wild": info["repaired_wild"],
        "dimension_orders": info["orders_used"],
        "vc_layout": a.vc_blocks if deadlock_check else None,
    }
    pairs = list(zip(bad_s[:1000].tolist(), bad_t[:1000].tolist(), strict=True))
    return RouteReport(rt, summary, pairs, a.cycle)
