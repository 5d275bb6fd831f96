"""plan-spares of a multislice job across pods: each pod's figure is for that pod alone; the job keeps its
placement only when every one of its pods does, the product of their figures (pods independent in the model)."""

from __future__ import annotations

import math

import pytest


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
