"""A cube reported by both the reservation (maintenance: a planned drain) and the node list (an UNHEALTHY
partition: a failure). One fault is open on a target at a time, so the second report is held by the first's
fault; when the first source closes its fault, the second's word must not be lost: a broken cube is never handed
out, and a cube with maintenance pending never leaves the maintenance plan."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import snapshot

ROOT = Path(__file__).parent.parent / "fixtures"
RESERVATION = ROOT / "gke" / "tpu7x-reservation-subblocks.json"  # maintenance pending on sub-blocks 40 and 99
NODES = ROOT / "k8s" / "pod-64.json"  # partitions 05 and 40 UNHEALTHY, 17 DEGRADED, 50 INCOMPLETE
PARTITION = "cloud.google.com/gke-tpu-partition-4x4x4-id"
STATE = "cloud.google.com/gke-tpu-partition-4x4x4-state"


def _tpu7x_nodes(healthy: set[int] = frozenset()) -> dict[str, Any]:  # type: ignore[assignment]
    """The v4 fixture's first pod as TPU7x nodes of the reservation's block, each partition named as its
    sub-block (GKE does so); the partitions of `healthy` reported HEALTHY."""
    doc = json.loads(NODES.read_text())
    block = json.loads(RESERVATION.read_text())[0]["physicalTopology"]["block"]
    by_v4_id: dict[str, int] = {}
    items = []
    for node in doc["items"]:
        labels = node["metadata"]["labels"]
        if labels.get("cloud.google.com/gke-tpu-accelerator") != "tpu-v4-podslice" or PARTITION not in labels:
            continue
        cube = int(labels["cloud.google.com/gke-nodepool"].rsplit("-", 1)[1])
        by_v4_id[labels[PARTITION]] = cube
        labels["cloud.google.com/gke-tpu-accelerator"] = "tpu7x"
        labels["cloud.google.com/gce-topology-block"] = block
        labels[PARTITION] = f"ironwood-superpod-block-0001-sub-{cube:04d}"
        if cube in healthy:
            labels[STATE] = "HEALTHY"
        items.append(node)
    return {**doc, "items": items}


def _write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _reservation(maintenance_on: dict[int, bool]) -> list[dict[str, Any]]:
    """The fixture with the pending maintenance of the sub-blocks of `maintenance_on` set (True) or over."""
    doc = copy.deepcopy(json.loads(RESERVATION.read_text()))
    announced = doc[40]["reservationSubBlockMaintenance"]
    for i, pending in maintenance_on.items():
        if pending:
            doc[i]["reservationSubBlockMaintenance"] = copy.deepcopy(announced)
        else:
            doc[i]["reservationSubBlockMaintenance"] = {"maintenancePendingCount": 0, "schedulingType": "GROUPED"}
    return doc


def _open(cli: Any) -> dict[str, tuple[bool, str]]:
    return {f["target"]: (f["planned"], f["reason"]) for f in cli("faults", "-o", "json").json}


@pytest.fixture
def superpod(cli):
    assert cli("init", "--generation", "tpu7x").code == 0
    return cli


def test_a_failure_on_a_drained_cube_outlives_the_drain(superpod, tmp_path):
    assert superpod("import", "reservation", RESERVATION, "--apply").code == 0
    assert _open(superpod)["cube:c40"][0] is True  # the reservation's drain
    r = superpod("import", "k8s", _write(tmp_path, "nodes.json", _tpu7x_nodes()), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [f["target"] for f in r.json["faults_cleared"]] == ["cube:c40"]  # the drain, replaced by the failure
    planned, reason = _open(superpod)["cube:c40"]
    assert not planned and reason.startswith("k8s: ")
    done = _write(tmp_path, "done.json", _reservation({40: False}))
    r = superpod("import", "reservation", done, "--apply", "-o", "json")
    assert r.code == 0 and r.json["drains_cleared"] == []  # nothing of the reservation's left to clear
    assert _open(superpod)["cube:c40"][0] is False  # still broken
    assert superpod("allocate", "x", "--shape", "4x4x4", "--cubes", "c40").code == 1


def test_maintenance_held_back_by_a_failure_is_drained_when_the_failure_clears(superpod, tmp_path):
    assert superpod("import", "k8s", _write(tmp_path, "nodes.json", _tpu7x_nodes()), "--apply").code == 0
    assert _open(superpod)["cube:c05"][0] is False
    pending = _write(tmp_path, "res.json", _reservation({5: True}))
    r = superpod("import", "reservation", pending, "--apply", "-o", "json")
    assert r.code == 0 and "cube:c05" not in [d["target"] for d in r.json["drains_opened"]]  # held by the failure
    healthy = _write(tmp_path, "healthy.json", _tpu7x_nodes(healthy={5}))
    r = superpod("import", "k8s", healthy, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [f["target"] for f in r.json["faults_cleared"]] == ["cube:c05"]
    [back] = r.json["reservation_drains_opened"]
    assert (back["target"], back["sub_block"], back["window_end"]) == (
        "cube:c05",
        "ironwood-superpod-block-0001-sub-0005",
        "2026-06-16T13:00:00Z",
    )
    planned, reason = _open(superpod)["cube:c05"]
    assert planned and reason.startswith("reservation: ")
    cubes = [c for w in superpod("plan-maintenance", "-o", "json").json["waves"] for c in w["cubes"]]
    assert "c05" in cubes
    r = superpod(
        "import", "reservation", _write(tmp_path, "over.json", _reservation({5: False})), "--apply", "-o", "json"
    )
    assert [d["target"] for d in r.json["drains_cleared"]] == ["cube:c05"]  # the reservation's own, closed by it
    assert "cube:c05" not in _open(superpod)


SLICES = ROOT / "gke" / "tpu7x-slices.json"


def test_exports_name_the_partitions_and_block_gke_gave(superpod, tmp_path):
    """GKE names a TPU7x partition after its reservation sub-block, so `import k8s` learns no partition id of its
    own: the exports, `status` and `show inventory` must use the sub-block's name and the reservation's block, or
    `kubectl apply` of an exported Slice would move it onto partitions named like tpufleet's cubes."""
    assert superpod("import", "reservation", RESERVATION, "--apply").code == 0
    assert superpod("import", "slices", SLICES, "--apply").code == 0
    exported = {d["metadata"]["name"]: d for d in yaml.safe_load_all(superpod("export", "slices").out) if d}
    given = {s["metadata"]["name"]: s for s in json.loads(SLICES.read_text())["items"]}
    shared = sorted(exported.keys() & given.keys())
    assert shared
    for name in shared:
        assert exported[name]["spec"]["partitionIds"] == given[name]["spec"]["partitionIds"]
    assert superpod("import", "k8s", _write(tmp_path, "nodes.json", _tpu7x_nodes()), "--apply").code == 0
    block = json.loads(RESERVATION.read_text())[0]["physicalTopology"]["block"]
    degraded = set()
    for node in superpod("export", "node-labels", "-o", "json").json["items"]:
        labels = node["metadata"]["labels"]
        cube = labels["tpufleet.io/cube"]
        assert labels["cloud.google.com/gce-topology-block"] == block
        assert labels[PARTITION] == f"ironwood-superpod-block-0001-sub-{int(cube[1:]):04d}"
        if labels[STATE] == "DEGRADED":
            degraded.add(labels[PARTITION])
    assert degraded == {
        f"ironwood-superpod-block-0001-sub-{n:04d}" for n in (17, 58)
    }  # the reservation's (c121: no node)


