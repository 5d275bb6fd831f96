"""`clear-fault` of an id no fault has yet says which faults are open, so the operator sees the one they meant."""

from __future__ import annotations

import json


def test_an_unknown_fault_id_names_the_open_faults(fleet):
    for target in ("ocs:pod0/x/3", "host:c01/2", "ocs:pod0/y/5"):
        assert fleet("inject-fault", target).code == 0
    assert fleet("clear-fault", "f2").code == 0
    before = (fleet.state / "state.json").read_bytes()
    r = fleet("clear-fault", "f9")
    assert r.code == 1
    assert r.err.strip().endswith("unknown fault 'f9' (no fault has that id yet; open: f1, f3)")
    assert (fleet.state / "state.json").read_bytes() == before
    assert json.loads(fleet("clear-fault", "f9", "-o", "json").err)["error"].endswith("open: f1, f3)")


def test_an_unknown_fault_id_with_none_open_says_so(fleet):
    r = fleet("clear-fault", "f1")
    assert r.code == 1 and r.err.strip().endswith("(no fault has that id yet; no fault is open)")


def test_many_open_faults_are_named_up_to_eight(fleet):
    for machine in range(10):
        assert fleet("inject-fault", f"host:c02/{machine}").code == 0
    r = fleet("clear-fault", "f11")
    assert r.code == 1
    assert r.err.strip().endswith("open: f1, f2, f3, f4, f5, f6, f7, f8 and 2 more)")
    assert len(json.loads((fleet.state / "state.json").read_text())["faults"]) == 10
