"""Defects found by running random operator runbooks against the invariants the README states."""

from __future__ import annotations


def _slice(fleet, name: str) -> dict:
    return next(s for s in fleet("show", "slices", "-o", "json").json if s["name"] == name)


def test_a_slice_wired_while_an_ocs_is_down_is_rerouted_around_that_fault_too(fleet) -> None:
    """Wired with the OCS already down (its pairs deferred), then hit by a link fault: its tables route around both,
    and clearing the link leaves it degraded around the OCS, with tables to make (it was plainly connected, with
    none, and `routes --stale` had nothing to do, while it ran around the open OCS fault)."""
    assert fleet("init", "--cubes-per-pod", "6", "--force").code == 0
    assert fleet("allocate", "x", "--shape", "4x4x8").code == 0
    assert fleet("inject-fault", "ocs:pod0/y/6").code == 0  # f1: x not wired yet
    assert fleet("plan-xconnect", "x", "--apply").code == 0  # 2 pairs deferred
    r = fleet("inject-fault", "link:c00/x/2/out", "-o", "json")  # f2
    assert r.json["slices"][0]["action"] == "reroute"
    assert _slice(fleet, "x")["degraded"]["faults"] == ["f1", "f2"]
    assert fleet("clear-fault", "f2").code == 0
    x = _slice(fleet, "x")
    assert (x["state"], x["degraded"]["faults"]) == ("degraded", ["f1"])
    assert fleet("status", "-o", "json").json["degraded_without_routes"] == ["x"]
    r = fleet("routes", "--stale", "-o", "json")
    assert r.code == 0, r.err
    assert _slice(fleet, "x")["routes"] == "fresh"


def test_the_same_faults_in_the_other_order_give_the_same_record(fleet) -> None:
    assert fleet("init", "--cubes-per-pod", "6", "--force").code == 0
    assert fleet("allocate", "x", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "x", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/y/6").code == 0
    assert fleet("inject-fault", "link:c00/x/2/out").code == 0
    assert _slice(fleet, "x")["degraded"]["faults"] == ["f1", "f2"]
