"""Defects of the modelling commands (`collective`, `capacity`, `simulate-*`) a review found, each pinned."""

from __future__ import annotations

import numpy as np
import pytest

from tpufleet.collectives import algorithms
from tpufleet.collectives.model import _all_pairs_pattern
from tpufleet.collectives.profile import default_profile
from tpufleet.collectives.tables import healthy
from tpufleet.collectives.whatif import what_if_tables
from tpufleet.shapes import validate_dims

WHAT_IFS = [
    ((64, 1, 1), (False, False, False)),
    ((64, 1, 1), (True, False, False)),
    ((16, 8, 1), (False, True, False)),
    ((12, 6, 1), (True, False, False)),
    ((8, 8, 4), (True, True, False)),
]
SLICES = [((4, 4, 8), False), ((4, 8, 8), True)]


def _tables():
    for dims, wraps in WHAT_IFS:
        yield what_if_tables(dims, wraps)
    for dims, twisted in SLICES:
        yield healthy(validate_dims(dims, twisted))


@pytest.mark.parametrize("t", list(_tables()), ids=[str(d) for d, _ in WHAT_IFS] + [str(d) for d, _ in SLICES])
def test_a_ring_phase_swept_over_the_tables_costs_what_walking_it_does(t):
    """Long rings are swept level by level instead of walked message by message: the same loads, link, hops."""
    profile = default_profile()
    ctx = algorithms.Context(t, profile)
    for order in algorithms.orders(ctx):
        for ph in ctx.dim_phases(order):
            r, m = ph.rings.shape
            ring_of = np.full(t.n, -1)
            ring_of[ph.rings.ravel()] = np.repeat(np.arange(r), m)
            senders = (ring_of[:, None] == ring_of[None, :]) & (ring_of >= 0)[:, None]
            assert algorithms._swept_pattern(t, profile, senders) == _all_pairs_pattern(t, profile, ph.rings)


