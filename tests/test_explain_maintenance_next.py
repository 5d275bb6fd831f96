"""`explain`'s `next` for a slice on a cube whose maintenance the reservation announced: only commands, each
runnable as written once those before it ran (README: `next` holds only commands, in the order to run them)."""

from __future__ import annotations

import json
import shlex

WINDOW = {"windowStartTime": "2099-06-16T09:00:00Z", "windowEndTime": "2099-06-16T13:00:00Z"}


def test_explain_next_for_announced_maintenance_runs_as_written_and_moves_the_slice(fleet, tmp_path, monkeypatch):
    """The step read `tpufleet plan-maintenance --out plan.json (then tpufleet apply-maintenance plan.json --wave
    N)`: a parenthesis and a placeholder, which a shell refuses and the CLI cannot take."""
    from tpufleet.state import store

    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **WINDOW}}
    sb = {"name": "sb-a", "physicalTopology": {"block": "b1"}, "reservationSubBlockMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sb]))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0  # c00
    assert fleet("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    steps = fleet("explain", "a", "-o", "json").json["next"]
    maintenance = [s for s in steps if "maintenance" in s]
    assert maintenance, steps
    for step in maintenance:
        words = shlex.split(step)  # a shell's reading: a parenthesis would end it
        assert words[0] == "tpufleet" and not any(set(w) & set("()") or w == "N" for w in words), step
        args = [str(tmp_path / w) if w.endswith(".json") else w for w in words[1:]]
        r = fleet(*args)
        assert r.code == 0, (step, r.err)
    moved = {s["name"]: s for s in fleet("show", "slices", "-o", "json").json}["a"]
    assert moved["state"] != "evicted" and "c00" not in moved["cubes"]


def test_a_plans_drain_is_not_cleared_before_its_window_ends(fleet, tmp_path, monkeypatch):
    """`explain cube:c00` on the drain a plan's wave opened said `next: tpufleet clear-fault f1` with the window
    still ahead: run, it gave the cube back to the pool during the maintenance. Now the step waits for the window's
    end (said in `why`), and is given once it has passed."""
    from tpufleet.state import store

    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **WINDOW}}
    sb = {"name": "sb-a", "physicalTopology": {"block": "b1"}, "reservationSubBlockMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sb]))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0  # c00
    assert fleet("plan-maintenance", "--out", tmp_path / "plan.json").code == 0
    assert fleet("apply-maintenance", tmp_path / "plan.json", "--wave", "1").code == 0
    (drain,) = [f for f in fleet("faults", "-o", "json").json if f["target"] == "cube:c00"]
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")  # within the window
    during = fleet("explain", "cube:c00", "-o", "json").json
    assert during["next"] == [] and any(drain["id"] in w and "2099-06-16T13:00:00Z" in w for w in during["why"])
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T14:00:00Z")  # after it
    assert fleet("explain", "cube:c00", "-o", "json").json["next"] == [f"tpufleet clear-fault {drain['id']}"]


def test_a_drain_whose_reason_only_looks_like_a_plans_is_not_held(fleet, monkeypatch):
    """A drain recorded by hand with a reason that begins as a plan's but names no window end (`... to soon`) gets
    its `clear-fault` step: only a plan's window, read as a time, holds it back."""
    from tpufleet.state import store

    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")
    r = fleet("inject-fault", "cube:c00", "--planned", "--reason", "maintenance wave 1: 2099-06-16T09:00:00Z to soon")
    assert r.code == 0, r.err
    (drain,) = fleet("faults", "-o", "json").json
    assert fleet("explain", "cube:c00", "-o", "json").json["next"] == [f"tpufleet clear-fault {drain['id']}"]
