"""Multislice jobs through the CLI: allocate N slices at once, wire, a host fault on one slice, `show jobs`,
`reschedule`, release; bad input exits 2 naming the value and leaves the state as it was.

Fleets are two pods of 8 cubes (`init --pods 2 --cubes-per-pod 8`): room for the issue's 4-slice job over 2
pods and small state files, so each command stays fast.
"""

from __future__ import annotations

import json

import pytest

from helpers import snapshot


@pytest.fixture
def pods2(cli):
    assert cli("init", "--pods", "2", "--cubes-per-pod", "8").code == 0
    return cli


def _ok(r, what: str = ""):
    assert r.code == 0, (what, r.err)
    return r.json


def _slices(fleet) -> dict[str, dict]:
    return {r["name"]: r for r in _ok(fleet("show", "slices", "-o", "json"))}


def _job(fleet, name: str = "j") -> dict:
    (row,) = [r for r in _ok(fleet("show", "jobs", "-o", "json")) if r["name"] == name]
    return row


def _no_cube_twice(fleet) -> None:
    held = [c for r in _slices(fleet).values() if not r["machines"] for c in r["cubes"]]
    assert len(held) == len(set(held)), held


def _four_slices_over_two_pods(fleet, *extra: str) -> dict:
    d = _ok(fleet("allocate", "j", "--shape", "4x4x8", "--slices", "4", "--spread", *extra, "-o", "json"))
    assert [s["slice"] for s in d["slices"]] == ["j-0", "j-1", "j-2", "j-3"]
    assert d["per_pod"] == {"pod0": 2, "pod1": 2} and d["pods"] == ["pod0", "pod1"]
    assert "not one pod each" in d["note"]  # 4 slices, 2 pods: said, not hidden
    assert len({c for s in d["slices"] for c in s["cubes"]}) == 8
    assert _ok(fleet("status", "-o", "json"))["cubes"] == {"free": 8, "allocated": 8, "out": 0}
    assert _job(fleet)["state"] == "pending"
    wired = _ok(fleet("plan-xconnect", "j", "--apply", "-o", "json"))
    assert wired["applied"] and [p["slice"] for p in wired["plans"]] == ["j-0", "j-1", "j-2", "j-3"]
    assert wired["summary"] == {"add": 4 * 96, "remove": 0, "keep": 0}
    job = _job(fleet)
    assert (job["state"], job["active_slices"], job["total_slices"]) == ("running", 4, 4)
    return d


def _host_fault_on(fleet, d: dict, slice_name: str) -> dict:
    (cube,) = [s["cubes"][0] for s in d["slices"] if s["slice"] == slice_name]
    (radius,) = [_ok(fleet("inject-fault", f"host:{cube}/3", "-o", "json"))]
    assert [(s["slice"], s["action"]) for s in radius["slices"]] == [(slice_name, "reschedule")]
    return radius


def test_a_non_elastic_job_stops_whole_and_runs_again_after_one_reschedule(pods2):
    d = _four_slices_over_two_pods(pods2)
    _host_fault_on(pods2, d, "j-1")
    job = _job(pods2)
    assert (job["state"], job["active_slices"], job["evicted"]) == ("stopped", 3, ["j-1"])
    assert (job["throughput_kept"], job["step_slowdown"]) == (0, None)
    slices = _slices(pods2)
    assert [slices[n]["state"] for n in ("j-0", "j-2", "j-3")] == ["connected"] * 3  # still held
    proposals = {n: r["proposal"] for n, r in slices.items() if r["proposal"]}
    assert list(proposals) == ["j-1"] and proposals["j-1"]["pod"] == slices["j-1"]["pod"]  # one replacement slice
    text = pods2("show", "jobs").out
    assert "stopped" in text and "3/4" in text and "j-1" in text
    moved = _ok(pods2("reschedule", "j-1", "-o", "json"))
    assert moved["cubes"] == proposals["j-1"]["cubes"]
    job = _job(pods2)
    assert (job["state"], job["active_slices"], job["evicted"], job["throughput_kept"]) == ("running", 4, [], 1)
    assert _slices(pods2)["j-1"]["job"] == "j"
    _no_cube_twice(pods2)


