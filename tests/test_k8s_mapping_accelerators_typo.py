"""A mapping whose accelerators are on no node of the list (`tpu7` for `tpu7x`) left every node unplaced with exit
0, no change and no drift, so a cron job never noticed: `import k8s`, `drift` and `metrics --drift-nodes` warn."""

from __future__ import annotations

from pathlib import Path

NODES = Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json"
WARNED = "field accelerators: none of tpu7 is on a node of the list, whose nodes carry tpu-v4-podslice"


def test_accelerators_on_no_node_are_warned_of(fleet, tmp_path):
    mapping = tmp_path / "m.yaml"
    mapping.write_text("kind: tpufleet-k8s-mapping\nversion: 1\naccelerators: [tpu7]\n")
    r = fleet("import", "k8s", NODES, "--mapping", mapping, "-o", "json")
    assert r.code == 0 and r.json["placed"] == 0 and r.json["unplaced"]
    assert WARNED in r.json["warning"] and f"{mapping}: {WARNED}" in r.err
    drift = fleet("drift", "--nodes", NODES, "--mapping", mapping)
    assert drift.code == 0 and WARNED in drift.err
    metrics = fleet("metrics", "--drift-nodes", NODES, "--drift-mapping", mapping)
    assert metrics.code == 0 and WARNED in metrics.err


def test_a_mapping_with_one_accelerator_on_the_nodes_is_not_warned_of(fleet, tmp_path):
    mapping = tmp_path / "m.yaml"
    mapping.write_text("kind: tpufleet-k8s-mapping\nversion: 1\naccelerators: [tpu7, tpu-v4-podslice]\n")
    r = fleet("import", "k8s", NODES, "--mapping", mapping, "-o", "json")
    assert r.code == 0 and r.json["placed"] > 0 and r.json["warning"] is None and "warning" not in r.err
    r = fleet("import", "k8s", NODES, "-o", "json")  # the defaults
    assert r.code == 0 and r.json["warning"] is None
