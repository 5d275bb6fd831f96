"""The rerouted step slowdown from the shipped tables and step models, against "Resiliency at Scale" (NSDI 2024):
+0.5% to +8.6% step time under one OCS failure, nearest-neighbour all-reduce losing about half its throughput."""

import pytest

from tpufleet.ids import LinkId, OcsId
from tpufleet.simulation.reroute import (
    PAPER_RANGE,
    SEED_MIXES,
    allreduce_factor,
    mix_slowdown,
    share_for,
    slowdown,
    slowdown_rows,
)
from tpufleet.state.reroutecosts import shipped_costs
from tpufleet.state.siminputs import load_workload


@pytest.fixture(scope="module")
def rows():
    return slowdown_rows(load_workload(None).models, None, shipped_costs())


def test_the_rerouted_all_reduce_is_at_most_twice_as_long(rows):
    """The paper: nearest-neighbour all-reduce keeps about 50% of its throughput under one OCS failure. The
    model's fastest algorithm on the repaired tables takes 1.36x to 1.77x as long: never more than twice."""
    factors = [f for r in rows for f in r["all_reduce_factor"]]
    assert len(rows) == 12
    assert min(factors) == pytest.approx(1.36, abs=0.01) and max(factors) == pytest.approx(1.77, abs=0.01)
    assert all(1.0 < f <= 2.0 for f in factors)


def test_the_table_is_what_the_simulator_applies(rows):
    """The README table's workload column is `slowdown` of the simulator for a real OCS and link of each dimension."""
    models = load_workload(None).models
    table = shipped_costs()
    for r in rows:
        shape, model = next((s, m) for s, m in models.items() if str(s) == r["shape"])
        faults: list[OcsId | LinkId]
        if r["fault"] == "ocs":
            faults = [OcsId("p0", d, 3) for d in "xyz"]
        else:
            faults = [LinkId("c0", d, 5, "out") for d in "xyz"]
        got = [slowdown(shape, model, [f], None, table) - 1 for f in faults]
        assert (min(got), max(got)) == pytest.approx(r["workload"], rel=1e-12)


def test_mixes_within_the_papers_all_reduce_shares_fall_in_its_range(rows):
    """Every shape and fault maps the paper's +0.5%..+8.6% to an exposed all-reduce share of about 0.7%..11%:
    a step spending 1.4% to 11% of its time in the gradient all-reduce slows by an amount inside the range."""
    lo, hi = PAPER_RANGE
    for r in rows:
        f_lo, f_hi = r["all_reduce_factor"]
        for share in (0.014, 0.05, 0.11):
            assert lo <= mix_slowdown(f_lo, share) - 1 <= mix_slowdown(f_hi, share) - 1 <= hi, (r["shape"], share)
        low_share, high_share = r["paper_shares"]
        assert 0.006 < low_share < 0.01 and 0.11 < high_share < 0.25


def test_the_seed_mixes_spend_more_of_their_step_in_the_all_reduce_than_the_range_allows(rows):
    """Documented, not hidden: the shipped workload (a 537M-parameter model, 13.6%-15.0% of its step in the
    all-reduce) slows 5.2%..10.7%: one OCS costs more than 8.6% on every
    shape of more than two cubes; MLSys 2021's ResNet-50 and BERT at 4,096 chips
    (22% and 27.3%) 7.9%..21%, above the range in each shape's worst dimension. The paper's workloads spend at most 11% to 19% of their step (by shape) in it."""
    workload = [v for r in rows for v in r["workload"]]
    assert min(workload) == pytest.approx(0.052, abs=0.001) and max(workload) == pytest.approx(0.107, abs=0.001)
    assert all(0.13 < r["workload_share"] < 0.155 for r in rows)
    for r in rows:
        inside = r["workload"][1] <= PAPER_RANGE[1]
        if r["fault"] == "ocs":  # inside the range on the one-cube shape only (twisted 4x4x8: +8.9% in its worst
            assert inside == (r["shape"] == "4x4x4"), r["shape"]  # dimension, its tables the lightest for all-to-all)
        assert inside == (r["workload_share"] <= share_for(PAPER_RANGE[1], r["all_reduce_factor"][1]))
        for mix in SEED_MIXES:
            assert max(r["seed_mixes"][mix.name]) > PAPER_RANGE[1]


def test_a_fault_free_factor_is_one():
    shape = next(iter(load_workload(None).models))
    assert allreduce_factor(shape, "healthy", 1 << 30, None, shipped_costs()) == 1.0
    assert share_for(0.05, 1.0) == float("inf")
