"""`import k8s` gives a cube's free machines to the new nodes without a host label in the natural order of their
names (`node-2` before `node-10`), as ids are listed everywhere; a node the state knows keeps its machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CUBE, MACHINE, POD = "tpufleet.io/cube", "tpufleet.io/machine", "tpufleet.io/pod"


def _nodes(doc: dict[str, Any], tmp_path: Path, numbers: list[int]) -> Path:
    """Cube c00's nodes of the export `doc` (`export node-labels` of a fleet no import named), named `node-N` for
    `numbers` and without the labels that would place them directly (the cube by its partition, the machine by
    the order of the names)."""
    doc = json.loads(json.dumps(doc))
    items = [n for n in doc["items"] if n["metadata"]["labels"][CUBE] == "c00"][: len(numbers)]
    for node, number in zip(items, numbers, strict=True):
        labels = node["metadata"]["labels"]
        for key in (CUBE, MACHINE, POD):
            del labels[key]
        node["metadata"]["name"] = labels["kubernetes.io/hostname"] = f"node-{number}"
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({**doc, "items": items}))
    return path


def _machines(cli: Any) -> dict[str, str]:
    return json.loads((cli.state / "state.json").read_text())["k8s"]["nodes"]


def test_new_nodes_take_the_machines_in_the_natural_order_of_their_names(cli, tmp_path):
    assert cli("init", "--cubes-per-pod", "2").code == 0
    doc = cli("export", "node-labels", "-o", "json").json
    r = cli("import", "k8s", _nodes(doc, tmp_path, list(range(16))), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["placed"] == 16
    assert _machines(cli) == {f"node-{m}": f"host:c00/{m}" for m in range(16)}


def test_known_nodes_keep_their_machines_and_new_ones_fill_the_rest_in_natural_order(cli, tmp_path):
    assert cli("init", "--cubes-per-pod", "2").code == 0
    doc = cli("export", "node-labels", "-o", "json").json
    first = [*range(8), 10]
    assert cli("import", "k8s", _nodes(doc, tmp_path, first), "--apply").code == 0
    assert _machines(cli) == {**{f"node-{m}": f"host:c00/{m}" for m in range(8)}, "node-10": "host:c00/8"}
    assert cli("import", "k8s", _nodes(doc, tmp_path, list(range(16))), "--apply").code == 0
    new = [8, 9, *range(11, 16)]
    assert _machines(cli) == {
        **{f"node-{m}": f"host:c00/{m}" for m in range(8)},
        "node-10": "host:c00/8",
        **{f"node-{n}": f"host:c00/{m}" for n, m in zip(new, range(9, 16), strict=True)},
    }


def test_new_partitions_take_the_free_cubes_in_the_natural_order_of_their_nodes_names(cli, tmp_path):
    """A partition the state does not know yet takes the pod's first free cube as its nodes are met: in the natural
    order of their names, so `node-2`'s partition comes before `node-10`'s, as every list of ids is ordered."""
    partition = "cloud.google.com/gke-tpu-partition-4x4x4-id"
    assert cli("init", "--cubes-per-pod", "2").code == 0
    doc = cli("export", "node-labels", "-o", "json").json
    items = []
    for cube, number in (("c00", 10), ("c01", 2)):  # node-10 listed first, as its name sorts first as text
        node = json.loads(json.dumps(next(n for n in doc["items"] if n["metadata"]["labels"][CUBE] == cube)))
        labels = node["metadata"]["labels"]
        for key in (CUBE, MACHINE, POD):
            del labels[key]
        labels[partition] = f"part-{number}"
        node["metadata"]["name"] = labels["kubernetes.io/hostname"] = f"node-{number}"
        items.append(node)
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({**doc, "items": items}))
    r = cli("import", "k8s", path, "--apply", "-o", "json")
    assert r.code == 0, r.err
    state = json.loads((cli.state / "state.json").read_text())["k8s"]
    assert state["partitions"] == {"part-2": "c00", "part-10": "c01"}
    assert state["nodes"] == {"node-2": "host:c00/0", "node-10": "host:c01/0"}
