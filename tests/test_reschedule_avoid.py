"""`reschedule NAME --avoid CUBES`: the cubes named are taken only when no other fits (as cubes under announced
maintenance), and `plan-maintenance` passes it the cubes its later waves drain, so a slice a wave moves is not
moved onto a cube the next wave drains and back again; `apply-maintenance` makes the same moves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import snapshot

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


def _cubes(fleet: Any, name: str) -> list[str]:
    return next(s for s in fleet("show", "slices", "-o", "json").json if s["name"] == name)["cubes"]


@pytest.fixture
def evicted(fleet):
    """A TPU v4 4x4x8 on c10,c11 evicted by a host fault on c10: its move reserved on c00, the pod's first free cube."""
    assert fleet("allocate", "a", "--shape", "4x4x8", "--cubes", "c10,c11").code == 0
    assert fleet("inject-fault", "host:c10/3").code == 0
    return fleet


def test_reschedule_avoid_takes_another_cube_than_the_reserved_avoided_one(evicted):
    r = evicted("reschedule", "a", "--avoid", "c00", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["cubes"] == ["c01", "c11"] and r.json["status"] == "moved"  # (it said "proposed", as before the move)
    assert _cubes(evicted, "a") == ["c01", "c11"]


def test_reschedule_avoid_takes_an_avoided_cube_when_no_other_fits(evicted):
    pod0 = [f"c{i:02d}" for i in range(64) if i not in (10, 11)]  # every free cube of the slice's pod
    r = evicted("reschedule", "a", "--avoid", ",".join(pod0[1:]), "-o", "json")
    assert r.code == 0, r.err
    assert r.json["cubes"] == ["c00", "c11"]  # c00 is not avoided: taken before the avoided ones
    assert evicted("inject-fault", "host:c00/1").code == 0
    r = evicted("reschedule", "a", "--avoid", "cube:" + ",cube:".join(pod0), "-o", "json")
    assert r.code == 0, r.err
    assert r.json["cubes"] == ["c01", "c11"]  # all avoided, c00 out: the first avoided one


def test_reschedule_avoid_with_an_unknown_cube_is_bad_input_and_changes_nothing(evicted):
    before = snapshot(evicted.state)
    r = evicted("reschedule", "a", "--avoid", "c01,c999")
    assert r.code == 2
    assert "--avoid" in r.err and "c999" in r.err
    assert snapshot(evicted.state) == before
    r = evicted("reschedule", "a", "--avoid", "c01,,c02")
    assert r.code == 2 and "--avoid" in r.err
    assert snapshot(evicted.state) == before


@pytest.fixture
def two_notices(cli, tmp_path):
    """The TPU7x fixture reservation with a 12x12x24 (train, from c00) and a 16x16x16 running; notices for c00 and
    for c120, the first free cube, the next day."""
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", FIXTURE, "--apply").code == 0
    assert cli("allocate", "train", "--shape", "12x12x24").code == 0
    assert cli("allocate", "eval", "--shape", "16x16x16").code == 0
    doc = [
        {"target": "cube:c00", "window_start": "2099-07-01T00:00:00Z", "window_end": "2099-07-01T06:00:00Z"},
        {"target": "cube:c120", "window_start": "2099-07-02T00:00:00Z", "window_end": "2099-07-02T06:00:00Z"},
    ]
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(doc))
    return cli


def test_a_plan_does_not_move_a_slice_onto_a_cube_a_later_wave_drains(two_notices, tmp_path):
    r = two_notices("plan-maintenance", "--notices", tmp_path / "n.yaml", "--max-parallel", "1", "-o", "json")
    assert r.code == 0, r.err
    first, second = r.json["waves"]
    assert [(m["slice"], m["cubes_out"]) for m in first["moves"]] == [("train", ["c00"])]
    into = first["moves"][0]["cubes_in"]
    assert len(into) == 1 and into != ["c120"] and into[0] not in _cubes(two_notices, "eval")
    assert "tpufleet reschedule train --avoid c120" in first["commands"]
    assert second["moves"] == [] and r.json["moves"] == 1


