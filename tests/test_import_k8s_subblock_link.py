"""`import k8s` after `import reservation`, with partition ids that are no sub-block's name (GKE shows them as
opaque hex ids): a new partition is the cube of the sub-block its nodes' `cloud.google.com/gce-topology-subblock`
names (the sub-block's `physicalTopology.subBlock`, as `gce-topology-block` is its `physicalTopology.block`), not
"no cube left" on a superpod whose every cube is a sub-block."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from helpers import snapshot

RESERVATION = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


def _nodes(sub_blocks: list[dict[str, Any]], indices: dict[int, str]) -> dict[str, Any]:
    """16 Ready TPU7x nodes on each sub-block of `indices` (index -> partition state), partition ids hex."""
    items = []
    for i, state in indices.items():
        where = sub_blocks[i]["physicalTopology"]
        partition = hashlib.sha256(f"partition {i}".encode()).hexdigest()[:32]
        for m in range(16):
            name = f"gke-iw-np-{i:03d}-{m:02d}"
            labels = {
                "cloud.google.com/gke-nodepool": f"np-{i:03d}",
                "cloud.google.com/gke-tpu-accelerator": "tpu7x",
                "cloud.google.com/gke-tpu-topology": "4x4x4",
                "cloud.google.com/gce-topology-block": where["block"],
                "cloud.google.com/gce-topology-subblock": where["subBlock"],
                "cloud.google.com/gke-tpu-partition-4x4x4-id": partition,
                "cloud.google.com/gke-tpu-partition-4x4x4-state": state,
                "kubernetes.io/hostname": name,
            }
            ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
            items.append(
                {"kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"conditions": ready}}
            )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def test_partitions_of_a_reservation_are_its_sub_blocks_cubes(cli, tmp_path):
    sub_blocks = json.loads(RESERVATION.read_text())
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", RESERVATION, "--apply").code == 0  # every cube a sub-block, c17 DEGRADED
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(_nodes(sub_blocks, {5: "HEALTHY", 17: "DEGRADED"})))
    r = cli("import", "k8s", path, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["placed"], r.json["unplaced"]) == (32, [])
    assert sorted(row["cube"] for row in r.json["cubes_added"]) == ["c05", "c17"]
    assert r.json["degraded_new"] == []  # c17's partition DEGRADED: the reservation already holds it degraded
    before = snapshot(cli.state)
    again = cli("import", "k8s", path, "--apply", "--detailed-exitcode", "-o", "json")
    assert (again.code, again.json["has_changes"]) == (0, False)
    assert cli("drift", "--nodes", path, "--reservation", RESERVATION).code == 0
    assert snapshot(cli.state) == before


def test_sub_blocks_of_the_nodes_partitions_are_their_cubes(cli, tmp_path):
    """The other order: the node list first (its partitions take the pod's first free cubes), then the reservation,
    whose sub-blocks found "no cube left": each is now the cube of the partition at its physical sub-block."""
    sub_blocks = json.loads(RESERVATION.read_text())
    assert cli("init", "--generation", "tpu7x").code == 0
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(_nodes(sub_blocks, {i: "HEALTHY" for i in range(144)} | {17: "DEGRADED"})))
    r = cli("import", "k8s", path, "--apply", "-o", "json")
    assert (r.code, r.json["placed"]) == (0, 2304), r.err
    cube_of = {row["partition"]: row["cube"] for row in r.json["cubes_added"]}
    r = cli("import", "reservation", RESERVATION, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["mapped"], r.json["unplaced"]) == (144, [])
    by_name = {row["sub_block"]: row["cube"] for row in r.json["sub_blocks_new"]}
    partition = {i: hashlib.sha256(f"partition {i}".encode()).hexdigest()[:32] for i in range(144)}
    assert by_name == {sb["name"]: cube_of[partition[i]] for i, sb in enumerate(sub_blocks)}
    before = snapshot(cli.state)
    assert cli("drift", "--nodes", path, "--reservation", RESERVATION).code == 0
    assert cli("import", "reservation", RESERVATION, "--apply", "--detailed-exitcode").code == 0
    assert snapshot(cli.state) == before


def test_a_reservation_imported_before_positions_were_kept_learns_them_again(cli, tmp_path):
    """A state whose sub-blocks an earlier version recorded without their physical position: importing the same
    list again records the positions (they are changes), so `import k8s` then finds each partition's cube."""
    sub_blocks = json.loads(RESERVATION.read_text())
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("import", "reservation", RESERVATION, "--apply").code == 0
    state_file = cli.state / "state.json"
    doc = json.loads(state_file.read_text())
    for record in doc["reservation"]["sub_blocks"].values():
        del record["sub_block"]  # as the previous version wrote it
    state_file.write_text(json.dumps(doc))
    planned = cli("import", "reservation", RESERVATION, "--detailed-exitcode", "-o", "json")
    assert (planned.code, planned.json["has_changes"], len(planned.json["sub_blocks_updated"])) == (4, True, 144)
    assert cli("import", "reservation", RESERVATION, "--apply").code == 0
    kept = json.loads(state_file.read_text())["reservation"]["sub_blocks"]
    assert sum("sub_block" in record for record in kept.values()) == 144
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(_nodes(sub_blocks, {5: "HEALTHY"})))
    r = cli("import", "k8s", path, "--apply", "-o", "json")
    assert (r.code, r.json["placed"], r.json["unplaced"]) == (0, 16, []), r.err
    assert [row["cube"] for row in r.json["cubes_added"]] == ["c05"]
    assert cli("import", "reservation", RESERVATION, "--apply", "--detailed-exitcode").code == 0


