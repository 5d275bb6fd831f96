"""`explain SLICE` for a slice a maintenance wave's drain stopped (the plan's `inject-fault ... --planned` run by
hand), with a place to go now, gave a bare `reschedule`: the wave's own steps for a slice it stops are `reschedule`,
`plan-xconnect --apply` and `routes` (README, plan-maintenance). `next` now gives them, each runnable in order."""

from __future__ import annotations

WAVE = "maintenance wave 1: 2099-07-01T09:00:00Z to 2099-07-01T13:00:00Z"


def test_a_slice_a_waves_drain_stopped_gets_the_waves_steps(routed):
    r = routed("inject-fault", "cube:c00", "--planned", "--reason", WAVE, "-o", "json")
    assert r.code == 0, r.err
    row = routed("explain", "s", "-o", "json").json
    assert row["state"] == "evicted"
    assert row["next"] == ["tpufleet reschedule s", "tpufleet plan-xconnect s --apply", "tpufleet routes s"]
    for step in row["next"]:
        assert routed(*step.split()[1:]).code == 0, step
    after = routed("explain", "s", "-o", "json").json
    assert (after["state"], after["routes"], after["next"]) == ("connected", "fresh", [])


def test_a_slice_any_other_planned_drain_stopped_gets_reschedule(routed):
    assert routed("inject-fault", "cube:c00", "--planned", "--reason", "cooling work").code == 0
    assert routed("explain", "s", "-o", "json").json["next"] == ["tpufleet reschedule s", "tpufleet routes s"]


def test_a_slice_a_waves_drain_stopped_landing_around_a_down_ocs_is_wired_again_after_the_clear(routed):
    """Its move lands with cross-connects on a down OCS deferred: the wave's steps left it waiting for them, and
    the next `explain` asked for the clear, `plan-xconnect --apply` and `routes`; its steps give them now."""
    assert routed("inject-fault", "ocs:pod0/x/3").code == 0  # f1
    assert routed("inject-fault", "cube:c00", "--planned", "--reason", WAVE).code == 0
    row = routed("explain", "s", "-o", "json").json
    assert row["next"] == [
        "tpufleet reschedule s",
        "tpufleet plan-xconnect s --apply",
        "tpufleet routes s",
        "tpufleet clear-fault f1",
        "tpufleet plan-xconnect s --apply",
        "tpufleet routes s",
    ]
    for step in row["next"]:
        assert routed(*step.split()[1:]).code == 0, step
    after = routed("explain", "s", "-o", "json").json
    assert (after["state"], after["routes"], after["next"], after["missing_xconnects"]) == ("connected", "fresh", [], 0)
