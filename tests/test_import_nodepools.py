"""`tpufleet import k8s` of ordinary GKE TPU node pools (no dynamic-slicing partition labels): each pool one slice of
its topology on a pod of its generation, held unplaced (no label says which cubes) and counted in `status`; the
second import is empty; malformed pools exit 2 naming node and label with the state untouched; the state keeps
them through a validated save and load; export -> import adds nothing."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest

from helpers import one_line, snapshot
from tpufleet.ids import natural_key

FIXTURES = Path(__file__).parent.parent / "fixtures" / "k8s"
V5P = FIXTURES / "v5p-cluster-nodes.json"
V4 = FIXTURES / "v4-nodepools.json"
POD64 = FIXTURES / "pod-64.json"
POOL, ACCEL, TOPO = (
    "cloud.google.com/gke-nodepool",
    "cloud.google.com/gke-tpu-accelerator",
    "cloud.google.com/gke-tpu-topology",
)


def pools_of(path: Path) -> dict[str, tuple[str, str, list[str]]]:
    """The oracle, read from the fixture itself: node pool -> (accelerator, topology, node names)."""
    out: dict[str, tuple[str, str, list[str]]] = {}
    for node in json.loads(path.read_text())["items"]:
        labels = node["metadata"]["labels"]
        if ACCEL in labels:
            out.setdefault(labels[POOL], (labels[ACCEL], labels[TOPO], []))[2].append(node["metadata"]["name"])
    return {k: (a, t, sorted(n, key=natural_key)) for k, (a, t, n) in out.items()}  # as every list of names


def write(tmp_path: Path, doc: object, name: str = "nodes.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def v5p(cli):
    assert cli("init", "--generation", "tpu-v5p").code == 0
    return cli


def test_v5p_cluster_pools_become_unplaced_slices_of_their_shape(v5p):
    before = snapshot(v5p.state)
    r = v5p("import", "k8s", V5P, "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert (d["nodes"], d["tpu_nodes"], d["placed"]) == (34, 33, 0)
    expected = pools_of(V5P)
    assert sorted(expected) == ["v5p-2x2x1", "v5p-4x4x8"]
    rows = {p["node_pool"]: p for p in d["node_pool_slices"]}
    assert sorted(rows) == sorted(expected)
    for name, (accel, topo, nodes) in expected.items():
        row = rows[name]
        assert (row["shape"], row["accelerator"], row["pod"], row["nodes"]) == (topo, accel, "pod0", nodes)
        assert not row["placed"] and row["change"] == "new"
    # 4x4x8 of v5p: 128 chips, 4 a VM -> 32 machines in 2 cubes; 2x2x1: one machine, no whole cube
    assert (rows["v5p-4x4x8"]["cubes"], rows["v5p-4x4x8"]["machines"]) == (2, 32)
    assert (rows["v5p-2x2x1"]["cubes"], rows["v5p-2x2x1"]["machines"]) == (0, 1)
    assert [u["node"] for u in d["unplaced"]] == [n for n in _names(V5P) if "default-pool" in n]
    assert d["has_changes"] and not d["applied"] and d["faults_opened"] == d["degraded_new"] == []
    assert snapshot(v5p.state) == before  # a plan changes nothing


def _names(path: Path) -> list[str]:
    return sorted(n["metadata"]["name"] for n in json.loads(path.read_text())["items"])


def test_v4_repro_imports_the_pools_and_a_repeat_is_a_no_op(fleet):
    """The issue's list: 33 TPU nodes of a 4x4x8 and a 2x2x1 pool, which imported as '0 placed', exit 0."""
    assert fleet("import", "k8s", V4, "--detailed-exitcode").code == 4
    r = fleet("import", "k8s", V4, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["applied"] and sorted(p["node_pool"] for p in r.json["node_pool_slices"]) == sorted(pools_of(V4))
    status = fleet("status", "-o", "json").json
    unplaced = status["k8s"]["unplaced_slices"]
    # 4x4x8 holds 2 cubes; the 2x2x1 one machine, which takes a cube of room
    assert (unplaced["cubes"], unplaced["by_pod"]) == (3, {"pod0": 3})
    assert status["cubes"]["free"] == 64 and status["k8s"]["free_after_unplaced"] == 61
    assert {s["node_pool"]: len(s["nodes"]) for s in unplaced["slices"]} == {"tpu-v4-4x4x8": 32, "tpu-v4-2x2x1": 1}
    text = fleet("status").out
    assert "tpu-v4-4x4x8" in text and "61 of the 64 free cubes" in text
    before = snapshot(fleet.state)
    again = fleet("import", "k8s", V4, "--apply", "--detailed-exitcode", "-o", "json")
    assert again.code == 0, again.err
    assert not again.json["has_changes"] and {p["change"] for p in again.json["node_pool_slices"]} == {"unchanged"}
    assert snapshot(fleet.state) == before


def test_a_pool_missing_from_a_later_list_is_kept_and_a_changed_one_updated(fleet, tmp_path):
    assert fleet("import", "k8s", V4, "--apply").code == 0
    doc = json.loads(V4.read_text())
    doc["items"] = [n for n in doc["items"] if n["metadata"]["labels"].get(POOL) != "tpu-v4-2x2x1"]
    doc["items"] = doc["items"][:-1]  # one node of the 4x4x8 pool gone (being repaired): still that slice
    r = fleet("import", "k8s", write(tmp_path, doc), "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [(p["node_pool"], p["change"], len(p["nodes"])) for p in r.json["node_pool_slices"]] == [
        ("tpu-v4-4x4x8", "changed", 31)
    ]
    pools = {s["node_pool"] for s in fleet("status", "-o", "json").json["k8s"]["unplaced_slices"]["slices"]}
    assert pools == {"tpu-v4-4x4x8", "tpu-v4-2x2x1"}


def test_the_state_keeps_the_pools_through_a_validated_save_and_load(v5p):
    from tpufleet.state import Store
    from tpufleet.state.codec import decode, encode
    from tpufleet.state.schema import SCHEMA_VERSION, validate

    assert v5p("import", "k8s", V5P, "--apply").code == 0
    state = Store(v5p.state).load()
    assert sorted(state.k8s.node_pools) == ["v5p-2x2x1", "v5p-4x4x8"]
    doc = {"schema_version": SCHEMA_VERSION, **encode(state)}
    again = decode(validate(json.loads(json.dumps(doc)), "state.json"))
    assert again.k8s == state.k8s and {"schema_version": SCHEMA_VERSION, **encode(again)} == doc
    assert doc["k8s"]["node_pools"]["v5p-4x4x8"]["shape"] == "4x4x8" and "degraded_cubes" not in doc["k8s"]


def test_an_old_state_loads_and_saves_without_the_new_keys(fleet):
    from tpufleet.state import Store
    from tpufleet.state.codec import encode

    assert fleet("import", "k8s", POD64, "--apply").code == 0
    doc = {"schema_version": 1, **encode(Store(fleet.state).load())}
    assert set(doc["k8s"]) == {"blocks", "partitions", "nodes", "degraded_cubes", "sub_blocks"}  # c17 DEGRADED
    del doc["k8s"]["degraded_cubes"]  # as a state written before DEGRADED was a degraded cube
    del doc["k8s"]["sub_blocks"]  # and before the partitions' physical sub-blocks were kept
    from tpufleet.state.codec import decode
    from tpufleet.state.schema import validate

    old = decode(validate(doc, "state.json"))
    assert (
        not old.k8s.degraded and not old.k8s.node_pools and set(encode(old)["k8s"]) == {"blocks", "partitions", "nodes"}
    )


def test_a_degraded_partition_is_a_degraded_cube_that_still_serves(fleet):
    r = fleet("import", "k8s", POD64, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [(g["cube"], g["pod"]) for g in r.json["degraded_new"]] == [("c17", "pod0")]
    assert "cube:c17" not in {f["target"] for f in fleet("faults", "-o", "json").json}
    inventory = {row["cube"]: row for row in fleet("show", "inventory", "-o", "json").json}
    assert inventory["c17"]["state"] == "free" and inventory["c17"]["degraded"]["partition"]
    assert sum("degraded" in row for row in inventory.values()) == 1


def test_nodes_import_export_import_is_the_identity(fleet, tmp_path):
    """Real nodes (the fixture pod, one partition DEGRADED, and the v4 node pools) -> import -> export
    node-labels -> import: nothing to add, the state byte for byte the same."""
    doc = json.loads(POD64.read_text())
    doc["items"] += json.loads(V4.read_text())["items"]
    nodes = write(tmp_path, doc)
    assert fleet("import", "k8s", nodes, "--apply").code == 0
    before = snapshot(fleet.state)
    exported = fleet("export", "node-labels", "-o", "json")
    assert exported.code == 0, exported.err
    states = Counter(
        n["metadata"]["labels"]["cloud.google.com/gke-tpu-partition-4x4x4-state"] for n in exported.json["items"]
    )
    assert states["DEGRADED"] == 16  # the degraded cube's 16 machines say so, as GKE would
    r = fleet("import", "k8s", write(tmp_path, exported.json, "exported.json"), "--detailed-exitcode", "-o", "json")
    assert r.code == 0, r.err
    assert not r.json["has_changes"] and r.json["degraded_cleared"] == [] and r.json["unplaced"] == []
    assert snapshot(fleet.state) == before


def _v5p_doc() -> dict:
    return json.loads(V5P.read_text())


def _first_of(doc: dict, pool: str) -> dict:
    return next(n for n in doc["items"] if n["metadata"]["labels"].get(POOL) == pool)


@pytest.mark.parametrize(
    ("label", "value", "every_node", "reason"),
    [
        (TOPO, "4x4x5", True, "not a slice"),  # the syntax of a topology, not a shape of a slice
        (TOPO, "2x2x3", True, "not a slice"),
        (ACCEL, "tpu-v6e-slice", True, "no TPU generation"),  # listed in the mapping, but no generation has it
        (TOPO, "4x4x4", False, "a node pool has one"),  # one node disagrees with its pool
    ],
)
def test_a_malformed_pool_is_refused_naming_node_and_label(v5p, tmp_path, label, value, every_node, reason):
    doc = _v5p_doc()
    members = [n for n in doc["items"] if n["metadata"]["labels"].get(POOL) == "v5p-4x4x8"]
    for node in members if every_node else members[1:2]:
        node["metadata"]["labels"][label] = value
    named = members[0 if every_node else 1]["metadata"]["name"]  # the pool's first node, or the one that differs
    mapping = write(tmp_path, {"accelerators": ["tpu-v5p-slice", "tpu-v6e-slice"]}, "mapping.json")
    before = snapshot(v5p.state)
    for args in ((), ("--apply",)):
        line = one_line(v5p("import", "k8s", write(tmp_path, doc), "--mapping", mapping, *args))
        assert f"(node {named}).metadata.labels.{label}:" in line and repr(value) in line and reason in line
    assert snapshot(v5p.state) == before


def test_a_pool_with_more_nodes_than_its_shape_has_machines_is_no_slice(v5p, tmp_path):
    doc = _v5p_doc()
    extra = copy.deepcopy(_first_of(doc, "v5p-4x4x8"))
    extra["metadata"]["name"] += "-b"
    doc["items"].append(extra)
    r = v5p("import", "k8s", write(tmp_path, doc), "-o", "json")
    assert r.code == 0, r.err
    assert [p["node_pool"] for p in r.json["node_pool_slices"]] == ["v5p-2x2x1"]
    why = {u["node"]: u["reason"] for u in r.json["unplaced"]}
    assert sum("node pool v5p-4x4x8 has 33 nodes" in w and "32 machine" in w for w in why.values()) == 33


def test_a_single_host_pool_of_several_nodes_is_a_slice_a_node(v5p, tmp_path):
    """GKE scales a single-host pool (2x2x1: one machine) node by node, each node a slice of its own."""
    doc = _v5p_doc()
    first = _first_of(doc, "v5p-2x2x1")
    for suffix in ("-b", "-c"):
        extra = copy.deepcopy(first)
        extra["metadata"]["name"] += suffix
        doc["items"].append(extra)
    path = write(tmp_path, doc)
    r = v5p("import", "k8s", path, "--apply", "-o", "json")
    assert r.code == 0, r.err
    rows = {p["node_pool"]: p for p in r.json["node_pool_slices"]}
    assert sorted(rows) == ["v5p-2x2x1", "v5p-4x4x8"]
    assert (len(rows["v5p-2x2x1"]["nodes"]), rows["v5p-2x2x1"]["machines"]) == (3, 3)
    assert (rows["v5p-2x2x1"]["single_host"], rows["v5p-4x4x8"]["single_host"]) == (True, False)
    assert not [u for u in r.json["unplaced"] if "v5p-2x2x1" in u["reason"]]
    plan = v5p("import", "k8s", path).out
    assert "node pool v5p-2x2x1: 3 single-host 2x2x1 slices (one a node) on pod0" in plan, plan
    before = snapshot(v5p.state)
    again = v5p("import", "k8s", path, "--apply", "--detailed-exitcode", "-o", "json")
    assert (again.code, again.json["has_changes"]) == (0, False)
    assert snapshot(v5p.state) == before
    held = v5p("status", "-o", "json").json["k8s"]["unplaced_slices"]
    assert held["cubes"] == 2 + 1  # the 4x4x8 pool's 2 cubes, the three 2x2x1 machines rounded up to one cube


def test_pools_of_another_generation_are_not_placed_on_this_pod(v5p):
    r = v5p("import", "k8s", V4, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["node_pool_slices"] == [] and not r.json["has_changes"]
    assert (
        sum("no pod of the fleet has gke-tpu-accelerator tpu-v4-podslice" in u["reason"] for u in r.json["unplaced"])
        == 33
    )


def test_allocation_leaves_the_room_unplaced_pools_hold(v5p):
    """The cluster runs the pools' 3 cubes somewhere in the pod (which ones, the node list does not say): no
    allocation, of any kind, may take the pod's last 3 free cubes, and `capacity` counts them out too."""
    assert v5p("import", "k8s", V5P, "--apply").code == 0
    free = v5p("status", "-o", "json").json["k8s"]["free_after_unplaced"]
    assert free == 137  # 140 free, 3 held
    assert v5p("allocate", "a", "--shape", "4x4x256").code == 0  # 64 cubes
    assert v5p("allocate", "b", "--shape", "4x4x256").code == 0
    assert v5p("allocate", "c", "--shape", "4x4x36").code == 0  # 9: 3 free cubes left, all the pools'
    before = snapshot(v5p.state)
    for args in (["d", "--shape", "4x4x4"], ["e", "--shape", "2x2x1"], ["f", "--shape", "4x4x4", "--cubes", "c137"]):
        r = v5p("allocate", *args)
        assert r.code == 1 and "node pools tpufleet has not placed" in r.err, (args, r.err)
    assert snapshot(v5p.state) == before
    assert "over_committed" not in v5p("status", "-o", "json").json["k8s"]
    [pod] = v5p("capacity", "-o", "json").json["pods"]
    assert pod["free_healthy_cubes"] == 0
    assert v5p("release", "c").code == 0
    assert v5p("allocate", "d", "--shape", "4x4x4").code == 0  # room again


def _tpu7x_pools(tmp_path: Path, pools: dict[str, str]) -> Path:
    """A node list of one node per node pool (name -> topology) of tpu7x nodes, as the v5p fixture's TPU nodes."""
    doc = json.loads(V5P.read_text())
    template = next(n for n in doc["items"] if ACCEL in n["metadata"]["labels"])
    items = []
    for name, topology in pools.items():
        node = json.loads(json.dumps(template))
        node["metadata"]["name"] = f"node-{name}-0"
        labels = node["metadata"]["labels"]
        labels.update({POOL: name, ACCEL: "tpu7x", TOPO: topology})
        labels["kubernetes.io/hostname"] = node["metadata"]["name"]
        items.append(node)
    return write(tmp_path, {**doc, "items": items}, "pools.json")


@pytest.fixture
def held_superpod(cli, tmp_path):
    """A TPU7x superpod (144 cubes, 2 drained by the reservation) whose node pools hold 137 cubes tpufleet has
    not placed: 5 free cubes of room."""
    reservation = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", reservation, "--apply").code == 0
    pools = _tpu7x_pools(tmp_path, {"big1": "16x16x16", "big2": "16x16x16", "mid": "12x12x4"})
    assert cli("import", "k8s", pools, "--apply").code == 0
    cli.reservation = reservation
    return cli


def test_the_clusters_running_slices_are_adopted_whatever_room_the_pools_hold(held_superpod):
    slices = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-slices.json"
    counts = held_superpod("import", "slices", slices, "-o", "json").json["drift_counts"]
    assert (counts["not_in_tpufleet"], counts["conflict"]) == (6, 1)  # only the Slice on a drained cube conflicts


def test_a_reschedule_and_the_sub_cube_room_leave_the_pools_room(held_superpod):
    assert held_superpod("allocate", "s", "--shape", "4x4x20").code == 0  # 5 cubes: free room left 0
    [pod] = held_superpod("capacity", "--after", "3", "-o", "json").json["pods"]
    assert not any(v["fits_after"] for v in pod["verdicts"])  # no partly used cube, no fresh one to spare
    assert held_superpod("inject-fault", "cube:c00").code == 0
    r = held_superpod("reschedule", "s")
    assert r.code == 1 and "held by node pools tpufleet has not placed" in r.err, r.err
    assert held_superpod("inject-fault", "link:c41/x/5/out").code == 0  # a free cube with a port down
    r = held_superpod("allocate", "t", "--shape", "2x2x1", "-o", "json")  # no pool could use it: placed there
    assert r.code == 0 and r.json["cubes"] == ["c41"], r.err


def test_plan_spares_counts_the_pools_room_out_as_capacity_does(held_superpod):
    [spares] = held_superpod("plan-spares", "-o", "json").json["pods"]
    [capacity] = held_superpod("capacity", "-o", "json").json["pods"]
    assert (spares["held_by_node_pools"], spares["free_healthy_cubes"]) == (137, 5)
    assert spares["free_healthy_cubes"] == capacity["free_healthy_cubes"]
    assert len(spares["hold_back"]) <= 5


def test_plan_spares_of_a_pod_only_pools_use_says_their_needs_are_not_counted(v5p):
    """No slice tpufleet placed, node pools holding 3 cubes: 'no running slices in this pod' read as an idle pod;
    the note says the pools' cubes are not placed, so what they need is not counted (the JSON's
    held_by_node_pools)."""
    assert v5p("import", "k8s", V5P, "--apply").code == 0
    [pod] = v5p("plan-spares", "-o", "json").json["pods"]
    assert pod["held_by_node_pools"] == 3 and pod["slices"] == []
    assert pod["note"] == (
        "no slice tpufleet placed runs in this pod: nothing to hold back (the 3 cube(s) its node pools hold are not "
        "placed, so what they need is not counted)"
    )


def test_a_pools_topology_written_in_another_order_is_the_same_shape(v5p, tmp_path):
    doc = _v5p_doc()
    members = [n for n in doc["items"] if n["metadata"]["labels"].get(POOL) == "v5p-4x4x8"]
    members[1]["metadata"]["labels"][TOPO] = "8x4x4"  # the same sides, as allocate and topology take them
    r = v5p("import", "k8s", write(tmp_path, doc), "--apply", "-o", "json")
    assert r.code == 0, r.err
    rows = {p["node_pool"]: p for p in r.json["node_pool_slices"]}
    assert rows["v5p-4x4x8"]["shape"] == "4x4x8" and len(rows["v5p-4x4x8"]["nodes"]) == len(members)


def test_a_node_that_disagrees_with_its_pool_is_named_by_its_item_as_other_fields_are(v5p, tmp_path):
    doc = _v5p_doc()
    odd = [n for n in doc["items"] if n["metadata"]["labels"].get(POOL) == "v5p-4x4x8"][1]
    odd["metadata"]["labels"][TOPO] = "4x4x4"
    index = doc["items"].index(odd)
    line = one_line(v5p("import", "k8s", write(tmp_path, doc)))
    assert f"field items.{index} (node {odd['metadata']['name']}).metadata.labels.{TOPO}:" in line


def test_node_pool_slices_are_listed_as_counted(v5p, tmp_path):
    """Node-pool slices, in `import k8s`'s plan and in `status` (its table, its JSON and serve's /api/v1/status),
    were listed in the text order of the pools' names (pool-10 before pool-9), though every other list of slices
    is as the fleet counts them."""
    text = V5P.read_text().replace("v5p-4x4x8", "pool-10").replace("v5p-2x2x1", "pool-9")
    nodes = tmp_path / "nodes.json"
    nodes.write_text(text)
    plan = v5p("import", "k8s", nodes, "-o", "json")
    assert plan.code == 0, plan.err
    assert [p["node_pool"] for p in plan.json["node_pool_slices"]] == ["pool-9", "pool-10"]
    assert v5p("import", "k8s", nodes, "--apply").code == 0
    status = v5p("status", "-o", "json").json
    assert [p["name"] for p in status["k8s"]["unplaced_slices"]["slices"]] == ["pool-9", "pool-10"]
    table = v5p("status").out
    assert table.index("pool-9 ") < table.index("pool-10 ")


@pytest.mark.parametrize(
    "args",
    [
        ("explain", "v5p-4x4x8"),
        ("release", "v5p-4x4x8"),
        ("routes", "v5p-4x4x8"),
        ("policy", "v5p-4x4x8"),
        ("plan-spares", "--slices", "v5p-4x4x8"),
        ("reschedule", "v5p-4x4x8"),
        ("plan-xconnect", "v5p-4x4x8"),
    ],
)
def test_a_pool_named_where_a_slice_is_taken_is_said_to_be_a_pool(v5p, args):
    """`status` lists the pool among the "unplaced node-pool slices", by its name; given that name, `explain`,
    `release`, `plan-spares --slices` and the rest answered "unknown slice or job 'v5p-4x4x8' (slices: none ...)",
    as of a name never seen. They say what it is and the command that places it; the exit code stays 1."""
    assert v5p("import", "k8s", V5P, "--apply").code == 0
    assert "v5p-4x4x8" in v5p("status").out
    r = v5p(*args)
    assert r.code == 1, (r.code, r.err)
    assert "unknown slice or job 'v5p-4x4x8'" in r.err or "unknown slice 'v5p-4x4x8'" in r.err
    assert (
        "v5p-4x4x8 is a node pool `import k8s` holds as an unplaced slice on pod0: no label says which cubes" in r.err
    )
    assert "`tpufleet allocate v5p-4x4x8 --shape 4x4x8` places it" in r.err
    assert "a node pool" not in v5p(*[a.replace("v5p-4x4x8", "nope") for a in args]).err