def test_an_elastic_job_runs_on_three_of_four_slices_and_reports_the_slowdown(pods2):
    d = _four_slices_over_two_pods(pods2, "--elastic", "3")
    _host_fault_on(pods2, d, "j-2")
    job = _job(pods2)
    assert (job["state"], job["active_slices"], job["total_slices"], job["elastic_min"]) == ("degraded", 3, 4, 3)
    assert (job["throughput_kept"], job["step_slowdown"]) == (0.75, 1.333)
    status = _ok(pods2("status", "-o", "json"))
    assert [(j["name"], j["state"]) for j in status["jobs"]] == [("j", "degraded")]
    assert {s["name"]: s["job"] for s in status["slices"]} == {f"j-{i}": "j" for i in range(4)}
    assert "3/4 slices active  degraded, keeps 0.75 (step x1.333)" in pods2("status").out
    _ok(pods2("reschedule", "j-2", "-o", "json"))
    assert _job(pods2)["state"] == "running"
    _no_cube_twice(pods2)


def test_reschedule_of_a_jobs_name_says_it_is_a_job_and_names_its_evicted_slice(pods2):
    d = _four_slices_over_two_pods(pods2)
    _host_fault_on(pods2, d, "j-1")
    before = snapshot(pods2.state)
    r = pods2("reschedule", "j")
    assert r.code == 1 and "'j' is a multislice job, not a slice" in r.err and "evicted: j-1" in r.err, r.err
    assert "unknown slice" not in r.err
    assert snapshot(pods2.state) == before


def test_release_frees_every_slice_and_its_tables(pods2):
    _four_slices_over_two_pods(pods2)
    assert pods2("routes", "j-0", "-o", "json").code == 0
    assert (pods2.state / "routes" / "j-0.npz").exists()
    before = snapshot(pods2.state)
    r = pods2("release", "j-0")
    assert r.code == 1 and "release the job" in r.err and "'j'" in r.err and r.err.count("\n") == 1
    assert snapshot(pods2.state) == before
    d = _ok(pods2("release", "j", "-o", "json"))
    assert d["slices"] == ["j-0", "j-1", "j-2", "j-3"] and len(d["released_cubes"]) == 8
    assert _ok(pods2("status", "-o", "json"))["cubes"] == {"free": 16, "allocated": 0, "out": 0}
    assert _ok(pods2("show", "jobs", "-o", "json")) == [] and not list((pods2.state / "routes").glob("j-*"))
    assert "jobs" not in json.loads((pods2.state / "state.json").read_text())


def test_a_saved_job_plan_is_applied_in_one_step_and_not_twice(pods2, tmp_path):
    assert pods2("allocate", "j", "--shape", "4x4x4", "--slices", "3").code == 0
    plan = tmp_path / "j.plan"
    assert pods2("plan-xconnect", "j", "--out", plan, "--detailed-exitcode").code == 4
    saved = json.loads(plan.read_text())
    assert saved["kind"] == "tpufleet-xconnect-job-plan" and [p["slice"] for p in saved["plans"]] == [
        "j-0",
        "j-1",
        "j-2",
    ]
    serial = _ok(pods2("status", "-o", "json"))["serial"]
    d = _ok(pods2("apply-xconnect", plan, "-o", "json"))
    assert d["applied"] and d["serial"] == serial + 1 and d["summary"]["add"] == 3 * 48
    assert _job(pods2)["state"] == "running"
    assert pods2("plan-xconnect", "j", "--detailed-exitcode").code == 0  # nothing left to do
    before = snapshot(pods2.state)
    again = _ok(pods2("apply-xconnect", plan, "-o", "json"))  # a runbook run twice: nothing to do
    assert again["already_applied"] and again["serial"] == serial + 1 and again["summary"]["add"] == 0
    assert snapshot(pods2.state) == before
    one = _ok(pods2("plan-xconnect", "j-1", "-o", "json"))  # a job's slice plans alone, as any slice
    assert one["slice"] == "j-1" and one["summary"]["add"] == 0


def test_allocate_without_slices_is_unchanged(pods2):
    d = _ok(pods2("allocate", "solo", "--shape", "4x4x8", "-o", "json"))
    assert d["slice"] == "solo" and "job" not in d and len(d["cubes"]) == 2
    assert _slices(pods2)["solo"]["job"] is None
    assert "job" not in json.loads((pods2.state / "state.json").read_text())["slices"]["solo"]


