"""A slice evicted by a fault that is cleared before its `reschedule` (a host alert that fired and resolved) goes
back onto its own cubes, which it still holds with their cross-connects, rather than onto the replacement reserved
while the fault was open: the move changes no cross-connect, and `explain` says so beforehand."""

from __future__ import annotations

import json


def _evicted_then_cleared(fleet) -> dict:
    assert fleet("allocate", "train", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "train", "--apply").code == 0
    assert fleet("routes", "train").code == 0
    hit = json.loads(fleet("inject-fault", "host:c01/2", "-o", "json").out)
    assert hit["slices"][0]["action"] == "reschedule"
    assert "c01" not in hit["slices"][0]["replacement"]["cubes"]  # the move reserved while the fault is open
    assert fleet("clear-fault", "f1").code == 0
    return hit


def test_a_slice_whose_evicting_fault_is_cleared_goes_back_in_place(fleet):
    _evicted_then_cleared(fleet)
    before = json.loads(fleet("show", "slices", "-o", "json").out)
    own = next(s for s in before if s["name"] == "train")["cubes"]
    why = json.loads(fleet("explain", "train", "-o", "json").out)["why"]
    assert any("its own cubes" in w and "back in place now that f1 is cleared" in w for w in why), why
    r = fleet("reschedule", "train", "-o", "json")
    assert r.code == 0, r.err
    moved = json.loads(r.out)
    assert moved["cubes"] == own and moved["in_place"] is True
    assert moved["xconnect_changes"]["add"] == 0 and moved["xconnect_changes"]["remove"] == 0
    status = json.loads(fleet("status", "-o", "json").out)
    assert status["cubes"]["allocated"] == 2  # the reserved cube is free again


def test_the_table_says_why_the_tables_are_stale_after_a_move_in_place(fleet):
    _evicted_then_cleared(fleet)
    out = fleet("reschedule", "train").out
    assert "+0 -0" in out and "(its stored tables went stale while it was evicted)" in out, out


def test_a_fault_still_open_keeps_the_reserved_move(fleet):
    assert fleet("allocate", "train", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "train", "--apply").code == 0
    hit = json.loads(fleet("inject-fault", "host:c01/2", "-o", "json").out)
    reserved = hit["slices"][0]["replacement"]["cubes"]
    moved = json.loads(fleet("reschedule", "train", "-o", "json").out)
    assert moved["cubes"] == reserved and moved["in_place"] is False


def test_explain_job_says_the_slice_goes_back_in_place_as_explain_slice_does(fleet):
    assert fleet("allocate", "llm", "--shape", "4x4x8", "--slices", "2").code == 0
    assert fleet("plan-xconnect", "llm", "--apply").code == 0
    hit = json.loads(fleet("inject-fault", "host:c01/2", "-o", "json").out)
    reserved = ",".join(hit["slices"][0]["replacement"]["cubes"])
    why = json.loads(fleet("explain", "llm", "-o", "json").out)["why"]
    assert any(f"reschedule moves it to pod0 {reserved} (reserved)" in w for w in why), why
    assert fleet("clear-fault", "f1").code == 0
    why = json.loads(fleet("explain", "llm", "-o", "json").out)["why"]
    line = next(w for w in why if w.startswith("slice llm-0:"))
    assert line.endswith("reschedule moves it back onto its own cubes now that f1 is cleared"), line
    moved = json.loads(fleet("reschedule", "llm-0", "-o", "json").out)
    assert moved["in_place"] is True and moved["job"]["state"] == "running"
