"""A cube's fault history outlives the state's pruning of old cleared faults: `plan-spares` weighs a cube by the
unplanned faults it ever had, not only by the 128 most recently cleared the state keeps (the rest go to the
journal, and their count per cube stays in the state)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def pruned(fleet, monkeypatch):
    """c05 failed once, then more clears than the state keeps (2 here) pushed that fault to the journal."""
    from tpufleet.state import store

    monkeypatch.setattr(store, "CLEARED_FAULTS_KEPT", 2)
    for target in ["host:c05/0", "host:c06/0", "link:c07/x/5/out", "ocs:pod0/x/1", "cube:c08"]:
        assert fleet("inject-fault", target, *(["--planned"] if target == "cube:c08" else [])).code == 0
        assert fleet("clear-fault", target).code == 0
    return fleet


def test_plan_spares_keeps_the_history_of_faults_moved_to_the_journal(pruned):
    state = json.loads((pruned.state / "state.json").read_text())
    assert [f["target"] for f in state["faults"]] == ["ocs:pod0/x/1", "cube:c08"]  # the two kept
    assert state["pruned_fault_history"] == {"c05": 1, "c06": 1, "c07": 1}  # unplanned, inside a cube
    [pod0] = [p for p in pruned("plan-spares", "-o", "json").json["pods"] if p["pod"] == "pod0"]
    assert pod0["cubes_with_history"] == {"c05": 1, "c06": 1, "c07": 1}


def test_a_history_naming_a_cube_the_fleet_lacks_is_refused_naming_the_field(pruned):
    path = pruned.state / "state.json"
    doc = json.loads(path.read_text())
    doc["pruned_fault_history"]["c999"] = 2
    path.write_text(json.dumps(doc))
    r = pruned("status")
    assert r.code == 2 and "pruned_fault_history" in r.err and "c999" in r.err and "'c05'" not in r.err


def test_a_horizon_too_long_for_the_cubes_names_them_not_the_ocs(fleet):
    """Over 999,999 hours no cube is likely to stay healthy: the note says the slices' cubes cap it, not the OCS term
    or cubes down now (a fault-tolerant slice has no OCS term; no cube is down)."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    [pod0] = [p for p in fleet("plan-spares", "--horizon", "999999h", "-o", "json").json["pods"] if p["pod"] == "pod0"]
    assert pod0["ocs_all_up"] == 1.0 and pod0["cubes_down_now"] == [] and pod0["spares"] is None
    assert "own cubes" in pod0["note"] and "OCS" not in pod0["note"]
