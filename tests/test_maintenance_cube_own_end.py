"""A wave's drain reason carries its notices' latest end, while `apply-maintenance` clears each cube after its own
end: `explain` (a cube, a slice or job it stopped) held a cube's `clear-fault` until the wave's end. Where the
state knows the cube's own end (the maintenance the reservation announced), explain now uses it, as applying does."""

from __future__ import annotations

import json

import pytest

WAVE = "maintenance wave 1: 2099-06-16T09:00:00Z to 2099-06-16T14:00:00Z"  # c00 until 13:00, c01 until 14:00


def _window(start: str, end: str) -> dict:
    upcoming = {"type": "SCHEDULED", "maintenanceStatus": "PENDING", "windowStartTime": start, "windowEndTime": end}
    return {"reservationSubBlockMaintenance": {"upcomingGroupMaintenance": upcoming}}


def _announce(fleet, tmp_path, monkeypatch, later: bool = False) -> None:
    """c00 09:00-13:00 and c01 10:00-14:00 on 2099-06-16 (and c02 15:00-17:00 with `later`), imported before."""
    from tpufleet.state import store

    windows = [("09", "13"), ("10", "14")] + ([("15", "17")] if later else [])
    sbs = [
        {
            "name": f"sb-{i}",
            "physicalTopology": {"block": "b1"},
            **_window(f"2099-06-16T{a}:00:00Z", f"2099-06-16T{b}:00:00Z"),
        }
        for i, (a, b) in enumerate(windows)
    ]
    (tmp_path / "sb.json").write_text(json.dumps(sbs))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0


def _at(monkeypatch, when: str) -> None:
    from tpufleet.state import store

    monkeypatch.setattr(store, "utc_now", lambda: when)


def test_explain_cube_clears_at_its_own_end_as_apply_maintenance_does(fleet, tmp_path, monkeypatch):
    _announce(fleet, tmp_path, monkeypatch, later=True)
    plan = tmp_path / "plan.json"
    assert fleet("plan-maintenance", "--max-parallel", "2", "--out", plan).code == 0
    assert json.loads(plan.read_text())["waves"][0]["cubes"] == ["c00", "c01"]
    assert fleet("apply-maintenance", plan, "--wave", "1").code == 0
    drains = {f["target"]: f["id"] for f in fleet("faults", "-o", "json").json}
    _at(monkeypatch, "2099-06-16T13:30:00Z")  # c00's window over, c01's not
    applied = fleet("apply-maintenance", plan, "--wave", "2", "--dry-run", "-o", "json")
    assert applied.code == 0, applied.err
    cleared = [s["target"] for s in applied.json["steps"] if s["step"] == "clear" and s["fault_ids"]]
    assert cleared == ["cube:c00"]
    assert fleet("explain", "cube:c00", "-o", "json").json["next"] == [f"tpufleet clear-fault {drains['cube:c00']}"]
    assert fleet("explain", "cube:c01", "-o", "json").json["next"] == []


@pytest.mark.parametrize("what", ["slice", "job"])
def test_a_slice_or_job_stopped_by_the_wave_moves_after_its_cubes_own_end(fleet, tmp_path, monkeypatch, what):
    _announce(fleet, tmp_path, monkeypatch)
    _at(monkeypatch, "2099-06-16T08:00:00Z")
    shape = ("16x16x16",) if what == "slice" else ("8x8x8", "--slices", "8")  # every cube of the pod
    assert fleet("allocate", "big", "--shape", *shape).code == 0
    assert fleet("plan-xconnect", "big", "--apply").code == 0
    r = fleet("inject-fault", "cube:c00", "--planned", "--reason", WAVE, "-o", "json")  # the wave's drain, by hand
    assert r.code == 0, r.err
    drain = r.json["fault_id"]
    _at(monkeypatch, "2099-06-16T13:30:00Z")  # c00's own window over, the wave's not
    steps = fleet("explain", "big", "-o", "json").json["next"]
    at = steps.index(f"tpufleet clear-fault {drain}")  # after the running slices' own tables, which wait for nothing
    assert steps[at + 1].startswith("tpufleet reschedule big") and all("routes" in s for s in steps[:at]), steps
    _at(monkeypatch, "2099-06-16T12:30:00Z")  # within c00's own window: held
    assert not [s for s in fleet("explain", "big", "-o", "json").json["next"] if "clear-fault" in s]
