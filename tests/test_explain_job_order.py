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


def test_an_elastic_jobs_move_that_waits_for_no_repair_comes_before_the_clear(cli):
    """An OCS evicts both slices of an elastic job that opted out of rerouting; another pod holds one of them now:
    its move comes first, so the job runs degraded while the OCS is repaired, then the other slice's move."""
    _ok(cli, "init", "--pods", "2")
    _ok(cli, "allocate", "fill", "--shape", "4x4x4", "--slices", "62", "--pod", "pod0")  # pod0: room for one slice
    _ok(cli, "allocate", "e", "--shape", "4x4x8", "--slices", "2", "--elastic", "1", "--pod", "pod1",
        "--no-fault-tolerant-routing")  # fmt: skip
    _ok(cli, "plan-xconnect", "e", "--apply")
    hit = _ok(cli, "inject-fault", "ocs:pod1/x/1", "-o", "json").json["jobs"][0]["next"]
    steps = _ok(cli, "explain", "e", "-o", "json").json["next"]
    assert steps == hit
    assert steps == [
        "tpufleet reschedule e-0",
        "tpufleet routes e-0",
        "tpufleet clear-fault f1",
        "tpufleet reschedule e-1",
        "tpufleet routes e-1",
    ]
    for step in steps[:2]:  # done while the repair is awaited
        _ok(cli, *step.split()[1:])
    assert _ok(cli, "show", "jobs", "-o", "json").json[0]["state"] == "degraded"
    for step in steps[2:]:
        _ok(cli, *step.split()[1:])
    assert _ok(cli, "explain", "e", "-o", "json").json["state"] == "running"
