"""`import k8s` of node lists whose partition labels cannot name a cube on their own: a partition whose nodes
disagree on its cube, and the cube id `export node-labels` writes as a stand-in partition."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import snapshot

CUBE = "tpufleet.io/cube"


@pytest.fixture
def two_cubes(cli: Any) -> Any:
    """A TPU v4 pod of 2 cubes no import named (its export writes each cube's id as its partition)."""
    assert cli("init", "--cubes-per-pod", "2").code == 0
    return cli


def exported_with(cli: Any, tmp_path: Path, node: str, cube: str | None) -> Path:
    """The fleet's `export node-labels` with `node`'s `tpufleet.io/cube` set to `cube` (None: removed)."""
    doc = cli("export", "node-labels", "-o", "json").json
    [labels] = [n["metadata"]["labels"] for n in doc["items"] if n["metadata"]["name"] == node]
    if cube is None:
        del labels[CUBE]
    else:
        labels[CUBE] = cube
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_partition_whose_nodes_disagree_on_its_cube_learns_nothing(two_cubes, tmp_path):
    """One mislabelled node (read first, in name order) taught its partition the wrong cube, and the other 15
    nodes of the partition were then refused as contradicting it."""
    nodes = exported_with(two_cubes, tmp_path, "tpu-c00-m00", "c01")
    r = two_cubes("import", "k8s", nodes, "--detailed-exitcode", "-o", "json")
    assert r.code == 4, r.err
    assert r.json["cubes_added"] == [] and r.json["placed"] == 16
    why = {u["node"]: u["reason"] for u in r.json["unplaced"]}
    assert sorted(why) == [f"tpu-c00-m{m:02d}" for m in range(16)]
    assert set(why.values()) == {
        "partition c00's nodes disagree on its cube: c00 (tpu-c00-m01), c01 (tpu-c00-m00); nothing learnt for it"
    }
    assert two_cubes("import", "k8s", nodes, "--apply").code == 0
    assert json.loads((two_cubes.state / "state.json").read_text())["k8s"]["partitions"] == {}


def _with_named_partitions(fleet, tmp_path) -> tuple[dict, Path]:
    """The fleet's node-labels export with each cube's partition named `part-CUBE`, and the file it is written to."""
    doc = fleet("export", "node-labels", "-o", "json").json
    for node in doc["items"]:
        labels = node["metadata"]["labels"]
        labels["cloud.google.com/gke-tpu-partition-4x4x4-id"] = f"part-{labels[CUBE]}"
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc))
    return doc, path


def test_a_partition_whose_nodes_agree_is_learnt_as_before(two_cubes, tmp_path):
    _, path = _with_named_partitions(two_cubes, tmp_path)
    r = two_cubes("import", "k8s", path, "-o", "json")
    assert r.json["unplaced"] == []
    assert r.json["cubes_added"] == [{"partition": "part-c00", "cube": "c00"}, {"partition": "part-c01", "cube": "c01"}]
    before = snapshot(two_cubes.state)
    assert two_cubes("import", "k8s", path, "-o", "json").code == 0  # a plan: nothing changes
    assert snapshot(two_cubes.state) == before


@pytest.mark.parametrize("node", ["tpu-c00-m00", "tpu-c00-m05"])
def test_a_cube_id_written_as_a_stand_in_partition_is_no_name_to_learn(two_cubes, tmp_path, node):
    """A node of the export without its `tpufleet.io/cube` was placed by its partition id, the cube id the export
    writes for a cube no import named: learnt as a partition (and the pod's name as a block) when the node came
    first, else refused (`no pod left for block pod0`). The node is on that cube, and no name is learnt."""
    nodes = exported_with(two_cubes, tmp_path, node, None)
    r = two_cubes("import", "k8s", nodes, "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["placed"], r.json["unplaced"]) == (32, [])
    assert r.json["cubes_added"] == [] and r.json["pods_named"] == []
    assert two_cubes("import", "k8s", nodes, "--apply").code == 0
    assert two_cubes("import", "k8s", nodes, "--detailed-exitcode").code == 0
    k8s = json.loads((two_cubes.state / "state.json").read_text())["k8s"]
    assert (k8s["partitions"], k8s["blocks"], k8s["nodes"][node]) == ({}, {}, f"host:c00/{int(node[-2:])}")


def test_a_stand_in_partition_whose_cube_a_node_labels_otherwise_is_disputed(two_cubes, tmp_path):
    doc = two_cubes("export", "node-labels", "-o", "json").json
    for item in doc["items"]:
        labels = item["metadata"]["labels"]
        if item["metadata"]["name"] == "tpu-c00-m00":
            del labels[CUBE]  # on c00 by its stand-in partition; the 15 others labelled c01
        elif labels[CUBE] == "c00":
            labels[CUBE] = "c01"
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc))
    r = two_cubes("import", "k8s", path, "-o", "json")
    assert r.json["cubes_added"] == []
    assert {u["reason"] for u in r.json["unplaced"]} == {
        "partition c00's nodes disagree on its cube: c00 (tpu-c00-m00), c01 (tpu-c00-m01); nothing learnt for it"
    }


def test_a_cube_id_as_partition_of_a_cube_a_real_partition_names_is_not_placed(two_cubes, tmp_path):
    doc, path = _with_named_partitions(two_cubes, tmp_path)
    assert two_cubes("import", "k8s", path, "--apply").code == 0
    [labels] = [n["metadata"]["labels"] for n in doc["items"] if n["metadata"]["name"] == "tpu-c00-m03"]
    del labels[CUBE]
    labels["cloud.google.com/gke-tpu-partition-4x4x4-id"] = "c00"
    path.write_text(json.dumps(doc))
    r = two_cubes("import", "k8s", path, "-o", "json")
    assert r.json["cubes_added"] == []
    assert r.json["unplaced"] == [
        {"node": "tpu-c00-m03", "reason": "partition c00 is the id of cube c00, which is partition part-c00"}
    ]
