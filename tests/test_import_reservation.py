"""`tpufleet import reservation`: the shipped TPU7x reservation (144 sub-blocks, 3 DEGRADED, 2 under pending
maintenance) on a superpod, its plan, apply and no-op repeat, recovery clearing what it opened, and the refusals
of malformed input (exit 2, naming the file, the object and the field; state untouched)."""

from __future__ import annotations

import copy
import io
import json
import sys
from pathlib import Path

import pytest

from helpers import snapshot

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"
DEGRADED = {"c17": (15, 1), "c58": (14, 2), "c121": (15, 1)}
PARTITION = "cloud.google.com/gke-tpu-partition-4x4x4-id"
DRAINED = {"cube:c40": "2026-06-16T09:00:00Z", "cube:c99": "2026-06-18T09:00:00Z"}


@pytest.fixture
def superpod(cli):
    r = cli("init", "--generation", "tpu7x")
    assert r.code == 0, r.err
    return cli


@pytest.fixture(scope="module")
def sub_blocks() -> list:
    return json.loads(FIXTURE.read_text())


def write(tmp_path: Path, doc: object, name: str = "sb.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_plan_of_the_fixture(superpod):
    before = snapshot(superpod.state)
    r = superpod("import", "reservation", FIXTURE, "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert (d["sub_blocks"], d["mapped"], len(d["sub_blocks_new"]), d["sub_blocks_known"]) == (144, 144, 144, 0)
    assert [c["cube"] for c in d["sub_blocks_new"]][9:12] == ["c09", "c10", "c11"]  # in cube order, not the ids' text
    assert [g["cube"] for g in d["degraded"]] == ["c17", "c58", "c121"]
    assert {g["cube"]: (g["healthy_hosts"], g["degraded_hosts"]) for g in d["degraded"]} == DEGRADED
    assert len(d["degraded_new"]) == 3 and d["degraded_cleared"] == []
    assert {f["target"]: f["window_start"] for f in d["drains_opened"]} == DRAINED
    assert all(f["planned"] and f["reason"].startswith("reservation: ") for f in d["drains_opened"])
    assert d["blocks_named"] == [{"block": "block-5d21e0b4", "pod": "pod0"}]
    assert d["unplaced"] == [] and d["drains_cleared"] == []
    assert d["has_changes"] and not d["applied"]
    assert superpod("import", "reservation", FIXTURE, "--detailed-exitcode").code == 4
    assert snapshot(superpod.state) == before  # a plan changes nothing


def test_apply_shows_in_status_and_inventory_and_repeat_is_a_no_op(superpod):
    r = superpod("import", "reservation", FIXTURE, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["applied"] and r.json["serial"] == 2 and all(f["id"] for f in r.json["drains_opened"])
    status = superpod("status", "-o", "json").json
    assert status["cubes"] == {"free": 142, "allocated": 0, "out": 2}  # degraded cubes still serve
    assert {f["target"]: f["window_start"] for f in status["faults"]} == DRAINED
    assert all(f["planned"] for f in status["faults"])
    res = status["reservation"]
    assert res["sub_blocks"] == 144
    assert [g["cube"] for g in res["degraded_cubes"]] == ["c17", "c58", "c121"]
    rows = {row["cube"]: row for row in superpod("show", "inventory", "-o", "json").json}
    assert {
        c: (row["degraded"]["healthy_hosts"], row["degraded"]["degraded_hosts"])
        for c, row in rows.items()
        if "degraded" in row
    } == DEGRADED
    assert rows["c17"]["state"] == "free" and rows["c40"]["state"] == "out"
    assert {f["window_end"] for f in status["faults"]} == {"2026-06-16T13:00:00Z", "2026-06-18T13:00:00Z"}
    doc = json.loads((superpod.state / "state.json").read_text())
    assert {f["target"]: f["window_start"] for f in doc["faults"]} == DRAINED
    assert len(doc["reservation"]["sub_blocks"]) == 144 and doc["reservation"]["blocks"] == {"block-5d21e0b4": "pod0"}
    before = snapshot(superpod.state)
    again = superpod("import", "reservation", FIXTURE, "--apply", "--detailed-exitcode", "-o", "json")
    assert again.code == 0, again.err
    d = again.json
    assert not d["has_changes"] and not d["applied"] and d["unchanged_drains"] == 2
    assert d["sub_blocks_new"] == d["drains_opened"] == d["drains_cleared"] == d["degraded_new"] == []
    assert d["sub_blocks_known"] == 144 and len(d["degraded"]) == 3
    assert snapshot(superpod.state) == before


def test_maintenance_done_and_healthy_again_clear_drain_and_degraded(superpod, tmp_path, sub_blocks):
    assert superpod("import", "reservation", FIXTURE, "--apply").code == 0
    changed = copy.deepcopy(sub_blocks)
    changed[40]["reservationSubBlockMaintenance"].pop("upcomingGroupMaintenance")
    changed[17]["healthInfo"] = {"healthStatus": "HEALTHY", "healthyHostCount": 16, "degradedHostCount": 0}
    path = write(tmp_path, changed)
    plan = superpod("import", "reservation", path, "--detailed-exitcode", "-o", "json")
    assert plan.code == 4, plan.err
    d = plan.json
    assert [f["target"] for f in d["drains_cleared"]] == ["cube:c40"]
    assert [g["cube"] for g in d["degraded_cleared"]] == ["c17"] and d["drains_opened"] == []
    assert sorted(d["sub_blocks_updated"]) == [changed[17]["name"], changed[40]["name"]]
    assert superpod("import", "reservation", path, "--apply").code == 0
    status = superpod("status", "-o", "json").json
    assert [f["target"] for f in status["faults"]] == ["cube:c99"]
    assert [g["cube"] for g in status["reservation"]["degraded_cubes"]] == ["c58", "c121"]
    assert superpod("import", "reservation", path, "--detailed-exitcode").code == 0


def test_stdin(superpod, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FIXTURE.read_bytes())))
    r = superpod("import", "reservation", "-", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["source"] == "<stdin>" and r.json["mapped"] == 144


def test_what_cannot_be_placed(superpod, tmp_path, sub_blocks):
    extra = copy.deepcopy(sub_blocks[0])
    extra["name"], extra["physicalTopology"]["subBlock"] = "spare-sub-block", "zz-beyond"
    other = copy.deepcopy(sub_blocks[1])
    other["name"], other["physicalTopology"]["block"] = "other-block-sb", "block-elsewhere"
    r = superpod("import", "reservation", write(tmp_path, [*sub_blocks, extra, other]), "-o", "json")
    assert r.code == 0, r.err
    unplaced = {u["sub_block"]: u["reason"] for u in r.json["unplaced"]}
    assert "no cube left" in unplaced["spare-sub-block"] and "144 cubes" in unplaced["spare-sub-block"]
    assert "unknown block" in unplaced["other-block-sb"]
    assert r.json["mapped"] == 144


def test_a_block_no_pod_takes_is_one_line_not_one_per_sub_block(cli):
    """Two pods and no --pod: the 144 sub-blocks of the block are unplaced for one reason, said once."""
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    r = cli("import", "reservation", FIXTURE)
    assert r.code == 0, r.err
    not_placed = [line for line in r.out.splitlines() if "not placed" in line]
    assert len(not_placed) == 2, r.out  # the reason once, and the verdict that counts them
    assert "144 sub-blocks" in not_placed[0] and "sub-0000" in not_placed[0] and "sub-0143" in not_placed[0]
    assert len(cli("import", "reservation", FIXTURE, "-o", "json").json["unplaced"]) == 144


def test_a_block_without_a_pod_is_told_which_pods_it_could_be(cli, sub_blocks, tmp_path):
    """The reason names the pods no block holds, for --pod; and which block holds the --pod given."""
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    unplaced = cli("import", "reservation", FIXTURE, "-o", "json").json["unplaced"]
    assert "pod0, pod1" in unplaced[0]["reason"] and "--pod" in unplaced[0]["reason"]
    assert cli("import", "reservation", FIXTURE, "--pod", "pod0", "--apply").code == 0
    other = copy.deepcopy(sub_blocks)
    for sb in other:
        sb["physicalTopology"]["block"] = "block-elsewhere"
    r = cli("import", "reservation", write(tmp_path, other), "--pod", "pod0", "-o", "json")
    reason = r.json["unplaced"][0]["reason"]
    assert "block-5d21e0b4" in reason and "pod1" in reason, reason


def test_a_second_block_in_one_input_is_told_which_block_holds_the_pod(cli, sub_blocks, tmp_path):
    """On a fresh state the input's first block takes the one pod; the reason for the second named the holder
    "another", as only the blocks of earlier imports were looked at."""
    assert cli("init", "--generation", "tpu7x", "--pods", "1").code == 0
    two = copy.deepcopy(sub_blocks[:4])
    two[1]["physicalTopology"]["block"] = "other-block"
    r = cli("import", "reservation", write(tmp_path, two), "-o", "json")
    assert r.code == 0, r.err
    (unplaced,) = r.json["unplaced"]
    assert unplaced["reason"] == (
        "unknown block 'other-block': pod0 already holds block block-5d21e0b4 (every pod holds a block already)"
    )


def test_unknown_pod_is_bad_input(superpod):
    r = superpod("import", "reservation", FIXTURE, "--pod", "pod7")
    assert r.code == 2 and "--pod" in r.err and "pod0" in r.err


LONG = "x" * 500


def _window(**times: str):
    """An edit of the fixture: sub-block 40's upcoming maintenance window given `times`."""

    def edit(d: list) -> list:
        d[40]["reservationSubBlockMaintenance"]["upcomingGroupMaintenance"].update(times)
        return d

    return edit


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        (lambda d: {"items": "no"}, "field items", "must be a list of sub-blocks (value 'no')"),
        (lambda d: d[0].pop("name") and d, "field 0.name", "missing or not a sub-block name"),
        (lambda d: d[3]["healthInfo"].update(healthStatus=LONG) or d, "field 3.healthInfo.healthStatus", "HEALTHY"),
        (
            lambda d: d[5]["healthInfo"].update(degradedHostCount="2") or d,
            "field 5.healthInfo.degradedHostCount",
            "must be an integer",
        ),
        (lambda d: d[6].update(count=16.5) or d, "field 6.count", "must be an integer"),
        (
            lambda d: d[8]["physicalTopology"].update(subBlock=d[7]["physicalTopology"]["subBlock"]) or d,
            "field 8.physicalTopology.subBlock",
            "same position",
        ),
        (lambda d: d[0].update(physicalTopology={}) or d, "field 0.physicalTopology.block", "names no block"),
        (
            lambda d: d[2]["healthInfo"].update(healthyHostCount=16, degradedHostCount=4) or d,
            "field 2.healthInfo.degradedHostCount",
            "more hosts than the sub-block's count of 16",
        ),
        (_window(windowStartTime="soon"), "upcomingGroupMaintenance.windowStartTime", "RFC 3339"),
        (
            _window(windowStartTime="2026-06-16T23:59:60Z"),
            "upcomingGroupMaintenance.windowStartTime",
            "is a leap second (:60), which the tool cannot keep",
        ),
        (
            _window(windowEndTime="9999-12-31T23:00:00-05:00"),
            "upcomingGroupMaintenance.windowEndTime",
            "is past year 9999 in UTC",
        ),
        (
            _window(windowStartTime="0001-01-01T00:30:00+01:00"),
            "upcomingGroupMaintenance.windowStartTime",
            "is before year 1 in UTC",
        ),
        (
            _window(windowStartTime="2026-13-45T09:00:00Z"),
            "upcomingGroupMaintenance.windowStartTime",
            "must be an RFC 3339 time of the calendar",
        ),
        (
            _window(windowStartTime="9999-12-31T99:00:00Z"),
            "upcomingGroupMaintenance.windowStartTime",
            "must be an RFC 3339 time of the calendar",
        ),
        (
            _window(windowStartTime="2026-06-16T25:59:60Z"),
            "upcomingGroupMaintenance.windowStartTime",
            "must be an RFC 3339 time of the calendar",
        ),
    ],
)
def test_malformed_input_exits_2_naming_object_and_field(superpod, tmp_path, sub_blocks, edit, field, words):
    before = snapshot(superpod.state)
    path = write(tmp_path, edit(copy.deepcopy(sub_blocks)))
    r = superpod("import", "reservation", path, "--apply")
    assert r.code == 2, r.err
    assert str(path) in r.err and field in r.err and words in r.err
    if field.startswith("field 3."):
        assert "sub-block ironwood-superpod-block-0001-sub-0003" in r.err
        assert LONG[:61] not in r.err  # at most 60 characters of a bad value are quoted
    assert snapshot(superpod.state) == before


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"items": {}}', "field items: must be a list of sub-blocks (value {})"),
        ('{"items": null}', "field items: must be a list of sub-blocks (value None)"),
        ("{}", "field items: missing (must be the list of sub-blocks, as the API's list response holds them)"),
        (
            "null",
            "field <root>: must be a JSON list (gcloud compute reservations sub-blocks list --format=json) or an "
            "object with items (value None)",
        ),
        ('{"items": [1]}', "field items.0: must be an object (a reservation sub-block) (value 1)"),
        ("[1]", "field 0: must be an object (a reservation sub-block) (value 1)"),
        ('{"items": [{}]}', "field items.0.name: missing or not a sub-block name (RFC 1035, 1-63 characters)"),
    ],
)
def test_a_list_of_the_wrong_form_is_named_by_its_own_field_and_value(superpod, tmp_path, text, said):
    """`{"items": {}}` said "field <root>: must be a JSON list (value 'dict')": the document's type, not the field's
    value; an item said "(value 'int')" for 1, and its fields were not named from `items`."""
    path = tmp_path / "sub-blocks.json"
    path.write_text(text)
    before = snapshot(superpod.state)
    r = superpod("import", "reservation", path, "--apply")
    assert r.code == 2 and r.err.strip() == f"tpufleet: error: {path}: {said}", r.err
    assert snapshot(superpod.state) == before


