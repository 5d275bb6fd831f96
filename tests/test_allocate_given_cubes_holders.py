"""`allocate --cubes` onto a cube already held was refused as "held by a slice, or reserved for an evicted slice's
move", which left the operator to find out which: the refusal names the slice holding each cube, or the evicted
slice whose move is reserved there."""

from __future__ import annotations

import json


def test_a_given_cube_already_held_names_its_holder(cli):
    assert cli("init").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert cli("allocate", "b", "--shape", "4x4x4", "--cubes", "c02").code == 0
    r = cli("allocate", "x", "--shape", "4x4x8", "--cubes", "c01,c02", "-o", "json")
    assert r.code == 1
    assert json.loads(r.err)["items"] == [
        "c01 is already allocated (held by slice a)",
        "c02 is already allocated (held by slice b)",
    ]
    assert cli("inject-fault", "host:c02/0").code == 0  # b evicted, its move reserved on a free cube
    [moved_to] = cli("show", "slices", "-o", "json").json[1]["proposal"]["cubes"]
    r = cli("allocate", "x", "--shape", "4x4x4", "--cubes", moved_to, "-o", "json")
    assert r.code == 1
    refused = json.loads(r.err)
    assert refused["error"].endswith(f": {moved_to} is already allocated (reserved for the move of evicted slice b)")


def test_each_problem_is_given_once(cli):
    """The error line joined every problem, and the lines under it listed them again."""
    assert cli("init").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    r = cli("allocate", "b", "--shape", "4x4x8", "--cubes", "c00,c01")
    assert r.code == 1
    assert r.err.splitlines() == [
        "tpufleet: error: cannot use the given cubes for 4x4x8: 2 problems",
        "  c00 is already allocated (held by slice a)",
        "  c01 is already allocated (held by slice a)",
    ]
    r = cli("allocate", "c", "--shape", "4x4x4", "--cubes", "c00")
    assert r.err.splitlines() == [
        "tpufleet: error: cannot use the given cubes for 4x4x4: c00 is already allocated (held by slice a)"
    ]
