"""The fleet as it is on GKE: node-list round trips, saved cross-connect plans and the order of listed ids."""

from __future__ import annotations

import json

import pytest
from conftest import Cli

from helpers import snapshot

WINDOW = {"windowStartTime": "2099-06-16T09:00:00Z", "windowEndTime": "2099-06-16T13:00:00Z"}


def _faults(cli: Cli) -> set[tuple[str, bool, str]]:
    return {(f["target"], f["planned"], f["reason"]) for f in cli("faults", "-o", "json").json}


def test_a_drain_opened_during_maintenance_keeps_its_reason_through_the_export(fleet, tmp_path, monkeypatch):
    """A node's NotReady (and a partition's UNHEALTHY) reported while the reservation's maintenance of its cube was
    under way is opened as a drain naming both; the export wrote it as a plain cordon (a cube's as 16 cordons), so a
    fresh state imported from it held `node ... cordoned` drains and the reason was lost."""
    from tpufleet.state import store

    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **WINDOW}}
    sub_blocks = [
        {
            "name": name,
            "physicalTopology": {"block": "b1", "subBlock": name},
            "reservationSubBlockMaintenance": upcoming,
        }
        for name in ("sb-a", "sb-b")
    ]
    (tmp_path / "sb.json").write_text(json.dumps(sub_blocks))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")  # announced, not yet due: no drain
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0
    doc = fleet("export", "node-labels", "-o", "json").json
    by_name = {n["metadata"]["name"]: n for n in doc["items"]}
    node = by_name["tpu-c00-m00"]  # sb-a is c00, sb-b c01
    node["status"]["conditions"][0].update(status="False", reason="KubeletNotReady")
    taint = {"key": "cloud.google.com/impending-node-termination", "effect": "NoSchedule"}
    node["spec"] = {"unschedulable": True, "taints": [taint]}  # cordoned and tainted too
    by_name["tpu-c01-m03"]["metadata"]["labels"]["cloud.google.com/gke-tpu-partition-4x4x4-state"] = "UNHEALTHY"
    (tmp_path / "nodes.json").write_text(json.dumps(doc))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")  # inside the window
    assert fleet("import", "k8s", tmp_path / "nodes.json", "--apply").code == 0
    opened = _faults(fleet)
    assert opened == {
        (
            "host:c00/0",
            True,
            "k8s: node tpu-c00-m00 Ready=False (KubeletNotReady) during the maintenance of sub-block sb-a",
        ),
        ("cube:c01", True, "k8s: partition sb-b UNHEALTHY during the maintenance of sub-block sb-b"),
    }
    out = tmp_path / "export.json"
    out.write_text(fleet("export", "node-labels", "-o", "json").out)
    again = fleet("import", "k8s", out, "--detailed-exitcode", "-o", "json")
    assert again.code == 0 and not again.json["has_changes"]
    fresh = Cli(fleet.capsys, tmp_path / "fresh")
    assert fresh("init").code == 0
    assert fresh("import", "k8s", out, "--apply").code == 0
    assert _faults(fresh) == opened
    assert fresh("import", "k8s", out, "--detailed-exitcode").code == 0


