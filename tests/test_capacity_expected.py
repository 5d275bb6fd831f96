"""`tpufleet capacity --confidence P --horizon H` (the expected case: K = the smallest number of cube failures
not exceeded with probability P, each cube failing with plan-spares' probability) against an independent
convolution and scipy's binomial, its verdicts equal to `--after K`; and every verdict on a 144-cube TPU7x pod
with random faults and slices equal to the allocate use case on a copy of the state (now, and after each single
cube failure for a sample of shapes)."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from helpers import one_line, snapshot

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


@pytest.fixture
def reservation(cli):
    """The TPU7x fixture reservation (c40 and c99 drained) with a 12x12x24 and a 16x16x16 running."""
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", FIXTURE, "--apply").code == 0
    assert cli("allocate", "a", "--shape", "12x12x24").code == 0
    assert cli("allocate", "b", "--shape", "16x16x16").code == 0
    return cli


def _smallest_k(fail: list[float], confidence: float) -> tuple[int, float]:
    """Independent: the pmf of the number of failures as a product of polynomials (1 - q + q x), then the first
    K whose cumulative probability reaches the confidence."""
    pmf = np.array([1.0])
    for q in fail:
        pmf = np.convolve(pmf, [1.0 - q, q])
    cdf = np.cumsum(pmf)
    k = int(np.argmax(cdf >= confidence))
    return k, float(cdf[k])


@pytest.mark.parametrize(("confidence", "horizon", "days"), [(0.95, "7d", 7.0), (0.5, "7d", 7.0), (0.99, "2w", 14.0)])
def test_expected_failures_equal_scipy_and_verdicts_equal_after_k(reservation, confidence, horizon, days):
    spares = reservation("plan-spares", "--horizon", horizon, "-o", "json").json["pods"][0]
    assert spares["cubes_down_now"] == ["c40", "c99"] and spares["cubes_with_history"] == {}
    p = spares["p_cube"]
    r = reservation("capacity", "--confidence", confidence, "--horizon", horizon, "-o", "json")
    assert r.code == 0, r.err
    (pod,) = r.json["pods"]
    e = pod["expected_failures"]
    k = e["failures"]
    assert (r.json["confidence"], r.json["horizon_days"], r.json["after"], e["cubes_up"]) == (
        confidence,
        days,
        None,
        142,
    )
    assert binom.cdf(k, 142, 1.0 - p) >= confidence > binom.cdf(k - 1, 142, 1.0 - p)  # the smallest such K
    assert e["probability"] == pytest.approx(binom.cdf(k, 142, 1.0 - p), rel=1e-9)
    assert (k, e["probability"]) == pytest.approx(_smallest_k([1.0 - p] * 142, confidence), rel=1e-9)
    worst = reservation("capacity", "--after", k, "-o", "json").json["pods"][0]
    assert pod["after"] == worst["after"] == k
    assert pod["verdicts"] == worst["verdicts"]
    assert (pod["fit_after"], pod["largest_after"]) == (worst["fit_after"], worst["largest_after"])


def test_no_cube_known_up_fails_over_a_minute(reservation):
    """A cube up now cannot be under repair now: over a minute none fails at 95 %, and plan-spares counts every up
    cube healthy (before, a failure within a repair time before now still counted: 1 failure at 95 %). A horizon
    of no time is refused (exit 2), as `suspects --window 0d` is: it would answer "none" whatever the fleet."""
    r = reservation("capacity", "--confidence", "0.95", "--horizon", "1m", "-o", "json")
    assert r.code == 0, r.err
    e = r.json["pods"][0]["expected_failures"]
    assert (e["failures"], e["cubes_up"]) == (0, 142) and e["probability"] > 0.99
    spares = reservation("plan-spares", "--horizon", "1m", "-o", "json").json["pods"][0]
    assert spares["p_cube"] > 0.9999 and spares["expected_healthy"] == pytest.approx(142, abs=0.01)


def test_cubes_with_a_fault_history_make_it_poisson_binomial(reservation):
    for target in ("host:c130/2", "host:c130/5", "host:c131/1", "chip:c141/1,1,1"):
        assert reservation("inject-fault", target).code == 0
        assert reservation("clear-fault", target).code == 0
    spares = reservation("plan-spares", "-o", "json").json["pods"][0]
    history = spares["cubes_with_history"]
    assert history == {"c130": 2, "c131": 1, "c141": 1}
    p = spares["p_cube"]
    fail = [1.0 - p ** (1 + history.get(f"c{i:02d}", 0)) for i in range(144) if f"c{i:02d}" not in ("c40", "c99")]
    before = snapshot(reservation.state)
    r = reservation("capacity", "--confidence", "0.95", "-o", "json")
    assert r.code == 0, r.err
    assert snapshot(reservation.state) == before
    e = r.json["pods"][0]["expected_failures"]
    k, probability = _smallest_k(fail, 0.95)
    assert (e["failures"], e["probability"]) == (k, pytest.approx(probability, rel=1e-9))
    alike = binom.cdf(e["failures"], 142, 1.0 - p)
    assert alike > e["probability"]  # less reliable cubes: the same K is less certain
    table = reservation("capacity", "--confidence", "0.95")
    assert table.code == 0 and f"at most {k} of 142 cubes fail over 7 days" in table.out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--confidence", "1.5"), "--confidence"),
        (("--confidence", "0"), "--confidence"),
        (("--confidence", "0.9", "--after", "2"), "--after"),
        (("--confidence", "0.9", "--horizon", "soon"), "--horizon"),
        (("--horizon", "2w"), "--horizon"),
        (("--horizon", "7d", "--after", "2"), "--horizon"),  # the default written out still needs --confidence
        (("--confidence", "0.9", "--fault-rates", "nope.yaml"), "nope.yaml"),
    ],
)
def test_bad_expected_case_options_exit_2(reservation, args, said):
    assert said in one_line(reservation("capacity", *args))


def _busy_144(cli, seed: int) -> None:
    """A 144-cube TPU7x pod with random cube, host and OCS faults and random slices (some refused: fine)."""
    rng = random.Random(seed)
    assert cli("init", "--generation", "tpu7x").code == 0
    for _ in range(10):
        cube = f"c{rng.randrange(144)}"
        target = rng.choice([f"cube:{cube}", f"host:{cube}/{rng.randrange(16)}", f"ocs:pod0/x/{rng.randrange(16)}"])
        cli("inject-fault", target)
    shapes = ["2x2x1", "2x2x2", "2x4x4", "4x4x4", "4x4x8", "8x8x8", "8x8x16", "12x16x16", "16x16x16"]
    for i in range(14):
        cli("allocate", f"s{i}", "--shape", rng.choice(shapes))


def _fits(state, shape: str, twisted: bool, fault: str | None = None) -> bool:
    """The allocate use case on a copy of the state (after `fault` through the inject-fault use case)."""
    from tpufleet.errors import BadInput, Refused
    from tpufleet.ids import parse_target
    from tpufleet.ops import faults, slices
    from tpufleet.shapes import ShapeText

    trial = copy.deepcopy(state)
    if fault is not None:
        faults.inject(trial, [faults.FaultRequest(parse_target(fault))], "2026-07-01T00:00:00Z")
    try:
        slices.allocate(trial, "probe", ShapeText(shape, twisted), "2026-07-01T00:00:00Z")
    except (Refused, BadInput):
        return False
    return True


def test_verdicts_on_a_144_cube_tpu7x_pod_equal_the_use_case_on_copies(cli):
    from tpufleet.state import Store

    _busy_144(cli, 30)
    r = cli("capacity", "--after", "1", "-o", "json")
    assert r.code == 0, r.err
    (pod,) = r.json["pods"]
    state = Store(cli.state).load()
    assert len(state.fleet.cubes) == 144 and len(state.slices) >= 8 and len(state.open_faults()) >= 8
    assert pod["shapes"] > 400 and 0 < pod["fit_now"] < pod["shapes"]
    for v in pod["verdicts"]:
        assert v["fits_now"] == _fits(state, v["shape"], v["twisted"]), v
    # after one failure, on a sample: the two sub-cube shapes, the tori at the edge of the free cubes, a few more
    free = pod["free_healthy_cubes"]
    fitting = [v for v in pod["verdicts"] if v["fits_now"]]
    edge = [v for v in fitting if v["cubes"] > 1 and v["cubes"] >= free - 1]
    sample = fitting[:2] + edge[:2] + edge[-2:] + random.Random(30).sample(fitting, 3)
    health = state.health()
    cubes = [c for c in state.fleet.cubes if health.cube_ok(c)]
    used = state.machine_usage()
    free_cubes = [c for c in cubes if c not in used]
    others = random.Random(31).sample([c for c in cubes if c in used], 6)
    for v in sample:
        after = all(_fits(state, v["shape"], v["twisted"], f"cube:{c}") for c in free_cubes + others)
        assert v["fits_after"] == after, v
    assert any(v["fits_after"] for v in sample) and any(not v["fits_after"] for v in sample)
