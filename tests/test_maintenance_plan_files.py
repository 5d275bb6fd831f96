"""`apply-maintenance` of a file that is no plan: a plan cut short, or saved as YAML, was called "maintenance
notices" with a `plan-maintenance --notices` step that fails on it; each is now said for what it is."""

from __future__ import annotations

import pytest

from helpers import one_line, snapshot

NOTICES = "- {target: cube:c00, window_start: 2099-07-01T09:00:00Z, window_end: 2099-07-01T13:00:00Z}\n"


@pytest.fixture
def planned(fleet, tmp_path):
    """Slice a on c00-c01, wired; a notice for c00 and its plan, plan.json."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    (tmp_path / "notices.yaml").write_text(NOTICES)
    r = fleet("plan-maintenance", "--notices", tmp_path / "notices.yaml", "--out", tmp_path / "plan.json")
    assert r.code == 0, r.err
    return fleet


def test_a_plan_cut_short_is_said_to_be_no_json(planned, tmp_path):
    cut = tmp_path / "cut.json"
    cut.write_bytes((tmp_path / "plan.json").read_bytes()[:400])
    before = snapshot(planned.state)
    said = one_line(planned("apply-maintenance", cut, "--wave", "1"))
    assert str(cut) in said and "not valid JSON" in said and "notices" not in said
    assert snapshot(planned.state) == before


def test_a_plan_saved_as_yaml_is_said_to_be_one(planned, tmp_path):
    r = planned("-o", "yaml", "plan-maintenance", "--notices", tmp_path / "notices.yaml")
    assert r.code == 0, r.err
    (tmp_path / "plan.yaml").write_text(r.out)
    said = one_line(planned("apply-maintenance", tmp_path / "plan.yaml", "--wave", "1"))
    assert "a maintenance plan in YAML" in said and "plan-maintenance --out" in said and "--notices" not in said


def test_notices_given_for_a_plan_still_get_the_step_that_makes_one(planned, tmp_path):
    said = one_line(planned("apply-maintenance", tmp_path / "notices.yaml", "--wave", "1"))
    assert "maintenance notices, not a maintenance plan" in said and "plan-maintenance --notices" in said
    assert planned("apply-maintenance", tmp_path / "plan.json", "--wave", "1").code == 0
