"""`diff` with its serials the wrong way round: refused (exit 2, nothing changed) with the command that has them
in order."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import one_line, snapshot


def test_reversed_serials_give_the_command_with_them_swapped(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert fleet("allocate", "b", "--shape", "4x4x4").code == 0
    before = snapshot(fleet.state)
    r = fleet("diff", "3", "1", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].startswith("bad serials 3 1:") and said["error"].endswith("swap them: `tpufleet diff 1 3`")
    assert snapshot(fleet.state) == before


def test_a_serial_past_the_current_one_is_not_told_to_swap(fleet):
    assert "swap" not in one_line(fleet("diff", "5", "0"), 2)


def test_a_commit_diff_does_not_compare_is_not_called_no_change(cli):
    """`import reservation` records sub-blocks and degraded cubes, none of which diff compares: it does not say that
    nothing changed between the serials."""
    reservation = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"
    subs = json.loads(reservation.read_text())
    for sb in subs:
        sb["reservationSubBlockMaintenance"].pop("upcomingGroupMaintenance", None)
    path = cli.state.parent / "sb.json"
    path.write_text(json.dumps(subs))
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", path, "--apply").code == 0
    r = cli("diff", "1")
    assert r.code == 0
    assert "no changes" not in r.out and "slices, faults or cross-connects" in r.out


def test_one_commit_is_said_in_the_singular(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert fleet("diff", "1").out.splitlines()[0] == "serial 1 -> 2 (1 commit)"
