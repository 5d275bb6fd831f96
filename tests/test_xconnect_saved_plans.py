"""Saved cross-connect plans read back by `apply-xconnect`: when they were made is a time (checked as the other
fields are, and compared with fault clear times as times)."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize("made", ["garbage", "2026-13-45T99:99:99Z", "", "9999-12-31T23:59:59Z "])
def test_a_plan_made_at_no_time_is_refused_naming_the_field(fleet, tmp_path, made):
    """`made` was compared as text with fault clear times: "garbage" sorts after every date, so faults cleared
    since the plan went unnamed in the stale-plan message."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/0").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    assert fleet("clear-fault", "ocs:pod0/x/0").code == 0
    plan.write_text(json.dumps({**json.loads(plan.read_text()), "made": made}))
    before = snapshot(fleet.state)
    line = one_line(fleet("apply-xconnect", plan))
    assert f"{plan}: field made:" in line and json.dumps(made)[1:-1] in line
    assert snapshot(fleet.state) == before


def test_a_job_plan_made_at_no_time_is_refused_naming_the_field(fleet, tmp_path):
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "j", "--out", plan).code == 0
    doc = json.loads(plan.read_text())
    for where, place in ((doc, "made"), (doc["plans"][1], "plans.1.made")):
        edited = json.loads(json.dumps(doc))
        (edited if where is doc else edited["plans"][1])["made"] = "garbage"
        plan.write_text(json.dumps(edited))
        before = snapshot(fleet.state)
        line = one_line(fleet("apply-xconnect", plan))
        assert f"{plan}: field {place}:" in line and "garbage" in line
        assert snapshot(fleet.state) == before


def test_a_stale_plan_names_the_fault_cleared_since_it_was_made(fleet, tmp_path):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/0").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    assert fleet("clear-fault", "ocs:pod0/x/0").code == 0
    r = fleet("apply-xconnect", plan)
    assert r.code == 1 and "stale plan" in r.err and "fault f1 on ocs:pod0/x/0 was cleared at" in r.err


def test_a_plan_applied_before_says_its_own_count_not_the_slices(fleet, tmp_path):
    """Saved while x/3 was down (its pairs deferred: 94 of the slice's 96), applied, then x/3 repaired and the
    slice wired whole: applying the saved plan again said "its 96 cross-connects are in place", the slice's count."""
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    assert fleet("apply-xconnect", plan).code == 0
    again = fleet("apply-xconnect", plan)
    assert again.code == 0 and "its 94 cross-connects are in place, nothing changed" in again.out
    assert fleet("clear-fault", "ocs:pod0/x/3").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    before = snapshot(fleet.state)
    r = fleet("apply-xconnect", plan)
    assert r.code == 0 and "its 94 cross-connects are in place (the slice holds 96), nothing changed" in r.out
    doc = fleet("apply-xconnect", plan, "-o", "json").json
    assert doc["already_applied"] is True and doc["plan_cross_connects"] == 94 and doc["summary"]["keep"] == 96
    assert snapshot(fleet.state) == before


def test_a_job_plan_applied_before_says_its_own_count(fleet, tmp_path):
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "j", "--out", plan).code == 0
    pairs = json.loads(plan.read_text())["summary"]["add"]
    assert fleet("apply-xconnect", plan).code == 0
    r = fleet("apply-xconnect", plan, "-o", "json")
    assert r.code == 0 and r.json["already_applied"] is True and r.json["plan_cross_connects"] == pairs


def _edited(doc: dict, edit: str) -> dict:
    """The plan with one edit of its OCS list a reviewer would not see in the recomputed plan once applied."""
    doc = json.loads(json.dumps(doc))
    first = doc["ocs"][0]
    if edit == "pair added twice":
        first["add"].append(first["add"][0])
    elif edit == "remove of a pair that is not there":
        first["remove"].append([5, 9])
    elif edit == "OCS listed twice":
        doc["ocs"].append(dict(first))
    elif edit == "OCS left out":
        del doc["ocs"][0]
    elif edit == "keep raised":
        first["keep"] += 3
    else:
        doc["summary"]["add"] = 0
    return doc


def _refused(r) -> str:
    """The message of a refusal (exit 1): its first line (the OCS it names follow, one a line)."""
    assert r.code == 1, (r.code, r.err[-500:])
    return r.err.splitlines()[0]


EDITS = ["pair added twice", "remove of a pair that is not there", "OCS listed twice", "OCS left out", "keep raised"]


@pytest.mark.parametrize("edit", [*EDITS, "summary"])
def test_an_edited_plan_is_refused_alike_before_and_after_it_is_applied(fleet, tmp_path, edit):
    """Once the plan was applied, a copy whose OCS list was edited (every pair it adds being in place) was taken as
    already applied (exit 0, "its 98 cross-connects are in place (the slice holds 96)"): before, it was refused."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan, edited = tmp_path / "plan.json", tmp_path / "edited.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    edited.write_text(json.dumps(_edited(json.loads(plan.read_text()), edit)))
    unapplied = _refused(fleet("apply-xconnect", edited))
    assert fleet("apply-xconnect", plan).code == 0
    before = snapshot(fleet.state)
    applied = _refused(fleet("apply-xconnect", edited))
    assert applied.replace("serial 3", "serial 2") == unapplied and "plan again" in applied
    assert snapshot(fleet.state) == before


def test_an_edited_part_of_a_job_plan_applied_before_is_refused(fleet, tmp_path):
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "j", "--out", plan).code == 0
    assert fleet("apply-xconnect", plan).code == 0
    doc = json.loads(plan.read_text())
    doc["plans"][1] = _edited(doc["plans"][1], "remove of a pair that is not there")
    plan.write_text(json.dumps(doc))
    before = snapshot(fleet.state)
    assert "ocs:pod0/x/0 changed" in _refused(fleet("apply-xconnect", plan))
    assert snapshot(fleet.state) == before
