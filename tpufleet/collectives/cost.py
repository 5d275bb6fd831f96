"""Pure entry points for the rest of the tool: a job's ideal step time and a rerouted slice's slowdown.

Both model the gradient all-reduce of a data-parallel job over its whole slice (the fastest algorithm that
runs, as `tpufleet collective --algorithm auto` picks it) and cache per slice shape and fault pattern, so a
fleet simulation may call them for every job. `ocs_down_graph` gives the live graph of a slice with OCS down,
for `reroute_slowdown`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tpufleet.collectives.profile import Profile, default_profile
from tpufleet.collectives.tables import Tables, healthy
from tpufleet.shapes import Shape

if TYPE_CHECKING:
    from tpufleet.topology import ChipGraph

_TABLES: dict[tuple[Shape, bytes], Tables] = {}
_TIMES: dict[tuple[Shape, bytes, float, str, str, str], float] = {}


def _tables(shape: Shape, alive: ChipGraph | None) -> Tables:
    """Healthy DOR tables, or the tables `tpufleet routes` would store for the live graph `alive`."""
    import numpy as np

    key = (shape, b"" if alive is None else alive.tobytes())
    if key not in _TABLES:
        if alive is None:
            _TABLES[key] = healthy(shape)
        else:
            from tpufleet.constants import HARDWARE_VCS
            from tpufleet.routing.report import evaluate
            from tpufleet.topology import neighbors

            expected = neighbors(shape)
            rt = evaluate(shape, expected, alive, traffics=(), deadlock_check=True, max_vcs=HARDWARE_VCS).tables
            port, hops = np.ascontiguousarray(rt.P.T), np.ascontiguousarray(rt.L.T)
            _TABLES[key] = Tables(shape, port, alive, expected, "rerouted", {}, hops=hops)
    return _TABLES[key]


def collective_time(
    shape: Shape, nbytes: float, op: str = "all-reduce", profile: Profile | None = None, alive: ChipGraph | None = None
) -> float:
    """Seconds of the fastest algorithm for `op` of `nbytes` per chip on the slice (healthy, or with live graph
    `alive`); inf when nothing can run (some pair unroutable)."""
    from tpufleet.collectives.algorithms import Context, best_of, estimate

    profile = profile or default_profile()
    key = (shape, b"" if alive is None else alive.tobytes(), float(nbytes), op, profile.name, profile.file)
    if key not in _TIMES:
        ctx = Context(_tables(shape, alive), profile)
        best = best_of(estimate(ctx, op, nbytes, "auto", None))
        _TIMES[key] = best.seconds if best is not None else float("inf")
    return _TIMES[key]


def ideal_step_time(
    shape: Shape, model_flops_per_step: float, gradient_bytes: float, profile: Profile | None = None
) -> float:
    """Seconds of one training step at the roofline: the step's model FLOPs (all chips together) at every chip's
    peak, plus the modelled all-reduce of `gradient_bytes` (per chip) on the healthy slice."""
    profile = profile or default_profile()
    compute = model_flops_per_step / (shape.chips * profile.peak_flops)
    return compute + (collective_time(shape, gradient_bytes, profile=profile) if gradient_bytes > 0 else 0.0)


def reroute_slowdown(
    shape: Shape,
    alive: ChipGraph,
    gradient_bytes: float,
    model_flops_per_step: float = 0.0,
    profile: Profile | None = None,
) -> float:
    """Step time on the rerouted slice over step time on the healthy one (>= 1; inf when a pair is unroutable).

    With `model_flops_per_step` 0 this is the slowdown of the all-reduce alone."""
    profile = profile or default_profile()
    compute = model_flops_per_step / (shape.chips * profile.peak_flops)
    before = compute + collective_time(shape, gradient_bytes, profile=profile)
    after = compute + collective_time(shape, gradient_bytes, profile=profile, alive=alive)
    return after / before if before > 0 else 1.0


def ocs_down_graph(shape: Shape, failures: Sequence[tuple[str, int]]) -> ChipGraph:
    """The live chip graph of a slice with the given OCS down, each as (dimension 'x'|'y'|'z', index 0-15): an
    OCS carries face position `index` of its dimension at every cube boundary, so every cube loses that link
    (both directions). A sub-cube slice has no optical link and keeps its graph."""
    from tpufleet.constants import CUBE_EDGE
    from tpufleet.ids import face_index
    from tpufleet.topology import coordinates, neighbors

    alive = neighbors(shape).copy()
    if not shape.wraps:
        return alive
    local = coordinates(shape.dims) % CUBE_EDGE
    faces = [face_index(dim, *xyz) for dim in "xyz" for xyz in local.tolist()]
    n = len(local)
    for dim, index in failures:
        d = "xyz".index(dim)
        for chip in range(n):
            if local[chip, d] == CUBE_EDGE - 1 and faces[d * n + chip] == index:
                other = alive[chip, 2 * d]
                alive[chip, 2 * d] = -1
                if other >= 0:
                    alive[other, 2 * d + 1] = -1
    return alive
