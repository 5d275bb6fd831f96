"""A slice whose pairs on a failed OCS are in place already (it was wired there before the failure) needs nothing
there: `reschedule` back onto its cubes and `plan-xconnect` called them deferred (`+0 -0 =188`, "deferred while
down: once repaired and cleared, plan-xconnect programs them"), though `status` counted none missing and the
plan after the clear changed nothing. They are kept (`=192`), and no step waits on the repair for them."""

from __future__ import annotations


def test_pairs_standing_on_a_down_ocs_are_kept_not_deferred(fleet):
    assert fleet("allocate", "a", "--shape", "4x8x8", "--no-fault-tolerant-routing").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    wired = fleet("plan-xconnect", "a", "-o", "json").json
    assert fleet("inject-fault", "ocs:pod0/z/7").code == 0  # a evicted: no fault-tolerant routing
    assert fleet("policy", "a", "--fault-tolerant-routing").code == 0
    moved = fleet("reschedule", "a", "-o", "json")
    assert moved.code == 0, moved.err
    assert moved.json["cubes"] == ["c00", "c01", "c02", "c03"]
    assert "deferred" not in moved.out and not moved.json.get("deferred")
    plan = fleet("plan-xconnect", "a", "-o", "json").json
    assert plan["summary"] == wired["summary"] and plan["deferred"] == []
    assert fleet("status", "-o", "json").json["incomplete_wiring"] == []
    assert fleet("clear-fault", "f1").code == 0
    assert fleet("plan-xconnect", "a", "-o", "json").json["summary"] == wired["summary"]


def test_pairs_not_in_place_on_a_down_ocs_are_still_deferred(fleet):
    assert fleet("inject-fault", "ocs:pod0/z/7").code == 0
    assert fleet("allocate", "b", "--shape", "4x8x8").code == 0
    plan = fleet("plan-xconnect", "b", "-o", "json").json
    assert plan["deferred"] == ["ocs:pod0/z/7"]
