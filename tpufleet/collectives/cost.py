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
_TIMES: dict[tuple[Shape, bytes, float, str, str], float] = {}  # the profile by its repr: all its figures


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
    key = (shape, b"" if alive is None else alive.tobytes(), float(nbytes), op, repr(profile))
    if key not in _TIMES:
        ctx = Context(_tables(shape, alive), profile)
        best = best_of(estimate(ctx, op, nbytes, "auto", None))
        _TIMES[key] = best.seconds if best is not None else float("inf")
    return _TIMES[key]


Terms = tuple[tuple[float, float], ...]  # per algorithm that runs: (latency s, seconds per byte)
_TERMS: dict[tuple[Shape, bytes, str, str], Terms] = {}


def collective_terms(
    shape: Shape, op: str = "all-reduce", profile: Profile | None = None, alive: ChipGraph | None = None
) -> Terms:
    """Every algorithm's time as latency + seconds per byte * n, for any message size n at once.

    Each algorithm of the model is affine in the size (its schedule, routes and multi-dim split do not depend on
    it), so `time_from_terms(terms, n)` equals `collective_time(shape, n, ...)` for every n. Empty when nothing
    can run."""
    from tpufleet.collectives.algorithms import Context, estimate

    profile = profile or default_profile()
    key = (shape, b"" if alive is None else alive.tobytes(), op, repr(profile))
    if key not in _TERMS:
        ctx = Context(_tables(shape, alive), profile)
        ests = [e for e in estimate(ctx, op, 1.0, "auto", None) if e.runs]
        _TERMS[key] = tuple(sorted({(e.latency, e.bandwidth) for e in ests}))
    return _TERMS[key]


def time_from_terms(terms: Terms, nbytes: float) -> float:
    """Seconds of the fastest algorithm at `nbytes`; inf when none runs."""
    return min((latency + per_byte * nbytes for latency, per_byte in terms), default=float("inf"))


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
    from tpufleet.constants import CUBE_EDGE, DIMS
    from tpufleet.ids import face_index
    from tpufleet.topology import coordinates, neighbors

    alive = neighbors(shape).copy()
    if not shape.wraps:
        return alive
    local = coordinates(shape.dims) % CUBE_EDGE
    faces = [face_index(dim, *xyz) for dim in DIMS for xyz in local.tolist()]
    n = len(local)
    for dim, index in failures:
        d = DIMS.index(dim)
        for chip in range(n):
            if local[chip, d] == CUBE_EDGE - 1 and faces[d * n + chip] == index:
                other = alive[chip, 2 * d]
                alive[chip, 2 * d] = -1
                if other >= 0:
                    alive[other, 2 * d + 1] = -1
    return alive


def link_down_graph(
    shape: Shape, links: Sequence[tuple[tuple[int, int, int], str, int, str]], alive: ChipGraph | None = None
) -> ChipGraph:
    """The live chip graph with optical links down, each as (cube position in the slice's cube grid, dimension,
    face index 0-15, polarity 'out'|'in'): 'out' is the cable leaving the cube's + face, 'in' the one entering
    its - face, as in `tpufleet.ids.LinkId`. A link fault takes both directions of its cable."""
    import numpy as np

    from tpufleet.constants import CUBE_EDGE, DIMS

    alive = (ocs_down_graph(shape, []) if alive is None else alive).copy()
    if not shape.wraps:
        return alive
    for cube, dim, index, polarity in links:
        d = DIMS.index(dim)
        a, b = [k for k in range(3) if k != d]
        local = [0, 0, 0]
        local[a], local[b] = divmod(index, CUBE_EDGE)
        local[d] = CUBE_EDGE - 1 if polarity == "out" else 0
        chip = int(np.ravel_multi_index(tuple(c * CUBE_EDGE + x for c, x in zip(cube, local, strict=True)), shape.dims))
        port = 2 * d + (0 if polarity == "out" else 1)
        other = alive[chip, port]
        alive[chip, port] = -1
        if other >= 0:
            alive[other, port ^ 1] = -1
    return alive
