"""A maintenance plan given to `apply-xconnect`, or a cross-connect plan to `apply-maintenance`: refused (exit 2,
nothing changed) naming the file, its kind and the command that applies it."""

from __future__ import annotations

import json

from helpers import snapshot


def test_apply_xconnect_of_a_maintenance_plan_names_apply_maintenance(reserved, tmp_path):
    plan = tmp_path / "plan.json"
    assert reserved("plan-maintenance", "--out", plan).code == 0
    before = snapshot(reserved.state)
    r = reserved("apply-xconnect", plan, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].startswith(f"{plan}: field kind: a maintenance plan")
    assert f"run `tpufleet apply-maintenance {plan} --wave N`" in said["error"]
    assert snapshot(reserved.state) == before


def test_apply_maintenance_of_a_cross_connect_plan_names_apply_xconnect(fleet, tmp_path):
    plan = tmp_path / "s.plan"
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    before = snapshot(fleet.state)
    r = fleet("apply-maintenance", plan, "--wave", "1", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].startswith(f"{plan}: field kind: a cross-connect plan")
    assert f"run `tpufleet apply-xconnect {plan}`" in said["error"]
    assert snapshot(fleet.state) == before
