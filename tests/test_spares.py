"""plan-spares and suspects: the binomial and Poisson-binomial figures against scipy and a direct convolution, the
130-of-144 reproduction, the analytic answer inside simulate-availability's Monte Carlo interval, the commands on a
fleet with slices and faults, a planted noisy host, and bad options."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from scipy.stats import binom

from helpers import snapshot
from tpufleet import availability, spares
from tpufleet.spares import TPU_V4_RATES, ComponentRates


def convolve(ps):
    """The Poisson-binomial pmf by direct convolution, written independently of tpufleet.spares."""
    pmf = np.array([1.0])
    for p in ps:
        pmf = np.convolve(pmf, [1.0 - p, p])
    return pmf


def tail(ps, k):
    return float(convolve(ps)[k:].sum()) if k > 0 else 1.0


# ---- the figures ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, p, k", [(64, 0.99**16, 50), (144, 0.94, 130), (144, 0.8796, 120), (10, 0.5, 3)])
def test_binomial_tail_is_scipys(n, p, k):
    assert spares.at_least([p] * n, k) == float(binom.sf(k - 1, n, p))


def test_poisson_binomial_equals_a_direct_convolution():
    rng = np.random.default_rng(7)
    ps = list(rng.uniform(0.5, 1.0, 144))
    assert spares.poisson_binomial(ps) == pytest.approx(list(convolve(ps)), abs=1e-15)
    for k in (0, 100, 120, 140, 144, 145):
        assert spares.at_least(ps, k) == pytest.approx(tail(ps, k), abs=1e-13)


def test_spare_curve_alike_is_binomial_and_mixed_is_the_convolution():
    curve = spares.spare_curve([0.9] * 8, [0.9] * 5, 8, 1.0, 0.95)
    assert list(curve.probabilities) == [float(binom.sf(7, 8 + s, 0.9)) for s in range(6)]
    assert curve.spares == min(s for s in range(6) if binom.sf(7, 8 + s, 0.9) >= 0.95)
    own, cand = [0.9, 0.0, 0.95, 0.8], [0.99, 0.97, 0.9, 0.5]
    mixed = spares.spare_curve(own, cand, 4, 0.9, 0.8)
    expected = [0.9 * tail(own + cand[:s], 4) for s in range(5)]
    assert list(mixed.probabilities) == pytest.approx(expected, abs=1e-14)
    assert mixed.spares == next(s for s, p in enumerate(expected) if p >= 0.8)


def test_out_of_reach_names_the_fewest_spares_at_the_cap():
    curve = spares.spare_curve([0.9] * 4, [0.9] * 40, 4, 0.8, 0.95)  # the OCS term caps every count at 0.8
    assert curve.spares is None
    assert curve.probability == pytest.approx(0.8, rel=1e-9) and 0 < curve.best < 40


def test_cube_model_is_the_poisson_window_of_its_hosts_and_links():
    rates = ComponentRates(0.001, 0.0001, 0.0005, 12.0, 6.0, 3.0)
    expected = math.exp(-(16 * 0.001 * (7 + 0.5) + 96 * 0.0001 * (7 + 0.25)))
    assert spares.cube_healthy(rates, 7.0) == pytest.approx(expected, rel=1e-15)
    assert spares.cube_healthy(rates, 7.0, history=2) == pytest.approx(expected**3, rel=1e-12)
    assert spares.ocs_all_up(rates, 7.0) == pytest.approx(math.exp(-48 * 0.0005 * (7 + 0.125)), rel=1e-15)


# ---- the blog's 130 of 144 --------------------------------------------------------------------------------------
def test_blog_130_of_144_at_95_percent():
    assert spares.cubes_at_confidence([spares.BLOG_CUBE_AVAILABILITY] * 144, 0.95) == 130
    assert binom.sf(129, 144, 0.94) >= 0.95 > binom.sf(130, 144, 0.94)
    # the interval of per-cube availabilities that give 130, and the answer just outside it
    assert spares.cubes_at_confidence([0.9347] * 144, 0.95) == 130
    assert spares.cubes_at_confidence([0.9402] * 144, 0.95) == 130
    assert spares.cubes_at_confidence([0.9346] * 144, 0.95) == 129
    assert spares.cubes_at_confidence([0.9403] * 144, 0.95) == 131


def test_the_answer_moves_with_the_rate():
    ps = (0.90, 0.92, 0.94, 0.96, 0.98, 0.99)
    counts = [spares.cubes_at_confidence([p] * 144, 0.95) for p in ps]
    assert counts == [max(k for k in range(145) if binom.sf(k - 1, 144, p) >= 0.95) for p in ps]
    assert counts == [123, 127, 130, 134, 138, 140]


# ---- analytic vs Monte Carlo (simulate-availability's) ------------------------------------------------------------
@pytest.mark.parametrize("host_per_day", [0.0008, 0.002, 0.005])
def test_analytic_inside_the_monte_carlo_interval(host_per_day):
    rates = ComponentRates(host_per_day, 0.0, 0.0004, 8.0, 4.0, 2.0)  # no optical links: the MC draws hosts only
    horizon = 7.0
    p_host = math.exp(-host_per_day * (horizon + 8.0 / 24))
    q_ocs = math.exp(-0.0004 * (horizon + 2.0 / 24))
    p_cube = spares.cube_healthy(rates, horizon)
    assert p_cube == pytest.approx(p_host**16, rel=1e-12)
    k = round(64 * p_cube) - 2
    trials = 20000
    sims = availability.simulate([k], p_host, q_ocs, trials, seed=11, pod_cubes=64, static=False)
    ft = spares.at_least([p_cube] * 64, k)
    lo, hi = availability.wilson(sims["reconfigurable_ft"][0], trials)
    assert lo <= ft <= hi
    with_ocs = ft * spares.ocs_all_up(rates, horizon)
    lo, hi = availability.wilson(sims["reconfigurable"][0], trials)
    assert lo <= with_ocs <= hi


# ---- plan-spares through the CLI ----------------------------------------------------------------------------------
def _fault(state_dir, target, planned=False, cleared=False):
    from tpufleet.fleetstate import Change
    from tpufleet.ids import parse_target
    from tpufleet.state import Store

    with Store(state_dir).transaction(command="test fault") as tx:
        fault = tx.state.open_fault(parse_target(target), planned, "test", "2026-01-01T00:00:00Z")
        if cleared:
            tx.state.clear_fault(fault, "2026-01-02T00:00:00Z")
        tx.commit(Change(f"fault {fault.id} {target}"))


@pytest.fixture
def busy(fleet):
    """64 cubes: slice a (8x8x8 on c00-c07), two sub-cube slices sharing c11; host c03/5 failed (open), a drain
    on c20, an optical link down on c21, a cleared fault in c30's history."""
    cubes = ",".join(f"c{i:02d}" for i in range(8))
    for args in (
        ["allocate", "a", "--shape", "8x8x8", "--cubes", cubes],
        ["allocate", "d", "--shape", "2x2x4", "--cubes", "c11"],
        ["allocate", "e", "--shape", "2x2x4", "--cubes", "c11"],
    ):
        assert fleet(*args).code == 0
    _fault(fleet.state, "host:c03/5")
    _fault(fleet.state, "cube:c20", planned=True)
    _fault(fleet.state, "link:c21/x/3/out")
    _fault(fleet.state, "host:c30/1", cleared=True)
    return fleet