def test_not_json_and_missing_file(superpod, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    assert superpod("import", "reservation", bad).code == 2
    r = superpod("import", "reservation", tmp_path / "missing.json")
    assert r.code == 2 and "missing.json" in r.err


def test_old_state_has_no_reservation_section(superpod):
    doc = json.loads((superpod.state / "state.json").read_text())
    assert "reservation" not in doc
    assert "reservation" not in superpod("status", "-o", "json").json


def test_state_naming_a_cube_not_in_the_fleet_is_refused(superpod):
    assert superpod("import", "reservation", FIXTURE, "--apply").code == 0
    path = superpod.state / "state.json"
    doc = json.loads(path.read_text())
    name = next(iter(doc["reservation"]["sub_blocks"]))
    doc["reservation"]["sub_blocks"][name]["cube"] = "c999"
    path.write_text(json.dumps(doc))
    r = superpod("status")
    assert r.code == 2 and f"reservation.sub_blocks.{name}.cube" in r.err and "no cube c999" in r.err


def test_faults_lists_a_maintenance_drains_window(superpod):
    assert superpod("import", "reservation", FIXTURE, "--apply").code == 0
    rows = superpod("faults", "-o", "json").json
    windows = [(r["target"], r["window_start"], r["window_end"]) for r in rows if "window_start" in r]
    assert len(windows) == 2 and all(start < end for _, start, end in windows)


def test_a_window_moved_later_is_not_out_of_the_pool_by_the_drain_the_import_clears(superpod, sub_blocks, tmp_path):
    """The drain for c99's started window is cleared once the window moves later: the plan said the cube stayed out
    of the pool (`out_of_pool`, "a fault holds it") on the strength of that very drain."""
    assert superpod("import", "reservation", FIXTURE, "--apply").code == 0
    later = copy.deepcopy(sub_blocks)
    window = later[99]["reservationSubBlockMaintenance"]["upcomingGroupMaintenance"]
    window["windowStartTime"], window["windowEndTime"] = "2099-02-20T09:00:00Z", "2099-02-20T13:00:00Z"
    path = write(tmp_path, later)
    plan = superpod("import", "reservation", path, "-o", "json").json
    assert [f["target"] for f in plan["drains_cleared"]] == ["cube:c99"]
    assert {a["cube"]: a["out_of_pool"] for a in plan["maintenance_announced"]} == {"c99": False}
    applied = superpod("import", "reservation", path, "--apply", "-o", "json").json
    assert {a["cube"]: a["out_of_pool"] for a in applied["maintenance_announced"]} == {"c99": False}


def test_the_faults_table_says_a_maintenance_window_once(superpod):
    assert superpod("import", "reservation", FIXTURE, "--apply").code == 0
    [line] = [line for line in superpod("faults").out.splitlines() if "cube:c40" in line]
    assert line.count(DRAINED["cube:c40"]) == 1, line


def test_a_list_naming_no_block_exports_nodes_that_import_again(superpod, sub_blocks, tmp_path):
    """Sub-blocks without `physicalTopology.block` are one block with no name: the exports name its pod by the
    pod's name, never by an empty label value that `import k8s` (and Slurm) would refuse."""
    doc = copy.deepcopy(sub_blocks[:4])
    for sb in doc:
        del sb["physicalTopology"]["block"]
    imported = superpod("import", "reservation", write(tmp_path, doc), "--apply")
    assert imported.code == 0, imported.err
    assert [line for line in imported.out.splitlines() if "pod named" in line] == [
        "  pod named: pod0 = the reservation's one block (no sub-block names its physicalTopology.block)"
    ]
    r = superpod("export", "node-labels", "-o", "json")
    assert r.code == 0, r.err
    assert {n["metadata"]["labels"]["cloud.google.com/gce-topology-block"] for n in r.json["items"]} == {"pod0"}
    nodes = write(tmp_path, r.json, "nodes.json")
    r = superpod("import", "k8s", nodes, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["unplaced"] == [] and r.json["faults_opened"] == []
    torus = superpod("export", "slurm-topology", "--plugin", "torus3d", "--format", "yaml", "-o", "json")
    assert torus.json[0]["torus3d"]["toruses"][0]["name"] == "pod0"


def test_a_block_that_is_no_label_value_is_not_written_as_a_node_label(superpod, sub_blocks, tmp_path):
    """`physicalTopology.block` is any visible ASCII; a node label value is not: a block such as
    `projects/p/block:1` written as `gce-topology-block` made a node list the API server (and `import k8s`)
    refuses. The exports name such a pod by its own name, and the export imports again."""
    doc = copy.deepcopy(sub_blocks[:4])
    for sb in doc:
        sb["physicalTopology"]["block"] = "projects/p/block:5d21e0b4"
    assert superpod("import", "reservation", write(tmp_path, doc), "--apply").code == 0
    r = superpod("export", "node-labels", "-o", "json")
    assert r.code == 0, r.err
    assert {n["metadata"]["labels"]["cloud.google.com/gce-topology-block"] for n in r.json["items"]} == {"pod0"}
    r = superpod("import", "k8s", write(tmp_path, r.json, "nodes.json"), "-o", "json")
    assert r.code == 0, r.err
    assert r.json["unplaced"] == [] and r.json["faults_opened"] == []
    torus = superpod("export", "slurm-topology", "--plugin", "torus3d", "--format", "yaml", "-o", "json")
    assert torus.json[0]["torus3d"]["toruses"][0]["name"] == "pod0"


def test_a_known_sub_block_under_another_block_is_not_placed_rather_than_refused_on_apply(cli, sub_blocks, tmp_path):
    """A sub-block recorded on pod0's cube whose list now puts it in a block of pod1: the plan lists it as not
    placed (naming its cube and both pods) instead of proposing a record the state refuses to keep."""
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    assert cli("import", "reservation", write(tmp_path, sub_blocks[:4]), "--pod", "pod0", "--apply").code == 0
    doc = copy.deepcopy(sub_blocks[:4])
    doc[0]["physicalTopology"]["block"] = "block-other"
    moved = write(tmp_path, doc, "moved.json")
    r = cli("import", "reservation", moved, "--pod", "pod1", "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["sub_blocks_updated"] == []
    why = dict((u["sub_block"], u["reason"]) for u in r.json["unplaced"])[doc[0]["name"]]
    assert why == "it is cube c00 (the last import reservation), not a cube of pod1, its block's pod"
    again = cli("import", "reservation", moved, "--pod", "pod1", "--detailed-exitcode", "-o", "json")
    # Nothing to record, but a sub-block it cannot place: out of sync, as `drift` says.
    assert again.code == 4 and not again.json["has_changes"], again.out


def test_no_cube_left_names_the_partitions_that_hold_cubes(cli, sub_blocks, tmp_path):
    """Two of a 4-cube pod's cubes are partitions `import k8s` learnt under names no sub-block has: the other
    two sub-blocks find no cube, and the reason said every cube was already a sub-block (two are not)."""
    assert cli("init", "--generation", "tpu7x", "--cubes-per-pod", "4").code == 0
    block = sub_blocks[0]["physicalTopology"]["block"]
    labels = {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        "cloud.google.com/gke-tpu-topology": "4x4x4",
        "cloud.google.com/gce-topology-block": block,
    }
    nodes = [
        {"metadata": {"name": f"n-{p}-{m:02d}", "labels": {**labels, PARTITION: f"part-{p}"}}}
        for p in range(2)
        for m in range(16)
    ]
    assert cli("import", "k8s", write(tmp_path, {"kind": "List", "items": nodes}, "n.json"), "--apply").code == 0
    r = cli("import", "reservation", write(tmp_path, sub_blocks[:4]), "-o", "json")
    assert r.code == 0, r.err
    assert r.json["mapped"] == 2
    assert {u["reason"] for u in r.json["unplaced"]} == {
        "no cube left: of pod0's 4 cubes, 2 are sub-blocks and 2 partitions import k8s learnt whose names are no "
        "sub-block's"
    }


def test_a_list_of_one_sub_block_is_said_in_the_singular(superpod, sub_blocks, tmp_path):
    one = [copy.deepcopy(item) for item in sub_blocks if "DEGRADED" not in json.dumps(item)][:1]
    r = superpod("import", "reservation", write(tmp_path, one))
    assert r.code == 0, r.err
    assert ": 1 sub-block, 1 mapped to cubes" in r.out.splitlines()[0]


def test_the_api_response_of_an_empty_list_has_no_items_and_is_an_empty_list(superpod, tmp_path, sub_blocks):
    """The REST API leaves an empty repeated field out: no sub-blocks is a response without `items` (its `kind` the
    items' kind). It was refused as `field items: missing` (exit 2) where `[]` and `{"items": []}` warn, exit 0."""
    assert superpod("import", "reservation", write(tmp_path, sub_blocks), "--apply").code == 0
    empty = {"kind": "compute#reservationSubBlock", "id": "4321", "selfLink": "https://example.invalid/subBlocks"}
    before = snapshot(superpod.state)
    docs: tuple[object, ...] = (empty, [], {"items": []})
    for doc in docs:
        r = superpod("import", "reservation", write(tmp_path, doc), "--apply", "--detailed-exitcode", "-o", "json")
        assert r.code == 0, r.err
        assert r.json["sub_blocks"] == 0 and not r.json["has_changes"]
        assert "no sub-blocks in the list, while the state maps 144 sub-block(s)" in r.json["warning"]
    assert snapshot(superpod.state) == before
    one = write(tmp_path, sub_blocks[3])  # one sub-block, not a list: still refused
    assert superpod("import", "reservation", one).code == 2