def test_one_nodes_maintenance_drain_does_not_make_its_partitions_later_failure_maintenance(
    fleet, tmp_path, monkeypatch
):
    """The maintenance label of one node (its own drain's) is not its cube's: a partition failure reported after the
    window stays a failure through the export, as it was opened."""
    from tpufleet.state import store

    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **WINDOW}}
    sb = {"name": "sb-a", "physicalTopology": {"block": "b1"}, "reservationSubBlockMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sb]))  # sb-a is c00
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0
    doc = fleet("export", "node-labels", "-o", "json").json
    c00 = [n for n in doc["items"] if n["metadata"]["labels"]["tpufleet.io/cube"] == "c00"]
    c00[0]["status"]["conditions"][0].update(status="False", reason="KubeletNotReady")
    (tmp_path / "during.json").write_text(json.dumps({**doc, "items": c00}))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")  # inside the window
    assert fleet("import", "k8s", tmp_path / "during.json", "--apply").code == 0
    for node in c00[1:]:
        node["metadata"]["labels"]["cloud.google.com/gke-tpu-partition-4x4x4-state"] = "UNHEALTHY"
    (tmp_path / "after.json").write_text(json.dumps({**doc, "items": c00[1:]}))  # tpu-c00-m00 not listed
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-17T00:00:00Z")  # the window is over
    assert fleet("import", "k8s", tmp_path / "after.json", "--apply").code == 0
    opened = _faults(fleet)
    assert ("cube:c00", False, "k8s: partition sb-a UNHEALTHY") in opened
    out = tmp_path / "export.json"
    out.write_text(fleet("export", "node-labels", "-o", "json").out)
    fresh = Cli(fleet.capsys, tmp_path / "fresh")
    assert fresh("init").code == 0
    assert fresh("import", "k8s", out, "--apply").code == 0
    assert _faults(fresh) == opened


def _plan_edit(doc: dict, edit: str) -> dict:
    """The plan with an edit the plan recomputed once it is applied (nothing left to do) cannot show, its summary
    made to agree with its lists as a careful editor would."""
    doc = json.loads(json.dumps(doc))
    first = doc["ocs"][0]
    if edit == "remove sharing a port of the slice":
        north = first["add"][0][0]
        south = next(p for p in range(64) if p not in {s for _, s in first["add"]})
        first["remove"].append([north, south])
        doc["summary"]["remove"] += 1
    else:  # an OCS that was up moved into `deferred`
        del doc["ocs"][0]
        doc["deferred"].append(first["id"])
        doc["summary"]["add"] -= len(first["add"])
        doc["summary"]["keep"] -= first["keep"]
    return doc


@pytest.mark.parametrize("edit", ["remove sharing a port of the slice", "OCS moved into deferred"])
def test_an_edited_plan_applied_before_is_refused_as_before(fleet, tmp_path, edit):
    """Once the plan was applied, a copy with a remove added for a pair sharing one of the slice's ports, or an OCS
    moved into `deferred`, was taken as already applied (exit 0): the plan recomputed then has nothing to add or
    remove, so nothing told the edit. Before it was applied, the same copy was refused."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan, edited = tmp_path / "plan.json", tmp_path / "edited.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    edited.write_text(json.dumps(_plan_edit(json.loads(plan.read_text()), edit)))
    unapplied = fleet("apply-xconnect", edited)
    assert unapplied.code == 1 and "stale plan" in unapplied.err
    assert fleet("inject-fault", "host:c63/0").code == 0  # an unrelated commit between
    assert fleet("apply-xconnect", plan).code == 0
    assert fleet("apply-xconnect", plan).code == 0  # the plan itself: already applied
    before = snapshot(fleet.state)
    applied = fleet("apply-xconnect", edited)
    assert applied.code == 1, applied.out
    assert applied.err.splitlines()[0].replace("serial 4", "serial 2") == unapplied.err.splitlines()[0]
    assert snapshot(fleet.state) == before


@pytest.fixture
def twelve_pods(cli):
    """12 pods of 12 cubes: pod8 holds c96-c107, so c99 and c100 are cubes of one pod, and pod10 follows pod9."""
    assert cli("init", "--pods", "12", "--cubes-per-pod", "12").code == 0
    return cli


def test_pods_cubes_and_ocs_are_listed_as_counted_not_as_text(twelve_pods, tmp_path):
    """Lists of pods, cubes and OCS were sorted as text: a job on pod2 and pod10 showed pods `pod10,pod2`, a pod's
    cubes down now `c100, c98`, maintenance in one window `c100` before `c98`, `diff` ocs:pod0/x/10 before x/2, and
    `import k8s` opened host:c100/0 before host:c98/0."""
    cli = twelve_pods
    r = cli(
        "allocate",
        "j",
        "--shape",
        "4x4x8",
        "--slices",
        "2",
        "--pod",
        "pod10",
        "--pod",
        "pod2",
        "--spread",
        "-o",
        "json",
    )
    assert r.code == 0, r.err
    assert r.json["pods"] == ["pod2", "pod10"] and list(r.json["per_pod"]) == ["pod2", "pod10"]
    [job] = cli("show", "jobs", "-o", "json").json
    assert job["pods"] == ["pod2", "pod10"]
    for cube in ("c100", "c98"):
        assert cli("inject-fault", f"host:{cube}/1").code == 0
    pod8 = next(p for p in cli("plan-spares", "-o", "json").json["pods"] if p["pod"] == "pod8")
    assert pod8["cubes_down_now"] == ["c98", "c100"]
    serial = cli("status", "-o", "json").json["serial"]
    assert cli("plan-xconnect", "j-0", "--apply").code == 0
    ocs = list(cli("diff", str(serial), "-o", "json").json["ocs"])
    assert ocs.index("pod10/x/2") < ocs.index("pod10/x/10")  # j-0 is on pod10


def test_maintenance_in_one_window_and_node_faults_are_listed_in_cube_order(twelve_pods, tmp_path):
    cli = twelve_pods
    window = {"windowStartTime": "2099-06-16T09:00:00Z", "windowEndTime": "2099-06-16T13:00:00Z"}
    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **window}}
    sub_blocks = [
        {"name": f"sb-{i}", "physicalTopology": {"block": "b8", "subBlock": f"sb-{i}"}}
        | ({"reservationSubBlockMaintenance": upcoming} if i in (2, 4) else {})
        for i in range(5)  # c96-c100: sb-2 is c98, sb-4 c100
    ]
    (tmp_path / "sb.json").write_text(json.dumps(sub_blocks))
    assert cli("import", "reservation", tmp_path / "sb.json", "--pod", "pod8", "--apply").code == 0
    rows = cli("status", "-o", "json").json["reservation"]["maintenance"]
    assert [r["cube"] for r in rows] == ["c98", "c100"]
    plan = cli("plan-maintenance", "--max-parallel", "2", "-o", "json").json
    assert [n["target"] for n in plan["notices"]] == ["cube:c98", "cube:c100"]
    doc = cli("export", "node-labels", "-o", "json").json
    for node in doc["items"]:
        if node["metadata"]["name"] in ("tpu-c100-m00", "tpu-c98-m00"):
            node["status"]["conditions"][0].update(status="False", reason="KubeletNotReady")
    (tmp_path / "nodes.json").write_text(json.dumps(doc))
    opened = cli("import", "k8s", tmp_path / "nodes.json", "-o", "json").json["faults_opened"]
    assert [f["target"] for f in opened] == ["host:c98/0", "host:c100/0"]


def test_explain_says_an_announced_window_has_started_rather_than_that_it_will_come(fleet, tmp_path, monkeypatch):
    """Past the start of an announced window (no import since, so no drain yet), `explain` still said the slice's
    cube "goes into maintenance at" that time and that the cube "serves until then", as if it were to come;
    `status` said the next import opens the drain."""
    from tpufleet.state import store

    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **WINDOW}}
    sb = {"name": "sb-a", "physicalTopology": {"block": "b1"}, "reservationSubBlockMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sb]))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-01T00:00:00Z")
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0  # c00
    assert fleet("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    ahead = " ".join(fleet("explain", "a", "-o", "json").json["why"])
    assert "goes into maintenance at 2099-06-16T09:00:00Z" in ahead
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")
    started = " ".join(fleet("explain", "a", "-o", "json").json["why"])
    assert "goes into maintenance" not in started
    assert "maintenance window started at 2099-06-16T09:00:00Z" in started and "import reservation" in started
    cube = " ".join(fleet("explain", "cube:c00", "-o", "json").json["why"])
    assert "serves until then" not in cube and "its window has started" in cube


def test_a_jobs_slices_are_listed_as_counted(fleet):
    """A job's slices are named j-0 .. j-11 by tpufleet itself; `show slices`, `status`, the map's legend and the
    message naming the slices listed them as text: j-0, j-1, j-10, j-11, j-2."""
    assert fleet("allocate", "j", "--shape", "2x2x1", "--slices", "12").code == 0
    counted = [f"j-{i}" for i in range(12)]
    assert [s["name"] for s in fleet("show", "slices", "-o", "json").json] == counted
    assert [s["name"] for s in fleet("status", "-o", "json").json["slices"]] == counted
    legend = [
        line.split()[1] for line in fleet("show", "map").out.splitlines() if line.startswith("  ") and "2x2x1" in line
    ]
    assert legend == counted
    r = fleet("release", "nope")
    assert r.code == 1 and ", ".join(counted) in r.err
