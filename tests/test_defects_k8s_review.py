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


def test_a_pool_partly_relabelled_holds_only_the_cubes_its_unlabelled_nodes_need(cli, tmp_path):
    """Half a 4x4x8 pool's nodes carry a 4x4x4 partition id: they are machines of a named cube of the free pool,
    as a wholly relabelled pool's are, so the pool holds the one cube left, not both again."""
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", V5P_NODES, "--apply").code == 0
    assert cli("status", "-o", "json").json["k8s"]["free_after_unplaced"] == 137  # 4x4x8: 2 cubes, 2x2x1: 1
    doc = json.loads(V5P_NODES.read_text())
    for node in pool_nodes(doc)[:16]:
        labels = node["metadata"]["labels"]
        labels["cloud.google.com/gke-tpu-partition-4x4x4-id"] = "part0"
        labels["cloud.google.com/gce-topology-block"] = "block0"
    path = write(tmp_path, doc)
    r = cli("import", "k8s", path, "--apply", "-o", "json")
    assert r.code == 0, r.err
    row = next(p for p in r.json["node_pool_slices"] if p["node_pool"] == POOL)
    assert (row["change"], row["cubes"], row["machines"], row["placed_cubes"]) == ("changed", 1, 16, ["c00"])
    status = cli("status", "-o", "json").json["k8s"]
    assert status["free_after_unplaced"] == 138 and status["unplaced_slices"]["by_pod"] == {"pod0": 2}
    assert cli("capacity", "-o", "json").json["pods"][0]["free_healthy_cubes"] == 138
    assert "16 node(s), 1 cube(s) held, the rest on c00" in cli("status").out
    assert cli("import", "k8s", path, "--detailed-exitcode").code == 0
    for node in pool_nodes(doc)[16:]:  # the rest relabelled: the pool is gone, both cubes named and free
        node["metadata"]["labels"]["cloud.google.com/gke-tpu-partition-4x4x4-id"] = "part1"
        node["metadata"]["labels"]["cloud.google.com/gce-topology-block"] = "block0"
    assert cli("import", "k8s", write(tmp_path, doc), "--apply").code == 0
    assert cli("status", "-o", "json").json["k8s"]["free_after_unplaced"] == 139


