"""`export kueue-topology` of ordinary TPU node pools selects `gke-tpu-topology` as the nodes carry it: a pool whose
nodes say `8x4x4` is a 4x4x8 slice to tpufleet, but a flavor of `4x4x8` would match none of its nodes (a node
selector compares the text), so the jobs it admits would never schedule. `import k8s` keeps the text; a state
written before it did still loads (its flavors take the shape's text), and one shape written two ways by two pools
of one accelerator is two flavors."""

from __future__ import annotations

import copy
import json
from pathlib import Path

FIXTURE = Path(__file__).parent.parent / "fixtures" / "k8s" / "v5p-cluster-nodes.json"
ACCEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"
POOL = "cloud.google.com/gke-nodepool"


def _nodes(tmp_path: Path, written: str, twin: str | None = None) -> Path:
    """The v5p cluster's node list with its 4x4x8 pool's nodes labelled `written`; with `twin`, a second 4x4x8 pool
    (the same nodes renamed) labelled so."""
    doc = json.loads(FIXTURE.read_text())
    big = [n for n in doc["items"] if n["metadata"]["labels"].get(POOL) == "v5p-4x4x8"]
    for node in big:
        node["metadata"]["labels"][TOPOLOGY] = written
    if twin is not None:
        for node in copy.deepcopy(big):
            name = node["metadata"]["name"].replace("v5p-4x4x8", "v5p-twin")
            node["metadata"]["name"] = name
            node["metadata"]["labels"] |= {POOL: "v5p-twin", TOPOLOGY: twin, "kubernetes.io/hostname": name}
            doc["items"].append(node)
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(doc))
    return path


def _selected(flavor: dict, labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in flavor["spec"]["nodeLabels"].items())


def _flavors(cli) -> list[dict]:
    r = cli("export", "kueue-topology", "-o", "json")
    assert r.code == 0, r.err
    return r.json["items"]


def _tpu_labels(path: Path) -> list[dict[str, str]]:
    items = json.loads(path.read_text())["items"]
    return [n["metadata"]["labels"] for n in items if ACCEL in n["metadata"]["labels"]]


def test_a_pool_flavor_selects_the_topology_as_its_nodes_write_it(cli, tmp_path):
    nodes = _nodes(tmp_path, "8x4x4")
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", nodes, "--apply").code == 0
    flavors = _flavors(cli)
    assert sorted(f["spec"]["nodeLabels"][TOPOLOGY] for f in flavors) == ["2x2x1", "8x4x4"]
    for labels in _tpu_labels(nodes):
        assert sum(_selected(f, labels) for f in flavors) == 1, labels
    # kept in the state: the same list again changes nothing
    again = cli("import", "k8s", nodes, "-o", "json")
    assert again.code == 0 and again.json["has_changes"] is False


def test_one_shape_written_two_ways_is_one_flavor_each(cli, tmp_path):
    nodes = _nodes(tmp_path, "8x4x4", twin="4x4x8")
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", nodes, "--apply").code == 0
    flavors = _flavors(cli)
    assert sorted(f["spec"]["nodeLabels"][TOPOLOGY] for f in flavors) == ["2x2x1", "4x4x8", "8x4x4"]
    assert len({f["metadata"]["name"] for f in flavors}) == 3
    for labels in _tpu_labels(nodes):
        assert sum(_selected(f, labels) for f in flavors) == 1, labels


def test_a_state_written_before_the_text_was_kept_still_loads(cli, tmp_path):
    nodes = _nodes(tmp_path, "8x4x4")
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", nodes, "--apply").code == 0
    path = cli.state / "state.json"
    doc = json.loads(path.read_text())
    assert doc["k8s"]["node_pools"]["v5p-4x4x8"]["topology"] == ["8x4x4"]
    assert "topology" not in doc["k8s"]["node_pools"]["v5p-2x2x1"]  # written as the shape: nothing kept
    del doc["k8s"]["node_pools"]["v5p-4x4x8"]["topology"]
    path.write_text(json.dumps(doc))
    assert cli("status").code == 0
    assert sorted(f["spec"]["nodeLabels"][TOPOLOGY] for f in _flavors(cli)) == ["2x2x1", "4x4x8"]
    # the next import learns the text: the pool is changed, and its flavor follows
    r = cli("import", "k8s", nodes, "--apply", "-o", "json")
    assert r.code == 0, r.err
    rows = {row["node_pool"]: row for row in r.json["node_pool_slices"]}
    assert rows["v5p-4x4x8"]["change"] == "changed" and rows["v5p-4x4x8"]["topology"] == ["8x4x4"]
    assert sorted(f["spec"]["nodeLabels"][TOPOLOGY] for f in _flavors(cli)) == ["2x2x1", "8x4x4"]


def test_a_topology_that_is_not_the_pools_shape_is_a_damaged_state(cli, tmp_path):
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", _nodes(tmp_path, "8x4x4"), "--apply").code == 0
    path = cli.state / "state.json"
    doc = json.loads(path.read_text())
    doc["k8s"]["node_pools"]["v5p-4x4x8"]["topology"] = ["8x8x4"]
    path.write_text(json.dumps(doc))
    r = cli("status")
    assert r.code == 2
    assert "k8s.node_pools.v5p-4x4x8.topology.0" in r.err


def test_a_pool_whose_nodes_write_its_shape_two_ways_gets_both(cli, tmp_path):
    path = _nodes(tmp_path, "8x4x4")
    doc = json.loads(path.read_text())
    big = [n for n in doc["items"] if n["metadata"]["labels"].get(POOL) == "v5p-4x4x8"]
    for node in big[::2]:
        node["metadata"]["labels"][TOPOLOGY] = "4x8x4"
    path.write_text(json.dumps(doc))
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", path, "--apply").code == 0
    flavors = _flavors(cli)
    assert sorted(f["spec"]["nodeLabels"][TOPOLOGY] for f in flavors) == ["2x2x1", "4x8x4", "8x4x4"]
    for labels in _tpu_labels(path):
        assert sum(_selected(f, labels) for f in flavors) == 1, labels
