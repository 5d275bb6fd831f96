"""`explain`'s `next` for a slice on a cube whose maintenance the reservation announced: only commands, each
runnable as written once those before it ran (README: `next` holds only commands, in the order to run them)."""

from __future__ import annotations

import json
import shlex

WINDOW = {"windowStartTime": "2099-06-16T09:00:00Z", "windowEndTime": "2099-06-16T13:00:00Z"}


def _announce_c00(fleet, tmp_path, monkeypatch) -> None:
    """The reservation announces maintenance of c00's sub-block in WINDOW; imported well before it starts."""
    from tpufleet.state import store

    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **WINDOW}}
    sb = {"name": "sb-a", "physicalTopology": {"block": "b1"}, "reservationSubBlockMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sb]))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0  # c00


def test_explain_next_for_announced_maintenance_runs_as_written_and_moves_the_slice(fleet, tmp_path, monkeypatch):
    """The step read `tpufleet plan-maintenance --out plan.json (then tpufleet apply-maintenance plan.json --wave
    N)`: a parenthesis and a placeholder, which a shell refuses and the CLI cannot take."""

    _announce_c00(fleet, tmp_path, monkeypatch)
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

    _announce_c00(fleet, tmp_path, monkeypatch)
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


def test_a_slice_stopped_by_a_plans_drain_waits_for_its_window(fleet, monkeypatch):
    """A plan run by hand (its printed `inject-fault ... --planned --reason 'maintenance wave 1: ...'`) stops a
    slice with nowhere else to go. `explain SLICE` said `next: clear-fault fN, reschedule` inside the window: run,
    that gives the cube back during the maintenance. Now both wait for the window's end (said in `why`)."""
    from tpufleet.state import store

    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T08:00:00Z")
    assert fleet("allocate", "big", "--shape", "16x16x16").code == 0  # every cube of the pod
    assert fleet("plan-xconnect", "big", "--apply").code == 0
    reason = "maintenance wave 1: 2099-06-16T09:00:00Z to 2099-06-16T13:00:00Z"
    assert fleet("inject-fault", "cube:c00", "--planned", "--reason", reason).code == 0
    (drain,) = fleet("faults", "-o", "json").json
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")  # within the window
    during = fleet("explain", "big", "-o", "json").json
    assert during["state"] == "evicted" and during["next"] == []
    assert any(drain["id"] in w and "2099-06-16T13:00:00Z" in w for w in during["why"]), during["why"]
    assert not [w for w in during["why"] if "repaired" in w], during["why"]  # a drain is never repaired
    assert f"it moves once the maintenance behind drain {drain['id']} is over and it is cleared" in during["why"]
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T14:00:00Z")  # after it
    after = fleet("explain", "big", "-o", "json").json["next"]
    assert after == [f"tpufleet clear-fault {drain['id']}", "tpufleet reschedule big", "tpufleet routes big"]
    for step in after:
        assert fleet(*step.split()[1:]).code == 0, step
    assert {s["name"]: s for s in fleet("show", "slices", "-o", "json").json}["big"]["state"] != "evicted"


def test_a_job_stopped_by_a_plans_drain_waits_for_its_window(fleet, monkeypatch):
    """The same for a job, in `explain JOB` and in `inject-fault`'s `jobs[].next`: both said `clear-fault f1`
    and `reschedule llm-0` with the drain's window still ahead."""
    from tpufleet.state import store

    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T08:00:00Z")
    assert fleet("allocate", "llm", "--shape", "8x8x8", "--slices", "8").code == 0  # every cube of the pod
    assert fleet("plan-xconnect", "llm", "--apply").code == 0
    reason = "maintenance wave 1: 2099-06-16T09:00:00Z to 2099-06-16T13:00:00Z"
    r = fleet("inject-fault", "cube:c00", "--planned", "--reason", reason, "-o", "json")
    assert r.code == 0, r.err
    ((radius,),) = [r.json] if isinstance(r.json, list) else [[r.json]]
    (job,) = radius["jobs"]
    assert not [s for s in job["next"] if "clear-fault" in s or "reschedule" in s], job["next"]
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")  # within the window
    during = fleet("explain", "llm", "-o", "json").json
    assert not [s for s in during["next"] if "clear-fault" in s or "reschedule" in s], during["next"]
    assert any("llm-0" in w and "2099-06-16T13:00:00Z" in w for w in during["why"]), during["why"]
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T14:00:00Z")  # after it
    after = fleet("explain", "llm", "-o", "json").json["next"]
    # the running slices' own tables first (they wait for nothing), then the clear and the move
    waits = after.index(f"tpufleet clear-fault {radius['fault_id']}")
    assert after[waits + 1] == "tpufleet reschedule llm-0", after
    assert after[:waits] == [f"tpufleet routes llm-{i}" for i in range(1, 8)], after


def test_a_plans_drain_whose_window_end_is_unknown_is_held(fleet, tmp_path, monkeypatch):
    """Maintenance announced without an end: the plan's wave drains the cube `... to done` and `apply-maintenance`
    leaves the drain open (its window's end is unknown), yet `explain cube:c00` gave `next: clear-fault f1`, the
    window not even started. Now it is not given, and `why` says the end is unknown."""
    from tpufleet.state import store

    upcoming = {"type": "SCHEDULED", "maintenanceStatus": "PENDING", "windowStartTime": "2099-06-16T09:00:00Z"}
    sb = {"name": "sb-a", "physicalTopology": {"block": "b1"}}
    sb["reservationSubBlockMaintenance"] = {"upcomingGroupMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sb]))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0  # c00
    assert fleet("plan-maintenance", "--out", tmp_path / "plan.json").code == 0
    assert fleet("apply-maintenance", tmp_path / "plan.json", "--wave", "1").code == 0
    (drain,) = fleet("faults", "-o", "json").json
    assert drain["reason"] == "maintenance wave 1: 2099-06-16T09:00:00Z to done"
    cube = fleet("explain", "cube:c00", "-o", "json").json
    assert cube["next"] == [] and any(drain["id"] in w and "unknown" in w for w in cube["why"]), cube


def test_a_slice_and_a_job_stopped_by_a_plans_drain_of_unknown_end_are_held(fleet):
    """The same drain run by hand from the plan (`inject-fault ... --planned --reason '... to done'`): `explain
    SLICE`, `explain JOB` and `inject-fault`'s `jobs[].next` gave `clear-fault` and `reschedule`."""
    reason = "maintenance wave 1: 2099-06-16T09:00:00Z to done"
    assert fleet("allocate", "llm", "--shape", "8x8x8", "--slices", "8").code == 0  # every cube of the pod
    assert fleet("plan-xconnect", "llm", "--apply").code == 0
    r = fleet("inject-fault", "cube:c00", "--planned", "--reason", reason, "-o", "json")
    assert r.code == 0, r.err
    (job,) = r.json["jobs"]
    for steps in (job["next"], fleet("explain", "llm", "-o", "json").json["next"]):
        assert not [s for s in steps if "clear-fault" in s or "reschedule" in s], steps
    one = fleet("explain", "llm-0", "-o", "json").json
    assert one["state"] == "evicted" and one["next"] == [] and any("unknown" in w for w in one["why"]), one


def _stopped_by_the_waves_drain(fleet, tmp_path, ocs_down: bool = False) -> tuple[list[str], list[str]]:
    """Job j (2 slices of 4x4x4, wired and routed) and a plan whose one wave drains c00 under j-0, its drain run
    as the plan printed it (the wave's first command; an OCS of the pod down first when `ocs_down`): the plan's
    commands, and `inject-fault`'s `jobs[].next` for the drain."""
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0  # c00, c01
    assert fleet("plan-xconnect", "j", "--apply").code == 0
    assert fleet("routes", "j").code == 0
    if ocs_down:
        assert fleet("inject-fault", "ocs:pod0/x/0").code == 0
    notices = [{"target": "cube:c00", "window_start": WINDOW["windowStartTime"], "window_end": WINDOW["windowEndTime"]}]
    (tmp_path / "notices.json").write_text(json.dumps(notices))
    plan = fleet("plan-maintenance", "--notices", tmp_path / "notices.json", "-o", "json").json
    drain = shlex.split(plan["commands"][0])
    assert drain[1:3] == ["inject-fault", "cube:c00"] and "--planned" in drain, plan["commands"]
    r = fleet(*drain[1:], "-o", "json")
    assert r.code == 0, r.err
    (job,) = r.json["jobs"]
    return plan["commands"], job["next"]


def _run_to_running(fleet, steps: list[str]) -> None:
    for step in steps:
        r = fleet(*shlex.split(step)[1:])
        assert r.code == 0, (step, r.err)
    assert fleet("explain", "j", "-o", "json").json["state"] == "running"
    slices = [s for s in fleet("show", "slices", "-o", "json").json if s["job"] == "j"]
    assert {(s["state"], s["routes"]) for s in slices} == {("connected", "fresh")}, slices


def test_a_job_stopped_by_a_waves_drain_gets_the_waves_steps_as_its_slice_does(fleet, tmp_path):
    """`explain j-0` gave the wave's steps (`reschedule`, `plan-xconnect --apply`, `routes`) and `explain j` and
    `inject-fault`'s `jobs[].next` a plain `reschedule j-0` then `routes j-0`."""
    commands, hinted = _stopped_by_the_waves_drain(fleet, tmp_path)
    wave = ["tpufleet reschedule j-0", "tpufleet plan-xconnect j-0 --apply", "tpufleet routes j-0"]
    assert commands[1:4] == wave
    assert fleet("explain", "j-0", "-o", "json").json["next"] == wave
    assert fleet("explain", "j", "-o", "json").json["next"] == wave
    assert hinted == wave
    _run_to_running(fleet, wave)


def test_a_waves_move_whose_cross_connects_wait_for_an_ocs_gets_the_slices_steps_in_the_job(fleet, tmp_path):
    """With an OCS of the pod down, the move's cross-connects on it are deferred: `explain j` gives j-0 the same
    steps, in the same order, as `explain j-0` (the wave's, then the OCS's clear and the wiring again), and they
    run in order to a running job."""
    _, hinted = _stopped_by_the_waves_drain(fleet, tmp_path, ocs_down=True)
    own = fleet("explain", "j-0", "-o", "json").json["next"]
    assert own[:3] == ["tpufleet reschedule j-0", "tpufleet plan-xconnect j-0 --apply", "tpufleet routes j-0"]
    steps = fleet("explain", "j", "-o", "json").json["next"]
    for given in (steps, hinted):
        assert [s for s in given if "j-1" not in s] == own, given
    _run_to_running(fleet, steps)