def test_a_node_whose_block_contradicts_its_partitions_cube_is_not_placed(superpod, tmp_path):
    assert superpod("import", "reservation", RESERVATION, "--apply").code == 0
    doc = _tpu7x_nodes()
    moved = [n for n in doc["items"] if n["metadata"]["labels"][PARTITION].endswith("-0005")]
    for node in moved:
        node["metadata"]["labels"]["cloud.google.com/gce-topology-block"] = "block-zzz"
    before = snapshot(superpod.state)
    r = superpod("import", "k8s", _write(tmp_path, "nodes.json", doc), "-o", "json")
    assert r.code == 0, r.err
    unplaced = {u["node"]: u["reason"] for u in r.json["unplaced"]}
    assert sorted(unplaced) == sorted(n["metadata"]["name"] for n in moved) and len(moved) == 16
    assert all("whose block is block-5d21e0b4, not block-zzz" in why for why in unplaced.values())
    assert snapshot(superpod.state) == before


def test_the_plan_text_shows_the_maintenance_drain_a_cleared_failure_hands_back(superpod, tmp_path):
    """The table output named the failure cleared but not the reservation's drain opened in its place: a reader
    of the plan took the cube for free again."""
    assert superpod("import", "k8s", _write(tmp_path, "nodes.json", _tpu7x_nodes()), "--apply").code == 0
    assert superpod("import", "reservation", _write(tmp_path, "res.json", _reservation({5: True})), "--apply").code == 0
    healthy = _write(tmp_path, "healthy.json", _tpu7x_nodes(healthy={5}))
    for extra in ((), ("--apply",)):
        r = superpod("import", "k8s", healthy, *extra)
        assert r.code == 0, r.err
        lines = [line for line in r.out.splitlines() if "cube:c05" in line]
        assert lines[0].startswith("  - clear f") and " cube:c05: k8s: partition " in lines[0], r.out
        assert lines[1].startswith("  + drain") and " cube:c05: reservation: sub-block " in lines[1], r.out


