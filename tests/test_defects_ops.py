"""Fleet operations under the faults an independent review found: YAML output of a state holding a slice,
maintenance waves that must clear only their own drains, plans naming cubes the fleet lacks, notice times at the
edge of the calendar, and `diff` over a slice made and gone inside the range."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml


def notices(path: Path, *rows: tuple[str, str, str]) -> Path:
    path.write_text("".join(f'- {{target: {t}, window_start: "{a}", window_end: "{b}"}}\n' for t, a, b in rows))
    return path


def test_yaml_output_of_a_state_with_a_slice_is_the_json(fleet):
    """A state file's floats (a slice's floor) kept a subclass YAML's safe writer refuses: exit 70 after commits."""
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    r = fleet("policy", "a", "--min-throughput", "0.6", "-o", "yaml")
    assert r.code == 0 and yaml.safe_load(r.out)["min_throughput"] == 0.6, r.err
    for command in (["status"], ["show", "slices"], ["explain", "a"], ["report"], ["faults"], ["show", "journal"]):
        as_yaml, as_json = fleet(*command, "-o", "yaml"), fleet(*command, "-o", "json")
        assert as_yaml.code == 0, (command, as_yaml.err)
        if command != ["report"]:  # (its fault times are read back as YAML timestamps)
            assert yaml.safe_load(as_yaml.out) == json.loads(as_json.out), command


def test_a_maintenance_wave_never_clears_a_failure_it_did_not_open(fleet, tmp_path):
    """A cube already failed when its notice came: the wave found the open fault, took it for its drain, and
    cleared it at its end, returning a dead cube to the pool as healthy."""
    assert fleet("inject-fault", "cube:c05", "--reason", "PSU dead").code == 0
    window = ("2026-07-01T09:00:00Z", "2026-07-01T13:00:00Z")
    given = notices(tmp_path / "n.yaml", ("cube:c05", *window))
    plan = tmp_path / "plan.json"
    assert fleet("plan-maintenance", "--notices", str(given), "--out", str(plan)).code == 0
    applied = fleet("apply-maintenance", str(plan), "--wave", "1", "-o", "json")
    assert applied.code == 0, applied.err
    still: list[dict[str, Any]] = fleet("faults", "-o", "json").json
    assert [(f["id"], f["target"], f["reason"]) for f in still] == [("f1", "cube:c05", "PSU dead")]
    assert applied.json["faults_cleared"] == []
    other = notices(tmp_path / "m.yaml", ("cube:c06", *window))  # a drain the plan opens is cleared as before
    assert fleet("plan-maintenance", "--notices", str(other), "--out", str(plan)).code == 0
    assert fleet("apply-maintenance", str(plan), "--wave", "1", "-o", "json").json["faults_cleared"] == ["f2"]
    assert [f["id"] for f in fleet("faults", "-o", "json").json] == ["f1"]


def test_a_plan_naming_a_cube_the_fleet_lacks_is_bad_input(cli, tmp_path):
    big, small = cli, type(cli)(cli.capsys, tmp_path / "small")
    assert big("init", "--cubes-per-pod", "16").code == 0 and small("init", "--cubes-per-pod", "8").code == 0
    window = ("2026-07-01T09:00:00Z", "2026-07-01T13:00:00Z")
    plan = tmp_path / "plan.json"
    given = notices(tmp_path / "n.yaml", ("cube:c12", *window))
    assert big("plan-maintenance", "--notices", str(given), "--out", str(plan)).code == 0
    before = (tmp_path / "small" / "state.json").read_bytes()
    for extra in (["--dry-run"], []):
        r = small("apply-maintenance", str(plan), "--wave", "1", *extra)
        assert r.code == 2 and str(plan) in r.err and "c12" in r.err, (r.code, r.err)
    assert (tmp_path / "small" / "state.json").read_bytes() == before


