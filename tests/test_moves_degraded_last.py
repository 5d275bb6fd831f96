"""A cube whose reservation sub-block is DEGRADED still serves, but `plan-spares` holds it back last: it is no cube
to move a displaced slice onto while healthy ones are free. Moves (`reschedule`'s proposal, a maintenance plan's)
and sub-cube slices took it first, in the pod's order; they now take it after the healthy cubes. The `reserved`
fixture: c17, c58 and c121 DEGRADED; c40 and c99 drained."""

from __future__ import annotations

import yaml


def _after_a_68_cube_slice(reserved):
    """Slice a on c00-c16, so c17 (DEGRADED) is the first free cube; slice c on c18, wired."""
    assert reserved("allocate", "a", "--shape", "4x4x68").code == 0
    assert reserved("allocate", "c", "--shape", "4x4x4", "--cubes", "c18").code == 0
    assert reserved("plan-xconnect", "c", "--apply").code == 0


def test_a_displaced_slice_is_proposed_a_healthy_cube(reserved):
    _after_a_68_cube_slice(reserved)
    hit = reserved("inject-fault", "host:c18/0", "-o", "json").json
    [row] = [s for s in hit["slices"] if s["slice"] == "c"]
    assert row["replacement"]["cubes"] == ["c19"]
    r = reserved("reschedule", "c", "-o", "json")
    assert r.code == 0, r.err
    assert reserved("explain", "c", "-o", "json").json["cubes"] == ["c19"]


def test_a_maintenance_move_lands_on_a_healthy_cube(reserved, tmp_path):
    _after_a_68_cube_slice(reserved)
    notices = tmp_path / "n.yaml"
    notices.write_text(
        yaml.safe_dump(
            [{"target": "cube:c18", "window_start": "2099-12-07T09:00:00Z", "window_end": "2099-12-07T13:00:00Z"}]
        )
    )
    plan = reserved("plan-maintenance", "--notices", notices, "-o", "json").json
    [move] = [m for w in plan["waves"] for m in w["moves"]]
    assert (move["slice"], move["cubes_out"], move["cubes_in"]) == ("c", ["c18"], ["c19"])


def test_a_sub_cube_slice_takes_a_healthy_cube_first(reserved):
    assert reserved("allocate", "a", "--shape", "4x4x68").code == 0
    d = reserved("allocate", "sm", "--shape", "2x2x2", "-o", "json").json
    assert d["cubes"] == ["c18"]


def test_a_new_whole_cube_slice_still_takes_the_free_cubes_in_order(reserved):
    """Deliberate: a new slice takes the pod's free cubes in order (a degraded cube serves)."""
    assert reserved("allocate", "a", "--shape", "4x4x68").code == 0
    assert reserved("allocate", "b", "--shape", "4x4x4", "-o", "json").json["cubes"] == ["c17"]
