"""A slice an OCS of its own pod evicted, on a fleet with no other pod of its generation: turning fault-tolerant
routing on (or lowering its floor) after the eviction lets it run again on its own cubes, rerouted around the OCS;
before, its move only ever looked for another pod, and it stayed pending until the OCS was repaired."""

from __future__ import annotations

import shlex


def _ok(cli, *args):
    r = cli(*args)
    assert r.code == 0, (args, r.err)
    return r


def _run_next(cli, name: str) -> list[str]:
    steps = _ok(cli, "explain", name, "-o", "json").json["next"]
    for step in steps:
        _ok(cli, *shlex.split(step)[1:])
    return steps


def _slice(cli, name: str) -> dict:
    return next(s for s in _ok(cli, "show", "slices", "-o", "json").json if s["name"] == name)


def _evicted_without_rerouting(cli, shape: str = "4x4x8") -> list[str]:
    _ok(cli, "init")  # one pod
    _ok(cli, "allocate", "a", "--shape", shape, "--no-fault-tolerant-routing")
    _ok(cli, "plan-xconnect", "a", "--apply")
    _ok(cli, "routes", "a")
    cubes = _slice(cli, "a")["cubes"]
    _ok(cli, "inject-fault", "ocs:pod0/x/1")  # f1
    assert _slice(cli, "a")["state"] == "evicted"
    return cubes


def test_turning_rerouting_on_runs_an_evicted_slice_again_on_its_own_cubes(cli):
    cubes = _evicted_without_rerouting(cli)
    why = _ok(cli, "explain", "a", "-o", "json").json["why"]
    assert any("`tpufleet policy a --fault-tolerant-routing`" in w for w in why), why
    assert cli("reschedule", "a").code == 1  # no other pod: nowhere to go yet
    _ok(cli, "policy", "a", "--fault-tolerant-routing")
    assert _ok(cli, "explain", "a", "-o", "json").json["next"][0] == "tpufleet reschedule a"
    _ok(cli, "reschedule", "a")
    row = _slice(cli, "a")
    assert (row["state"], row["cubes"]) == ("degraded", cubes)
    assert row["degraded"]["faults"] == ["f1"] and row["degraded"]["all_to_all_retained"] >= 0.5
    _run_next(cli, "a")  # the clear, the rewire and the routing of the healthy tables
    row = _slice(cli, "a")
    assert (row["state"], row["cubes"], row["routes"], row["missing_xconnects"]) == ("connected", cubes, "fresh", 0)


def test_a_floor_the_reroute_does_not_keep_still_waits_for_the_repair(cli, tmp_path):
    cubes = _evicted_without_rerouting(cli, "8x8x8")  # rerouted around x/1: 0.93 of its all-to-all
    _ok(cli, "policy", "a", "--fault-tolerant-routing", "--min-throughput", "0.95")
    before = (tmp_path / "state" / "state.json").read_bytes()
    r = cli("reschedule", "a")
    assert r.code == 1 and "below its floor of 0.95" in r.err
    assert (tmp_path / "state" / "state.json").read_bytes() == before
    assert _run_next(cli, "a")[0] == "tpufleet clear-fault f1"
    row = _slice(cli, "a")
    assert (row["state"], row["cubes"], row["routes"]) == ("connected", cubes, "fresh")