@pytest.mark.parametrize("start", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_notice_times_past_the_calendar_are_bad_input(fleet, tmp_path, start):
    given = notices(tmp_path / "n.yaml", ("cube:c00", start, "2026-07-01T09:00:00Z"))
    r = fleet("plan-maintenance", "--notices", str(given))
    assert r.code == 2 and str(given) in r.err and "window_start" in r.err, (r.code, r.err)


def test_diff_over_a_slice_made_and_gone_inside_the_range_says_nothing_changed(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert fleet("policy", "a", "--min-throughput", "0.7").code == 0
    assert fleet("release", "a").code == 0
    changes = fleet("diff", "1", "-o", "json").json
    assert not any(changes["slices"].values()), changes["slices"]


def sub_block(name: str, position: str, start: str, end: str) -> dict[str, Any]:
    upcoming = {"type": "SCHEDULED", "maintenanceStatus": "PENDING", "windowStartTime": start, "windowEndTime": end}
    return {
        "kind": "compute#reservationSubBlock",
        "name": name,
        "physicalTopology": {"block": "blk", "subBlock": position},
        "healthInfo": {"healthStatus": "HEALTHY"},
        "reservationSubBlockMaintenance": {"upcomingGroupMaintenance": upcoming},
    }


def test_reservation_windows_in_any_offset_make_a_plan_the_apply_takes_in_time_order(fleet, tmp_path):
    """Windows written with an offset or a fraction of a second were kept as written: the plan's waves were
    ordered as text (10:00+05:00 after 05:30Z), and the plan was refused by its own apply."""
    given = tmp_path / "reservation.json"
    given.write_text(
        json.dumps(
            [
                sub_block("sb-0000", "p0000", "2026-06-16T10:00:00.5+05:00", "2026-06-16T11:00:00+05:00"),
                sub_block("sb-0001", "p0001", "2026-06-16T05:30:00Z", "2026-06-16T07:00:00Z"),
            ]
        )
    )
    assert fleet("import", "reservation", str(given), "--apply").code == 0
    windows = sorted((f["target"], f["window_start"], f["window_end"]) for f in fleet("faults", "-o", "json").json)
    assert windows == [
        ("cube:c00", "2026-06-16T05:00:00Z", "2026-06-16T06:00:00Z"),
        ("cube:c01", "2026-06-16T05:30:00Z", "2026-06-16T07:00:00Z"),
    ]
    plan = tmp_path / "plan.json"
    planned = fleet("plan-maintenance", "--max-parallel", "1", "--out", str(plan), "-o", "json").json
    assert [w["cubes"] for w in planned["waves"]] == [["c00"], ["c01"]]
    assert fleet("apply-maintenance", str(plan), "--wave", "1").code == 0


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("2026-13-45T09:00:00Z", "2026-06-16T13:00:00Z"),
        ("2026-06-16T09:00:00+99:99", "2026-06-16T13:00:00Z"),
        ("2026-06-16T13:00:00+00:00", "2026-06-16T09:00:00+00:00"),
    ],
)
def test_impossible_reservation_windows_are_bad_input(fleet, tmp_path, start, end):
    given = tmp_path / "reservation.json"
    given.write_text(json.dumps([sub_block("sb-0000", "p0000", start, end)]))
    before = fleet("status", "-o", "json").json["serial"]
    r = fleet("import", "reservation", str(given), "--apply")
    assert r.code == 2 and str(given) in r.err and "window" in r.err, (r.code, r.err)
    assert fleet("status", "-o", "json").json["serial"] == before