def test_applying_the_plan_makes_its_moves(two_notices, tmp_path):
    plan_file = tmp_path / "plan.json"
    r = two_notices("plan-maintenance", "--notices", tmp_path / "n.yaml", "--max-parallel", "1", "--out", plan_file)
    assert r.code == 0, r.err
    plan = yaml.safe_load(plan_file.read_text())
    for wave in plan["waves"]:
        done = two_notices("apply-maintenance", plan_file, "--wave", str(wave["wave"]), "-o", "json")
        assert done.code == 0, done.err
        assert done.json["commands"] == wave["commands"]
        moved = [(m["slice"], m["cubes_out"], m["cubes_in"]) for m in done.json["moved"]]
        assert moved == [(m["slice"], m["cubes_out"], m["cubes_in"]) for m in wave["moves"]]
    assert "c00" not in _cubes(two_notices, "train") and "c120" not in _cubes(two_notices, "train")


def test_a_plan_made_before_avoid_is_applied_as_its_commands_were_made(fleet, tmp_path, monkeypatch):
    """A plan saved before `--avoid` (its `reschedule` commands carry none, its moves made without it) was applied
    with the later waves' cubes avoided: the wave moved the slice elsewhere than the plan (refused, exit 1) and
    its commands showed `--avoid`. It is applied as it was made: the plan's move, the plan's commands."""
    import tpufleet.ops.maintenance as maintenance_ops

    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0  # c00
    notices = [
        {"target": "cube:c00", "window_start": "2099-07-01T09:00:00Z", "window_end": "2099-07-01T13:00:00Z"},
        {"target": "cube:c01", "window_start": "2099-07-02T09:00:00Z", "window_end": "2099-07-02T13:00:00Z"},
    ]
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(notices))
    plan = tmp_path / "old.json"
    with monkeypatch.context() as m:  # planned as before `--avoid`: no cube avoided
        m.setattr(maintenance_ops, "later_drains", lambda later: ())
        made = fleet("plan-maintenance", "--notices", tmp_path / "n.yaml", "--max-parallel", "1", "--out", plan)
        assert made.code == 0, made.err
    wave = yaml.safe_load(plan.read_text())["waves"][0]
    assert "tpufleet reschedule s" in wave["commands"] and wave["moves"][0]["cubes_in"] == ["c01"]
    r = fleet("apply-maintenance", plan, "--wave", "1", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["commands"] == wave["commands"] and r.json["moved"][0]["cubes_in"] == ["c01"]
    assert _cubes(fleet, "s") == ["c01"]


def test_a_plans_reschedule_commands_avoiding_different_cubes_are_a_bad_plan(fleet, tmp_path):
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("allocate", "t", "--shape", "4x4x4").code == 0  # c00, c01: both moved by wave 1
    notices = [
        {"target": f"cube:{c}", "window_start": f"2099-07-0{d}T09:00:00Z", "window_end": f"2099-07-0{d}T13:00:00Z"}
        for c, d in (("c00", 1), ("c01", 1), ("c02", 2))
    ]
    (tmp_path / "n.yaml").write_text(yaml.safe_dump(notices))
    plan = tmp_path / "p.json"
    assert fleet("plan-maintenance", "--notices", tmp_path / "n.yaml", "--max-parallel", "2", "--out", plan).code == 0
    doc = yaml.safe_load(plan.read_text())
    commands = doc["waves"][0]["commands"]
    assert commands.count("tpufleet reschedule s --avoid c02") == 1, commands
    commands[commands.index("tpufleet reschedule s --avoid c02")] = "tpufleet reschedule s --avoid c03"
    plan.write_text(json.dumps(doc))
    before = snapshot(fleet.state)
    r = fleet("apply-maintenance", plan, "--wave", "1")
    assert r.code == 2 and "waves.0.commands" in r.err, r.err
    assert snapshot(fleet.state) == before
