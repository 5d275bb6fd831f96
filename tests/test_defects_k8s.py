"""Issue 26, the Kubernetes import and export: input errors refused when read (never at `--apply` as a state-file
error), exports of only the nodes that exist, and a node list read in memory proportional to its size."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_fleetio_import import FIXTURE

from helpers import snapshot

PARTITION = "cloud.google.com/gke-tpu-partition-4x4x4-id"
BLOCK = "cloud.google.com/gce-topology-block"


@pytest.fixture(scope="module")
def first_48() -> dict:
    """The first 48 nodes of the shipped pod: three whole cubes, all healthy."""
    doc = json.loads(FIXTURE.read_text())
    doc["items"] = doc["items"][:48]
    return doc


def write(tmp_path: Path, doc: dict, name: str = "nodes.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def one_line_naming(err: str, *parts: str) -> bool:
    return err.count("\n") == 1 and all(part in err for part in parts)


# ---- errors in a node list or mapping file: exit 2 when read -----------------------------------------------
@pytest.mark.parametrize("label", [PARTITION, BLOCK])
def test_an_empty_name_label_is_refused_when_read(fleet, tmp_path, first_48, label):
    doc = copy.deepcopy(first_48)
    node = doc["items"][5]
    node["metadata"]["labels"][label] = ""
    path = write(tmp_path, doc)
    before = snapshot(fleet.state)
    for extra in ((), ("--apply",), ("--detailed-exitcode",)):
        r = fleet("import", "k8s", path, *extra)
        assert r.code == 2, r.err
        assert one_line_naming(r.err, str(path), f"node {node['metadata']['name']}", label, "''")
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    ("text", "entry", "value"),
    [
        ("cubes: {{'{partition}': c99}}\n", "cubes.{partition}", "'c99'"),
        ("cubes: {{rack-not-listed: c99}}\n", "cubes.rack-not-listed", "'c99'"),
        ("pods: {{'{block}': pod9}}\n", "pods.{block}", "'pod9'"),
        ("nodes: {{tpu-host-x: 'host:c99/3'}}\n", "nodes.tpu-host-x", "'host:c99/3'"),
        ("cubes: {{'': c01}}\n", "cubes.", "''"),
        ("nodes: {{'Not A Node': 'host:c01/3'}}\n", "nodes.Not A Node", "'Not A Node'"),
    ],
)
def test_a_mapping_entry_the_state_could_not_keep_is_refused_when_read(fleet, tmp_path, first_48, text, entry, value):
    labels = first_48["items"][0]["metadata"]["labels"]
    names = {"partition": labels[PARTITION], "block": labels[BLOCK]}
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(text.format(**names))
    nodes = write(tmp_path, first_48)
    before = snapshot(fleet.state)
    for extra in ((), ("--apply",), ("--detailed-exitcode",)):
        r = fleet("import", "k8s", nodes, "--mapping", mapping, *extra)
        assert r.code == 2, r.err
        assert one_line_naming(r.err, str(mapping), f"field {entry.format(**names)}:", value)
    assert snapshot(fleet.state) == before


def test_a_mapping_to_c99_after_an_import_is_exit_2_not_a_plan_that_exits_4_forever(fleet, tmp_path, first_48):
    """The reported case: the partition is already named, the mapping moves it to a cube the fleet lacks."""
    nodes = write(tmp_path, first_48)
    assert fleet("import", "k8s", nodes, "--apply").code == 0
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(f"cubes: {{'{first_48['items'][0]['metadata']['labels'][PARTITION]}': c99}}\n")
    before = snapshot(fleet.state)
    plan = fleet("import", "k8s", nodes, "--mapping", mapping, "--detailed-exitcode")
    assert plan.code == 2 and one_line_naming(plan.err, str(mapping), "'c99'"), plan.err
    assert fleet("import", "k8s", nodes, "--mapping", mapping, "--apply").code == 2
    assert snapshot(fleet.state) == before
    assert fleet("import", "k8s", nodes, "--detailed-exitcode").code == 0  # without it: nothing to do


def test_messages_quote_at_most_60_characters_of_a_bad_key_or_value(fleet, tmp_path, first_48):
    doc = copy.deepcopy(first_48)
    doc["items"][2]["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] = "4x4x4" + "x" * 5000
    r = fleet("import", "k8s", write(tmp_path, doc))
    assert r.code == 2 and len(r.err) < 400, r.err
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(f"cubes: {{'{'p' * 5000}\\nfake line': c01}}\n")
    r = fleet("import", "k8s", write(tmp_path, first_48), "--mapping", mapping)
    assert r.code == 2 and len(r.err) < 400 and r.err.count("\n") == 1, r.err


# ---- item 9: exports list only the nodes that exist ----------------------------------------------------------
@pytest.mark.parametrize("own_only", [False, True])
def test_export_of_an_imported_fleet_lists_only_its_nodes_and_reimports_as_a_no_op(cli, tmp_path, first_48, own_only):
    assert cli("init", "--pods", "2").code == 0
    assert cli("import", "k8s", write(tmp_path, first_48), "--apply").code == 0
    down = first_48["items"][20]["metadata"]["name"]  # a failure on one imported machine travels with the export
    state = json.loads((cli.state / "state.json").read_text())
    assert cli("inject-fault", state["k8s"]["nodes"][down]).code == 0
    flag = ["--tpufleet-labels-only"] if own_only else []
    r = cli("export", "node-labels", *flag, "-o", "json")
    assert r.code == 0, r.err
    names = sorted(n["metadata"]["name"] for n in r.json["items"])
    assert names == sorted(n["metadata"]["name"] for n in first_48["items"])
    assert r.err.count("\n") == 1 and "2000 machine(s)" in r.err  # 2 pods x 1,024 machines, 48 of them nodes
    faults = cli("faults", "-o", "json").json
    before = snapshot(cli.state)
    again = cli("import", "k8s", write(tmp_path, r.json, "export.json"), "--apply", "--detailed-exitcode", "-o", "json")
    assert again.code == 0, again.err
    d = again.json
    assert not d["has_changes"] and d["cubes_added"] == [] and d["machines_named"] == 0
    assert d["faults_opened"] == d["drains_opened"] == d["faults_cleared"] == []
    assert snapshot(cli.state) == before and cli("faults", "-o", "json").json == faults


def test_slurm_topology_of_an_imported_fleet_has_no_invented_nodes(cli, tmp_path, first_48):
    assert cli("init", "--pods", "2").code == 0
    assert cli("import", "k8s", write(tmp_path, first_48), "--apply").code == 0
    r = cli("export", "slurm-topology")
    assert r.code == 0 and "2000 machine(s)" in r.err
    switches = [line.split()[0] for line in r.out.splitlines() if line.startswith("SwitchName")]
    assert switches == ["SwitchName=c00", "SwitchName=c01", "SwitchName=c02", "SwitchName=pod0"]
    assert "tpu-c" not in r.out


@pytest.mark.parametrize("own_only", [False, True])
def test_export_of_a_fleet_imported_as_node_pools_invents_no_nodes(cli, own_only):
    """A cluster of ordinary node pools names no machine: its export (safe to apply to the live cluster, the
    README says) wrote 2,240 made-up `tpu-cNN-mMM` Nodes, which an apply creates and an import learns."""
    nodes = Path(__file__).parent.parent / "fixtures" / "k8s" / "v5p-cluster-nodes.json"
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", nodes, "--apply").code == 0
    flag = ["--tpufleet-labels-only"] if own_only else []
    r = cli("export", "node-labels", *flag, "-o", "json")
    assert r.code == 0 and r.json["items"] == [], r.err
    assert "2240 machine(s) have no node" in r.err
    assert "tpu-c" not in cli("export", "slurm-topology").out
    again = cli("import", "k8s", nodes, "--detailed-exitcode")
    assert again.code == 0, again.out


def test_export_of_a_fleet_never_imported_still_lists_every_machine(fleet):
    r = fleet("export", "node-labels", "--tpufleet-labels-only", "-o", "json")
    assert r.code == 0 and len(r.json["items"]) == 1024 and r.err == ""


# ---- item 5: a node list with more nodes than any cluster is refused before they are built ----------------------
# (its memory, and that of fields skipped unread, is measured in benchmarks/bench_input_memory.py)
def test_a_node_list_with_too_many_nodes_is_refused(fleet, tmp_path):
    from tpufleet.integrations.k8s import MAX_NODES

    path = tmp_path / "big.json"
    body = b",".join(b'{"metadata":{"name":"n%d","labels":{}}}' % i for i in range(MAX_NODES + 1))
    path.write_bytes(b'{"kind":"List","items":[' + body + b"]}")
    before = snapshot(fleet.state)
    r = fleet("import", "k8s", path)
    assert r.code == 2 and str(path) in r.err and str(MAX_NODES) in r.err.replace(",", ""), r.err
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    ("text", "entry", "value", "why"),
    [
        ("labels: {partition: cloud.google.com/gce-topology-block}\n", "labels.partition", BLOCK, "role block"),
        ("labels: {block: a/x, partition: a/x}\n", "labels.partition", "'a/x'", "role block"),
        ("labels: {accelerator: ''}\n", "labels.accelerator", "''", "not a Kubernetes label key"),
        ("labels: {cube: 'not a key!'}\n", "labels.cube", "'not a key!'", "not a Kubernetes label key"),
    ],
)
def test_a_mapping_label_key_no_export_could_write_is_refused(fleet, tmp_path, first_48, text, entry, value, why):
    """Two roles on one label key would be one label in `export node-labels` (the round trip loses a role) and
    one level twice in the Kueue Topology (refused by Kueue); an empty or malformed key is no label at all."""
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(text)
    nodes = write(tmp_path, first_48)
    for args in (("import", "k8s", nodes), ("export", "kueue-topology"), ("export", "node-labels")):
        r = fleet(*args, "--mapping", mapping)
        assert r.code == 2, r.out
        assert one_line_naming(r.err, str(mapping), f"field {entry}:", value, why), r.err


# ---- a node the API server lists without `metadata.labels` (an empty map is left out) -------------------------
def test_a_node_without_labels_is_an_unplaced_node_not_bad_input(fleet, tmp_path, first_48):
    from tpufleet.integrations.k8s import decode_node_list, parse_nodes

    doc = copy.deepcopy(first_48)
    doc["items"].append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-1"}, "spec": {}})
    path = write(tmp_path, doc)
    before = snapshot(fleet.state)
    r = fleet("import", "k8s", path, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["nodes"] == 49 and r.json["tpu_nodes"] == 48
    assert [u["node"] for u in r.json["unplaced"]] == ["cpu-1"]
    assert snapshot(fleet.state) == before
    for nodes in (parse_nodes(doc, str(path)), decode_node_list(path.read_bytes(), str(path))):
        assert nodes[-1].name == "cpu-1" and nodes[-1].labels == {}
