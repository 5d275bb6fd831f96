"""A TPU node without `cloud.google.com/gke-tpu-topology` in `kubectl get nodes -o json`: listed as not placed, with
the reason, in the plan and its JSON; the rest of the list imports as usual (the import and `drift` exit as for any
list). A node placed by its 4x4x4 partition needs no topology. Malformed labels are still refused, exit 2, the
state byte-identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import one_line, snapshot

FIXTURES = Path(__file__).parent.parent / "fixtures" / "k8s"
TOPOLOGY, POOL = "cloud.google.com/gke-tpu-topology", "cloud.google.com/gke-nodepool"


def _without_topology(src: Path, dst: Path, pool: str | None, count: int = 1) -> list[str]:
    """The list with the topology label taken off the first `count` nodes (of `pool`, or any TPU node's)."""
    doc = json.loads(src.read_text())
    dropped: list[str] = []
    for node in doc["items"]:
        labels = node["metadata"]["labels"]
        if TOPOLOGY in labels and (pool is None or labels.get(POOL) == pool) and len(dropped) < count:
            del labels[TOPOLOGY]
            dropped.append(node["metadata"]["name"])
    dst.write_text(json.dumps(doc))
    return dropped


@pytest.fixture
def v5p(cli):
    assert cli("init", "--generation", "tpu-v5p").code == 0
    return cli


def test_a_pool_node_without_topology_is_not_placed_and_the_rest_imports(v5p, tmp_path):
    path = tmp_path / "nodes.json"
    (dropped,) = _without_topology(FIXTURES / "v5p-cluster-nodes.json", path, "v5p-4x4x8")
    r = v5p("import", "k8s", path, "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert dropped in {u["node"] for u in d["unplaced"]}
    rows = {p["node_pool"]: p for p in d["node_pool_slices"]}
    assert sorted(rows) == ["v5p-2x2x1", "v5p-4x4x8"]
    assert len(rows["v5p-4x4x8"]["nodes"]) == 31 and dropped not in rows["v5p-4x4x8"]["nodes"]
    table = v5p("import", "k8s", path)
    assert table.code == 0 and any(dropped in line and "not placed" in line for line in table.out.splitlines())
    assert v5p("import", "k8s", path, "--apply").code == 0
    assert v5p("import", "k8s", path, "--detailed-exitcode").code == 0  # a repeat: no changes
    assert v5p("drift", "--nodes", path).code == 0


def test_a_partition_node_without_topology_is_placed_by_its_partition(fleet, tmp_path):
    path = tmp_path / "nodes.json"
    dropped = _without_topology(FIXTURES / "pod-64.json", path, None, count=3)
    whole = fleet("import", "k8s", FIXTURES / "pod-64.json", "-o", "json").json
    r = fleet("import", "k8s", path, "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert (d["placed"], d["unplaced"]) == (whole["placed"], whole["unplaced"])
    assert not {u["node"] for u in d["unplaced"]} & set(dropped)


def test_a_malformed_topology_is_still_refused_and_changes_nothing(v5p, tmp_path):
    doc = json.loads((FIXTURES / "v5p-cluster-nodes.json").read_text())
    node = next(n for n in doc["items"] if TOPOLOGY in n["metadata"]["labels"])
    node["metadata"]["labels"][TOPOLOGY] = "4x4x"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    before = snapshot(v5p.state)
    line = one_line(v5p("import", "k8s", path, "--apply"))
    assert str(path) in line and TOPOLOGY in line and "4x4x" in line
    assert snapshot(v5p.state) == before