def test_plan_spares_on_a_fleet_with_slices_and_faults(busy):
    r = busy("plan-spares", "-o", "json")
    assert r.code == 0, r.err
    pod = r.json["pods"][0]
    p = spares.cube_healthy(TPU_V4_RATES, 7.0, up_now=True)  # the cubes up now: no failure before counts
    assert pod["p_cube"] == pytest.approx(p, rel=1e-12)
    assert pod["cubes_down_now"] == ["c03", "c20", "c21"]
    assert pod["cubes_with_history"] == {"c30": 1}
    assert pod["needed_cubes"] == 9 and pod["slices"] == ["a", "d", "e"]
    assert pod["ocs_all_up"] == 1.0  # every slice has fault-tolerant routing
    free = [f"c{i:02d}" for i in range(8, 64) if f"c{i:02d}" not in ("c11", "c20", "c21", "c30")] + ["c30"]
    assert pod["free_healthy_cubes"] == len(free) == 53
    own = [p] * 3 + [0.0] + [p] * 5  # c03 is down now
    cand = [p] * 52 + [p**2]
    expected = [tail(own + cand[:s], 9) for s in range(54)]
    want = next(s for s, v in enumerate(expected) if v >= 0.95)
    assert pod["spares"] == want == 4
    assert pod["probability"] == pytest.approx(expected[want], abs=1e-12)
    assert pod["hold_back"] == free[:want] == ["c08", "c09", "c10", "c12"]
    assert pod["healthy_cubes_at_confidence"] == spares.cubes_at_confidence([0.0] * 3 + [p] * 60 + [p**2], 0.95)
    table = busy("plan-spares")
    assert table.code == 0 and "c08,c09,c10,c12" in table.out