BAD_INPUT = [
    (["new", "--slices", "0"], "--slices: '0'"),
    (["new", "--slices", "-2"], "--slices: '-2'"),
    (["new", "--slices", "4", "--elastic", "5"], "--elastic: '5' is above --slices 4"),
    (["new", "--slices", "4", "--elastic", "0"], "--elastic: '0' is below 1"),
    (["new", "--elastic", "2"], "--elastic: only with --slices"),
    (["new", "--spread"], "--spread: only with --slices"),
    (["solo", "--slices", "2"], "job name 'solo' collides with slice 'solo'"),
    (["SOLO", "--slices", "2"], "collides with slice 'solo'"),
    (["x", "--slices", "2"], "x-1 (slice 'x-1')"),  # a slice name the job would create
    (["JJ"], "slice name 'JJ' collides with job 'jj'"),
    (["new", "--slices", "2", "--cubes", "c00"], "--cubes: 'c00' with --slices"),
    (["new", "--slices", "2", "--pod", "pod0", "--pod", "pod0"], "--pod: 'pod0' is given twice"),
    (["new", "--slices", "2", "--pod", "pod0,pod9"], "unknown pod 'pod9'"),
    (["new", "--pod", "pod0", "--pod", "pod1"], "--pod: 'pod0', 'pod1': a slice lives in one pod"),
    (["n" * 63, "--slices", "2"], "would pass 64 characters"),  # its slices' names would
]


def test_bad_input_exits_2_naming_the_value_and_changes_nothing(pods2):
    """One fleet for every case (each is refused, so each starts from the same state)."""
    for name, extra in (("solo", []), ("x-1", []), ("jj", ["--slices", "2"])):
        assert pods2("allocate", name, "--shape", "4x4x4", *extra).code == 0
    before = snapshot(pods2.state)
    for args, named in BAD_INPUT:
        r = pods2("allocate", *args, "--shape", "4x4x4")
        assert r.code == 2 and named in r.err and r.err.count("\n") == 1, (args, r.err)
        assert snapshot(pods2.state) == before, args


def test_refusals_exit_1_and_change_nothing(pods2):
    assert pods2("allocate", "j", "--shape", "4x4x8", "--slices", "2").code == 0
    before = snapshot(pods2.state)
    for args, said in (
        (["j", "--shape", "4x4x4", "--slices", "2"], "job 'j' already exists"),
        (["big", "--shape", "4x4x8", "--slices", "7"], "6 placed, then"),  # all or nothing: 14 cubes free
        (["big", "--shape", "4x4x8", "--slices", "5", "--pod", "pod1"], "4 placed"),
    ):
        r = pods2("allocate", *args)
        assert r.code == 1 and said in r.err, r.err
        assert snapshot(pods2.state) == before
    r = pods2("release", "nothing")
    assert r.code == 1 and snapshot(pods2.state) == before


def test_a_job_of_sub_cube_slices_and_its_table(pods2):
    d = _ok(pods2("allocate", "dev", "--shape", "2x2x2", "--slices", "3", "-o", "json"))
    assert [len(s["machines"]) for s in d["slices"]] == [2, 2, 2]
    machines = [(s["cubes"][0], m) for s in d["slices"] for m in s["machines"]]
    assert len(machines) == len(set(machines))  # no machine in two slices
    assert _ok(pods2("plan-xconnect", "dev", "--apply", "-o", "json"))["summary"]["add"] == 0
    assert _job(pods2, "dev")["state"] == "running"
    table = pods2("show", "jobs").out.splitlines()
    assert table[0].split()[:4] == ["job", "shape", "active", "elastic"] and "3/3" in table[2]


def test_policy_of_a_job_sets_every_slice(pods2):
    assert pods2("allocate", "j", "--shape", "4x4x4", "--slices", "2", "--min-throughput", "0.7").code == 0
    assert {r["min_throughput"] for r in _slices(pods2).values()} == {0.7}
    d = _ok(pods2("policy", "j", "--min-throughput", "0.9", "-o", "json"))
    assert d["job"] == "j" and [s["slice"] for s in d["slices"]] == ["j-0", "j-1"]
    assert _ok(pods2("policy", "j", "--no-fault-tolerant-routing", "-o", "json"))["job"] == "j"
    assert {(r["min_throughput"], r["fault_tolerant_routing"]) for r in _slices(pods2).values()} == {(0.9, False)}
    assert pods2("history", "-o", "json").json[-1]["summary"] == "policy job j: fault_tolerant_routing off"


