"""`tpufleet import k8s`: the shipped GKE node list of a 64-cube pod, its faults and drains, idempotency, and the
refusals of malformed input (exit 2, naming node and field, state untouched)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import add_fault, snapshot

FIXTURE = Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json"
STATE_LABEL = "cloud.google.com/gke-tpu-partition-4x4x4-state"


@pytest.fixture(scope="module")
def node_list() -> dict:
    return json.loads(FIXTURE.read_text())


def write(tmp_path: Path, doc: dict, name: str = "nodes.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def node_named(doc: dict, prefix: str) -> dict:
    return next(n for n in doc["items"] if n["metadata"]["name"].startswith(prefix))


def test_plan_of_the_fixture_pod(fleet, tmp_path):
    before = snapshot(fleet.state)
    r = fleet("import", "k8s", FIXTURE, "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert (d["nodes"], d["tpu_nodes"], d["placed"]) == (1026, 1025, 1023)
    assert len(d["cubes_added"]) == 64 and d["machines_named"] == 1023
    # partition 17 is DEGRADED: a degraded cube that still serves (GKE: a DEGRADED sub-block is usable), no fault
    assert sorted(f["target"] for f in d["faults_opened"]) == [
        "cube:c05", "cube:c40", "cube:c50", "host:c09/14", "host:c40/14",
    ]  # fmt: skip
    assert [g["cube"] for g in d["degraded_new"]] == ["c17"] and d["degraded_cleared"] == []
    assert sorted(f["target"] for f in d["drains_opened"]) == ["host:c22/5", "host:c30/5"]
    assert all(f["planned"] for f in d["drains_opened"]) and not any(f["planned"] for f in d["faults_opened"])
    assert [u["node"] for u in d["unplaced"]] == [
        "gke-default-pool-3f2a9c1e-x7qz", "gke-tpu-v4-spare-0b7e44d1-q9ws", "gke-tpu-v5e-pool-81c0d2aa-m4k2",
    ]  # fmt: skip
    assert d["has_changes"] and not d["applied"] and d["faults_cleared"] == []
    assert snapshot(fleet.state) == before  # a plan changes nothing


def test_kubernetes_names_are_listed_in_natural_order(fleet, tmp_path, node_list):
    """node-10 was listed before node-9 (sorted as text), where every other list of names counts digits as numbers."""
    doc = copy.deepcopy(node_list)
    cpu = node_named(doc, "gke-default-pool")
    names = ["cpu-node-10", "cpu-node-9", "cpu-node-100", "cpu-node-09a"]
    doc["items"] += [{**cpu, "metadata": {**cpu["metadata"], "name": n}} for n in names]
    d = fleet("import", "k8s", write(tmp_path, doc), "-o", "json").json
    listed = [u["node"] for u in d["unplaced"] if u["node"].startswith("cpu-node-")]
    assert listed == ["cpu-node-9", "cpu-node-09a", "cpu-node-10", "cpu-node-100"]
    # the table says them in one line, the first and last of that order
    (line,) = [line for line in fleet("import", "k8s", write(tmp_path, doc)).out.splitlines() if "cpu-node-" in line]
    assert "5 nodes (cpu-node-9 ... gke-default-pool-3f2a9c1e-x7qz)" in line


def test_alike_unplaced_nodes_are_one_line_with_a_count(fleet, tmp_path, node_list):
    """A cluster's CPU nodes are never placed: a thousand of them were a thousand alike lines. The table says each
    reason once, with the count and the first and last node; JSON keeps every node."""
    doc = copy.deepcopy(node_list)
    cpu = node_named(doc, "gke-default-pool")
    doc["items"] += [{**cpu, "metadata": {**cpu["metadata"], "name": f"cpu-node-{i}"}} for i in range(1, 1001)]
    path = write(tmp_path, doc)
    unplaced = fleet("import", "k8s", path, "-o", "json").json["unplaced"]
    assert len(unplaced) == 1003 and [u["node"] for u in unplaced[:2]] == ["cpu-node-1", "cpu-node-2"]
    r = fleet("import", "k8s", path)
    assert r.code == 0, r.err
    assert [line for line in r.out.splitlines() if "not placed" in line] == [
        "  ? not placed: 1001 nodes (cpu-node-1 ... gke-default-pool-3f2a9c1e-x7qz): not a TPU node (no "
        "cloud.google.com/gke-tpu-accelerator label)",
        "  ? not placed: gke-tpu-v4-spare-0b7e44d1-q9ws: no cloud.google.com/gke-tpu-partition-4x4x4-id label (and no "
        "tpufleet.io/cube)",
        "  ? not placed: gke-tpu-v5e-pool-81c0d2aa-m4k2: accelerator tpu-v5-lite-podslice is not a TPU accelerator "
        "tpufleet models (tpu-v4-podslice, tpu-v5p-slice, tpu7x)",
    ]


def test_detailed_exitcode_apply_and_repeat_is_a_no_op(fleet):
    assert fleet("import", "k8s", FIXTURE, "--detailed-exitcode").code == 4
    r = fleet("import", "k8s", FIXTURE, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["applied"] and r.json["serial"] == 2
    assert all(f["id"] for f in r.json["faults_opened"] + r.json["drains_opened"])
    faults = fleet("faults", "-o", "json").json
    assert len(faults) == 7 and sum(f["planned"] for f in faults) == 2
    status = fleet("status", "-o", "json").json
    assert status["cubes"] == {"free": 58, "allocated": 0, "out": 6}  # c17 degraded, still in the pool
    assert [g["cube"] for g in status["k8s"]["degraded_cubes"]] == ["c17"]
    before = snapshot(fleet.state)
    again = fleet("import", "k8s", FIXTURE, "--apply", "--detailed-exitcode", "-o", "json")
    assert again.code == 0, again.err
    d = again.json
    assert not d["has_changes"] and not d["applied"] and d["unchanged_faults"] == 7
    assert d["faults_opened"] == d["drains_opened"] == d["faults_cleared"] == d["cubes_added"] == []
    assert snapshot(fleet.state) == before


def test_recovery_clears_only_what_the_import_opened(fleet, tmp_path, node_list):
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    manual = add_fault(fleet.state, "host:c09/2")  # opened by hand: the import never clears it
    healthy = copy.deepcopy(node_list)
    for node in healthy["items"]:
        labels = node["metadata"]["labels"]
        if STATE_LABEL in labels:
            labels[STATE_LABEL] = "HEALTHY"
        for cond in node["status"]["conditions"]:
            if cond["type"] == "Ready":
                cond["status"] = "True"
        node["spec"].pop("unschedulable", None)
        node["spec"]["taints"] = [t for t in node["spec"].get("taints", []) if t["key"] == "google.com/tpu"]
    r = fleet("import", "k8s", write(tmp_path, healthy), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert len(r.json["faults_cleared"]) == 7 and r.json["faults_opened"] == []
    assert [g["cube"] for g in r.json["degraded_cleared"]] == ["c17"]  # DEGRADED -> HEALTHY: no longer degraded
    assert [f["id"] for f in fleet("faults", "-o", "json").json] == [manual]
    assert "k8s" not in fleet("status", "-o", "json").json


def test_a_drain_that_becomes_a_failure_is_reopened_as_a_fault(fleet, tmp_path, node_list):
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    doc = copy.deepcopy(node_list)
    cordoned = node_named(doc, "gke-tpu-v4-p00-22-dd02b978-56e7")
    cordoned["status"]["conditions"][-1]["status"] = "False"
    r = fleet("import", "k8s", write(tmp_path, doc), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [(f["target"], f["planned"]) for f in r.json["faults_cleared"]] == [("host:c22/5", True)]
    assert [f["target"] for f in r.json["faults_opened"]] == ["host:c22/5"]


def test_a_replaced_node_takes_over_its_machine(fleet, tmp_path, node_list):
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    doc = copy.deepcopy(node_list)
    old = node_named(doc, "gke-tpu-v4-p00-03-")
    old_name, host = old["metadata"]["name"], old["metadata"]["labels"]["cloud.google.com/gce-topology-host"]
    old["metadata"]["name"] = old["metadata"]["labels"]["kubernetes.io/hostname"] = "gke-tpu-v4-p00-03-new-node"
    r = fleet("import", "k8s", write(tmp_path, doc), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["names_forgotten"] == [old_name] and r.json["machines_named"] == 1
    state = json.loads((fleet.state / "state.json").read_text())
    assert old_name not in state["k8s"]["nodes"] and host  # the host label is kept by GKE; the name changed
    assert fleet("import", "k8s", write(tmp_path, doc), "--detailed-exitcode").code == 0


def test_the_plan_text_names_the_node_names_it_forgets(fleet, tmp_path, node_list):
    """`drift` counts a forgotten name as drift (`names_forgotten`): the import's plan says which it is."""
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    doc = copy.deepcopy(node_list)
    old = node_named(doc, "gke-tpu-v4-p00-03-")
    old_name = old["metadata"]["name"]
    old["metadata"]["name"] = old["metadata"]["labels"]["kubernetes.io/hostname"] = "gke-tpu-v4-p00-03-new-node"
    r = fleet("import", "k8s", write(tmp_path, doc))
    assert r.code == 0, r.err
    assert old_name in r.out


