"""`plan-spares`, `capacity`, `suspects` and `simulate-availability` through the CLI against figures worked out
here from the README's description alone (the rates of the shipped fault-rate file, scipy, a direct convolution, a
brute force over cube failures), never from tpufleet's own functions."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

# tpufleet/data/fault-rates.yaml, per component per day
HOST, LINK, OCS = 0.0008, 0.00005, 0.0004
HOSTS_PER_CUBE, LINKS_PER_CUBE, OCS_PER_POD = 16, 96, 48
CUBES = [f"c{i:02d}" for i in range(8)]


def p_cube(days: float, past_faults: int = 0) -> float:
    """A cube up now stays fully healthy over the horizon: no host and no optical link fails in it; each past
    unplanned fault multiplies its rate by 1 + h."""
    return math.exp(-days * (HOSTS_PER_CUBE * HOST + LINKS_PER_CUBE * LINK) * (1 + past_faults))


def pmf(ps: list[float]) -> np.ndarray:
    out = np.array([1.0])
    for p in ps:
        out = np.convolve(out, [1.0 - p, p])
    return out


def at_least(ps: list[float], k: int) -> float:
    return float(pmf(ps)[k:].sum())


@pytest.fixture
def eight(cli):
    """8 cubes: a (4x4x8, fault-tolerant) on c00-c01, b (4x4x4, no fault-tolerant routing) on c02; two cleared host
    faults in c05's history and a cleared optical link in c06's; host c07/2 down now."""
    assert cli("init", "--cubes-per-pod", "8").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert cli("allocate", "b", "--shape", "4x4x4", "--cubes", "c02", "--no-fault-tolerant-routing").code == 0
    for target in ("host:c05/3", "host:c05/4", "link:c06/x/1/out"):
        assert cli("inject-fault", target).code == 0
        assert cli("clear-fault", target).code == 0
    assert cli("inject-fault", "host:c07/2").code == 0
    return cli


def _probabilities(days: float) -> dict[str, float]:
    history = {"c05": 2, "c06": 1}
    return {c: 0.0 if c == "c07" else p_cube(days, history.get(c, 0)) for c in CUBES}


@pytest.mark.parametrize("days, horizon", [(7.0, "7d"), (0.5, "12h")])
def test_plan_spares_curve_is_the_convolution_times_every_ocs_up(eight, days, horizon):
    pod = eight("plan-spares", "--horizon", horizon, "-o", "json").json["pods"][0]
    p = _probabilities(days)
    ocs = math.exp(-days * OCS_PER_POD * OCS)
    assert pod["ocs_all_up"] == pytest.approx(ocs, rel=1e-12)  # b has no fault-tolerant routing
    assert pod["cubes_with_history"] == {"c05": 2, "c06": 1} and pod["cubes_down_now"] == ["c07"]
    assert pod["expected_healthy"] == pytest.approx(sum(p.values()), rel=1e-12)
    everyone = list(p.values())
    assert pod["healthy_cubes_at_confidence"] == max(k for k in range(9) if at_least(everyone, k) >= 0.95)
    free = sorted(["c03", "c04", "c05", "c06"], key=lambda c: -p[c])  # most reliable first
    own = [p["c00"], p["c01"], p["c02"]]
    want = [at_least(own + [p[c] for c in free[:s]], 3) * ocs for s in range(5)]
    got = [row["probability"] for row in pod["curve"]]
    assert got == pytest.approx(want[: len(got)], rel=1e-12)
    reached = [s for s, v in enumerate(want) if v >= 0.95]
    assert pod["spares"] == (reached[0] if reached else None)
    if pod["spares"] is not None:
        assert pod["hold_back"] == free[: pod["spares"]]
    else:
        assert pod["hold_back"] == free and pod["probability"] == pytest.approx(want[-1], rel=1e-12)


@pytest.mark.parametrize("days, horizon, confidence", [(7.0, "7d", 0.95), (1.0, "1d", 0.95), (30.0, "30d", 0.5)])
def test_capacity_expected_failures_are_the_poisson_binomial_quantile(eight, days, horizon, confidence):
    r = eight("capacity", "--confidence", str(confidence), "--horizon", horizon, "-o", "json")
    assert r.code == 0, r.err
    pod = r.json["pods"][0]
    fail = [1.0 - v for c, v in _probabilities(days).items() if c != "c07"]  # every cube up now
    cdf = np.cumsum(pmf(fail))
    k = int(np.argmax(cdf >= confidence))
    assert pod["after"] == k and pod["expected_failures"]["failures"] == k
    assert pod["expected_failures"]["cubes_up"] == 7
    assert pod["expected_failures"]["probability"] == pytest.approx(cdf[k], rel=1e-12)
    assert k == 0 or cdf[k - 1] < confidence


def _verdicts(run, after: int) -> dict[tuple[str, bool], tuple[bool, bool]]:
    r = run("capacity", "--after", str(after), "-o", "json")
    assert r.code == 0, r.err
    return {(v["shape"], v["twisted"]): (v["fits_now"], v["fits_after"]) for v in r.json["pods"][0]["verdicts"]}


def test_capacity_after_k_is_every_k_cube_failure_tried(cli, tmp_path):
    """Sub-cube slices sharing cubes, a host down, an optical link down: a shape fits after K failures exactly when
    it fits now on every copy of the fleet with K of its cubes failed (K = 1, 2, 3)."""
    assert cli("init", "--cubes-per-pod", "8").code == 0
    for args in (
        ("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01"),
        ("allocate", "d", "--shape", "2x2x4", "--cubes", "c03"),
        ("allocate", "e", "--shape", "2x4x4", "--cubes", "c04"),
        ("inject-fault", "host:c05/2"),
        ("inject-fault", "link:c06/x/1/out"),
    ):
        assert cli(*args).code == 0
    now = {shape: fits for shape, (fits, _) in _verdicts(cli, 0).items()}
    brute = {k: dict(now) for k in (1, 2, 3)}
    copy = tmp_path / "copy"
    for k in brute:
        for failed in itertools.combinations(CUBES, k):
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(cli.state, copy)
            run = type(cli)(cli.capsys, copy)
            faults = tmp_path / "faults.json"
            faults.write_text(json.dumps([{"target": f"cube:{c}"} for c in failed]))
            assert run("inject-fault", "--from", faults).code == 0
            for shape, fits in _verdicts(run, 0).items():
                brute[k][shape] = brute[k][shape] and fits[0]
    for k, want in brute.items():
        assert {shape: after for shape, (_, after) in _verdicts(cli, k).items()} == want
    assert sum(brute[1].values()) > sum(brute[3].values()) > 0  # the failures do cost shapes, not every one


def test_suspects_p_values_are_scipys_binomial_given_the_fleets_count(cli):
    assert cli("init", "--cubes-per-pod", "8").code == 0
    plan = ["host:c02/5"] * 3 + ["host:c04/1", "host:c04/2", "host:c04/7", "cube:c04", "link:c04/y/2/in"]
    plan += ["chip:c01/0,0,0", "host:c06/3", "ocs:pod0/x/1"]
    for target in plan:
        assert cli("inject-fault", target).code == 0
        assert cli("clear-fault", target).code == 0
    assert cli("inject-fault", "host:c03/3", "--planned").code == 0  # planned: not counted
    assert cli("inject-fault", "host:c07/0").code == 0  # open: counted
    d = cli("suspects", "--window", "30d", "--p-value", "0.01", "-o", "json").json
    assert d["faults_in_window"] == 12 and d["hosts"] == 128 and d["cubes"] == 8
    # host faults: c02/5 x3; c04/1, c04/2, c04/7, c01/0 (its chip), c06/3, c07/0 once each
    # cube faults: c02 3, c04 5 (three hosts, the cube, an optical link), c01, c06, c07 1 each; the OCS none
    want = {  # the chance that n of the kind's 9 host (11 cube) faults fall on one of 128 hosts (8 cubes)
        "host:c02/5": (3, 6 / 127, float(stats.binom.sf(2, 9, 1 / 128))),
        "cube:c04": (5, 6 / 7, float(stats.binom.sf(4, 11, 1 / 8))),
    }
    got = {s["target"]: (s["faults"], s["expected"], s["p_value"]) for s in d["suspects"]}
    assert set(got) == set(want)
    for target, (n, expected, p) in want.items():
        assert got[target][0] == n
        assert got[target][1:] == pytest.approx((expected, p), rel=1e-12)
    assert stats.binom.sf(2, 11, 1 / 8) > 0.01  # cube c02, 3 faults, is not flagged


def test_a_fault_elsewhere_never_makes_a_unit_more_suspect(cli):
    """Two faults on cube c03 of 8, none elsewhere: p = (1/8)^2 = 0.0156. One fault on c05 then made it 0.0093 (a
    Poisson test against the rest's rate, 1/7), a suspect at 0.01 for a fault on another cube; given the fleet's
    count the chance of 2 of 3 faults on one cube is 0.043, and it only rises with more faults elsewhere."""
    assert cli("init", "--cubes-per-pod", "8").code == 0
    values = []
    for target in ("host:c03/1", "host:c03/1", "host:c05/2", "host:c06/2"):
        assert cli("inject-fault", target).code == 0 and cli("clear-fault", target).code == 0
        d = cli("suspects", "--p-value", "0.999999", "-o", "json").json
        values.append(next((s["p_value"] for s in d["suspects"] if s["target"] == "cube:c03"), None))
    assert values[0] is None  # one fault: never a suspect
    flagged_after = [v for v in values[1:] if v is not None]  # a suspect from the second fault on
    assert flagged_after == pytest.approx(
        [1 / 64, float(stats.binom.sf(1, 3, 1 / 8)), float(stats.binom.sf(1, 4, 1 / 8))]
    )
    assert flagged_after[0] < flagged_after[1] < flagged_after[2]
    flagged = [s["target"] for s in cli("suspects", "-o", "json").json["suspects"]]
    assert flagged == ["host:c03/1"]  # at 0.01 the host is (2 of 4 faults on one of 128), the cube is not


def _clopper_pearson(hits: int, n: int, alpha: float) -> tuple[float, float]:
    lo = float(stats.beta.ppf(alpha / 2, hits, n - hits + 1)) if hits > 0 else 0.0
    hi = float(stats.beta.ppf(1 - alpha / 2, hits + 1, n - hits)) if hits < n else 1.0
    return lo, hi


@pytest.mark.parametrize("args", [("--host-availability", "0.99"), ("--fault-rates", "shipped")])
def test_simulate_availability_means_against_the_closed_form(cli, args):
    """reconfigurable = P(at least k of 64 cubes have all 16 hosts up) x q^48, the FT variant without q^48; the
    Monte Carlo counts lie within a 99.99% Clopper-Pearson interval of them for the trials run (24 counts: all
    inside with probability above 0.997), the whole pod's static figure is p^1024."""
    trials = 2000
    r = cli("simulate-availability", *args, "--trials", str(trials), "--seed", "7", "-o", "json", state=False)
    assert r.code == 0, r.err
    d = r.json
    p, q = d["host_availability"], d["ocs_availability"]
    if args[0] == "--fault-rates":  # steady state MTBF / (MTBF + MTTR): 8 h to repair a host, 2 h an OCS
        assert (p, q) == pytest.approx((1 / HOST / (1 / HOST + 8 / 24), 1 / OCS / (1 / OCS + 2 / 24)), rel=1e-12)
    up = p**HOSTS_PER_CUBE
    for row in d["results"]:
        ft = float(stats.binom.sf(row["cubes"] - 1, 64, up))
        assert row["reconfigurable_ft"] == pytest.approx(ft, rel=1e-12, abs=1e-15)
        assert row["reconfigurable"] == pytest.approx(ft * q**OCS_PER_POD, rel=1e-12, abs=1e-15)
        for key, exact in (("reconfigurable_mc", ft * q**OCS_PER_POD), ("reconfigurable_ft_mc", ft)):
            hits = round(row[key] * trials)
            assert row[key] == hits / trials
            lo, hi = _clopper_pearson(hits, trials, 1e-4)
            assert lo <= exact <= hi, (row["cubes"], key, row[key], exact)
        if row["cubes"] > 48:  # only the whole pod holds it: every host up
            assert row["static_method"] == "exact"
            assert row["static"] == pytest.approx(p ** (64 * HOSTS_PER_CUBE), rel=1e-12)


def test_edges_are_bad_input_not_a_crash(eight, tmp_path: Path):
    for args in (
        ("plan-spares", "--horizon", "0d"),
        ("plan-spares", "--confidence", "1.0"),
        ("capacity", "--confidence", "1.0"),
        ("capacity", "--confidence", "0.9", "--horizon", "0d"),
        ("suspects", "--window", "0d"),
        ("suspects", "--p-value", "1"),
    ):
        r = eight(*args, "-o", "json")
        assert r.code == 2 and "error" in json.loads(r.err), args
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"target": f"cube:{c}"} for c in CUBES]))
    assert eight("inject-fault", "--from", faults).code == 0  # the whole pod down: every slice evicted
    spare = eight("plan-spares", "--slices", "a,b", "-o", "json")
    assert spare.code == 0 and spare.json["pods"][0]["probability"] == 0.0
    expected = eight("capacity", "--confidence", "0.95", "-o", "json")
    assert expected.code == 0 and expected.json["pods"][0]["expected_failures"]["cubes_up"] == 0
    assert expected.json["pods"][0]["fit_now"] == 0
