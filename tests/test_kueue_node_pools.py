"""`export kueue-topology` of a cluster of ordinary TPU node pools (no `gke-tpu-partition-4x4x4-*` labels: no
dynamic slicing): a ResourceFlavor per accelerator and topology of its pools, each selecting the labels those
nodes carry, every TPU node of the list selected by exactly one flavor; no Topology (its nodes have no partition
level) and no flavor pointing at one. A fleet never imported, or one of dynamic-slicing partitions, exports the
Topology as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures" / "k8s"
ACCEL = "cloud.google.com/gke-tpu-accelerator"


def _selected(flavor: dict, labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in flavor["spec"]["nodeLabels"].items())


@pytest.mark.parametrize(("generation", "nodes"), [("tpu-v5p", "v5p-cluster-nodes.json"), (None, "v4-nodepools.json")])
def test_pool_flavors_select_the_nodes_of_the_pools(cli, generation, nodes):
    assert cli("init", *(("--generation", generation) if generation else ())).code == 0
    assert cli("import", "k8s", FIXTURES / nodes, "--apply").code == 0
    r = cli("export", "kueue-topology", "-o", "json")
    assert r.code == 0, r.err
    docs = r.json["items"]
    assert {d["kind"] for d in docs} == {"ResourceFlavor"}
    assert not any("topologyName" in d["spec"] for d in docs)
    tpu = [n["metadata"]["labels"] for n in json.loads((FIXTURES / nodes).read_text())["items"]]
    tpu = [labels for labels in tpu if ACCEL in labels]
    for labels in tpu:
        assert sum(_selected(f, labels) for f in docs) == 1, labels
    assert all(any(_selected(f, labels) for labels in tpu) for f in docs)
    assert len({d["metadata"]["name"] for d in docs}) == len(docs) == 2


def test_a_fleet_never_imported_keeps_its_topology(fleet):
    r = fleet("export", "kueue-topology", "-o", "json")
    assert r.code == 0, r.err
    assert [d["kind"] for d in r.json["items"]] == ["Topology", "ResourceFlavor"]