def test_the_history_line_of_an_import_counts_the_names_it_forgot(fleet, tmp_path, node_list):
    """An import that only replaced a node's name read as all zeros in `history`."""
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    doc = copy.deepcopy(node_list)
    old = node_named(doc, "gke-tpu-v4-p00-03-")
    old["metadata"]["name"] = old["metadata"]["labels"]["kubernetes.io/hostname"] = "gke-tpu-v4-p00-03-new-node"
    assert fleet("import", "k8s", write(tmp_path, doc), "--apply").code == 0
    summary = fleet("history", "-o", "json").json[-1]["summary"]
    assert "1 node name(s) forgotten" in summary, summary


def test_a_node_of_another_accelerator_is_told_whose_list_it_is_not_in(fleet, tmp_path):
    """Without --mapping there is no mapping's list to speak of: the reason names the accelerators taken, and the
    mapping file when one sets them."""
    r = fleet("import", "k8s", FIXTURE, "-o", "json")
    reasons = {u["node"]: u["reason"] for u in r.json["unplaced"]}
    v5e = next(why for node, why in reasons.items() if "v5e" in node)
    assert "mapping" not in v5e and "tpu-v5-lite-podslice" in v5e and "tpu7x" in v5e, v5e
    mapping = write(tmp_path, {"accelerators": ["tpu-v4-podslice"]}, "mapping.json")
    r = fleet("import", "k8s", FIXTURE, "--mapping", mapping, "-o", "json")
    v5e = next(u["reason"] for u in r.json["unplaced"] if "v5e" in u["node"])
    assert str(mapping) in v5e or "mapping.json" in v5e, v5e