def test_a_partly_relabelled_sub_cube_pool_holds_no_more_machines(cli, tmp_path):
    assert cli("init", "--generation", "tpu-v5p").code == 0
    doc = json.loads(V5P_NODES.read_text())
    doc["items"] = pool_nodes(doc)[:4]
    for node in doc["items"]:
        node["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] = "2x2x4"
    assert cli("import", "k8s", write(tmp_path, doc), "--apply").code == 0
    assert cli("status", "-o", "json").json["k8s"]["free_after_unplaced"] == 139
    doc["items"][0]["metadata"]["labels"]["cloud.google.com/gke-tpu-partition-4x4x4-id"] = "part0"
    doc["items"][0]["metadata"]["labels"]["cloud.google.com/gce-topology-block"] = "block0"
    assert cli("import", "k8s", write(tmp_path, doc), "--apply").code == 0
    status = cli("status", "-o", "json").json["k8s"]
    assert status["free_after_unplaced"] == 140 and status["unplaced_slices"]["slices"][0]["placed_cubes"] == ["c00"]


def test_a_node_list_without_a_list_of_items_names_the_field_items(fleet, tmp_path):
    for doc in ({"kind": "List"}, {"kind": "NodeList", "items": None}):
        path = write(tmp_path, doc)
        r = fleet("import", "k8s", path)
        assert r.code == 2
        assert f"{path}: field items: " in r.err and "field .items" not in r.err


def test_a_partly_relabelled_pools_named_cube_stays_when_its_nodes_are_missing_from_the_list(cli, tmp_path):
    assert cli("init", "--generation", "tpu-v5p").code == 0
    doc = json.loads(V5P_NODES.read_text())
    relabelled = pool_nodes(doc)[:16]
    for node in relabelled:
        node["metadata"]["labels"]["cloud.google.com/gke-tpu-partition-4x4x4-id"] = "part0"
        node["metadata"]["labels"]["cloud.google.com/gce-topology-block"] = "block0"
    assert cli("import", "k8s", write(tmp_path, doc), "--apply").code == 0
    assert cli("status", "-o", "json").json["k8s"]["free_after_unplaced"] == 138
    doc["items"] = [n for n in doc["items"] if n not in relabelled]  # those nodes being repaired: not listed
    assert cli("import", "k8s", write(tmp_path, doc), "--detailed-exitcode").code == 0


def test_a_node_with_two_ready_conditions_is_refused_whichever_comes_first(fleet, tmp_path):
    """Two `Ready` conditions on one node, True then False: no change; False then True: a fault opened. Conditions
    are keyed by their type (as `import slices` reads them): two of one type are malformed, exit 2, state kept."""
    pod64 = Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json"
    assert fleet("import", "k8s", pod64, "--apply").code == 0
    before = snapshot(fleet.state)
    for first, second in (("True", "False"), ("False", "True")):
        doc = json.loads(pod64.read_text())
        node = doc["items"][5]
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        others = [c for c in node["status"]["conditions"] if c["type"] != "Ready"]
        node["status"]["conditions"] = [*others, {**ready, "status": first}, {**ready, "status": second}]
        r = fleet("import", "k8s", write(tmp_path, doc), "--apply")
        assert r.code == 2 and r.err.count("\n") == 1, r.err
        n = len(others) + 1  # the second Ready condition's place
        assert f"field items.5 (node {node['metadata']['name']}).status.conditions.{n}.type: also the type of " in r.err
        assert f"condition {n - 1} (value 'Ready')" in r.err
        assert snapshot(fleet.state) == before


NODEPOOLS = Path(__file__).parent.parent / "fixtures" / "k8s" / "v4-nodepools.json"
POOL_LABEL = "cloud.google.com/gke-nodepool"


def _held(fleet) -> list[str]:
    k8s = fleet("status", "-o", "json").json.get("k8s", {})  # (absent: no pool held, no partition degraded)
    return [s["node_pool"] for s in k8s.get("unplaced_slices", {"slices": []})["slices"]]


def test_a_pool_made_for_a_slice_of_its_name_is_that_slice_not_more_cubes(fleet):
    """`allocate tpu-v4-4x4x8`, then GKE's pool of that name imported: `status` listed the slice's 2 cubes and the
    pool's 2 more, one slice counted twice. The pool is the slice: its nodes are listed as not placed, saying
    what places them, and hold nothing more."""
    assert fleet("allocate", "tpu-v4-4x4x8", "--shape", "4x4x8").code == 0
    r = fleet("import", "k8s", NODEPOOLS, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert _held(fleet) == ["tpu-v4-2x2x1"]
    why = {u["reason"] for u in r.json["unplaced"] if "tpu-v4-4x4x8-" in u["node"]}
    assert why == {
        "node pool tpu-v4-4x4x8 is tpufleet's slice of its name: its nodes name none of its machines "
        "(`tpufleet export node-labels`)"
    }


def test_allocate_of_a_held_pools_name_places_that_pool(fleet):
    """The other order: the pool held first, then `allocate` of its name. Until the next import `status` counted
    the pool's 2 cubes beside the slice's 2. The slice is the pool: the pool holds nothing from the allocation on
    (`node_pool` in the answer), and the next import has nothing to change."""
    assert fleet("import", "k8s", NODEPOOLS, "--apply").code == 0
    assert _held(fleet) == ["tpu-v4-2x2x1", "tpu-v4-4x4x8"]
    free = fleet("status", "-o", "json").json["k8s"]["free_after_unplaced"]
    r = fleet("allocate", "tpu-v4-4x4x8", "--shape", "4x4x8", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["node_pool"] == "tpu-v4-4x4x8" and len(r.json["cubes"]) == 2
    assert _held(fleet) == ["tpu-v4-2x2x1"]
    assert fleet("status", "-o", "json").json["k8s"]["free_after_unplaced"] == free  # the pool's 2, now the slice's
    assert fleet("import", "k8s", NODEPOOLS, "--detailed-exitcode").code == 0
    assert "node_pool" not in fleet("allocate", "other", "--shape", "4x4x4", "-o", "json").json


def test_allocate_says_in_its_table_which_held_pool_the_slice_places(fleet):
    """The table said nothing of the pool the slice places (only `-o json` had `node_pool`): an operator reading
    it could not tell the slice's room from new room taken beside the pool's."""
    assert fleet("import", "k8s", NODEPOOLS, "--apply").code == 0
    r = fleet("allocate", "tpu-v4-4x4x8", "--shape", "4x4x8")
    assert r.code == 0 and "node pool tpu-v4-4x4x8, held unplaced until now, is this slice" in r.out, r.out
    assert "node pool" not in fleet("allocate", "other", "--shape", "4x4x4").out


def test_allocate_of_a_held_pools_name_in_another_shape_is_refused(fleet):
    """The name says the slice is the pool: another shape under it is bad input (exit 2), nothing changes; the
    pool's own topology written the other way round (8x4x4) is the same slice."""
    assert fleet("import", "k8s", NODEPOOLS, "--apply").code == 0
    before = snapshot(fleet.state)
    r = fleet("allocate", "tpu-v4-4x4x8", "--shape", "4x4x4")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "'tpu-v4-4x4x8' is a node pool `import k8s` holds unplaced on pod0 as a 4x4x8 slice" in r.err
    assert "allocate it as 4x4x8" in r.err
    assert snapshot(fleet.state) == before
    assert fleet("allocate", "tpu-v4-4x4x8", "--shape", "8x4x4").code == 0
    assert _held(fleet) == ["tpu-v4-2x2x1"]


def test_allocate_of_a_held_pools_name_takes_the_room_the_pool_held(fleet):
    """The pool's room is the slice's: with every other cube taken, the pool's own name still fits on the cubes
    the pool held (before, they were kept free for the pool, and `allocate` was refused). The 2x2x1 pool keeps its
    cube."""
    assert fleet("import", "k8s", NODEPOOLS, "--apply").code == 0
    for name, shape in (
        ("a", "8x8x16"),
        ("b", "8x8x16"),
        ("c", "8x8x16"),
        ("d", "8x8x8"),
        ("e", "4x8x8"),
        ("f", "4x4x4"),
    ):
        assert fleet("allocate", name, "--shape", shape).code == 0, name
    assert fleet("status", "-o", "json").json["k8s"]["free_after_unplaced"] == 0
    assert fleet("allocate", "other", "--shape", "4x4x8").code == 1
    r = fleet("allocate", "tpu-v4-4x4x8", "--shape", "4x4x8", "-o", "json")
    assert r.code == 0, r.err
    status = fleet("status", "-o", "json").json
    assert (status["cubes"]["free"], status["k8s"]["free_after_unplaced"]) == (1, 0)  # the 2x2x1 pool's cube


def test_a_jobs_slices_place_the_held_pools_of_their_names(fleet, tmp_path):
    """GKE's multislice pools carry the slices' names (`train-0`, `train-1`): `allocate --slices 2 train` places
    them as `allocate` of one name does. The pools hold nothing more (`node_pools` in the answer), and another
    shape under their names is refused (exit 2, nothing changed)."""
    doc = json.loads(NODEPOOLS.read_text())
    nodes = [n for n in doc["items"] if n["metadata"]["labels"].get(POOL_LABEL) == "tpu-v4-4x4x8"]
    assert len(nodes) == 32  # 128 chips, 4 a machine
    copies = []
    for k in (0, 1):
        for node in json.loads(json.dumps(nodes)):
            node["metadata"]["labels"][POOL_LABEL] = f"train-{k}"
            node["metadata"]["name"] = node["metadata"]["name"].replace("tpu-v4-4x4x8", f"train-{k}")
            copies.append(node)
    doc["items"] = [n for n in doc["items"] if n not in nodes] + copies
    assert fleet("import", "k8s", write(tmp_path, doc), "--apply").code == 0
    assert _held(fleet) == ["tpu-v4-2x2x1", "train-0", "train-1"]
    before = snapshot(fleet.state)
    r = fleet("allocate", "train", "--shape", "4x4x4", "--slices", "2")
    assert r.code == 2 and "'train-0' is a node pool `import k8s` holds unplaced on pod0 as a 4x4x8 slice" in r.err
    assert snapshot(fleet.state) == before
    r = fleet("allocate", "train", "--shape", "4x4x8", "--slices", "2", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["node_pools"] == ["train-0", "train-1"]
    assert fleet("release", "train").code == 0 and fleet("import", "k8s", write(tmp_path, doc), "--apply").code == 0
    r = fleet("allocate", "train", "--shape", "4x4x8", "--slices", "2")  # the table says so too
    assert r.code == 0 and "node pools held unplaced until now, these slices: train-0, train-1" in r.out, r.out
    assert _held(fleet) == ["tpu-v4-2x2x1"]
    assert "node_pools" not in fleet("allocate", "eval", "--shape", "4x4x4", "--slices", "2", "-o", "json").json


def test_a_pool_of_a_slices_name_in_another_shape_says_the_names_disagree(fleet):
    """A 4x4x4 slice named tpu-v4-4x4x8, then GKE's 4x4x8 pool of that name: its nodes were listed as the slice's
    ("its nodes name none of its machines"), which `export node-labels` cannot mend. They say the two disagree,
    and what settles it; the pool holds nothing (one name, one slice)."""
    assert fleet("allocate", "tpu-v4-4x4x8", "--shape", "4x4x4").code == 0
    r = fleet("import", "k8s", NODEPOOLS, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert _held(fleet) == ["tpu-v4-2x2x1"]
    why = {u["reason"] for u in r.json["unplaced"] if "tpu-v4-4x4x8-" in u["node"]}
    assert why == {
        "node pool tpu-v4-4x4x8 is 4x4x8, but tpufleet's slice of its name is 4x4x4: one of the two is misnamed "
        "(release the slice, or rename the pool)"
    }


def test_import_slices_takes_a_slice_under_a_held_pools_name_whatever_its_shape(cli, tmp_path):
    """A held 4x4x4 pool named as a running 4x4x8 Slice: `import slices --apply` was refused whole (exit 2, "choose
    another name", a name GKE chose), though its plan listed the slice. The Slice the cluster runs takes the name;
    the pool holds nothing more."""
    gke = Path(__file__).parent.parent / "fixtures" / "gke"
    doc = json.loads(NODEPOOLS.read_text())
    nodes = [n for n in doc["items"] if n["metadata"]["labels"].get(POOL_LABEL) == "tpu-v4-4x4x8"][:16]
    for node in nodes:
        labels = node["metadata"]["labels"]
        labels[POOL_LABEL] = "rl-rollout-0"
        labels["cloud.google.com/gke-tpu-accelerator"], labels["cloud.google.com/gke-tpu-topology"] = "tpu7x", "4x4x4"
        node["metadata"]["name"] = node["metadata"]["name"].replace("tpu-v4-4x4x8", "rl-rollout-0")
    doc["items"] = nodes
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", gke / "tpu7x-reservation-subblocks.json", "--apply").code == 0
    assert cli("import", "k8s", write(tmp_path, doc), "--apply").code == 0
    assert _held(cli) == ["rl-rollout-0"]
    slices = gke / "tpu7x-slices.json"
    assert any(s["metadata"]["name"] == "rl-rollout-0" for s in json.loads(slices.read_text())["items"])
    r = cli("import", "slices", slices, "--apply")
    assert r.code == 0, r.err
    assert "rl-rollout-0" in {s["name"] for s in cli("show", "slices", "-o", "json").json}
    assert _held(cli) == []