def test_rescheduled_maintenance_moves_its_open_drain_and_drift_sees_it(fleet, tmp_path):
    first, later = tmp_path / "r1.json", tmp_path / "r2.json"
    first.write_text(json.dumps([sub_block("sb-0000", "p0000", "2026-06-16T09:00:00Z", "2026-06-16T13:00:00Z")]))
    later.write_text(json.dumps([sub_block("sb-0000", "p0000", "2026-06-23T09:00:00Z", "2026-06-23T13:00:00Z")]))
    assert fleet("import", "reservation", str(first), "--apply").code == 0
    assert fleet("drift", "--reservation", str(later)).code == 4
    moved = fleet("import", "reservation", str(later), "--apply", "-o", "json").json
    assert [(d["id"], d["window_start"]) for d in moved["drains_rescheduled"]] == [("f1", "2026-06-23T09:00:00Z")]
    (drain,) = fleet("faults", "-o", "json").json
    assert (drain["window_start"], drain["window_end"]) == ("2026-06-23T09:00:00Z", "2026-06-23T13:00:00Z")
    assert "2026-06-23T09:00:00Z" in drain["reason"]
    assert fleet("drift", "--reservation", str(later)).code == 0


def test_notice_times_written_without_quotes_are_read(fleet, tmp_path):
    given = tmp_path / "n.yaml"
    given.write_text("- {target: cube:c03, window_start: 2026-07-01T09:00:00Z, window_end: 2026-07-01T13:00:00Z}\n")
    r = fleet("plan-maintenance", "--notices", str(given), "-o", "json")
    assert r.code == 0, r.err
    assert r.json["waves"][0]["window_start"] == "2026-07-01T09:00:00Z"


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gke"


def test_k8s_nodes_of_a_reserved_block_take_the_pod_and_cube_the_reservation_gave(cli, tmp_path):
    """`import k8s` after `import reservation` gave the block the first free pod and the partition the first free
    cube, ignoring the reservation's names for both: the shipped Slices then spanned two pods (exit 2)."""
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    reservation = FIXTURES / "tpu7x-reservation-subblocks.json"
    assert cli("import", "reservation", str(reservation), "--pod", "pod1", "--apply").code == 0
    partition = "ironwood-superpod-block-0001-sub-0005"
    labels = {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        "cloud.google.com/gke-tpu-topology": "4x4x4",
        "cloud.google.com/gce-topology-block": "block-5d21e0b4",
        "cloud.google.com/gke-tpu-partition-4x4x4-id": partition,
    }
    nodes = tmp_path / "nodes.json"
    items = [{"kind": "Node", "metadata": {"name": f"x{m:02d}", "labels": labels}} for m in range(16)]
    nodes.write_text(json.dumps({"kind": "List", "items": items}))
    assert cli("import", "k8s", str(nodes), "--apply").code == 0
    state = json.loads((cli.state / "state.json").read_text())
    cube = state["reservation"]["sub_blocks"][partition]["cube"]
    hosts = set(state["k8s"]["nodes"].values())
    assert len(hosts) == 16 and all(h.startswith(f"host:{cube}/") for h in hosts), (cube, sorted(hosts)[:3])
    assert state["k8s"]["blocks"].get("block-5d21e0b4", "pod1") == "pod1"
    assert cli("import", "slices", str(FIXTURES / "tpu7x-slices.json")).code in (0, 4)


def test_an_integer_past_floats_in_a_hardware_profile_is_bad_input(cli, tmp_path):
    shipped = Path(__file__).resolve().parents[1] / "tpufleet" / "data" / "hardware-profile.yaml"
    text = shipped.read_text()
    assert "link_bandwidth: 50.0e+9" in text
    profile = tmp_path / "huge.yaml"
    profile.write_text(text.replace("link_bandwidth: 50.0e+9", "link_bandwidth: 1" + "0" * 400))
    args = ("collective", "--topology", "4x4", "--op", "all-reduce", "--bytes", "1GiB", "--profile", str(profile))
    r = cli(*args, state=False)
    assert r.code == 2 and f"{profile}: field ici.link_bandwidth" in r.err, (r.code, r.err)


