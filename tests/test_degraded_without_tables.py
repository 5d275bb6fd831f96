"""A slice wired and never routed, then rerouted around a fault: on paper it keeps its figure, but with no stored
tables it runs on its healthy ones through the fault. `inject-fault` gives it `routes` as its next step, `status`
lists it, and `routes --stale` makes its tables, as for a slice whose stored tables are stale."""

from __future__ import annotations

import pytest


@pytest.fixture
def two_unrouted(fleet):
    for name in ("a", "b"):
        assert fleet("allocate", name, "--shape", "4x4x8").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
    return fleet


def test_inject_fault_names_routes_for_rerouted_slices_with_no_tables(two_unrouted):
    fleet = two_unrouted
    r = fleet("inject-fault", "ocs:pod0/z/0", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["routes_none"] == ["a", "b"] and r.json["routes_stale"] == []
    assert [s["action"] for s in r.json["slices"]] == ["reroute", "reroute"]
    assert fleet("clear-fault", "f1").code == 0
    text = fleet("inject-fault", "ocs:pod0/z/0").out
    assert "next: tpufleet routes a  (it has no stored tables" in text and "tpufleet routes --stale" in text


def test_status_lists_them_and_routes_stale_makes_their_tables(two_unrouted):
    fleet = two_unrouted
    assert fleet("routes", "b").code == 0  # b has tables (stale after the fault), a none
    assert fleet("inject-fault", "ocs:pod0/z/0").code == 0
    status = fleet("status", "-o", "json").json
    assert status["degraded_without_routes"] == ["a"] and status["stale_routes"] == ["b"]
    assert "tpufleet_degraded_slices_without_route_tables 1.0" in fleet("metrics").out
    assert "degraded with no routing tables, running through their faults" in fleet("status").out
    r = fleet("routes", "--stale", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["stale"] == ["a", "b"] and r.json["stored"] is True and r.json["skipped"] == []
    after = fleet("status", "-o", "json").json
    assert "tpufleet_degraded_slices_without_route_tables 0.0" in fleet("metrics").out
    assert after["degraded_without_routes"] == [] and after["stale_routes"] == []
    assert [row["routes"] for row in fleet("show", "slices", "-o", "json").json] == ["fresh", "fresh"]


def test_a_healthy_slice_with_no_tables_is_not_listed(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("status", "-o", "json").json["degraded_without_routes"] == []  # healthy: its own tables serve
    r = fleet("inject-fault", "host:c05/0", "-o", "json")  # not one of its cubes
    assert r.code == 0 and r.json["routes_none"] == []
    assert fleet("status", "-o", "json").json["degraded_without_routes"] == []
    assert fleet("routes", "--stale").out.strip() == "no stale or missing routing tables"