def test_dimension_by_dimension_all_to_all_on_a_long_line_completes(cli):
    """A 1,024-chip line's all-pairs phase kept 2.7 GB of walked hops (5.7 GB at its peak; exit 70 where memory
    was short, and 4,096 chips ran out on 24 GB): now bounded by the tables' N^2 entries."""
    import tracemalloc

    tracemalloc.start()
    try:
        r = cli("collective", "--topology", "1024x1", "--op", "all-to-all", "--bytes", "1GiB", "-o", "json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.code == 0, r.err
    assert peak < 256 * 2**20  # the tables of 1,024 chips and their sweep: tens of MiB
    times = {(c["algorithm"], c["dims"]): c["time_s"] for c in r.json["candidates"]}
    assert times["dim-by-dim", "x"] == pytest.approx(times["direct", None])  # one dimension: the same all pairs


def test_cubes_sure_to_fail_over_a_long_horizon_are_not_taken_for_cubes_down(fleet):
    """Over 100,000 days every cube's odds underflow to 0: they are up now and sure to fail, so the expected case
    is every cube failing, not none (the cubes were dropped as if down, and every shape fit)."""
    assert fleet("inject-fault", "cube:c00").code == 0
    week = fleet("capacity", "--confidence", "0.95", "--horizon", "7d", "-o", "json").json["pods"][0]
    assert week["expected_failures"]["cubes_up"] == 63 and 0 < week["after"] < 63
    ages = fleet("capacity", "--confidence", "0.95", "--horizon", "100000d", "-o", "json").json["pods"][0]
    assert ages["expected_failures"]["cubes_up"] == 63 and ages["after"] == 63
    assert ages["fit_after"] == 0 and ages["largest_after"] is None
    spares = fleet("plan-spares", "--horizon", "100000d", "-o", "json").json["pods"][0]
    assert spares["free_healthy_cubes"] == 63 and spares["cubes_down_now"] == ["c00"]


@pytest.mark.parametrize("minutes", ["60", "1440", "10080"])
def test_program_goodput_stays_below_one_whatever_the_checkpoint_interval(cli, minutes):
    """Logged steps were a tenth of the checkpoint interval, so with intervals of days a job's last step, cut short
    by its end, was credited as hours of ideal step time it never ran: PG 1.06 at 6,000 minutes."""
    r = cli("simulate-fleet", "--days", "3", "--seed", "1", "--checkpoint-interval", minutes, "-o", "json")
    assert r.code == 0, r.err
    assert 0.55 < r.json["pg"] < 0.62  # the workload's ideal step is 0.6 of its step; rerouted steps run slower


def test_a_degraded_twisted_slice_is_slowed_against_the_tables_it_ran_on_healthy(fleet):
    """A twisted torus runs healthy on the lighter of plain and balanced dimension order; its slowdown was taken
    against plain dimension order, so two OCS down made all-to-all 0.95x as slow as healthy."""
    for name in ("s", "whole"):
        assert fleet("allocate", name, "--shape", "4x4x8", "--twisted").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0
    whole = fleet("collective", "whole", "--op", "all-to-all", "--bytes", "1GiB", "-o", "json").json
    for ocs in ("x/0", "z/1"):
        assert fleet("inject-fault", f"ocs:pod0/{ocs}").code == 0
    assert fleet("routes", "s").code == 0
    out = fleet("collective", "s", "--op", "all-to-all", "--bytes", "1GiB", "-o", "json").json
    assert out["healthy_time_s"] == whole["time_s"]  # the healthy twin, routed and modelled alike
    assert out["slowdown"] >= 1.0


def test_an_evicted_slice_has_no_collective_to_model(fleet):
    """An evicted slice runs nowhere, and `routes` refuses it: its stale tables were modelled all the same."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("routes", "s").code == 0
    (row,) = fleet("show", "slices", "-o", "json").json
    assert fleet("inject-fault", f"cube:{row['cubes'][0]}").code == 0
    assert fleet("show", "slices", "-o", "json").json[0]["state"] == "evicted"
    r = fleet("collective", "s", "--op", "all-reduce", "--bytes", "1GiB")
    assert r.code == 1 and "evicted" in r.err and "reschedule" in r.err
    r = fleet("collective", "s", "--op", "all-reduce", "--bytes", "1GiB", "--assume-healthy", "-o", "json")
    assert r.code == 0 and r.json["tables"]["source"] == "assumed-healthy"


def test_a_shape_mix_entry_larger_than_a_pod_is_bad_input(cli, tmp_path):
    """A slice is wired within one pod: jobs of a 16x16x32 (128 cubes) were drawn and waited for ever."""
    workload = tmp_path / "mix.yaml"
    workload.write_text("schema_version: 1\nshapes:\n  - {shape: 8x8x8, weight: 1}\n  - {shape: 16x16x32, weight: 1}\n")
    r = cli("simulate-fleet", "--days", "1", "--pods", "2", "--workload", workload)
    assert r.code == 2 and "shape mix entry 1" in r.err and "16x16x32" in r.err
    workload.write_text("schema_version: 1\nshapes:\n  - {shape: 8x8x8, weight: 1}\n  - {shape: 16x16x16, weight: 1}\n")
    assert cli("simulate-fleet", "--days", "1", "--workload", workload).code == 0  # a whole pod: placeable


def test_static_availability_never_rises_with_the_job_size(cli):
    """A static job of 56 or 63 cubes needs the whole pod as 64 does: Monte Carlo gave it 0 below 64's exact value."""
    r = cli("simulate-availability", "--cubes", "48,56,63,64", "--host-availability", "0.9999", "--trials", "2000",
            "-o", "json")  # fmt: skip
    assert r.code == 0, r.err
    by_k = {row["cubes"]: row for row in r.json["results"]}
    whole = 0.9999**1024
    for k in (56, 63, 64):
        assert by_k[k]["static_method"] == "exact" and by_k[k]["static"] == pytest.approx(whole, abs=1e-6)
    assert by_k[48]["static_method"] == "monte-carlo" and by_k[48]["static"] >= by_k[56]["static"] - 0.05


def test_a_flat_dimension_has_nothing_to_wrap_and_may_be_left_out_of_the_order(cli):
    """`--wrap z` on a 128x32 was accepted and ignored; `--dims yx` there was refused for leaving out z."""
    base = ("collective", "--topology", "128x32", "--op", "all-reduce", "--bytes", "1GiB")
    r = cli(*base, "--wrap", "z")
    assert r.code == 2 and "--wrap" in r.err and "z" in r.err
    two = cli(*base, "--wrap", "y", "--algorithm", "dim-by-dim", "--dims", "yx", "-o", "json")
    three = cli(*base, "--wrap", "y", "--algorithm", "dim-by-dim", "--dims", "yxz", "-o", "json")
    assert two.code == three.code == 0 and two.json == three.json and two.json["dims"] == "yx"
    r = cli("collective", "--topology", "8x8x8", "--op", "all-reduce", "--bytes", "1GiB", "--dims", "yx")
    assert r.code == 2 and "leaves out z" in r.err
