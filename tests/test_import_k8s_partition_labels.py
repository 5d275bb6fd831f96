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


def test_a_partition_whose_nodes_agree_is_learnt_as_before(two_cubes, tmp_path):
    doc = two_cubes("export", "node-labels", "-o", "json").json
    for node in doc["items"]:
        labels = node["metadata"]["labels"]
        labels["cloud.google.com/gke-tpu-partition-4x4x4-id"] = f"part-{labels[CUBE]}"
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc))
    r = two_cubes("import", "k8s", path, "-o", "json")
    assert r.json["unplaced"] == []
    assert r.json["cubes_added"] == [{"partition": "part-c00", "cube": "c00"}, {"partition": "part-c01", "cube": "c01"}]
    before = snapshot(two_cubes.state)
    assert two_cubes("import", "k8s", path, "-o", "json").code == 0  # a plan: nothing changes
    assert snapshot(two_cubes.state) == before
