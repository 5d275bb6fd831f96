"""A node list whose TPU nodes carry an accelerator no pod of the fleet has (a TPU v4 cluster's nodes against a
TPU7x superpod state: another cluster's list, or another `init --generation`) left every node unplaced with exit 0,
no change and `drift` in sync, so a cron job never noticed: `import k8s`, `drift` and `metrics --drift-nodes` warn,
naming the nodes' accelerator and the fleet's."""

from __future__ import annotations

from pathlib import Path

NODES = Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json"
WARNED = "no pod of the fleet takes the nodes' tpu-v4-podslice: its pods are tpu7x (pod0)"


def test_nodes_of_an_accelerator_no_pod_has_are_warned_of(cli):
    assert cli("init", "--generation", "tpu7x").code == 0
    r = cli("import", "k8s", NODES, "-o", "json")
    assert r.code == 0 and r.json["placed"] == 0 and r.json["tpu_nodes"] > 0
    assert WARNED in r.json["warning"] and f"tpufleet: warning: {r.json['warning']}" in r.err
    drift = cli("drift", "--nodes", NODES)
    assert drift.code == 0 and WARNED in drift.err
    metrics = cli("metrics", "--drift-nodes", NODES)
    assert metrics.code == 0 and WARNED in metrics.err


def test_nodes_a_pod_takes_are_not_warned_of(fleet):
    r = fleet("import", "k8s", NODES, "-o", "json")  # the built-in TPU v4 pod: its nodes
    assert r.code == 0 and r.json["placed"] > 0 and r.json["warning"] is None and "warning" not in r.err
