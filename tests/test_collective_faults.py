"""Fault helpers for the collective tests: one OCS down, and the tables `tpufleet routes` would store for it."""

import numpy as np

from helpers import ocs_failure
from tpufleet.collectives.tables import Tables


def ocs_down(shape, dim, index):
    from tpufleet.constants import HARDWARE_VCS
    from tpufleet.routing.report import evaluate

    exp, alive = ocs_failure(shape, dim, index)
    rt = evaluate(shape, exp, alive, traffics=(), max_vcs=HARDWARE_VCS).tables
    return Tables(shape, np.ascontiguousarray(rt.P.T), alive, exp, "stored", {}, hops=np.ascontiguousarray(rt.L.T))


# ---- the link-by-link simulation against the model, with one OCS down ------------------------------------------
import pytest  # noqa: E402

from tpufleet.collectives.algorithms import Context, estimate  # noqa: E402
from tpufleet.collectives.profile import default_profile  # noqa: E402
from tpufleet.collectives.simulate import simulate  # noqa: E402
from tpufleet.shapes import parse_shape  # noqa: E402

MIB = 1 << 20


@pytest.mark.parametrize(
    "text, twisted, dim, algorithms",
    [
        ("4x4x4", False, "x", ["ring", "bidir-ring", "dim-by-dim", "multi-dim"]),
        ("4x4x8", False, "z", ["dim-by-dim", "multi-dim"]),
        ("4x4x8", True, "x", ["dim-by-dim", "multi-dim"]),
        ("8x8x8", False, "y", ["dim-by-dim"]),
    ],
)
def test_simulation_agrees_with_the_model_with_one_ocs_down(text, twisted, dim, algorithms):
    shape = parse_shape(text, twisted)
    t = ocs_down(shape, dim, 5)
    assert t.degraded
    pr = default_profile()
    ctx = Context(t, pr)
    slower = 0
    for algorithm in algorithms:
        for order in [(0, 1, 2), (2, 1, 0)] if "dim" in algorithm else [(0, 1, 2)]:
            asked = None if "ring" in algorithm else order
            (model,) = estimate(ctx, "all-reduce", MIB, algorithm, asked)
            sim = simulate(t, pr, "all-reduce", algorithm, MIB, order)
            assert sim.correct, (algorithm, order)  # every chip ends with the exact sum
            # 1 MiB is mostly latency: a detour's extra hops count for a whole step in the model, only for the
            # few bytes that take it in the simulation, so the model is conservative there (at most 10%) ... up to
            # max-min fair sharing, which is not makespan-optimal: with multi-dim's unequal parts on one link the
            # last message can end a little after the busiest link's bytes / bandwidth (0.2% on twisted 4x4x8).
            assert 0.9 * model.seconds <= sim.seconds <= model.seconds * 1.005, (algorithm, order)
            (big,) = estimate(ctx, "all-reduce", 64 * MIB, algorithm, asked)
            sim = simulate(t, pr, "all-reduce", algorithm, 64 * MIB, order)
            assert sim.seconds == pytest.approx(big.seconds, rel=0.05), (algorithm, order)  # ... and within 5%
            healthy = estimate(
                Context(_healthy(shape), pr), "all-reduce", MIB, algorithm, order if algorithm == "dim-by-dim" else None
            )[0]
            slower += model.seconds > healthy.seconds * 1.01
    assert slower  # the detours show: some schedule is slower than on the healthy slice


def _healthy(shape):
    from tpufleet.collectives.tables import healthy

    return healthy(shape)