def test_an_arrival_rate_too_small_for_a_second_means_no_arrivals(cli):
    r = cli("simulate-fleet", "--days", "1", "--load-per-pod", "5e-324", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["jobs_submitted"] == 0


def test_output_keeps_an_enums_value_and_a_state_floats_number():
    """The plain types YAML needs, without turning a str-mixin enum into its name ("SliceState.EVICTED")."""
    from tpufleet.cli.render import finite, to_json
    from tpufleet.fleetstate import SliceState
    from tpufleet.jsontext import parse_json_state

    floor = parse_json_state('{"x": 0.5}')["x"]
    data = finite({"state": SliceState.EVICTED, "floor": floor})
    assert data == {"state": "evicted", "floor": 0.5}
    assert type(data["state"]) is str and type(data["floor"]) is float
    assert json.loads(to_json({"state": SliceState.EVICTED})) == {"state": "evicted"}
    assert yaml.safe_load(yaml.safe_dump(data)) == data


def test_a_replaced_fleet_numbers_its_faults_after_the_old_ones(fleet):
    """`init --force` restarted fault ids at f1, so one id named two faults in the journal (`suspects` counted the
    old fleet's cube failure against the new fleet's fault of the same id); the numbers now continue, as the serial
    does, even past a damaged state that cannot be read."""
    assert fleet("inject-fault", "cube:c01", "-o", "json").json["fault_id"] == "f1"
    assert fleet("clear-fault", "f1").code == 0
    assert fleet("init", "--force").code == 0
    assert fleet("inject-fault", "cube:c02", "-o", "json").json["fault_id"] == "f2"
    (fleet.state / "state.json").write_text("not a state")
    assert fleet("init", "--force").code == 0
    assert fleet("inject-fault", "cube:c03", "-o", "json").json["fault_id"] == "f3"
    opened = [e["summary"] for e in fleet("history", "-o", "json").json if e["summary"].startswith("inject-fault")]
    assert [s.split()[1] for s in opened] == ["f1", "f2", "f3"]


def test_a_replaced_fleet_keeps_its_fault_records_in_the_history(fleet):
    """`init --force` dropped the replaced state's fault records (open ones, and cleared ones not yet moved to the
    journal) from `faults --all` and `suspects`; its journal line now keeps them, an open one ended at the
    replacement."""
    assert fleet("inject-fault", "cube:c01").code == 0
    assert fleet("clear-fault", "f1").code == 0
    assert fleet("inject-fault", "host:c02/1").code == 0
    before = {f["id"]: f for f in fleet("faults", "--all", "-o", "json").json}
    assert fleet("init", "--force").code == 0
    init = fleet("show", "journal", "--tail", "1", "-o", "json").json[0]
    after = {f["id"]: f for f in fleet("faults", "--all", "-o", "json").json}
    assert after["f1"] == before["f1"] and before["f2"]["cleared"] is None
    assert after["f2"] == {**before["f2"], "cleared": init["time"]}
    assert fleet("faults", "-o", "json").json == []
    assert fleet("inject-fault", "cube:c03", "-o", "json").json["fault_id"] == "f3"
    assert [f["id"] for f in fleet("faults", "--all", "-o", "json").json] == ["f1", "f2", "f3"]
    journal = fleet.state / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")[:-1]
    journal.write_bytes(b"\n".join([*lines, lines[-2]]) + b"\n")  # the init line copied by hand after the last
    assert [f["id"] for f in fleet("faults", "--all", "-o", "json").json] == ["f1", "f2", "f3"]  # listed once


def test_suspects_never_names_hardware_the_fleet_no_longer_has(cli):
    """A replaced fleet's fault records stay in the history; a cube only the old fleet had is no suspect (the
    quarantine command proposed for it would be refused)."""
    assert cli("init", "--pods", "2").code == 0
    for _ in range(3):
        assert cli("inject-fault", "cube:c127").code == 0
        assert cli("clear-fault", "cube:c127").code == 0
    assert [s["target"] for s in cli("suspects", "-o", "json").json["suspects"]] == ["cube:c127"]
    assert cli("init", "--force").code == 0  # one pod: c00-c63
    found = cli("suspects", "-o", "json").json
    assert found["suspects"] == [] and found["faults_in_window"] == 0
    assert len(cli("faults", "--all", "-o", "json").json) == 3


@pytest.mark.parametrize("then", ["tpu7x", "tpu-v5p"])
def test_suspects_and_plan_spares_count_only_the_fleet_init_started(cli, then):
    """A fleet `init --force` replaced was other hardware, whatever its cubes are called: `plan-spares` counted
    none of its faults (they left the state) while `suspects` counted them from the journal and proposed to
    quarantine the new fleet's c10."""
    assert cli("init", "--generation", "tpu-v5p").code == 0
    for _ in range(4):
        assert cli("inject-fault", "host:c10/3").code == 0
        assert cli("clear-fault", "host:c10/3").code == 0
    assert "cube:c10" in [s["target"] for s in cli("suspects", "-o", "json").json["suspects"]]
    assert cli("init", "--force", "--generation", then).code == 0
    found = cli("suspects", "-o", "json").json
    assert (found["suspects"], found["faults_in_window"]) == ([], 0)
    assert [p["cubes_with_history"] for p in cli("plan-spares", "-o", "json").json["pods"]] == [{}]
    assert len(cli("faults", "--all", "-o", "json").json) == 4  # the history itself is kept
    assert cli("inject-fault", "host:c10/3").code == 0  # the new fleet's own faults count
    assert cli("suspects", "-o", "json").json["faults_in_window"] == 1


def test_exported_node_labels_import_as_no_change_with_chip_link_and_cube_faults(fleet, tmp_path):
    """A chip or electrical-link fault makes its machine's node NotReady and a drained cube cordons its 16 nodes;
    `import k8s` of that export opened a machine fault and 16 machine drains on top of the faults that said so."""
    for target in ("chip:c01/1,2,3", "ici:c02/0,0,0/+x"):
        assert fleet("inject-fault", target).code == 0
    for target in ("cube:c03", "host:c04/2"):
        assert fleet("inject-fault", target, "--planned").code == 0
    nodes = tmp_path / "nodes.json"
    assert fleet("export", "node-labels", "--out", nodes).code == 0
    plan = fleet("import", "k8s", nodes, "-o", "json").json
    assert plan["faults_opened"] == [] and plan["drains_opened"] == [] and plan["faults_cleared"] == []
    assert plan["unchanged_faults"] == 2 + 16 + 1
    assert fleet("import", "k8s", nodes, "--apply").code == 0  # it names the nodes, nothing more
    assert fleet("import", "k8s", nodes, "--detailed-exitcode").code == 0
    faults = fleet("faults", "-o", "json").json
    assert [f["target"] for f in faults] == ["chip:c01/1,2,3", "ici:c02/0,0,0/+x", "cube:c03", "host:c04/2"]


def test_a_node_down_on_a_machine_whose_chip_failed_while_drained_is_still_a_fault(fleet, tmp_path):
    """Only faults that say what the node says are kept: a NotReady node whose machine only holds a drain of one
    of its chips (planned) is a failure the state does not have yet."""
    assert fleet("inject-fault", "chip:c01/1,2,3", "--planned").code == 0
    nodes = tmp_path / "nodes.json"
    assert fleet("export", "node-labels", "--out", nodes).code == 0
    doc = yaml.safe_load(nodes.read_text())
    (node,) = [n for n in doc["items"] if n["metadata"]["name"] == "tpu-c01-m14"]
    node["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]
    nodes.write_text(json.dumps(doc))
    plan = fleet("import", "k8s", nodes, "-o", "json").json
    assert [w["target"] for w in plan["faults_opened"]] == ["host:c01/14"]


def _relabelled(nodes: Path, out: Path, accelerator: str, cube: str) -> Path:
    """The exported nodes of one cube as another generation's, under a new block and partition (not the cube id
    the export writes, which names the cube), without tpufleet's labels."""
    doc = yaml.safe_load(nodes.read_text())
    doc["items"] = [n for n in doc["items"] if n["metadata"]["name"].startswith(f"tpu-{cube}-")]
    for n in doc["items"]:
        labels = n["metadata"]["labels"]
        labels["cloud.google.com/gke-tpu-accelerator"] = accelerator
        labels["cloud.google.com/gce-topology-block"] = "block-new"
        labels["cloud.google.com/gke-tpu-partition-4x4x4-id"] = "partition-new"
        for key in [k for k in labels if k.startswith("tpufleet.io/")]:
            del labels[key]
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.slow
def test_nodes_of_another_generation_teach_no_block_or_partition(cli, tmp_path):
    """TPU7x nodes on a v5p fleet were refused, yet their block and partition were learnt as pod0 and its cube."""
    assert cli("init", "--generation", "tpu-v5p").code == 0
    nodes = tmp_path / "nodes.json"
    assert cli("export", "node-labels", "--out", nodes).code == 0
    plan = cli("import", "k8s", _relabelled(nodes, tmp_path / "x.json", "tpu7x", "c00"), "-o", "json").json
    assert plan["pods_named"] == [] and plan["cubes_added"] == [] and plan["has_changes"] is False
    assert len(plan["unplaced"]) == 16 and all("takes tpu7x nodes" in u["reason"] for u in plan["unplaced"])


@pytest.mark.slow
def test_a_reservation_imported_after_the_nodes_keeps_the_cubes_their_partitions_have(cli, tmp_path):
    """A sub-block's name is its nodes' partition id. `import k8s` names partitions in the order of node names,
    `import reservation` in physical order: imported in that order, one cube was named twice."""
    fixture = Path(__file__).parents[1] / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"
    sub_blocks = json.loads(fixture.read_text())
    sub_blocks = sub_blocks if isinstance(sub_blocks, list) else sub_blocks["items"]
    assert cli("init", "--generation", "tpu7x").code == 0
    nodes = tmp_path / "nodes.json"
    assert cli("export", "node-labels", "--out", nodes).code == 0
    doc = yaml.safe_load(nodes.read_text())
    for n in doc["items"]:
        labels = n["metadata"]["labels"]
        cube = int(labels["tpufleet.io/cube"][1:])
        sb = sub_blocks[len(sub_blocks) - 1 - cube]  # the partitions in the reverse of the physical order
        labels["cloud.google.com/gke-tpu-partition-4x4x4-id"] = sb["name"]
        labels["cloud.google.com/gce-topology-block"] = sb["physicalTopology"]["block"]
        for key in [k for k in labels if k.startswith("tpufleet.io/")]:
            del labels[key]
    nodes.write_text(json.dumps(doc))
    assert cli("init", "--generation", "tpu7x", "--force").code == 0
    assert cli("import", "k8s", nodes, "--apply").code == 0
    r = cli("import", "reservation", fixture, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["unplaced"] == []
    by_cube: dict[str, str] = {}
    for row in r.json["sub_blocks_new"]:
        assert row["cube"] not in by_cube, f"{row['cube']} named {by_cube.get(row['cube'])} and {row['sub_block']}"
        by_cube[row["cube"]] = row["sub_block"]
    assert by_cube["c00"] == sub_blocks[-1]["name"] and len(by_cube) == len(sub_blocks)


NODEPOOLS = Path(__file__).parents[1] / "fixtures" / "k8s" / "v4-nodepools.json"


def _moved(tmp_path: Path, count: int | None, to: str = "renamed-pool") -> Path:
    """The node-pool fixture with the first `count` nodes of pool tpu-v4-4x4x8 (None: all) in pool `to`."""
    doc = json.loads(NODEPOOLS.read_text())
    members = [
        n for n in doc["items"] if n["metadata"]["labels"].get("cloud.google.com/gke-nodepool") == "tpu-v4-4x4x8"
    ]
    for node in members[:count]:
        node["metadata"]["labels"]["cloud.google.com/gke-nodepool"] = to
    out = tmp_path / f"pools-{count}.json"
    out.write_text(json.dumps(doc))
    return out


def test_a_renamed_node_pool_replaces_the_old_one(fleet, tmp_path):
    """GKE names a node once: a pool whose every node is listed in another pool is gone. The import planned the
    new pool beside the old one, and its apply was refused (a node in two pools)."""
    assert fleet("import", "k8s", NODEPOOLS, "--apply").code == 0
    renamed = _moved(tmp_path, None)
    plan = fleet("import", "k8s", renamed, "-o", "json").json
    rows = {p["node_pool"]: p["change"] for p in plan["node_pool_slices"]}
    assert rows == {"renamed-pool": "new", "tpu-v4-4x4x8": "removed", "tpu-v4-2x2x1": "unchanged"}
    assert fleet("import", "k8s", renamed, "--apply").code == 0
    assert fleet("import", "k8s", renamed, "--detailed-exitcode").code == 0  # in sync
    held = fleet("status", "-o", "json").json["k8s"]["unplaced_slices"]
    assert sorted(s["node_pool"] for s in held["slices"]) == ["renamed-pool", "tpu-v4-2x2x1"] and held["cubes"] == 3


def test_a_pool_made_again_under_another_name_with_a_node_missing_replaces_the_old_one(fleet, tmp_path):
    """A pool is made and repaired as one unit: one of its nodes listed in another pool means the old pool is gone,
    even when some of its nodes are not listed (being repaired)."""
    assert fleet("import", "k8s", NODEPOOLS, "--apply").code == 0
    doc = json.loads(_moved(tmp_path, None).read_text())
    doc["items"] = doc["items"][:-1]  # a node of the renamed pool missing from the list
    listed = tmp_path / "missing.json"
    listed.write_text(json.dumps(doc))
    plan = fleet("import", "k8s", listed, "-o", "json").json
    rows = {p["node_pool"]: (p["change"], len(p["nodes"])) for p in plan["node_pool_slices"]}
    assert rows["renamed-pool"] == ("new", 31) and rows["tpu-v4-4x4x8"] == ("removed", 32)


def test_node_pools_holding_more_than_their_pod_has_free_are_over_committed(fleet):
    """`status` said "-3 of the 0 free cubes are left to allocate" when the pools held more than the pod had free."""
    for name in "abcdefgh":
        assert fleet("allocate", name, "--shape", "8x8x8").code == 0  # the whole pod
    assert fleet("import", "k8s", NODEPOOLS, "--apply").code == 0  # 3 cubes of pools on it
    k8s = fleet("status", "-o", "json").json["k8s"]
    assert k8s["free_after_unplaced"] == 0 and k8s["over_committed"] == {"pod0": 3}
    assert "over-committed" in fleet("status").out
    assert fleet("release", "a").code == 0
    k8s = fleet("status", "-o", "json").json["k8s"]
    assert k8s["free_after_unplaced"] == 5 and "over_committed" not in k8s


def test_plan_xconnect_detailed_exitcode_counts_a_slice_not_wired_yet_as_a_change(fleet):
    """A sub-cube slice, allocated: its plan adds no cross-connect, and `--detailed-exitcode` said 0 (no changes),
    yet `--apply` commits a serial and marks it connected. A cron that applies on exit 4 left it allocated."""
    assert fleet("allocate", "sc", "--shape", "2x2x2").code == 0
    assert fleet("allocate", "j", "--shape", "2x2x2", "--slices", "2").code == 0
    for name in ("sc", "j"):
        serial = fleet("status", "-o", "json").json["serial"]
        assert fleet("plan-xconnect", name, "--detailed-exitcode").code == 4
        assert fleet("plan-xconnect", name, "--apply", "-o", "json").json["serial"] == serial + 1
        assert fleet("plan-xconnect", name, "--detailed-exitcode").code == 0
    assert {s["state"] for s in fleet("show", "slices", "-o", "json").json} == {"connected"}