def _two_blocks(sub_blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sub-blocks 0-1 of the fixture's block, and a second block whose sub-blocks sit at the same positions
    (`physicalTopology.subBlock` names a sub-block within its block)."""
    other = json.loads(json.dumps(sub_blocks[:2]))
    for sb in other:
        sb["name"] = sb["name"].replace("block-0001", "block-0002")
        sb["id"] = sb["id"][:-1] + "9"
        sb["physicalTopology"]["block"] = "block-other"
    return sub_blocks[:2] + other


def test_sub_blocks_at_the_same_position_in_two_blocks_are_each_their_partitions_cube(cli, tmp_path):
    """Two superpods whose blocks hold sub-blocks at the same positions: each partition's position is kept for its
    own cube, and each sub-block takes the cube of the partition at its position in its own block's pod."""
    listed = _two_blocks(json.loads(RESERVATION.read_text()))
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(_nodes(listed, {i: "HEALTHY" for i in range(4)})))
    r = cli("import", "k8s", path, "--apply", "-o", "json")
    assert (r.code, r.json["placed"]) == (0, 64), r.err
    cube_of = {row["partition"]: row["cube"] for row in r.json["cubes_added"]}
    reservation = tmp_path / "sub-blocks.json"
    reservation.write_text(json.dumps(listed))
    r = cli("import", "reservation", reservation, "--apply", "-o", "json")
    assert (r.code, r.json["mapped"], r.json["unplaced"]) == (0, 4, []), r.err
    by_name = {row["sub_block"]: row["cube"] for row in r.json["sub_blocks_new"]}
    partition = {i: hashlib.sha256(f"partition {i}".encode()).hexdigest()[:32] for i in range(4)}
    assert by_name == {sb["name"]: cube_of[partition[i]] for i, sb in enumerate(listed)}


def test_partitions_learnt_before_positions_were_kept_learn_them_from_the_same_list(cli, tmp_path):
    """A state whose partitions an earlier version learnt, without their nodes' `gce-topology-subblock`: the same
    node list imported again records each partition's position (a change), so the reservation's sub-blocks then
    take their partitions' cubes, not free ones."""
    sub_blocks = json.loads(RESERVATION.read_text())
    assert cli("init", "--generation", "tpu7x").code == 0
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(_nodes(sub_blocks, {5: "HEALTHY", 6: "HEALTHY"})))
    cube_of = {
        row["partition"]: row["cube"] for row in cli("import", "k8s", path, "--apply", "-o", "json").json["cubes_added"]
    }
    state_file = cli.state / "state.json"
    doc = json.loads(state_file.read_text())
    del doc["k8s"]["sub_blocks"]  # as the previous version wrote it
    state_file.write_text(json.dumps(doc))
    planned = cli("import", "k8s", path, "--detailed-exitcode", "-o", "json")
    assert (planned.code, planned.json["cubes_added"]) == (4, [])
    positions = {5: sub_blocks[5]["physicalTopology"]["subBlock"], 6: sub_blocks[6]["physicalTopology"]["subBlock"]}
    partition = {i: hashlib.sha256(f"partition {i}".encode()).hexdigest()[:32] for i in (5, 6)}
    learnt = [{"cube": cube_of[partition[i]], "sub_block": positions[i]} for i in (5, 6)]
    assert planned.json["sub_blocks_learnt"] == learnt
    assert cli("import", "k8s", path, "--apply").code == 0
    r = cli("import", "reservation", RESERVATION, "--apply", "-o", "json")
    by_name = {row["sub_block"]: row["cube"] for row in r.json["sub_blocks_new"]}
    assert [by_name[sub_blocks[i]["name"]] for i in (5, 6)] == [cube_of[partition[i]] for i in (5, 6)]
    again = cli("import", "k8s", path, "--detailed-exitcode", "-o", "json")
    assert (again.code, again.json["sub_blocks_learnt"]) == (0, [])
