"""`export kueue-topology` of a fleet with both dynamic-slicing partitions and ordinary node pools of one
accelerator: a dynamic-slicing node carries the accelerator and its own pool's `gke-tpu-topology` (4x4x4 here), so
a pool flavor selecting only those two labels would take the partitions' nodes as well (Kueue's nodeLabels match
values; none says "no partition label"). The pools of that accelerator then get a flavor each that also selects
`cloud.google.com/gke-nodepool`; a cluster of pools only keeps one flavor per accelerator and topology."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures" / "k8s"
ACCEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"
POOL = "cloud.google.com/gke-nodepool"
PARTITION = "cloud.google.com/gke-tpu-partition-4x4x4-id"
OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _mixed(tmp_path: Path, pool: str) -> Path:
    """A TPU v4 pod of 64 dynamic-slicing partitions (4x4x4 node pools) and, beside it, an ordinary 4x4x4 node pool
    `pool` of 16 nodes (the v4 cluster's 4x4x8 pool's first 16, as GKE labels an ordinary pool: no partition id)."""
    doc = json.loads((FIXTURES / "pod-64.json").read_text())
    ordinary = json.loads((FIXTURES / "v4-nodepools.json").read_text())["items"]
    big = [n for n in ordinary if n["metadata"]["labels"].get(POOL) == "tpu-v4-4x4x8"][:16]
    for node in big:
        node["metadata"]["labels"] |= {POOL: pool, TOPOLOGY: "4x4x4"}
    doc["items"] += big
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc))
    return path


def _selected(flavor: dict, labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in flavor["spec"]["nodeLabels"].items())


def _export(cli, nodes: Path) -> tuple[list[dict], list[dict[str, str]]]:
    assert cli("init", "--pods", "2").code == 0
    r = cli("import", "k8s", nodes, "--apply")
    assert r.code == 0, r.err
    r = cli("export", "kueue-topology", "-o", "json")
    assert r.code == 0, r.err
    items = json.loads(nodes.read_text())["items"]
    return r.json["items"], [n["metadata"]["labels"] for n in items if ACCEL in n["metadata"]["labels"]]


def test_a_pool_flavor_selects_no_node_of_a_partition(cli, tmp_path):
    docs, nodes = _export(cli, _mixed(tmp_path, "tpu-v4-train"))
    pools = [d for d in docs if d["kind"] == "ResourceFlavor" and "topologyName" not in d["spec"]]
    assert len(pools) == 1
    assert pools[0]["spec"]["nodeLabels"] == {ACCEL: "tpu-v4-podslice", TOPOLOGY: "4x4x4", POOL: "tpu-v4-train"}
    partitioned = [labels for labels in nodes if PARTITION in labels]
    assert len(partitioned) > 1000
    assert not any(_selected(f, labels) for f in pools for labels in partitioned)
    own = [labels for labels in nodes if labels.get(POOL) == "tpu-v4-train"]
    assert len(own) == 16 and all(_selected(pools[0], labels) for labels in own)
    assert [d["kind"] for d in docs].count("Topology") == 1  # the partitions keep theirs


@pytest.mark.parametrize("pool", ["Train_Pool", "tpu-v4-podslice"])
def test_a_pool_flavor_has_a_name_of_its_own(cli, tmp_path, pool):
    """A pool named as no GKE pool is (a label value with capitals and '_') still gives an object name the API
    server takes; one named as an accelerator does not take the partitions' flavor's name."""
    docs, _ = _export(cli, _mixed(tmp_path, pool))
    names = [d["metadata"]["name"] for d in docs if d["kind"] == "ResourceFlavor"]
    assert len(set(names)) == len(names) == 2
    assert all(OBJECT_NAME.fullmatch(n) and len(n) <= 253 for n in names), names


def test_pools_alone_keep_one_flavor_per_accelerator_and_topology(cli):
    assert cli("init").code == 0
    assert cli("import", "k8s", FIXTURES / "v4-nodepools.json", "--apply").code == 0
    r = cli("export", "kueue-topology", "-o", "json")
    assert r.code == 0, r.err
    assert all(POOL not in d["spec"]["nodeLabels"] for d in r.json["items"])