def test_stdin(fleet, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FIXTURE.read_bytes())))
    r = fleet("import", "k8s", "-", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["source"] == "<stdin>" and r.json["placed"] == 1023


def test_mapping_file_pins_names(fleet, tmp_path, node_list):
    first = node_list["items"][0]["metadata"]["labels"]
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(
        "kind: tpufleet-k8s-mapping\n"
        f"cubes: {{'{first['cloud.google.com/gke-tpu-partition-4x4x4-id']}': c63}}\n"
        "accelerators: [tpu-v4-podslice, tpu-v5-lite-podslice]\n"
    )
    r = fleet("import", "k8s", FIXTURE, "--mapping", mapping, "--apply", "-o", "json")
    assert r.code == 0, r.err
    state = json.loads((fleet.state / "state.json").read_text())
    assert state["k8s"]["partitions"][first["cloud.google.com/gke-tpu-partition-4x4x4-id"]] == "c63"
    assert state["k8s"]["nodes"][node_list["items"][0]["metadata"]["name"]].startswith("host:c63/")
    v5e = [u for u in r.json["unplaced"] if u["node"].startswith("gke-tpu-v5e")]
    assert "no cloud.google.com/gke-tpu-partition-4x4x4-id label" in v5e[0]["reason"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: {"kind": "Node", "metadata": {"name": "x"}}, "field kind: must be List or NodeList"),
        (lambda d: d["items"][3]["metadata"].update(labels=[]), "node gke-tpu-v4-p00-00-"),
        (
            lambda d: d["items"][7]["metadata"]["labels"].update({"cloud.google.com/gke-tpu-topology": "4x4x"}),
            ".metadata.labels.cloud.google.com/gke-tpu-topology: not a TPU topology",
        ),
        (
            lambda d: d["items"][9]["metadata"]["labels"].update({STATE_LABEL: "BROKEN"}),
            "not one of HEALTHY, DEGRADED, UNHEALTHY, UNSET, INCOMPLETE",
        ),
        (lambda d: d["items"][2]["status"]["conditions"][-1].update(status="Maybe"), "must be True, False or Unknown"),
        (lambda d: d["items"].append(copy.deepcopy(d["items"][0])), "node listed twice"),
    ],
)
def test_malformed_node_lists_exit_2_naming_node_and_field(fleet, tmp_path, node_list, change, expected):
    doc = copy.deepcopy(node_list)
    replaced = change(doc)
    if isinstance(replaced, dict) and "kind" in replaced:
        doc = replaced
    before = snapshot(fleet.state)
    r = fleet("import", "k8s", write(tmp_path, doc), "--apply")
    assert r.code == 2, r.err
    assert expected in r.err and r.err.count("\n") == 1
    assert snapshot(fleet.state) == before