def test_plan_spares_for_chosen_slices_and_a_non_fault_tolerant_one(busy):
    assert busy("allocate", "c", "--shape", "4x4x4", "--cubes", "c40", "--no-fault-tolerant-routing").code == 0
    pod = busy("plan-spares", "--slices", "c", "--horizon", "1d", "-o", "json").json["pods"][0]
    p = spares.cube_healthy(TPU_V4_RATES, 1.0, up_now=True)
    q = spares.ocs_all_up(TPU_V4_RATES, 1.0, up_now=True)
    assert pod["needed_cubes"] == 1 and pod["ocs_all_up"] == pytest.approx(q)
    assert pod["curve"][0]["probability"] == pytest.approx(p * q)
    assert pod["curve"][1]["probability"] == pytest.approx((1 - (1 - p) ** 2) * q)


def test_plan_spares_fault_rates_file_overrides(busy, tmp_path):
    rates = tmp_path / "rates.yaml"
    rates.write_text("schema_version: 1\nhost_per_day: 0.002\n")
    pod = busy("plan-spares", "--fault-rates", str(rates), "-o", "json").json["pods"][0]
    assert pod["p_cube"] == pytest.approx(
        spares.cube_healthy(ComponentRates(0.002, 0.00005, 0.0004, 8, 4, 2), 7.0, up_now=True)
    )
    assert "rates.yaml" in pod["rates_source"]


def test_a_pod_without_running_slices_says_so(fleet):
    r = fleet("plan-spares")
    assert r.code == 0 and "no running slices" in r.out
    pod = fleet("plan-spares", "-o", "yaml")
    assert pod.code == 0 and "needed_cubes: 0" in pod.out


def test_the_model_text_gives_the_window_a_cube_up_now_is_charged_over(fleet):
    """`model` said failures count in [-repair, horizon]; a cube up now is charged over [0, horizon] only."""
    doc = fleet("plan-spares", "-o", "json").json
    rates = TPU_V4_RATES
    window = math.exp(-7 * (16 * rates.host_per_day + 96 * rates.link_per_day))
    assert doc["pods"][0]["p_cube"] == pytest.approx(window, rel=1e-12)
    assert "[0, horizon]" in doc["model"] and "-repair" not in doc["model"]


def test_plan_spares_on_a_144_cube_pod_in_process():
    from tpufleet.fleetstate import FleetState
    from tpufleet.model import Fleet, Pod
    from tpufleet.ops import spares as ops
    from tpufleet.state.siminputs import load_rates

    state = FleetState(Fleet((Pod("pod0", tuple(f"c{i:03d}" for i in range(144))),)))
    result = ops.plan(state, ops.RatesChoice(load_rates(None)), 0.95, 7.0).data["pods"][0]
    assert result["healthy_cubes_at_confidence"] == spares.cubes_at_confidence(
        [spares.cube_healthy(TPU_V4_RATES, 7, up_now=True)] * 144, 0.95
    )
    assert "no running slices" in result["note"]


