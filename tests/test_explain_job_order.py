"""`explain JOB` merges its slices' steps; a running slice's own step (its `routes`) came after another slice's
`clear-fault`, which waits for a repair, so its tables waited for a repair they do not need."""

from __future__ import annotations


def _ok(cli, *args):
    r = cli(*args)
    assert r.code == 0, (args, r.err)
    return r


def test_a_step_that_waits_for_nothing_comes_before_a_clear(fleet):
    _ok(fleet, "allocate", "a", "--shape", "4x4x4", "--cubes", "c01")  # c01's cross-connects in place, then freed
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "release", "a")
    _ok(fleet, "inject-fault", "ocs:pod0/x/1")  # f1: m-0's pair there deferred; m-1's already in place
    _ok(fleet, "allocate", "m", "--shape", "4x4x4", "--slices", "2")
    _ok(fleet, "plan-xconnect", "m", "--apply")
    steps = _ok(fleet, "explain", "m", "-o", "json").json["next"]
    assert steps == [
        "tpufleet routes m-0",
        "tpufleet routes m-1",
        "tpufleet clear-fault f1",
        "tpufleet plan-xconnect m-0 --apply",
        "tpufleet routes m-0",
    ]
    for step in steps[: steps.index("tpufleet clear-fault f1")]:  # done while the repair is awaited
        _ok(fleet, *step.split()[1:])
    routes = {s["name"]: s["routes"] for s in _ok(fleet, "show", "slices", "-o", "json").json}
    assert routes == {"m-0": "fresh", "m-1": "fresh"}