def test_policy_refuses_a_floor_with_fault_tolerant_routing_off_as_allocate_does(pods2):
    """A floor for rerouting given with --no-fault-tolerant-routing (a slice never rerouted) is contradictory:
    refused as allocate refuses it, exit 2 naming both options, nothing changed."""
    assert pods2("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    assert pods2("allocate", "s", "--shape", "4x4x4").code == 0
    before = snapshot(pods2.state)
    for name in ("j", "s", "j-0"):
        r = pods2("policy", name, "--min-throughput", "0.9", "--no-fault-tolerant-routing")
        assert r.code == 2 and "--min-throughput 0.9" in r.err and "--no-fault-tolerant-routing" in r.err
        assert snapshot(pods2.state) == before


def test_a_job_plan_whose_slices_remove_the_same_old_cross_connects_applies(pods2, tmp_path):
    """A released 4x4x8 on c00,c01 leaves cross-connects joining the two cubes; a job's two 4x4x4 slices there
    each need those ports, so both slices' plans remove the same old pairs: the saved job plan still applies."""
    assert pods2("allocate", "old", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert pods2("plan-xconnect", "old", "--apply").code == 0
    assert pods2("release", "old").code == 0
    d = _ok(pods2("allocate", "j", "--shape", "4x4x4", "--slices", "2", "-o", "json"))
    assert [s["cubes"] for s in d["slices"]] == [["c00"], ["c01"]]
    plan = tmp_path / "j.plan"
    saved = _ok(pods2("plan-xconnect", "j", "--out", plan, "-o", "json"))
    assert [p["summary"]["remove"] for p in saved["plans"]] == [32, 32]  # the same z pairs, in both plans
    applied = _ok(pods2("apply-xconnect", plan, "-o", "json"))
    assert applied["applied"] and applied["summary"]["add"] == 32  # x and y: the old self-loops kept
    assert _job(pods2)["state"] == "running"
    assert _ok(pods2("status", "-o", "json"))["ocs"]["xconnects"] == 96  # each cube wired to itself, nothing else


@pytest.mark.parametrize(
    ("extra", "action", "state"), [((), "stop", "stopped"), (("--elastic", "3"), "continue", "degraded")]
)
def test_inject_fault_and_reschedule_report_the_job(pods2, extra, action, state):
    d = _four_slices_over_two_pods(pods2, *extra)
    radius = _host_fault_on(pods2, d, "j-1")
    (hit,) = radius["jobs"]
    assert (hit["job"], hit["action"], hit["state"], hit["active_slices"], hit["total_slices"]) == (
        "j",
        action,
        state,
        3,
        4,
    )
    assert [r["slice"] for r in hit["replacements"]] == ["j-1"]
    moved = _ok(pods2("reschedule", "j-1", "-o", "json"))
    assert (moved["job"]["name"], moved["job"]["state"], moved["job"]["active_slices"]) == ("j", "running", 4)


@pytest.mark.parametrize("spread", [True, False])
def test_a_spread_jobs_slice_moved_off_a_failed_ocs_goes_to_the_pod_with_fewest_of_its_slices(cli, spread):
    """Three pods of 4 cubes, a 2-cube slice filling half of pod0: the job's two slices land in pod0 and pod1
    either way. An OCS fault in pod0 moves j-0 to another pod: for a spread job pod2 (none of its slices) rather
    than pod1 (j-1), though pod1 comes first in the fleet; a job allocated without --spread takes the fleet's
    order."""
    assert cli("init", "--pods", "3", "--cubes-per-pod", "4").code == 0
    _ok(cli("allocate", "filler", "--shape", "4x4x8", "--pod", "pod0", "-o", "json"))
    _ok(cli("plan-xconnect", "filler", "--apply", "-o", "json"))  # wired, it reroutes around the fault below
    extra = ("--spread",) if spread else ()
    d = _ok(
        cli("allocate", "j", "--shape", "4x4x8", "--slices", "2", *extra, "--no-fault-tolerant-routing", "-o", "json")
    )
    assert [s["pod"] for s in d["slices"]] == ["pod0", "pod1"]
    _ok(cli("plan-xconnect", "j", "--apply", "-o", "json"))
    radius = _ok(cli("inject-fault", "ocs:pod0/x/3", "-o", "json"))
    hits = {s["slice"]: s for s in radius["slices"]}
    assert hits["filler"]["action"] == "reroute"
    hit = hits["j-0"]
    expected_pod = "pod2" if spread else "pod1"
    assert hit["action"] == "reschedule" and hit["replacement"]["pod"] == expected_pod
    _ok(cli("reschedule", "j-0", "-o", "json"))
    assert _slices(cli)["j-0"]["pod"] == expected_pod


def test_a_spread_job_keeps_one_pod_each_beside_a_pod_with_an_ocs_down(cli):
    """Pods with every OCS up first broke the spread: with ocs:pod0/y/6 down both slices of a spread job went to
    pod1, "pod0 had no room" said of a pod with 64 free cubes, and a sub-cube job (which uses no OCS) did the same.
    The spread comes first; a pod with every OCS up breaks ties (the first slice goes to pod1), and a job without
    fault-tolerant routing, which pod0 could not wire before the repair, still packs into pod1."""
    assert cli("init", "--pods", "2").code == 0 and cli("inject-fault", "ocs:pod0/y/6").code == 0
    job = _ok(cli("allocate", "j", "--shape", "4x4x8", "--slices", "2", "--spread", "-o", "json"))
    assert [s["pod"] for s in job["slices"]] == ["pod1", "pod0"] and job["note"] == "one pod each (pod1, pod0)"
    small = _ok(cli("allocate", "k", "--shape", "2x2x4", "--slices", "2", "--spread", "-o", "json"))
    assert [s["pod"] for s in small["slices"]] == ["pod0", "pod1"]
    rigid = ("--spread", "--no-fault-tolerant-routing", "-o", "json")
    assert [s["pod"] for s in _ok(cli("allocate", "r", "--shape", "4x4x8", "--slices", "2", *rigid))["slices"]] == [
        "pod1",
        "pod1",
    ]


def test_two_slices_moved_off_one_failed_ocs_go_to_different_pods(cli):
    """Four pods of 4 cubes; a spread job of 4 slices sits two and two in pod0 and pod1. An OCS fault in pod0
    moves both of its slices: the first to pod2, the second (seeing the first's reservation) to pod3."""
    assert cli("init", "--pods", "4", "--cubes-per-pod", "4").code == 0
    for name, pod in (("f2", "pod2"), ("f3", "pod3")):
        _ok(cli("allocate", name, "--shape", "4x8x8", "--pod", pod, "-o", "json"))
    d = _ok(
        cli(
            "allocate",
            "j",
            "--shape",
            "4x4x8",
            "--slices",
            "4",
            "--spread",
            "--no-fault-tolerant-routing",
            "-o",
            "json",
        )
    )
    assert d["per_pod"] == {"pod0": 2, "pod1": 2}
    for name in ("f2", "f3"):
        _ok(cli("release", name, "-o", "json"))
    _ok(cli("plan-xconnect", "j", "--apply", "-o", "json"))
    radius = _ok(cli("inject-fault", "ocs:pod0/x/3", "-o", "json"))
    moved = {s["slice"]: s["replacement"]["pod"] for s in radius["slices"] if s["action"] == "reschedule"}
    assert sorted(moved.values()) == ["pod2", "pod3"], moved


def test_routes_of_a_job_stores_every_wired_slice(pods2):
    d = _ok(pods2("allocate", "j", "--shape", "4x4x8", "--slices", "2", "--spread", "-o", "json"))
    r = pods2("routes", "j")
    assert r.code == 1 and "has no wired slice" in r.err  # allocated, not wired yet
    _ok(pods2("plan-xconnect", "j", "--apply", "-o", "json"))
    routed = _ok(pods2("routes", "j", "-o", "json"))
    assert routed["job"] == "j" and routed["stored"] is True
    assert [s["slice"] for s in routed["slices"]] == [s["slice"] for s in d["slices"]] == ["j-0", "j-1"]
    assert all(s["unroutable_pairs"] == 0 and s["stored"] for s in routed["slices"])
    rows = _slices(pods2)
    assert rows["j-0"]["routes"] == rows["j-1"]["routes"] == "fresh"
    text = pods2("routes", "j")
    assert text.code == 0 and text.out.count("are already these: nothing changed") == 2  # run again: no commit
    assert routed["skipped"] == []
    (cube,) = rows["j-1"]["cubes"][:1]
    assert pods2("inject-fault", f"host:{cube}/0").code == 0  # j-1 evicted: skipped, and said
    partial = _ok(pods2("routes", "j", "-o", "json"))
    assert [s["slice"] for s in partial["slices"]] == ["j-0"]
    assert partial["skipped"] == [{"slice": "j-1", "state": "evicted"}]
    assert "slice j-1: skipped (evicted)" in pods2("routes", "j").out
    before = snapshot(pods2.state)
    for extra in (("--out", "x.npz"), ("--table-capacity", "8")):  # (asked before any routing)
        r = pods2("routes", "j", *extra)
        assert r.code == 2 and "give one slice of the job" in r.err
    assert snapshot(pods2.state) == before


def test_policy_of_one_slice_of_a_job_in_table_output(pods2):
    """Once exit 70 (the table output took the slice's `job` for a whole job's result)."""
    _ok(pods2("allocate", "j", "--shape", "4x4x8", "--slices", "2", "-o", "json"))
    r = pods2("policy", "j-1", "--min-throughput", "0.6")
    assert r.code == 0, r.err
    assert "j-1" in r.out and "0.6" in r.out
    assert {s["name"]: s["min_throughput"] for s in _slices(pods2).values() if s["name"].startswith("j-")} == {
        "j-0": 0.5,
        "j-1": 0.6,
    }


def test_routes_of_a_job_of_sub_cube_slices_needs_no_wiring(pods2):
    _ok(pods2("allocate", "k", "--shape", "2x2x1", "--slices", "2", "-o", "json"))
    routed = _ok(pods2("routes", "k", "-o", "json"))
    assert [s["slice"] for s in routed["slices"]] == ["k-0", "k-1"] and routed["stored"]


def test_a_released_jobs_cubes_are_listed_in_the_pods_order(cli):
    """c100 after c99, not between c10 and c11 as text sorts them (a TPU7x pod has 144 cubes)."""
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("allocate", "fill", "--shape", "16x16x24").code == 0  # c00-c95
    assert cli("allocate", "fill2", "--shape", "4x4x8").code == 0  # c96, c97
    assert cli("allocate", "j", "--shape", "4x4x8", "--slices", "2").code == 0  # c98, c99 / c100, c101
    r = cli("release", "j", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["released_cubes"] == r.json["back_in_pool"] == ["c98", "c99", "c100", "c101"]


def test_a_spread_jobs_cubes_are_listed_as_the_fleet_counts_them_not_slice_by_slice(cli):
    """Spread over two pods, a job's release listed c00,c01,c64,c65,c02,c03: slice by slice. The cubes are in the
    fleet's order, in JSON and in the table line, each once."""
    assert cli("init", "--pods", "2").code == 0
    assert cli("allocate", "j", "--shape", "4x4x8", "--slices", "3", "--spread").code == 0
    placed = sorted(c for s in cli("show", "slices", "-o", "json").json for c in s["cubes"])
    r = cli("release", "j", "-o", "json")
    assert r.code == 0, r.err
    assert sorted(r.json["released_cubes"]) == placed and len(placed) == 6
    assert r.json["released_cubes"] == r.json["back_in_pool"] == sorted(placed, key=lambda c: int(c[1:]))
    assert cli("allocate", "j", "--shape", "4x4x8", "--slices", "3", "--spread").code == 0
    line = cli("release", "j").out
    assert ",".join(r.json["released_cubes"]) + " back in the pool" in line


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ({"summary": {"add": 0, "remove": 0, "keep": 0}}, "summary {'add': 0"),
        ({"serial": 99}, "serial 99"),
    ],
    ids=["summary", "serial"],
)
def test_a_job_plan_whose_own_reviewed_fields_were_edited_is_refused(pods2, tmp_path, edit, named):
    """The job's summary is what a reviewer reads of a job plan ("0 to add"); each slice's part was checked, the
    job's own fields were not, and the plan was applied as if they said what it does."""
    assert pods2("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    plan = tmp_path / "j.plan"
    assert pods2("plan-xconnect", "j", "--out", plan).code == 0
    plan.write_text(json.dumps({**json.loads(plan.read_text()), **edit}))
    before = snapshot(pods2.state)
    r = pods2("apply-xconnect", plan)
    assert r.code == 1 and str(plan) in r.err and named in r.err and "plan again" in r.err
    assert snapshot(pods2.state) == before


def test_collective_compares_a_job_with_one_slice_of_its_generations_shapes(cli):
    """Three 4x4x8 slices of TPU v5p (384 chips): v5p takes 4x8x12 and 4x4x24 as one slice; the built-in TPU v4
    forms (C <= 2A) have none, and the comparison said no slice of 384 chips existed."""
    assert cli("init", "--generation", "tpu-v5p", "--pods", "2", "--cubes-per-pod", "8").code == 0
    assert cli("allocate", "j", "--shape", "4x4x8", "--slices", "3", "--spread", "--elastic", "2").code == 0
    assert cli("plan-xconnect", "j", "--apply").code == 0
    assert cli("routes", "j").code == 0
    r = cli("collective", "j", "--op", "all-reduce", "--bytes", "1GB", "--model-flops-per-step", "1e15", "-o", "json")
    assert r.code == 0, r.err
    one = r.json["one_slice"]
    assert one["shape"] in ("4x8x12", "4x4x24") and one["note"] == "fastest of 4x4x24, 4x8x12 (healthy tables)"
    assert one["all_reduce_s"] > 0 and one["throughput_ratio"] is not None


def test_explain_of_an_unknown_name_lists_the_slices_and_the_jobs_it_takes(fleet):
    assert fleet("allocate", "llm", "--shape", "4x4x8", "--slices", "2").code == 0
    r = fleet("explain", "lm")
    assert r.code == 1 and "unknown slice or job 'lm'" in r.err and "jobs: llm" in r.err and "llm-0" in r.err


def test_report_shows_the_multislice_jobs_in_every_format(fleet, tmp_path):
    assert "multislice jobs" not in fleet("report").out  # none yet: no section
    assert fleet("allocate", "llm", "--shape", "4x4x8", "--slices", "2").code == 0
    data = fleet("report", "-o", "json").json
    assert [(j["name"], j["total_slices"], j["state"]) for j in data["jobs"]] == [("llm", 2, "pending")]
    table = fleet("report").out
    assert "multislice jobs:" in table and "2 x 4x4x8" in table
    assert "## Multislice jobs" in fleet("report", "-o", "md").out
    page = fleet("report", "-o", "html").out
    assert "<h2>Multislice jobs</h2>" in page and "<td>llm</td>" in page


@pytest.mark.parametrize(
    "args",
    [
        ("release", "jx"),
        ("policy", "jx"),
        ("routes", "jx"),
        ("plan-xconnect", "jx"),
        ("collective", "jx", "--op", "all-reduce", "--bytes", "1GiB"),
        ("plan-spares", "--slices", "jx"),
    ],
)
def test_an_unknown_name_where_a_job_is_taken_lists_the_jobs_too(fleet, args):
    """`release jx` (a mistyped job) said `unknown slice 'jx' (slices: ...)`, the jobs left out, though these
    commands take a job's name; they now say `unknown slice or job` and list both, as `explain` does."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    before = snapshot(fleet.state)
    r = fleet(*args)
    assert r.code == 1 and r.out == ""
    assert r.err.strip() == "tpufleet: error: unknown slice or job 'jx'; did you mean j? (slices: j-0, j-1, s; jobs: j)"
    assert snapshot(fleet.state) == before


def test_show_jobs_and_the_report_name_a_running_jobs_rerouted_slices(pods2):
    """A job whose slices all run rerouted keeps every slice (throughput kept 1, a share of slices): the table and
    the report name the rerouted slices, so the 1 does not read as unaffected."""
    for step in (
        ("inject-fault", "ocs:pod0/x/3"),
        ("allocate", "j", "--shape", "4x4x4", "--slices", "2", "--pod", "pod0"),
        ("plan-xconnect", "j", "--apply"),
        ("routes", "j"),
    ):
        assert pods2(*step).code == 0, step
    (row,) = _ok(pods2("show", "jobs", "-o", "json"))
    assert (row["state"], row["rerouted"]) == ("running", ["j-0", "j-1"])
    header, _, line = pods2("show", "jobs").out.splitlines()[:3]
    assert header.split()[-1] == "rerouted" and line.split()[-1] == "j-0,j-1"
    md = pods2("report", "-o", "md").out
    assert "| rerouted" in md and "j-0, j-1" in md


def test_policy_says_a_slice_keeping_exactly_its_floor_is_rerouted(pods2):
    """The floor is kept at equality (README: "keep at least the slice's floor"): `policy` said "rerouted only
    above 1", which no slice could be, while a link fault keeping all of its throughput reroutes it."""
    assert pods2("allocate", "a", "--shape", "4x4x8", "--min-throughput", "1").code == 0
    assert pods2("plan-xconnect", "a", "--apply").code == 0
    assert pods2("policy", "a").out.strip() == (
        "slice a: fault-tolerant routing on, rerouted only while keeping at least 1 of its healthy all-to-all "
        "throughput"
    )
    d = _ok(pods2("inject-fault", "link:c00/y/1/out", "--dry-run", "-o", "json"))
    assert d["slices"][0]["action"] == "reroute" and d["slices"][0]["reroute"]["all_to_all_retained"] == 1.0


def test_a_fault_evicting_every_slice_of_a_job_does_not_speak_of_other_slices_held(pods2):
    """An OCS fault below the floor of both slices of a job said "2 of its 2 slices evicted stops the whole job;
    its other 0 slice(s) stay held": there is no other slice."""
    assert pods2("allocate", "j", "--shape", "4x4x8", "--slices", "2", "--min-throughput", "0.95").code == 0
    assert pods2("plan-xconnect", "j", "--apply").code == 0
    d = _ok(pods2("inject-fault", "ocs:pod0/z/2", "-o", "json"))
    assert [s["action"] for s in d["slices"]] == ["reschedule", "reschedule"]
    job = d["jobs"][0]
    assert (
        job["action"] == "stop"
        and job["reason"] == "not elastic: all 2 of its slices evicted; `reschedule` replaces each"
    )
    assert job["next"] == [
        "tpufleet reschedule j-0",
        "tpufleet routes j-0",
        "tpufleet reschedule j-1",
        "tpufleet routes j-1",
    ]


def test_diff_names_the_job_of_each_slice_it_names_as_a_journal_line_does(fleet):
    """`diff` gives the net change "in the delta form", whose `slices` names each slice's job (`jobs`); it left
    `jobs` out, so a range that added or released a job's slices did not say whose they were."""
    assert fleet("allocate", "solo", "--shape", "2x2x1").code == 0
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    d = fleet("diff", "1", "-o", "json").json
    assert d["slices"]["added"] == ["j-0", "j-1", "solo"]
    assert d["slices"]["jobs"] == {"j-0": "j", "j-1": "j"}
    serial = fleet("status", "-o", "json").json["serial"]
    assert fleet("release", "j").code == 0
    d = fleet("diff", str(serial), "-o", "json").json
    assert d["slices"]["removed"] == ["j-0", "j-1"] and d["slices"]["jobs"] == {"j-0": "j", "j-1": "j"}
    assert "jobs" not in fleet("diff", "1", "2", "-o", "json").json["slices"]  # the slice of no job


def test_allocate_of_a_job_gives_next_steps_that_work_with_an_ocs_down(fleet):
    """`allocate JOB` always said "next: tpufleet plan-xconnect JOB --apply", which refuses slices without
    fault-tolerant routing while an OCS of their pod is down: its steps are now `explain JOB`'s, each working."""
    r = fleet("allocate", "j", "--shape", "4x4x8", "--slices", "2", "-o", "json")
    assert r.json["next"][:3] == ["tpufleet plan-xconnect j --apply", "tpufleet routes j-0", "tpufleet routes j-1"]
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0  # f1
    r = fleet("allocate", "n", "--shape", "4x4x4", "--slices", "2", "--no-fault-tolerant-routing", "-o", "json")
    steps = r.json["next"]
    assert steps.index("tpufleet clear-fault f1") < steps.index("tpufleet plan-xconnect n --apply")
    assert steps == fleet("explain", "n", "-o", "json").json["next"]
    for step in steps:
        out = fleet(*step.split()[1:])
        assert out.code == 0, (step, out.err)
