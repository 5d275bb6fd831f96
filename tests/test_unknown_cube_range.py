"""A cube the fleet lacks is refused (exit 2, nothing changed) naming the cubes it has, first to last, so the
operator sees the range at once (one pod: c00-c63; TPU7x, two pods: c00-c287)."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize(
    "args",
    [
        ("inject-fault", "cube:c64", "--dry-run"),
        ("explain", "host:c64/1"),
        ("clear-fault", "cube:c64"),
        ("allocate", "x", "--shape", "4x4x4", "--cubes", "c64"),
    ],
)
def test_a_cube_past_the_fleet_names_the_range(fleet, args):
    before = snapshot(fleet.state)
    line = one_line(fleet(*args), 2)
    assert "unknown cube 'c64'" in line and line.endswith("(fleet has 64 cubes: c00-c63)")
    assert snapshot(fleet.state) == before


def test_two_tpu7x_pods_name_their_range(cli):
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    r = cli("inject-fault", "cube:c300", "--dry-run", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["error"].endswith("(fleet has 288 cubes: c00-c287)")