def test_labels_not_an_object_names_the_node(fleet, tmp_path, node_list):
    """(No `labels` at all is a node without labels, as the API server writes one: not a TPU node.)"""
    doc = copy.deepcopy(node_list)
    name = doc["items"][3]["metadata"]["name"]
    doc["items"][3]["metadata"]["labels"] = "tpu"
    r = fleet("import", "k8s", write(tmp_path, doc))
    assert r.code == 2
    assert f"items.3 (node {name}).metadata.labels: must be an object" in r.err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("colour: blue\n", "field colour: unknown field"),
        ("cubes: {abc: cube7}\n", "field cubes.abc: not a cube id"),
        ("nodes: {n1: 'chip:c01/0,0,0'}\n", "must name a machine"),
        ("labels: {rack: x}\n", "unknown label role"),
        ("cubes: {p1: c01, p2: c01}\n", "field cubes.p2: c01 is also given to 'p1'"),
        ("nodes: {a: 'host:c01/1', b: 'host:c01/1'}\n", "host:c01/1 is also given to 'a'"),
        ("- a list\n", "must be a mapping"),
    ],
)
def test_bad_mapping_files_exit_2(fleet, tmp_path, text, expected):
    mapping = tmp_path / "m.yaml"
    mapping.write_text(text)
    r = fleet("import", "k8s", FIXTURE, "--mapping", mapping)
    assert r.code == 2 and expected in r.err, r.err


def test_not_json_and_missing_file(fleet, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert fleet("import", "k8s", bad).code == 2
    assert fleet("import", "k8s", tmp_path / "absent.json").code == 2


def test_more_pods_than_blocks_and_second_pod(tmp_path, cli):
    """Two blocks on a two-pod fleet: each takes its own pod; a third block finds none and is listed."""
    sys.path.insert(0, str(FIXTURE.parent))
    import make_nodes  # type: ignore[import-not-found]

    assert cli("init", "--pods", "2").code == 0
    doc = make_nodes.node_list(3, scenario=False)
    r = cli("import", "k8s", write(tmp_path, doc), "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert sorted(p["pod"] for p in d["pods_named"]) == ["pod0", "pod1"] and d["placed"] == 2048
    assert len(d["unplaced"]) == 1024 and all("no pod left for block" in u["reason"] for u in d["unplaced"])


@settings(max_examples=60)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=12,
    )
)
def test_any_json_value_is_a_node_list_or_exit_2(value):
    """Whatever the structure, the parser either returns nodes or says what is wrong (never a crash)."""
    from tpufleet.errors import BadStateFile
    from tpufleet.integrations.k8s import parse_nodes

    for doc in (value, {"kind": "List", "items": value}, {"kind": "List", "items": [value]}):
        try:
            parse_nodes(doc, "f.json")
        except BadStateFile as exc:
            assert str(exc).startswith("f.json: field ")


_NODE = json.loads(FIXTURE.read_text().split("\n")[1].rstrip(","))
_PATHS = [
    ("metadata",), ("metadata", "name"), ("metadata", "labels"),
    ("metadata", "labels", "cloud.google.com/gke-tpu-topology"),
    ("metadata", "labels", "cloud.google.com/gke-tpu-partition-4x4x4-state"),
    ("metadata", "labels", "tpufleet.io/machine"), ("metadata", "labels", "tpufleet.io/cube"),
    ("spec",), ("spec", "taints"), ("spec", "unschedulable"), ("status",), ("status", "conditions"),
]  # fmt: skip


