"""The link-by-link simulation of healthy slices against the cost model (within 5%), and its own fair sharing."""

import numpy as np
import pytest

from tpufleet.collectives import tables
from tpufleet.collectives.algorithms import Context, estimate
from tpufleet.collectives.profile import default_profile
from tpufleet.collectives.simulate import fair_rates, simulate
from tpufleet.shapes import parse_shape

MIB = 1 << 20


@pytest.mark.parametrize(
    "text, twisted, algorithms",
    [
        ("4x4x4", False, ["ring", "bidir-ring", "dim-by-dim", "multi-dim"]),
        ("2x2x4", False, ["ring", "bidir-ring", "dim-by-dim"]),
        ("4x4x8", False, ["dim-by-dim", "multi-dim"]),
        ("4x4x8", True, ["dim-by-dim", "multi-dim"]),
        ("4x8x8", True, ["dim-by-dim", "multi-dim"]),
    ],
)
@pytest.mark.parametrize("op", ["all-reduce", "reduce-scatter", "all-gather"])
def test_simulation_agrees_with_the_model_on_healthy_slices(text, twisted, algorithms, op):
    shape = parse_shape(text, twisted)
    t = tables.healthy(shape)
    pr = default_profile()
    for algorithm in algorithms:
        (model,) = estimate(Context(t, pr), op, MIB, algorithm, None if "ring" in algorithm else (0, 1, 2))
        sim = simulate(t, pr, op, algorithm, MIB)
        assert sim.correct
        assert sim.seconds == pytest.approx(model.seconds, rel=0.05)
        assert sim.steps == sum(ph.steps for ph in model.phases) * model.passes


def test_on_a_mesh_the_model_is_conservative_where_latency_and_load_fall_on_different_messages():
    """Sub-cube meshes close their folded rings through two-hop routes: with small messages the longest route and
    the busiest link belong to different messages, which the model adds and the simulation does not."""
    t = tables.healthy(parse_shape("2x2x4"))
    pr = default_profile()
    for nbytes, low in [(MIB, 0.9), (1 << 30, 0.999)]:
        (model,) = estimate(Context(t, pr), "all-reduce", nbytes, "multi-dim", (0, 1, 2))
        sim = simulate(t, pr, "all-reduce", "multi-dim", nbytes)
        assert sim.correct and low * model.seconds <= sim.seconds <= model.seconds


def test_fair_sharing_is_max_min():
    # flows 0 and 1 share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2), so it is held at 2 and
    # flow 0 takes the rest of link 0; flow 2 is alone on link 2
    flow = np.array([0, 1, 1, 2])
    link = np.array([0, 0, 1, 2])
    rates = fair_rates(flow, link, np.array([10.0, 2.0, 7.0]), 3)
    assert rates.tolist() == [8.0, 2.0, 7.0]


def test_a_shared_link_slows_the_step_by_the_number_of_messages_on_it():
    from tpufleet.collectives.simulate import run_step

    shape = parse_shape("4x4x4")
    t = tables.healthy(shape)
    pr = default_profile()
    # chips 0 and 1 both send to chip 2 along x... (0 -> 32 and 16 -> 32 share the link 16 -> 32)
    src, dst = np.array([0, 16]), np.array([32, 32])
    seconds = run_step(t, pr, src, dst, np.array([1e6, 1e6]))
    assert seconds == pytest.approx(2e6 / pr.link_bandwidth + 2 * pr.hop_latency, rel=1e-9)
