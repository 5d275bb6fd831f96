"""The fault path on a full pod (16x16x16, 4096 chips), each fast piece beside the implementation it replaced,
run in the same process on the same input, as a ratio (the old one is kept as the tests' oracle).

Run alone with `python benchmarks/bench_routing_fast.py` (about a minute); `make bench` runs it too.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

Record = Callable[[str, float, str, str, float], None]


def median_of(fn: Callable[[], Any], repeat: int = 3) -> float:
    """Median wall time of `repeat` calls (robust to one slow outlier on a shared machine; not the best case)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def one_ocs_failure(shape: Any, dim: int = 0, index: int = 5) -> tuple[Any, Any]:
    """Healthy graph and the live graph with OCS {dim, index} failed (its link at every cube boundary)."""
    from tpufleet.ids import face_index
    from tpufleet.topology import coordinates, neighbors

    exp = neighbors(shape)
    alive = exp.copy()
    for s, c in enumerate(coordinates(shape.dims)):
        local = [int(v) % 4 for v in c]
        if local[dim] == 3 and face_index("xyz"[dim], *local) == index:
            alive[s, 2 * dim] = -1
            alive[exp[s, 2 * dim], 2 * dim + 1] = -1
    return exp, alive


def bench(record: Record) -> None:
    from tpufleet.routing import dor, structured
    from tpufleet.routing.analysis import analyze_pairs
    from tpufleet.routing.candidates import candidates
    from tpufleet.routing.distances import graph_distances
    from tpufleet.routing.rings import RingPaths
    from tpufleet.routing.tolerant import base_load, broken_pairs, wild_first
    from tpufleet.shapes import parse_shape

    shape = parse_shape("16x16x16")
    exp, alive = one_ocs_failure(shape)
    rt, _info = candidates(shape, exp, alive, "auto", 3)[0]

    def repair(paths: RingPaths | None) -> None:
        P, L = dor.tables(shape)
        broken = broken_pairs(P, exp, alive)
        wild_first(P, L, alive, broken, base=base_load(P, L, alive, broken, shape, exp, paths), paths=paths)

    record(
        "wild-first repair, one OCS failure, 16x16x16 (786,432 pairs)",
        median_of(lambda: repair(RingPaths(shape, dor.DEFAULT_ORDER)), 3),
        "(part of <= 2 s)",
        "same repair, routes walked hop by hop",
        median_of(lambda: repair(None), 1),
    )
    from tpufleet.routing import memo

    class Kept(dict):  # a ChoiceCache in memory
        def put(self, key: str, choices: Any) -> None:
            self[key] = choices

    kept = Kept()
    with memo.using(kept):
        searched = median_of(lambda: repair(RingPaths(shape, dor.DEFAULT_ORDER)), 1)  # keeps its choices
        replayed = median_of(lambda: repair(RingPaths(shape, dor.DEFAULT_ORDER)), 3)
    record(
        "  the same repair replayed from its kept choices (checked)", replayed, "(no target)", "the search", searched
    )
    record(
        "channel-dependency check + arrival + loads, one OCS failure, 4096 chips",
        median_of(lambda: structured.analyze(rt), 3),
        "<= 0.5 s",
        "pair-by-pair analysis (16.8 M pairs)",
        median_of(lambda: analyze_pairs(rt), 1),
    )
    healthy, _ = candidates(shape, exp, exp, "auto", 3)[0]
    record(
        "channel-dependency check + arrival + loads, healthy, 4096 chips",
        median_of(lambda: structured.analyze(healthy), 3),
        "<= 0.5 s",
        "pair-by-pair analysis (16.8 M pairs)",
        median_of(lambda: analyze_pairs(healthy), 1),
    )
    record(
        "graph diameter and mean hops, one OCS failure, 4096 chips",
        median_of(lambda: graph_distances(alive, shape), 5),
        "(no target)",
        "bit-parallel BFS from every chip",
        median_of(lambda: graph_distances(alive), 3),
    )


def bench_wiring(record: Record, state_dir: str) -> None:
    """Resolving a fully wired 16x16x16 slice's ports (numpy) against the chip-by-chip original."""
    sys.path[:0] = [str(ROOT / "tests")]
    from oracles.wiring_reference import build_chip_by_chip
    from tpufleet import wiring
    from tpufleet.state import Store

    state = Store(Path(state_dir)).load()
    sl = next(iter(state.slices.values()))
    args = (sl, state.fleet, state.ocs, state.health())
    record(
        "slice wiring and discovery, 16x16x16",
        median_of(lambda: wiring.build(*args), 5),
        "(no target)",
        "chip-by-chip original",
        median_of(lambda: build_chip_by_chip(*args), 3),
    )


def main() -> None:
    sys.path[:0] = [str(ROOT)]

    def show(name: str, value: float, target: str, baseline_name: str, baseline: float) -> None:
        ratio = baseline / value if value else float("inf")
        print(f"{name:<74} {value:7.3f} s ({target})  {baseline_name} {baseline:7.3f} s: {ratio:.1f}x", flush=True)

    bench(show)


if __name__ == "__main__":
    main()