def test_maintenance_announced_for_later_is_not_drained_when_a_failure_on_its_cube_clears(superpod, tmp_path):
    """Announced for a later window, the maintenance holds no drain: the cube serves once its failure clears, and
    the maintenance plan still has it."""
    assert superpod("import", "k8s", _write(tmp_path, "nodes.json", _tpu7x_nodes()), "--apply").code == 0
    later = _reservation({5: True})
    later[5]["reservationSubBlockMaintenance"]["upcomingGroupMaintenance"].update(
        windowStartTime="2099-06-16T09:00:00Z", windowEndTime="2099-06-16T13:00:00Z"
    )
    r = superpod("import", "reservation", _write(tmp_path, "res.json", later), "--apply", "-o", "json")
    assert r.code == 0 and [a["cube"] for a in r.json["maintenance_announced"]] == ["c05"]
    r = superpod("import", "k8s", _write(tmp_path, "healthy.json", _tpu7x_nodes(healthy={5})), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [f["target"] for f in r.json["faults_cleared"]] == ["cube:c05"]
    assert r.json["reservation_drains_opened"] == [] and "cube:c05" not in _open(superpod)
    notices = superpod("plan-maintenance", "-o", "json").json["notices"]
    assert [n["window_start"] for n in notices if n["target"] == "cube:c05"] == ["2099-06-16T09:00:00Z"]


def test_a_partition_unhealthy_during_its_maintenance_is_the_maintenance_not_a_failure(superpod, tmp_path, monkeypatch):
    """While c40's maintenance window is open, its partition reported UNHEALTHY is the maintenance: the
    reservation's drain holds the cube, no failure enters its record; reported so after the window, it is a
    failure again."""
    from tpufleet.state import store

    window = _reservation({40: True})
    window[40]["reservationSubBlockMaintenance"]["upcomingGroupMaintenance"].update(
        windowStartTime="2099-06-16T09:00:00Z", windowEndTime="2099-06-16T13:00:00Z"
    )
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")
    assert superpod("import", "reservation", _write(tmp_path, "res.json", window), "--apply").code == 0
    nodes = _write(tmp_path, "nodes.json", _tpu7x_nodes(healthy={5}))  # partition 40 UNHEALTHY
    r = superpod("import", "k8s", nodes, "--apply", "-o", "json")
    assert r.code == 0 and not [f for f in r.json["faults_opened"] if f["target"].startswith(("cube:c40", "host:c40"))]
    assert _open(superpod)["cube:c40"][1].startswith("reservation: ")  # the drain still holds it
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T14:00:00Z")  # the window is over, still UNHEALTHY
    r = superpod("import", "k8s", nodes, "--apply", "-o", "json")
    assert {"cube:c40", "host:c40/14"} <= {f["target"] for f in r.json["faults_opened"]}  # its NotReady node too
    planned, reason = _open(superpod)["cube:c40"]
    assert not planned and reason.startswith("k8s: ")


def test_a_reservation_block_never_takes_a_pod_the_nodes_put_on_another_block(superpod, tmp_path):
    """`import k8s` learnt that pod0's nodes are on the reservation's block; a list of another block's
    sub-blocks (another superpod: a mistyped --block-name) was placed on pod0 all the same, two physical blocks on
    one pod. Its sub-blocks are now listed as not placed, naming the block the nodes gave, and nothing changes."""
    assert superpod("import", "k8s", _write(tmp_path, "nodes.json", _tpu7x_nodes()), "--apply").code == 0
    other = copy.deepcopy(json.loads(RESERVATION.read_text())[:4])
    for sb in other:
        sb["physicalTopology"]["block"] = "block-other"
        sb["name"] = sb["name"].replace("block-0001", "block-0002")
    before = snapshot(superpod.state)
    for pod in ([], ["--pod", "pod0"]):
        r = superpod("import", "reservation", _write(tmp_path, "other.json", other), *pod, "--apply", "-o", "json")
        assert r.code == 0, r.err
        assert not r.json["has_changes"] and r.json["blocks_named"] == [] and r.json["mapped"] == 0
        assert len(r.json["unplaced"]) == 4
        assert all("pod0 is block block-5d21e0b4" in u["reason"] for u in r.json["unplaced"])
    assert snapshot(superpod.state) == before
    again = superpod("import", "reservation", _write(tmp_path, "other.json", other), "--detailed-exitcode")
    assert again.code == 4  # out of sync, as `drift --reservation` counts it


def _partition_states(cli: Any) -> dict[str, str]:
    """cube -> the partition state `export node-labels` writes for it."""
    items = cli("export", "node-labels", "-o", "json").json["items"]
    return {n["metadata"]["labels"]["tpufleet.io/cube"]: n["metadata"]["labels"][STATE] for n in items}


def test_a_degraded_sub_block_is_exported_degraded_and_imports_back_as_no_news(reserved, tmp_path):
    """A DEGRADED sub-block was exported HEALTHY (only the node list's word was written): the export contradicted
    `status`, and a fresh state loaded from it lost the degraded cubes. One fact, whichever source said it."""
    states = _partition_states(reserved)
    assert {c for c, s in states.items() if s == "DEGRADED"} == {"c17", "c58", "c121"}
    nodes = _write(tmp_path, "nodes.json", reserved("export", "node-labels", "-o", "json").json)
    r = reserved("import", "k8s", nodes, "--apply", "-o", "json")  # names the machines; no cube newly degraded
    assert r.code == 0, r.err
    assert r.json["degraded_new"] == [] and r.json["degraded_cleared"] == []
    before = snapshot(reserved.state)
    assert reserved("import", "k8s", nodes, "--detailed-exitcode").code == 0
    assert snapshot(reserved.state) == before
    from conftest import Cli

    fresh = Cli(reserved.capsys, tmp_path / "fresh")
    assert fresh("init", "--generation", "tpu7x").code == 0
    assert fresh("import", "k8s", nodes, "--apply").code == 0
    assert [g["cube"] for g in fresh("status", "-o", "json").json["k8s"]["degraded_cubes"]] == ["c17", "c58", "c121"]


def test_each_source_clears_its_own_word_of_a_degraded_cube(reserved, tmp_path):
    """A cube both sources call degraded stays degraded until both say otherwise."""
    doc = reserved("export", "node-labels", "-o", "json").json
    for node in doc["items"]:
        labels = node["metadata"]["labels"]
        labels[STATE] = "DEGRADED" if labels["tpufleet.io/cube"] in ("c17", "c05") else "HEALTHY"
    r = reserved("import", "k8s", _write(tmp_path, "nodes.json", doc), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [g["cube"] for g in r.json["degraded_new"]] == ["c05"]  # c17: the reservation's already
    assert {c for c, s in _partition_states(reserved).items() if s == "DEGRADED"} == {"c05", "c17", "c58", "c121"}
    res = json.loads(RESERVATION.read_text())
    healthy = {"healthStatus": "HEALTHY", "healthyHostCount": 16, "degradedHostCount": 0}
    for i in (17, 58, 121):
        res[i]["healthInfo"] = healthy
    r = reserved("import", "reservation", _write(tmp_path, "res.json", res), "--apply", "-o", "json")
    assert [g["cube"] for g in r.json["degraded_cleared"]] == ["c17", "c58", "c121"]
    assert {c for c, s in _partition_states(reserved).items() if s == "DEGRADED"} == {"c05"}
    for node in doc["items"]:
        node["metadata"]["labels"][STATE] = "HEALTHY"
    r = reserved("import", "k8s", _write(tmp_path, "nodes.json", doc), "--apply", "-o", "json")
    assert [g["cube"] for g in r.json["degraded_cleared"]] == ["c05"]
    assert set(_partition_states(reserved).values()) == {"HEALTHY"}


def test_a_sub_block_degraded_on_a_cube_the_node_list_holds_degraded_is_no_news(superpod, tmp_path):
    """`import reservation` listed a DEGRADED sub-block as newly degraded when `import k8s` already held its cube
    degraded: one fact, whichever source said it first (as `import k8s` takes a reservation's degraded cube)."""
    nodes = _tpu7x_nodes()
    for node in nodes["items"]:
        labels = node["metadata"]["labels"]
        if labels[PARTITION].endswith("-0005"):
            labels[STATE] = "DEGRADED"
    r = superpod("import", "k8s", _write(tmp_path, "nodes.json", nodes), "--apply", "-o", "json")
    assert [g["cube"] for g in r.json["degraded_new"]] == ["c05", "c17"]
    res = json.loads(RESERVATION.read_text())
    res[5]["healthInfo"] = {"healthStatus": "DEGRADED", "healthyHostCount": 15, "degradedHostCount": 1}
    path = _write(tmp_path, "res.json", res)
    r = superpod("import", "reservation", path, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [g["cube"] for g in r.json["degraded_new"]] == ["c58", "c121"]  # c05, c17: the node list's already
    assert {g["cube"] for g in r.json["degraded"]} == {"c05", "c17", "c58", "c121"}  # the sub-blocks as read
    before = snapshot(superpod.state)
    assert superpod("import", "reservation", path, "--detailed-exitcode").code == 0
    assert snapshot(superpod.state) == before
    res[5]["healthInfo"] = {"healthStatus": "HEALTHY", "healthyHostCount": 16, "degradedHostCount": 0}
    r = superpod("import", "reservation", _write(tmp_path, "res.json", res), "--apply", "-o", "json")
    assert [g["cube"] for g in r.json["degraded_cleared"]] == ["c05"]  # its own word, cleared
    assert "c05" in {g["cube"] for g in superpod("status", "-o", "json").json["k8s"]["degraded_cubes"]}


def _partition_nodes(partition: str, subblock: str) -> dict[str, Any]:
    """16 TPU7x nodes of one partition of the reservation's block, at the physical sub-block `subblock`."""
    block = json.loads(RESERVATION.read_text())[0]["physicalTopology"]["block"]
    labels = {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        "cloud.google.com/gke-tpu-topology": "4x4x4",
        "cloud.google.com/gce-topology-block": block,
        "cloud.google.com/gce-topology-subblock": subblock,
        PARTITION: partition,
    }
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    items = [
        {"metadata": {"name": f"{partition}-{i}", "labels": {**labels, "cloud.google.com/gce-topology-host": f"h{i}"}},
         "spec": {}, "status": ready}
        for i in range(16)
    ]  # fmt: skip
    return {"apiVersion": "v1", "kind": "List", "items": items}


def test_a_partition_at_no_sub_block_is_told_so(cli, tmp_path):
    """Nodes whose physical sub-block is no sub-block of the reservation (or one another partition holds) were
    refused as "no cube of pod0 left", with 142 cubes free: the reason names the sub-block."""
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", RESERVATION, "--apply").code == 0
    position = json.loads(RESERVATION.read_text())[3]["physicalTopology"]["subBlock"]
    r = cli("import", "k8s", _write(tmp_path, "a.json", _partition_nodes("part-a", "sb-none")), "-o", "json")
    (reason,) = {row["reason"] for row in r.json["unplaced"]}
    assert "gce-topology-subblock sb-none is the position of no sub-block the reservation has in pod0" in reason
    assert cli("import", "k8s", _write(tmp_path, "b.json", _partition_nodes("part-b", position)), "--apply").code == 0
    r = cli("import", "k8s", _write(tmp_path, "c.json", _partition_nodes("part-c", position)), "-o", "json")
    (reason,) = {row["reason"] for row in r.json["unplaced"]}
    assert (
        f"the sub-block at cloud.google.com/gce-topology-subblock {position}, cube c03, is partition part-b" in reason
    )
