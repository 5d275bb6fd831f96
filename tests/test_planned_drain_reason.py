"""A planned drain of an OCS moves a running slice only when rerouting cannot carry it (its floor, or no
fault-tolerant routing); the reason said only "planned drain ...: the job is notified", hiding which test failed,
which the same fault unplanned names."""

from __future__ import annotations


def _reasons(fleet, *extra: str) -> dict[str, str]:
    r = fleet("inject-fault", "ocs:pod0/y/9", "--dry-run", *extra, "-o", "json")
    assert r.code == 0, r.err
    return {s["slice"]: s["reason"] for s in r.json["slices"] if s["action"] == "reschedule"}


def test_a_planned_drain_keeps_the_reason_a_slice_moves(fleet):
    for args in (
        ("f", "--shape", "4x8x8", "--min-throughput", "0.99"),
        ("g", "--shape", "4x4x8", "--no-fault-tolerant-routing"),
    ):
        assert fleet("allocate", *args).code == 0
        assert fleet("plan-xconnect", args[0], "--apply").code == 0
    assert fleet("routes", "f").code == 0
    unplanned, planned = _reasons(fleet), _reasons(fleet, "--planned")
    assert set(unplanned) == set(planned) == {"f", "g"}
    assert "below its floor of 0.99" in unplanned["f"] and unplanned["g"] == "opted out of fault-tolerant routing"
    for name, why in unplanned.items():
        assert planned[name] == f"planned drain of its ocs; {why}: the job is notified and checkpoints before it moves"
