"""The fleet as it is: `import k8s` reading every label `export node-labels` writes, the mapping file's lists
taken as given, and what an import of node pools reports and counts."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_fleetio_import import FIXTURE

from helpers import snapshot

POD_LABEL = "tpufleet.io/pod"


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


# ---- the pod label ----------------------------------------------------------------------------------------------
def test_a_pod_label_that_contradicts_the_cube_label_is_listed_not_placed(cli, tmp_path):
    assert cli("init", "--pods", "2").code == 0
    export = cli("export", "node-labels", "-o", "json").json
    export["items"] = [n for n in export["items"] if n["metadata"]["labels"]["tpufleet.io/cube"] in ("c00", "c64")]
    export["items"][3]["metadata"]["labels"][POD_LABEL] = "pod1"  # c00 is a cube of pod0
    before = snapshot(cli.state)
    r = cli("import", "k8s", write(tmp_path, export), "--apply", "-o", "json")
    assert r.code == 0, r.err
    name = export["items"][3]["metadata"]["name"]
    assert r.json["unplaced"] == [{"node": name, "reason": "tpufleet.io/pod is pod1, but cube c00 is in pod0"}]
    assert r.json["placed"] == 31
    assert name not in json.loads((cli.state / "state.json").read_text())["k8s"]["nodes"]
    table = cli("import", "k8s", write(tmp_path, export))
    assert f"not placed: {name}: tpufleet.io/pod is pod1, but cube c00 is in pod0" in table.out
    assert snapshot(cli.state) != before


def test_a_pod_label_naming_no_pod_is_listed_not_placed(fleet, tmp_path):
    export = fleet("export", "node-labels", "-o", "json").json
    export["items"] = export["items"][:16]
    export["items"][0]["metadata"]["labels"][POD_LABEL] = "pod7"
    r = fleet("import", "k8s", write(tmp_path, export), "-o", "json")
    assert r.code == 0, r.err
    assert r.json["unplaced"] == [
        {"node": export["items"][0]["metadata"]["name"], "reason": "tpufleet.io/pod pod7 is not a pod of the fleet"}
    ]


def test_a_pod_label_that_contradicts_a_learnt_partition_is_listed(cli, tmp_path, first_48):
    assert cli("init", "--pods", "2").code == 0
    assert cli("import", "k8s", write(tmp_path, first_48), "--apply").code == 0
    doc = copy.deepcopy(first_48)
    node = doc["items"][0]
    node["metadata"]["labels"][POD_LABEL] = "pod1"
    partition = node["metadata"]["labels"]["cloud.google.com/gke-tpu-partition-4x4x4-id"]
    before = snapshot(cli.state)
    r = cli("import", "k8s", write(tmp_path, doc), "--apply", "--detailed-exitcode", "-o", "json")
    assert r.code == 0, r.err  # nothing to record: the node keeps its machine in the state, placed on no guess
    reason = f"tpufleet.io/pod is pod1, but partition {partition} (cube c00) is in pod0"
    assert r.json["unplaced"] == [{"node": node["metadata"]["name"], "reason": reason}]
    assert snapshot(cli.state) == before


def test_a_node_refused_for_its_pod_label_teaches_no_block(cli, tmp_path, first_48):
    assert cli("init", "--pods", "2").code == 0
    doc = copy.deepcopy(first_48)
    doc["items"] = doc["items"][:1]
    labels = doc["items"][0]["metadata"]["labels"]
    labels[POD_LABEL] = "pod1"  # a new block takes the first free pod, pod0
    r = cli("import", "k8s", write(tmp_path, doc), "-o", "json")
    assert r.code == 0, r.err
    block = labels["cloud.google.com/gce-topology-block"]
    assert r.json["unplaced"][0]["reason"] == f"tpufleet.io/pod is pod1, but block {block} would take pod0"
    assert r.json["pods_named"] == r.json["cubes_added"] == [] and not r.json["has_changes"]


# ---- the mapping file's lists ------------------------------------------------------------------------------------
def tainted(first_48: dict) -> tuple[dict, str]:
    doc = copy.deepcopy(first_48)
    node = doc["items"][7]
    node["spec"]["taints"] = [{"key": "cloud.google.com/impending-node-termination", "effect": "NoSchedule"}]
    return doc, node["metadata"]["name"]


def test_drain_taints_empty_means_no_taint_is_a_drain(fleet, tmp_path, first_48):
    doc, name = tainted(first_48)
    nodes = write(tmp_path, doc)
    plain = fleet("import", "k8s", nodes, "-o", "json")
    assert [d["reason"] for d in plain.json["drains_opened"]] == [
        f"k8s: node {name} tainted cloud.google.com/impending-node-termination:NoSchedule"
    ]
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text("drain_taints: []\n")
    r = fleet("import", "k8s", nodes, "--mapping", mapping, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["drains_opened"] == [] and r.json["placed"] == 48
    doc["items"][7]["spec"]["unschedulable"] = True  # a cordon is still a drain
    r = fleet("import", "k8s", write(tmp_path, doc), "--mapping", mapping, "-o", "json")
    assert [d["reason"] for d in r.json["drains_opened"]] == [f"k8s: node {name} cordoned"]


@pytest.mark.parametrize(
    ("text", "entry", "value", "why"),
    [
        ("accelerators: []\n", "accelerators", "[]", "empty: no node would be a TPU node"),
        ("accelerators: ['']\n", "accelerators.0", "''", "not a label value"),
        ("drain_taints: ['not a key!']\n", "drain_taints.0", "'not a key!'", "not a taint key"),
    ],
)
def test_a_mapping_list_that_makes_no_sense_is_refused(fleet, tmp_path, first_48, text, entry, value, why):
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(text)
    nodes = write(tmp_path, first_48)
    before = snapshot(fleet.state)
    for args in (("import", "k8s", nodes, "--apply"), ("drift", "--nodes", nodes), ("export", "node-labels")):
        r = fleet(*args, "--mapping", mapping)
        assert r.code == 2, r.out
        assert r.err.count("\n") == 1 and all(p in r.err for p in (str(mapping), f"field {entry}:", value, why)), r.err
    assert snapshot(fleet.state) == before


# ---- node pools: what their nodes report -------------------------------------------------------------------------
V5P_NODES = Path(__file__).parent.parent / "fixtures" / "k8s" / "v5p-cluster-nodes.json"


def test_a_node_pools_notready_and_cordoned_nodes_are_reported(cli, tmp_path):
    """A pool's nodes are on no machine, so their failures and drains open nothing: the plan says so."""
    assert cli("init", "--generation", "tpu-v5p").code == 0
    doc = json.loads(V5P_NODES.read_text())
    pool = [n for n in doc["items"] if n["metadata"]["labels"].get("cloud.google.com/gke-nodepool") == "v5p-4x4x8"]
    down, cordoned = sorted(pool, key=lambda n: n["metadata"]["name"])[:2]
    down["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    cordoned["spec"]["unschedulable"] = True
    path = write(tmp_path, doc)
    assert cli("import", "k8s", path, "--apply").code == 0
    r = cli("import", "k8s", path, "--detailed-exitcode", "-o", "json")
    assert r.code == 0, r.err  # reported, not recorded: nothing to apply
    row = next(p for p in r.json["node_pool_slices"] if p["node_pool"] == "v5p-4x4x8")
    assert row["unhealthy_nodes"] == [
        {"node": down["metadata"]["name"], "planned": False, "reason": "Ready=False (KubeletNotReady)"},
        {"node": cordoned["metadata"]["name"], "planned": True, "reason": "cordoned"},
    ]
    assert r.json["faults_opened"] == r.json["drains_opened"] == []
    table = cli("import", "k8s", path).out
    assert (
        f"! node pool v5p-4x4x8: node {down['metadata']['name']} Ready=False (KubeletNotReady): no fault opened"
        in table
    )
    assert f"! node pool v5p-4x4x8: node {cordoned['metadata']['name']} cordoned: no drain opened" in table


def test_a_known_pool_whose_nodes_now_carry_partition_ids_is_gone_not_counted_twice(cli, tmp_path):
    """Its nodes are machines of two named cubes of the free pool now; kept, the pool held two more cubes out."""
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", V5P_NODES, "--apply").code == 0
    assert cli("status", "-o", "json").json["k8s"]["free_after_unplaced"] == 137  # 4x4x8: 2 cubes, 2x2x1: 1
    doc = json.loads(V5P_NODES.read_text())
    pool = [n for n in doc["items"] if n["metadata"]["labels"].get("cloud.google.com/gke-nodepool") == "v5p-4x4x8"]
    for i, node in enumerate(sorted(pool, key=lambda n: n["metadata"]["name"])):
        labels = node["metadata"]["labels"]
        labels["cloud.google.com/gke-tpu-partition-4x4x4-id"] = f"part{i // 16}"
        labels["cloud.google.com/gce-topology-block"] = "block0"
    path = write(tmp_path, doc)
    assert (
        "- node pool v5p-4x4x8: gone, its nodes now in other pools, on machines, or " in cli("import", "k8s", path).out
    )
    r = cli("import", "k8s", path, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["placed"] == 32 and [c["cube"] for c in r.json["cubes_added"]] == ["c00", "c01"]
    rows = {p["node_pool"]: p["change"] for p in r.json["node_pool_slices"]}
    assert rows == {"v5p-2x2x1": "unchanged", "v5p-4x4x8": "removed"}
    status = cli("status", "-o", "json").json
    assert [s["name"] for s in status["k8s"]["unplaced_slices"]["slices"]] == ["v5p-2x2x1"]
    assert status["k8s"]["free_after_unplaced"] == 139
    assert cli("capacity", "-o", "json").json["pods"][0]["free_healthy_cubes"] == 139
    assert cli("import", "k8s", path, "--detailed-exitcode").code == 0


# ---- export --out: what the file holds --------------------------------------------------------------------------
README = Path(__file__).parent.parent / "README.md"


@pytest.mark.parametrize("file_format", ["conf", "yaml"])
def test_slurm_topology_out_is_slurms_file_whatever_o_says_as_the_readme_says(fleet, tmp_path, file_format):
    out = tmp_path / "topology"
    for fmt in ("json", "yaml"):
        r = fleet("export", "slurm-topology", "--format", file_format, "--out", out, "-o", fmt)
        assert r.code == 0, r.err
        assert out.read_text() == fleet("export", "slurm-topology", "--format", file_format).out
    paragraph = next(p for p in README.read_text().split("\n\n") if p.startswith("Without `--out` an export prints"))
    words = " ".join(paragraph.split())
    assert "`slurm-topology` always writes Slurm's own file" in words, paragraph
    assert "whatever `-o` says" in words and "`-o` decides only the summary's format" in words, paragraph


# ---- import slices: a spec.type that is no string ----------------------------------------------------------------
GKE = Path(__file__).parent.parent / "fixtures" / "gke"


@pytest.mark.parametrize("value", [{}, ["tpu7x"]])
def test_a_slice_type_that_is_an_object_or_list_is_bad_input_not_an_internal_error(cli, tmp_path, value):
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", GKE / "tpu7x-reservation-subblocks.json", "--apply").code == 0
    doc = json.loads((GKE / "tpu7x-slices.json").read_text())
    doc["items"][1]["spec"]["type"] = value
    name = doc["items"][1]["metadata"]["name"]
    path = write(tmp_path, doc, "slices.json")
    before = snapshot(cli.state)
    for args in (("import", "slices", path, "--apply"), ("drift", "--slices", path)):
        r = cli(*args)
        assert r.code == 2, r.err
        assert r.err.count("\n") == 1 and all(
            p in r.err for p in (str(path), "field items.1.spec.type:", f"Slice {name}:", "must be tpu7x or v6e")
        ), r.err
    assert snapshot(cli.state) == before
