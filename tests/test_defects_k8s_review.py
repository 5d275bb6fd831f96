"""`import k8s` of ordinary node pools: what a node's own labels say of its pool, read as for any other node."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import snapshot

V5P_NODES = Path(__file__).parent.parent / "fixtures" / "k8s" / "v5p-cluster-nodes.json"
POOL, POD_LABEL = "v5p-4x4x8", "tpufleet.io/pod"


def write(tmp_path: Path, doc: dict, name: str = "nodes.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def pool_nodes(doc: dict, pool: str = POOL) -> list[dict]:
    nodes = [n for n in doc["items"] if n["metadata"]["labels"].get("cloud.google.com/gke-nodepool") == pool]
    return sorted(nodes, key=lambda n: n["metadata"]["name"])


def pool_pods(r) -> dict[str, str]:
    return {p["node_pool"]: p["pod"] for p in r.json["node_pool_slices"]}


def test_a_pool_node_whose_pod_label_contradicts_its_recorded_pool_is_listed_not_placed(cli, tmp_path):
    assert cli("init", "--generation", "tpu-v5p", "--pods", "2").code == 0
    assert cli("import", "k8s", V5P_NODES, "--apply").code == 0  # the pool is on pod0
    doc = json.loads(V5P_NODES.read_text())
    odd = pool_nodes(doc)[3]
    odd["metadata"]["labels"][POD_LABEL] = "pod1"
    pool_nodes(doc)[5]["metadata"]["labels"][POD_LABEL] = "pod9"
    before = snapshot(cli.state)
    r = cli("import", "k8s", write(tmp_path, doc), "-o", "json")
    assert r.code == 0, r.err
    reasons = {u["node"]: u["reason"] for u in r.json["unplaced"] if u["node"].startswith("gke-ml-train-v5p-4x4x8")}
    assert reasons == {
        odd["metadata"]["name"]: f"{POD_LABEL} is pod1, but node pool {POOL} is in pod0",
        pool_nodes(doc)[5]["metadata"]["name"]: f"{POD_LABEL} pod9 is not a pod of the fleet",
    }
    row = next(p for p in r.json["node_pool_slices"] if p["node_pool"] == POOL)
    assert row["pod"] == "pod0" and odd["metadata"]["name"] not in row["nodes"] and len(row["nodes"]) == 30
    assert snapshot(cli.state) == before


def test_a_new_pool_goes_to_the_pod_its_nodes_pod_label_names(cli, tmp_path):
    assert cli("init", "--generation", "tpu-v5p", "--pods", "2").code == 0
    doc = json.loads(V5P_NODES.read_text())
    for node in pool_nodes(doc):
        node["metadata"]["labels"][POD_LABEL] = "pod1"
    r = cli("import", "k8s", write(tmp_path, doc), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert pool_pods(r) == {"v5p-2x2x1": "pod0", POOL: "pod1"}
    assert cli("status", "-o", "json").json["k8s"]["unplaced_slices"]["by_pod"] == {"pod0": 1, "pod1": 2}
