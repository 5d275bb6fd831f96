"""`explain SLICE` of a slice on a cube whose maintenance the reservation announced gave `plan-maintenance --out
plan.json` and `apply-maintenance plan.json --wave 1` only, also when the plan moves the slice in a later wave:
run as given, they left it on the cube, and `explain` gave the same two steps again, never moving it. The steps
now go up to the wave that moves it."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


def _window(block: dict, start: str, end: str) -> None:
    upcoming = block["reservationSubBlockMaintenance"]["upcomingGroupMaintenance"]
    upcoming.update(windowStartTime=start, windowEndTime=end, latestWindowStartTime=end)


def test_the_steps_reach_the_wave_that_moves_the_slice(cli, tmp_path):
    blocks = json.loads(FIXTURE.read_text())
    _window(blocks[40], "2099-06-01T09:00:00Z", "2099-06-01T13:00:00Z")  # announced: c40 serves until then
    _window(blocks[99], "2026-01-01T09:00:00Z", "2099-01-01T09:00:00Z")  # under way: its drain opens at the import
    reservation = tmp_path / "sub-blocks.json"
    reservation.write_text(json.dumps(blocks))
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("allocate", "m", "--shape", "4x4x8", "--cubes", "c40,c41").code == 0
    assert cli("plan-xconnect", "m", "--apply").code == 0
    assert cli("routes", "m").code == 0
    assert cli("import", "reservation", reservation, "--apply").code == 0
    steps = cli("explain", "m", "-o", "json").json["next"]
    assert steps == [
        "tpufleet plan-maintenance --out plan.json",
        "tpufleet apply-maintenance plan.json --wave 1",
        "tpufleet apply-maintenance plan.json --wave 2",
    ]
    plan = tmp_path / "plan.json"
    assert cli("plan-maintenance", "--out", plan).code == 0
    for wave in ("1", "2"):
        r = cli("apply-maintenance", plan, "--wave", wave)
        assert r.code == 0, r.err
    assert "c40" not in cli("explain", "m", "-o", "json").json["cubes"]
