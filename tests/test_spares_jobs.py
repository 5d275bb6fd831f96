"""plan-spares of a multislice job across pods: each pod's figure is for that pod alone; the job keeps its
placement only when every one of its pods does, the product of their figures (pods independent in the model)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture
def spread(cli):
    assert cli("init", "--pods", "2").code == 0
    assert cli("allocate", "j2", "--shape", "4x4x8", "--slices", "2", "--spread").code == 0
    return cli


def test_a_job_across_pods_gets_the_product_of_its_pods_figures(spread):
    """Each pod reached 0.95 (0.9628) and nothing said the job as a whole is at about 0.927."""
    doc = spread("plan-spares", "--confidence", "0.95", "-o", "json").json
    figures = [p["probability"] for p in doc["pods"]]
    assert all(f > 0.95 for f in figures)  # the per-pod figures stay what the per-pod model gives
    [job] = doc["jobs"]
    assert job["job"] == "j2" and job["pods"] == ["pod0", "pod1"]
    assert job["probability"] == pytest.approx(math.prod(figures)) and job["probability"] < 0.95
    assert job["below_confidence"] is True
    table = spread("plan-spares", "--confidence", "0.95").out
    line = next(ln for ln in table.splitlines() if "j2" in ln)
    assert "pod0, pod1" in line and f"{job['probability']:.4f}" in line and "below the confidence 0.95" in line


def test_one_pod_shown_still_gives_the_jobs_joint_figure(spread):
    whole = spread("plan-spares", "-o", "json").json["jobs"]
    one = spread("plan-spares", "--pod", "pod1", "-o", "json").json
    assert [p["pod"] for p in one["pods"]] == ["pod1"] and one["jobs"] == whole


def test_a_job_reaching_the_confidence_across_pods_is_not_called_below(spread):
    doc = spread("plan-spares", "--confidence", "0.9", "-o", "json").json
    [job] = doc["jobs"]
    assert job["probability"] >= 0.9 and job["below_confidence"] is False
    assert "below the confidence" not in spread("plan-spares", "--confidence", "0.9").out


def test_a_job_in_one_pod_or_one_slice_of_it_is_not_listed(spread):
    assert spread("plan-spares", "--slices", "j2-0", "-o", "json").json["jobs"] == []


# ---- the spares a job across pods needs -------------------------------------------------------------------
def test_the_job_is_told_the_fewest_spares_per_pod_that_reach_the_confidence(spread):
    """Each pod's own spares reach 0.95, the job's product does not: the job's line names how many to hold in each
    pod, and which cubes besides; a smaller total reaches no 0.95 (checked on the curves the JSON gives)."""
    doc = spread("plan-spares", "--confidence", "0.95", "-o", "json").json
    [job] = doc["jobs"]
    rows = {p["pod"]: p for p in doc["pods"]}
    held = job["spares_for_job"]
    assert set(held) == {"pod0", "pod1"} and all(held[p] >= rows[p]["spares"] for p in held)
    curves = {p: {c["spares"]: c["probability"] for c in rows[p]["curve"]} for p in held}
    assert job["probability_at_spares_for_job"] == pytest.approx(math.prod(curves[p][held[p]] for p in held))
    assert job["probability_at_spares_for_job"] >= 0.95
    total = sum(held.values())
    for a in curves["pod0"]:
        for b in curves["pod1"]:
            if a + b < total:
                assert curves["pod0"][a] * curves["pod1"][b] < 0.95, (a, b)
    more = sum(held[p] - rows[p]["spares"] for p in held)
    assert len(job["hold_back_for_job"]) == more > 0
    assert not set(job["hold_back_for_job"]) & {c for p in rows.values() for c in p["hold_back"]}
    table = spread("plan-spares", "--confidence", "0.95").out
    said = ", ".join(f"{p} {n}" for p, n in held.items())
    assert f"  the job reaches it holding {said} spares" in table
    assert f"{more} more to hold back: {','.join(job['hold_back_for_job'])}" in table


def test_a_job_no_spares_can_lift_says_so(spread):
    doc = spread("plan-spares", "--confidence", "0.9999999", "--horizon", "90d", "-o", "json").json
    [job] = doc["jobs"]
    assert job["spares_for_job"] is None and job["hold_back_for_job"] == []
    assert (
        "no number of the pods' free cubes reaches it"
        in spread("plan-spares", "--confidence", "0.9999999", "--horizon", "90d").out
    )


def test_a_job_at_the_confidence_needs_no_more_than_its_pods_hold(spread):
    doc = spread("plan-spares", "--confidence", "0.9", "-o", "json").json
    [job] = doc["jobs"]
    assert job["spares_for_job"] == {p["pod"]: p["spares"] for p in doc["pods"]}
    assert job["hold_back_for_job"] == []


@settings(max_examples=200)
@given(
    st.lists(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6), min_size=1, max_size=3),
    st.floats(0.05, 0.999),
)
def test_joint_spares_is_the_fewest_total_by_exhaustion(raw, confidence):
    """Against every allocation: the fewest spares in all, and among those the highest product."""
    from tpufleet.spares import joint_spares

    curves = [sorted(c) for c in raw]  # a curve rises with the spares held
    got = joint_spares(curves, confidence)
    options = [
        (sum(held), -math.prod(c[h] for c, h in zip(curves, held, strict=True)), held)
        for held in itertools.product(*(range(len(c)) for c in curves))
        if math.prod(c[h] for c, h in zip(curves, held, strict=True)) >= confidence
    ]
    if not options:
        assert got is None
        return
    fewest, best, _ = min(options)
    assert got is not None and sum(got) == fewest
    assert math.prod(c[h] for c, h in zip(curves, got, strict=True)) == pytest.approx(-best)