@settings(max_examples=150)
@given(
    st.sampled_from(_PATHS),
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=70)
    | st.lists(st.text(max_size=5), max_size=2)
    | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
)
def test_a_node_with_any_field_replaced_is_read_or_exit_2(path, value):
    from tpufleet.errors import BadStateFile
    from tpufleet.fleetstate import FleetState
    from tpufleet.integrations.k8s import K8sMapping, parse_nodes
    from tpufleet.integrations.k8s_health import health_diff, wanted
    from tpufleet.integrations.k8s_plan import place
    from tpufleet.model import default_fleet

    node = copy.deepcopy(_NODE)
    where = node
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    try:
        nodes = parse_nodes({"kind": "List", "items": [node]}, "f.json")
    except BadStateFile as exc:
        assert str(exc).startswith("f.json: field ")
        return
    state, mapping = FleetState(default_fleet()), K8sMapping()
    placement = place(state, nodes, mapping)
    health_diff(state, *wanted(nodes, placement, mapping), "2026-01-01T00:00:00Z")
    assert len(placement.hosts) + len(placement.unplaced) == 1


def test_a_fleet_with_its_own_labels_uses_the_shipped_mapping_example(fleet, tmp_path):
    """Nodes labelled example.com/pod, /rack and /rack-health, one pinned by name, one under a maintenance taint."""
    items = []
    for rack in range(2):
        for m in range(16):
            labels = {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v4-podslice",
                "cloud.google.com/gke-tpu-topology": "4x4x4",
                "example.com/pod": "hall-a",
                "example.com/rack": f"rack-a{rack + 1:02d}",
                "example.com/rack-health": "UNHEALTHY" if rack == 1 else "HEALTHY",
            }
            spec = {"taints": [{"key": "example.com/maintenance", "effect": "NoExecute"}]} if m == 5 else {}
            items.append({"metadata": {"name": f"tpu-host-a{rack + 1:02d}-{m:02d}", "labels": labels}, "spec": spec})
    path = write(tmp_path, {"kind": "List", "items": items})
    mapping = FIXTURE.parent / "mapping.yaml"
    r = fleet("import", "k8s", path, "--mapping", mapping, "--apply", "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert d["placed"] == 32 and d["pods_named"] == [{"block": "hall-a", "pod": "pod0"}]
    assert d["cubes_added"] == [{"partition": "rack-a01", "cube": "c00"}, {"partition": "rack-a02", "cube": "c01"}]
    assert [f["target"] for f in d["faults_opened"]] == ["cube:c01"]
    assert sorted(f["target"] for f in d["drains_opened"]) == ["host:c00/5", "host:c01/5"]
    state = json.loads((fleet.state / "state.json").read_text())
    assert state["k8s"]["nodes"]["tpu-host-a01-00"] == "host:c00/0"
    labels = fleet("export", "node-labels", "--mapping", mapping, "-o", "json").json["items"][0]["metadata"]["labels"]
    assert labels["example.com/rack"] == "rack-a01" and labels["example.com/pod"] == "hall-a"


def test_help_has_examples_and_no_state_is_needed(cli):
    for args in (("import", "k8s", "--help"), ("metrics", "--help")):
        r = cli(*args)
        assert r.code == 0 and "Examples:" in r.out, r.out


def test_a_mapping_that_gives_a_named_cube_a_second_partition_is_refused_in_the_plan_too(fleet, tmp_path, node_list):
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    before = snapshot(fleet.state)
    second = node_list["items"][16]["metadata"]["labels"]["cloud.google.com/gke-tpu-partition-4x4x4-id"]
    mapping = tmp_path / "m.yaml"
    mapping.write_text(f"cubes: {{'{second}': c00}}\n")  # c00 already has the first pool's partition
    for extra in ((), ("--apply",)):
        r = fleet("import", "k8s", FIXTURE, "--mapping", mapping, *extra)
        assert r.code == 1 and "two Kubernetes names for one cube: c00" in r.err, r.err
    assert snapshot(fleet.state) == before