# ---- suspects ----------------------------------------------------------------------------------------------------
def _stamp(days_ago):
    return (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def noisy(fleet):
    """host c05/3 failed four times in the last 30 days (and once long ago); three other hosts once each."""
    from tpufleet.fleetstate import Change
    from tpufleet.ids import parse_target
    from tpufleet.state import Store

    plan = [("host:c05/3", 1), ("chip:c05/2,2,0", 3), ("host:c05/3", 5), ("ici:c05/2,3,0/+x", 9), ("host:c05/3", 60)]
    plan += [("host:c10/0", 2), ("host:c20/7", 4), ("chip:c40/0,0,3", 6), ("cube:c50", 7)]
    with Store(fleet.state).transaction(command="test faults") as tx:
        for target, days in plan:
            fault = tx.state.open_fault(parse_target(target), False, "test", _stamp(days))
            tx.state.clear_fault(fault, _stamp(days - 0.5))
        tx.state.open_fault(parse_target("host:c06/0"), True, "drain", _stamp(1))  # planned: not counted
        tx.commit(Change("faults"))
    return fleet


def test_suspects_finds_the_planted_noisy_host(noisy):
    r = noisy("suspects", "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert d["faults_in_window"] == 8 and d["hosts"] == 1024 and d["cubes"] == 64
    found = {s["target"]: s for s in d["suspects"]}
    assert set(found) == {"host:c05/3", "cube:c05"}
    host = found["host:c05/3"]
    # chip c05/2,2,0 and ici c05/2,3,0/+x are on machine 3 too: 4 faults in the window; the other hosts 3 in all
    assert host["faults"] == 4 and host["expected"] == pytest.approx(3 / 1023)
    assert host["p_value"] == pytest.approx(float(binom.sf(3, 7, 1 / 1024)), rel=1e-12)  # 4 of the 7 host faults
    cube = found["cube:c05"]
    assert cube["faults"] == 4 and cube["p_value"] == pytest.approx(float(binom.sf(3, 8, 1 / 64)), rel=1e-12)
    assert host["quarantine"].startswith("tpufleet inject-fault host:c05/3 --planned --reason ")
    assert not host["quarantined"]
    table = noisy("suspects")
    assert table.code == 0 and "tpufleet inject-fault cube:c05 --planned" in table.out
    assert noisy("suspects", "--window", "90d", "-o", "json").json["suspects"][0]["faults"] == 5


def test_suspects_counts_the_journals_moved_faults(noisy):
    from tpufleet.ops import spares as ops
    from tpufleet.state import Store

    store = Store(noisy.state)
    moved = [{"id": "f900", "target": "host:c05/3", "planned": False, "opened": _stamp(2), "cleared": _stamp(1)}]
    now = datetime.now(UTC)
    d = ops.find_suspects(store.load(), [*store.moved_faults(), *moved], 30.0, 0.01, now).data
    host = next(s for s in d["suspects"] if s["target"] == "host:c05/3")
    assert host["faults"] == 5 and "f900" in host["fault_ids"]


def test_a_quiet_fleet_has_no_suspects(fleet):
    r = fleet("suspects")
    assert r.code == 0 and "no suspects" in r.out


def test_the_only_cube_of_a_fleet_is_no_suspect_for_want_of_a_rest_to_compare(cli):
    """A one-cube fleet: cube c00 has no rest of the fleet to compare with (it was flagged at p 0 against a rate of
    0); its hosts still have 15 others: host c00/5 holds 3 of the 4 host faults of 16 hosts."""
    assert cli("init", "--cubes-per-pod", "1").code == 0
    for target in ["host:c00/5"] * 3 + ["host:c00/1"]:
        assert cli("inject-fault", target).code == 0
        assert cli("clear-fault", target).code == 0
    r = cli("suspects", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["cubes"] == 1 and r.json["hosts"] == 16 and r.json["faults_in_window"] == 4
    assert [s["target"] for s in r.json["suspects"]] == ["host:c00/5"]
    host = r.json["suspects"][0]
    assert host["expected"] == pytest.approx(1 / 15, rel=1e-12)
    assert host["p_value"] == pytest.approx(float(binom.sf(2, 4, 1 / 16)), rel=1e-12)


@pytest.mark.parametrize(
    ("cubes_per_pod", "suspects"),
    [
        # two faults on one of two cubes: 1/4, no suspect; on one of 32 hosts: 1/1024, a suspect
        (2, {"host:c00/3": 32.0**-2}),
        # on one of 64 cubes and one of 1,024 hosts: both suspects
        (None, {"host:c00/3": 1024.0**-2, "cube:c00": 64.0**-2}),
    ],
)
def test_a_unit_with_every_fault_of_the_window_is_tested_on_the_chance_they_all_fell_on_it(
    cli, cubes_per_pod, suspects
):
    """The rest of the fleet had no fault: its rate of 0 made any count impossible, so the unit was flagged at p 0
    (with a quarantine of the cube) however few units there are; the p-value is now (1 / units) ** n."""
    assert cli("init", *(["--cubes-per-pod", str(cubes_per_pod)] if cubes_per_pod else [])).code == 0
    for _ in range(2):
        assert cli("inject-fault", "host:c00/3").code == 0
        assert cli("clear-fault", "host:c00/3").code == 0
    r = cli("suspects", "-o", "json")
    assert r.code == 0, r.err
    got = {s["target"]: s for s in r.json["suspects"]}
    assert set(got) == set(suspects)
    for target, p in suspects.items():
        assert got[target]["faults"] == 2 and got[target]["expected"] == 0.0
        assert got[target]["p_value"] == pytest.approx(p, rel=1e-12)


# ---- bad options -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, named",
    [
        (["plan-spares", "--confidence", "1.5"], "--confidence: '1.5'"),
        (["plan-spares", "--confidence", "0"], "--confidence: '0'"),
        (["plan-spares", "--horizon", "soon"], "--horizon: 'soon'"),
        (["plan-spares", "--horizon", "99999999w"], "--horizon: '99999999w' is longer than this tool counts"),
        (["plan-spares", "--pod", "pod9"], "--pod: unknown pod 'pod9'"),
        (["suspects", "--window", "0d"], "--window: '0d'"),
        (["suspects", "--window", "2026-01-01"], "--window: '2026-01-01'"),
        (["suspects", "--p-value", "2"], "--p-value: '2'"),
    ],
)
def test_bad_options_exit_2_naming_option_and_value(fleet, args, named):
    r = fleet(*args)
    assert r.code == 2
    assert named in r.err


def test_an_unknown_slice_is_refused_as_every_command_refuses_it(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    before = snapshot(fleet.state)
    r = fleet("plan-spares", "--slices", "a,nope")
    assert r.code == 1 and r.err.strip() == fleet("release", "nope").err.strip()
    assert "unknown slice or job 'nope' (slices: a; jobs: none)" in r.err
    assert snapshot(fleet.state) == before


def test_a_slice_named_twice_is_bad_input(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    r = fleet("plan-spares", "--slices", "a,a")
    assert r.code == 2 and "bad option --slices: 'a' is given twice" in r.err


def test_out_of_reach_says_whether_the_pod_ran_out_of_cubes(cli):
    assert cli("init", "--cubes-per-pod", "8").code == 0
    assert cli("allocate", "a", "--shape", "4x4x24").code == 0  # 2 cubes left free
    (pod,) = cli("plan-spares", "--confidence", "0.999999", "-o", "json").json["pods"]
    assert pod["best_spares"] == pod["free_healthy_cubes"] == 2
    assert "the pod has no more" in pod["note"] and "more do not help" not in pod["note"]


def test_an_evicted_slice_needs_no_spares(fleet):
    """An evicted slice without fault-tolerant routing brought in the OCS term (0 while its OCS is down) and made
    the whole pod's answer null; it runs on none of its cubes."""
    for args in (
        ["allocate", "a", "--shape", "4x4x4"],
        ["plan-xconnect", "a", "--apply"],
        ["allocate", "b", "--shape", "4x4x4", "--no-fault-tolerant-routing"],
        ["plan-xconnect", "b", "--apply"],
        ["inject-fault", "ocs:pod0/x/5"],
    ):
        assert fleet(*args).code == 0
    states = {s["name"]: s["state"] for s in fleet("show", "slices", "-o", "json").json}
    assert states == {"a": "degraded", "b": "evicted"}
    pod = fleet("plan-spares", "-o", "json").json["pods"][0]
    assert pod["slices"] == ["a"] and pod["ocs_all_up"] == 1.0 and pod["spares"] is not None
    named = fleet("plan-spares", "--slices", "b", "-o", "json").json["pods"][0]
    assert named["slices"] == ["b"] and named["spares"] is None  # asked for by name: judged as before


def test_an_evicted_slice_named_counts_the_cubes_of_its_reserved_move(fleet):
    """Named, an evicted slice runs next on its reserved move (c08 for the failed c03), not on its old cubes: the
    move's cube is no spare to hold back, and the broken one is not one of its own."""
    cubes = ",".join(f"c{i:02d}" for i in range(8))
    assert fleet("allocate", "a", "--shape", "8x8x8", "--cubes", cubes).code == 0
    assert fleet("inject-fault", "host:c03/5").code == 0
    (moved,) = fleet("show", "slices", "-o", "json").json
    assert moved["state"] == "evicted" and sorted(moved["proposal"]["cubes"]) == [
        *cubes.replace("c03,", "").split(","),
        "c08",
    ]
    pod = fleet("plan-spares", "--slices", "a", "-o", "json").json["pods"][0]
    p = spares.cube_healthy(TPU_V4_RATES, 7.0, up_now=True)
    expected = [float(binom.sf(7, 8 + s, p)) for s in range(8)]  # 8 healthy cubes of its move, s spares
    want = next(s for s, v in enumerate(expected) if v >= 0.95)
    assert (pod["needed_cubes"], pod["free_healthy_cubes"]) == (8, 55)
    assert pod["spares"] == want == 3
    assert pod["probability"] == pytest.approx(expected[want], rel=1e-12)
    assert pod["hold_back"] == ["c09", "c10", "c11"]


@pytest.mark.parametrize("command", ["plan-spares", "capacity"])
def test_a_confidence_next_to_1_is_shown_as_given(fleet, command):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    r = fleet(command, "--confidence", "0.9999999999999999")
    assert r.code == 0, r.err
    said = "confidence 0.9999999999999999, horizon" if command == "plan-spares" else "(>= 0.9999999999999999; "
    assert said in r.out
    assert "confidence 0.95, horizon" in fleet("plan-spares").out


def test_a_jobs_name_stands_for_its_slices(fleet):
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    by_job = fleet("plan-spares", "--slices", "j,a", "-o", "json")
    assert by_job.code == 0, by_job.err
    by_slice = fleet("plan-spares", "--slices", "j-0,j-1,a", "-o", "json")
    assert by_job.json == by_slice.json and by_job.json["pods"][0]["slices"] == ["j-0", "j-1", "a"]
    r = fleet("plan-spares", "--slices", "j,j-1")
    assert r.code == 2 and "bad option --slices: slice 'j-1' given twice (once as a slice of job 'j')" in r.err


# ---- --fault-rates on pods of a generation --------------------------------------------------------------------
@pytest.fixture
def unlike_v4(cli, monkeypatch):
    """A TPU7x pod whose profile fails hosts at 0.003 a day, not TPU v4's 0.0008 (the shipped profiles copy v4's
    rates, which would hide where a rate came from)."""
    from dataclasses import replace

    from tpufleet.state import generations

    assert cli("init", "--generation", "tpu7x").code == 0
    real = generations.shipped("tpu7x")
    changed = replace(real, faults=replace(real.faults, host_per_day=0.003))
    monkeypatch.setattr(generations, "shipped", lambda name: changed if name == "tpu7x" else real)
    return changed


def _profile_p_cube(gen, link_per_day):
    f = gen.faults
    rates = ComponentRates(
        f.host_per_day, link_per_day, f.ocs_per_day, f.repair_hours.host, f.repair_hours.link, f.repair_hours.ocs
    )
    return spares.cube_healthy(rates, 7.0, gen.hosts_per_cube, 96, up_now=True)


def test_fault_rates_fill_the_missing_keys_from_the_pods_generation(cli, unlike_v4, tmp_path):
    rates = tmp_path / "rates.yaml"
    rates.write_text("schema_version: 1\nlink_per_day: 0.0001\n")
    for given, link in ((str(rates), 0.0001), ("shipped", unlike_v4.faults.link_per_day)):
        pod = cli("plan-spares", "--fault-rates", given, "-o", "json").json["pods"][0]
        assert pod["p_cube"] == pytest.approx(_profile_p_cube(unlike_v4, link))
        assert pod["rates_source"] == f"fault rates ({given}, defaults of the tpu7x profile)"
        r = cli("capacity", "--confidence", "0.95", "--fault-rates", given, "-o", "json")
        assert r.json["pods"][0]["expected_failures"]["rates_source"] == pod["rates_source"]


def test_fault_rates_shipped_on_the_built_in_pod_is_the_shipped_file(busy):
    pod = busy("plan-spares", "--fault-rates", "shipped", "-o", "json").json["pods"][0]
    assert pod["rates_source"] == "fault rates (shipped)"
    assert pod["p_cube"] == pytest.approx(spares.cube_healthy(TPU_V4_RATES, 7.0, up_now=True))


def test_a_probability_below_one_is_not_shown_as_one(fleet):
    """At --confidence 0.99999999 the table said P(at spares) 1.0000 (certain) for 0.9999999984: it now gives the
    digits that show the confidence is met and 1 is not reached."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    args = ("plan-spares", "--confidence", "0.99999999", "--horizon", "1h")
    pod = fleet(*args, "-o", "json").json["pods"][0]
    assert 0.99999999 <= pod["probability"] < 1
    r = fleet(*args)
    assert r.code == 0, r.err
    row = r.out.splitlines()[3].split()
    shown = float(row[6])
    assert row[6] != "1.0000" and 0.99999999 <= shown < 1 and shown == pytest.approx(pod["probability"], abs=1e-10)


def test_capacitys_expected_case_does_not_round_its_probability_to_one(fleet):
    """`capacity --confidence 0.99999 --horizon 1h` said "with probability 1.0000 (>= 0.99999)": certainty."""
    import re

    r = fleet("capacity", "--confidence", "0.99999", "--horizon", "1h")
    assert r.code == 0, r.err
    said = re.search(r"with probability (\S+) \(>= 0\.99999;", r.out)
    assert said is not None, r.out
    assert said[1] != "1.0000" and 0.99999 <= float(said[1]) < 1


def test_suspects_and_plan_spares_write_their_days_in_digits(fleet):
    """`suspects --window 999999w` said `in the last 6.99999e+06 days`; the days are now grouped digits, a fraction
    of a day to three significant digits."""
    r = fleet("suspects", "--window", "999999w")
    assert r.code == 0 and r.out.startswith("0 unplanned faults in the last 6,999,993 days on "), r.out
    assert fleet("suspects", "--window", "30m").out.startswith("0 unplanned faults in the last 0.0208 days on ")
    assert fleet("plan-spares", "--horizon", "36h").out.startswith("confidence 0.95, horizon 1.5 days\n")


def test_suspects_counts_one_of_each_in_the_singular(cli, tmp_path):
    """`1 unplanned faults ... 1 cubes` on a one-cube fleet."""
    state = tmp_path / "one"
    assert cli("--state", state, "init", "--cubes-per-pod", "1", state=False).code == 0
    assert cli("--state", state, "inject-fault", "host:c00/1", state=False).code == 0
    r = cli("--state", state, "suspects", "--window", "1d", state=False)
    assert r.code == 0 and r.out.startswith("1 unplanned fault in the last 1 day on 16 hosts and 1 cube;"), r.out


def test_a_degraded_cube_is_held_back_after_the_healthy_ones(reserved):
    """The reservation reports c58 DEGRADED (2 of its 16 hosts): it still serves, but among free cubes of equal odds
    plan-spares held it back by its place in the pod (c55-c66), as a cube to move a displaced slice onto, while
    healthy free cubes were left over. It comes after them now; the figures are those of the same odds."""
    assert reserved("allocate", "train", "--shape", "12x12x24").code == 0  # c00-c54 without c40
    pod = reserved("plan-spares", "-o", "json").json["pods"][0]
    assert pod["spares"] == 12 and pod["free_healthy_cubes"] == 88
    assert "c58" not in pod["hold_back"] and "c121" not in pod["hold_back"]
    assert pod["hold_back"] == ["c55", "c56", "c57", *(f"c{n}" for n in range(59, 68))]
    assert "c55,c56,c57,c59," in reserved("plan-spares").out


def test_a_jobs_joint_figure_leaves_out_the_other_slices_of_its_pods(cli):
    """A 1-cube slice without fault-tolerant routing in one of a job's pods (its OCS term 0.874) made the
    fault-tolerant job across two pods "unreachable at any spares" (0.8496), though `--slices JOB` reaches it."""
    assert cli("init", "--pods", "2").code == 0
    assert cli("allocate", "j", "--shape", "8x8x16", "--slices", "2", "--spread").code == 0
    alone = cli("plan-spares", "--slices", "j", "-o", "json").json["jobs"][0]
    assert cli("allocate", "nf", "--shape", "4x4x4", "--no-fault-tolerant-routing").code == 0
    d = cli("plan-spares", "-o", "json").json
    (job,) = d["jobs"]
    assert job["spares_for_job"] == alone["spares_for_job"] == {"pod0": 6, "pod1": 5}
    assert job["probability_at_spares_for_job"] == alone["probability_at_spares_for_job"] >= 0.95
    pod0 = d["pods"][0]
    assert pod0["probability"] < 0.875 and len(pod0["hold_back"]) > 6  # the pod holds more, for nf
    assert job["probability"] >= alone["probability"] and not job["below_confidence"] and job["hold_back_for_job"] == []
