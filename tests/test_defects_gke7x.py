"""Defects an operator of TPU7x superpods and TPU v5p pods on GKE met walking the runbook of "Using it with your
cluster": each test fails without its fix."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

RESERVATION = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


def test_show_inventory_table_says_which_cubes_are_degraded(reserved):
    r = reserved("show", "inventory")
    assert r.code == 0, r.err
    header, *rows = r.out.splitlines()
    assert header.split()[-1] == "degraded"
    by_cube = {line.split()[0]: line for line in rows if line.startswith("c")}
    assert by_cube["c58"].endswith("2 host(s) degraded")
    assert by_cube["c00"].rstrip().endswith("-")


def test_a_degraded_sub_block_without_host_counts_reads_none_nowhere(cli, tmp_path):
    """A DEGRADED sub-block may come without its host counts (they are optional): `import reservation` said
    `None degraded host(s)` of it and `show inventory` `None host(s) degraded`; they say it without counts."""
    sub_blocks = json.loads(RESERVATION.read_text())
    sub_block = "ironwood-superpod-block-0001-sub-0017"
    (item,) = [s for s in sub_blocks if s["name"] == sub_block]
    item["healthInfo"] = {"healthStatus": "DEGRADED"}
    given = tmp_path / "no-counts.json"
    given.write_text(json.dumps(sub_blocks))
    assert cli("init", "--generation", "tpu7x").code == 0
    r = cli("import", "reservation", given, "--apply")
    assert r.code == 0, r.err
    said = [line for line in r.out.splitlines() if line.startswith("  + degraded ")]
    assert said[0] == f"  + degraded c17 ({sub_block})" and said[1].endswith("): 2 degraded host(s)")
    rows = {line.split()[0]: line for line in cli("show", "inventory").out.splitlines() if line.startswith("c")}
    assert rows["c17"].endswith("  sub-block DEGRADED") and rows["c58"].endswith("  2 host(s) degraded")
    assert "None" not in cli("show", "inventory").out


def test_status_table_lists_the_reservations_degraded_sub_blocks(reserved):
    r = reserved("status")
    assert r.code == 0, r.err
    line = next((x for x in r.out.splitlines() if x.startswith("degraded cubes (reservation")), "")
    assert "c17 (1 of 16 hosts degraded)" in line and "c58 (2 of 16 hosts degraded)" in line


def test_explain_of_a_degraded_cube_and_of_a_slice_on_it_says_it_is_degraded(reserved):
    """`status` and `show inventory` listed c58 as degraded (2 of 16 hosts), `explain cube:c58` only "healthy",
    and `explain` of a slice on it had no word of what GKE reports as ACTIVE_DEGRADED."""
    said = "the reservation reports sub-block ironwood-superpod-block-0001-sub-0058 DEGRADED (2 of 16 hosts degraded)"
    r = reserved("explain", "cube:c58", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["state"] == "healthy" and any(w.startswith(said) for w in r.json["why"])
    assert not any("DEGRADED" in w for w in reserved("explain", "cube:c57", "-o", "json").json["why"])
    assert reserved("allocate", "s", "--shape", "4x4x4", "--cubes", "c58").code == 0
    why = reserved("explain", "s", "-o", "json").json["why"]
    assert any(w.startswith(f"cube c58: {said}") for w in why)


def test_clear_fault_of_a_reservation_drain_says_the_next_import_opens_it_again(reserved):
    """The reservation's drain (f1 on c40) was cleared by hand without a word, and the next `import reservation`
    opened it again: `explain` gives the import as its step, never `clear-fault`."""
    r = reserved("clear-fault", "f1")
    assert r.code == 0 and "tpufleet import reservation" in r.err
    again = reserved("import", "reservation", RESERVATION, "-o", "json").json["drains_opened"]
    assert [d["target"] for d in again] == ["cube:c40"]
    assert reserved("inject-fault", "host:c00/1").code == 0
    assert reserved("clear-fault", "host:c00/1").err == ""  # a fault of its own: nothing to add


def _maintenance_announced_on(sub_blocks: list, index: int) -> list:
    """The fixture with a pending maintenance (far ahead) announced on sub-block `index`."""
    announced = copy.deepcopy(sub_blocks)
    upcoming = copy.deepcopy(sub_blocks[40]["reservationSubBlockMaintenance"])
    upcoming["upcomingGroupMaintenance"].update(
        windowStartTime="2099-06-16T09:00:00Z", windowEndTime="2099-06-16T13:00:00Z"
    )
    upcoming["upcomingGroupMaintenance"]["latestWindowStartTime"] = "2099-06-23T09:00:00Z"
    announced[index]["reservationSubBlockMaintenance"] = upcoming
    return announced


def test_maintenance_announced_ahead_keeps_the_slice_running_until_its_window(reserved, tmp_path, monkeypatch):
    """Maintenance announced weeks ahead on a cube of a running slice is kept with its sub-block, not drained: the
    slice runs on, `plan-maintenance` plans its move from the announcement, and the drain opens at the window's
    start (the import then names the slice it stops)."""
    from tpufleet.state import store

    assert reserved("allocate", "train", "--shape", "4x4x8", "--cubes", "c04,c05").code == 0
    assert reserved("plan-xconnect", "train", "--apply").code == 0
    given = json.loads(RESERVATION.read_text())
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(given, 5)))
    plan = reserved("import", "reservation", announced, "-o", "json")
    assert plan.code == 0, plan.err
    assert plan.json["slices_hit"] == [] and plan.json["drains_opened"] == []
    row = plan.json["maintenance_announced"]
    assert [(a["cube"], a["sub_block"], a["window_start"], a["slices"]) for a in row] == [
        ("c05", given[5]["name"], "2099-06-16T09:00:00Z", ["train"])
    ]
    assert "= maintenance announced cube:c05" in reserved("import", "reservation", announced).out
    applied = reserved("import", "reservation", announced, "--apply", "-o", "json")
    assert applied.code == 0 and applied.json["slices_hit"] == []
    assert reserved("show", "slices", "-o", "json").json[0]["state"] == "connected"
    assert "cube:c05" not in {f["target"] for f in reserved("status", "-o", "json").json["faults"]}
    assert reserved("drift", "--reservation", announced).code == 0  # in sync: nothing left to apply
    maint = reserved("plan-maintenance", "-o", "json")
    assert maint.code == 0, maint.err
    notice = next(n for n in maint.json["notices"] if n["target"] == "cube:c05")
    assert notice["sub_block"] == given[5]["name"] and notice["open_drain"] is None
    assert [m["slice"] for w in maint.json["waves"] for m in w["moves"]] == ["train"]
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T09:00:00Z")  # the window starts
    due = reserved("import", "reservation", announced, "--apply", "-o", "json")
    assert [d["target"] for d in due.json["drains_opened"]] == ["cube:c05"]
    assert [h["slice"] for h in due.json["slices_hit"]] == ["train"] and due.json["maintenance_announced"] == []
    assert reserved("show", "slices", "-o", "json").json[0]["state"] == "evicted"


def test_a_drain_whose_maintenance_moves_to_a_later_window_is_cleared_until_then(reserved, tmp_path, monkeypatch):
    """The cube serves until the new window: the import's own drain is cleared, the maintenance listed announced."""
    from tpufleet.state import store

    given = json.loads(RESERVATION.read_text())
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(given, 7)))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")
    opened = reserved("import", "reservation", announced, "--apply", "-o", "json")
    assert [d["target"] for d in opened.json["drains_opened"]] == ["cube:c07"]
    later = _maintenance_announced_on(given, 7)
    later[7]["reservationSubBlockMaintenance"]["upcomingGroupMaintenance"].update(
        windowStartTime="2099-06-20T09:00:00Z", windowEndTime="2099-06-20T13:00:00Z"
    )
    announced.write_text(json.dumps(later))
    moved = reserved("import", "reservation", announced, "--apply", "-o", "json")
    assert [d["target"] for d in moved.json["drains_cleared"]] == ["cube:c07"]
    assert [a["window_start"] for a in moved.json["maintenance_announced"]] == ["2099-06-20T09:00:00Z"]
    assert "cube:c07" not in {f["target"] for f in reserved("status", "-o", "json").json["faults"]}
    drained = reserved("inject-fault", "cube:c07", "--planned", "-o", "json").json["fault_id"]  # as a wave does
    ahead = reserved("import", "reservation", announced, "-o", "json").json
    assert ahead["drains_cleared"] == []  # not the import's to clear
    [row] = ahead["maintenance_announced"]
    assert (row["cube"], row["out_of_pool"], row["drained_by"]) == ("c07", True, drained)  # not serving
    line = next(x for x in reserved("import", "reservation", announced).out.splitlines() if "c07" in x)
    assert f"drained already ({drained}; `tpufleet clear-fault {drained}` serves it until then)" in line


def test_import_k8s_says_which_slice_a_not_ready_node_stops(reserved, tmp_path):
    assert reserved("allocate", "train", "--shape", "4x4x8", "--cubes", "c04,c05").code == 0
    labels = reserved("export", "node-labels", "-o", "json").json
    node = next(n for n in labels["items"] if n["metadata"]["labels"]["tpufleet.io/cube"] == "c05")
    node["status"]["conditions"][0]["status"] = "False"
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(labels))
    plan = reserved("import", "k8s", nodes, "-o", "json")
    assert plan.code == 0, plan.err
    assert [(h["slice"], h["action"]) for h in plan.json["slices_hit"]] == [("train", "reschedule")]
    assert f"! {plan.json['faults_opened'][0]['target']} stops slice train" in reserved("import", "k8s", nodes).out


def test_clear_fault_of_a_fault_import_k8s_opened_says_the_next_import_opens_it_again(reserved, tmp_path):
    """A NotReady node's fault, cleared by hand while the node list still reports it, came back with the next
    `import k8s` without a word from `clear-fault`."""
    labels = reserved("export", "node-labels", "-o", "json").json
    node = next(n for n in labels["items"] if n["metadata"]["labels"]["tpufleet.io/cube"] == "c05")
    node["status"]["conditions"][0]["status"] = "False"
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(labels))
    opened = reserved("import", "k8s", nodes, "--apply", "-o", "json").json["faults_opened"]
    r = reserved("clear-fault", opened[0]["id"])
    assert r.code == 0 and "tpufleet import k8s" in r.err
    again = reserved("import", "k8s", nodes, "-o", "json").json["faults_opened"]
    assert [f["target"] for f in again] == [opened[0]["target"]]


@pytest.mark.parametrize("file_format", ["conf", "yaml"])
def test_slurm_topology_of_a_cluster_of_node_pools_is_refused_not_written_empty(cli, tmp_path, file_format):
    """A TPU v5p cluster of ordinary node pools places no node on a machine: the runbook's `export slurm-topology
    --out /etc/slurm/topology.yaml && scontrol reconfigure` wrote a topology without a node over the one in use
    (exit 0); it is refused, the file left as it was."""
    nodes = Path(__file__).parent.parent / "fixtures" / "k8s" / "v5p-cluster-nodes.json"
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("import", "k8s", nodes, "--apply").code == 0
    out = tmp_path / "topology"
    out.write_text("in use\n")
    r = cli("export", "slurm-topology", "--format", file_format, "--out", out)
    assert r.code == 1 and "no machine of the fleet is a node" in r.err
    assert out.read_text() == "in use\n"


def test_importing_the_export_of_a_never_imported_fleet_learns_no_made_up_block_or_partition(cli, tmp_path):
    """`export node-labels` of a fleet no import named writes each pod's name as its block and each cube's id as
    its partition. Imported back (the README: it changes nothing), those stand-ins were learnt as names, every pod
    then holding a block: the cluster's real node list afterwards placed none of its nodes ("no pod left for
    block ...")."""
    assert cli("init", "--generation", "tpu7x", "--pods", "2", "--cubes-per-pod", "2").code == 0
    exported = cli("export", "node-labels", "-o", "json").json
    (tmp_path / "exported.json").write_text(json.dumps(exported))
    first = cli("import", "k8s", tmp_path / "exported.json", "--apply", "-o", "json")
    assert first.code == 0, first.err
    assert first.json["pods_named"] == [] and first.json["cubes_added"] == []
    assert cli("export", "node-labels", "-o", "json").json == exported
    real = copy.deepcopy(exported)
    real["items"] = [n for n in real["items"] if n["metadata"]["labels"]["tpufleet.io/cube"] == "c00"]
    for i, node in enumerate(real["items"]):
        labels = node["metadata"]["labels"]
        for key in [k for k in labels if k.startswith("tpufleet.io/")]:
            del labels[key]
        node["metadata"]["name"] = labels["kubernetes.io/hostname"] = f"gke-tpu7x-np-{i:02d}"
        labels["cloud.google.com/gce-topology-block"] = "block-5d21e0b4"
        labels["cloud.google.com/gke-tpu-partition-4x4x4-id"] = "sub-0000"
    (tmp_path / "real.json").write_text(json.dumps(real))
    r = cli("import", "k8s", tmp_path / "real.json", "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["placed"], r.json["unplaced"]) == (16, [])
    assert r.json["pods_named"] == [{"block": "block-5d21e0b4", "pod": "pod0"}]


def test_status_of_a_fleet_of_tpu7x_and_v5p_pods_names_no_built_in_tpu_v4(cli):
    """Every pod of generation tpu7x or tpu-v5p: `status` said `pod0 tpu7x, pod1 tpu-v5p (others: built-in
    tpu-v4)`, a TPU v4 pod the fleet does not have."""
    assert cli("init", "--generation", "tpu7x", "--pods", "2", "--cubes-per-pod", "4").code == 0
    path = cli.state / "state.json"
    doc = json.loads(path.read_text())
    doc["fleet"]["pods"][1]["generation"] = "tpu-v5p"
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))
    first = cli("status").out.splitlines()[0]
    assert first.endswith("pod0 tpu7x, pod1 tpu-v5p") and "tpu-v4" not in first


def test_import_reservation_detailed_exitcode_agrees_with_drift_on_sub_blocks_it_cannot_place(cli):
    """Two pods and no --pod: no sub-block can be placed. The import's plan used to say in sync (exit 0) while
    `drift --reservation` counted the same sub-blocks as drift (exit 4)."""
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    plan = cli("import", "reservation", RESERVATION, "--detailed-exitcode", "-o", "json")
    assert len(plan.json["unplaced"]) == 144 and not plan.json["has_changes"]
    drift = cli("drift", "--reservation", RESERVATION, "-o", "json")
    assert drift.code == 4 and drift.json["sources"]["reservation"]["kinds"]["unplaced"] == 144
    assert plan.code == drift.code


def _notice(target: str) -> dict:
    return {"target": target, "window_start": "2099-07-01T09:00:00Z", "window_end": "2099-07-01T13:00:00Z"}


def test_plan_maintenance_takes_a_notice_naming_a_mapped_reservation_sub_block(reserved, tmp_path):
    """Compute Engine names a maintenance by its sub-block: the reservation maps sub-0017 to c17."""
    notices = tmp_path / "notices.json"
    notices.write_text(json.dumps([_notice("ironwood-superpod-block-0001-sub-0017")]))
    r = reserved("plan-maintenance", "--notices", notices, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["notices"][0]["target"] == "cube:c17"
    assert r.json["notices"][0]["sub_block"] == "ironwood-superpod-block-0001-sub-0017"
    assert r.json["waves"][0]["cubes"] == ["c17"]
    table = reserved("plan-maintenance", "--notices", notices)
    assert "sub-block ironwood-superpod-block-0001-sub-0017 is cube c17" in table.out


def test_plan_maintenance_refuses_a_sub_block_the_reservation_does_not_map_naming_it(reserved, tmp_path):
    notices = tmp_path / "notices.json"
    notices.write_text(json.dumps([_notice("ironwood-superpod-block-0009-sub-0017")]))
    r = reserved("plan-maintenance", "--notices", notices)
    assert r.code == 2
    assert "notice 1: field target: 'ironwood-superpod-block-0009-sub-0017'" in r.err


def test_apply_maintenance_steps_account_for_the_cross_connects_the_move_made(cli, tmp_path):
    """A slice allocated but not wired, evicted by a wave's drain: `reschedule` wires it where it lands, and the
    wire step after it found nothing to do (`+0 -0 =N`), so the cross-connects added were in no step."""
    assert cli("init", "--generation", "tpu7x").code == 0
    assert cli("allocate", "train", "--shape", "4x4x8").code == 0
    cube = next(s for s in cli("show", "slices", "-o", "json").json if s["name"] == "train")["cubes"][0]
    notices = tmp_path / "notices.json"
    notices.write_text(json.dumps([_notice(f"cube:{cube}")]))
    plan = tmp_path / "plan.json"
    assert cli("plan-maintenance", "--notices", notices, "--out", plan).code == 0
    dry = cli("apply-maintenance", plan, "--wave", "1", "--dry-run")
    r = cli("apply-maintenance", plan, "--wave", "1", "-o", "json")
    assert r.code == 0, r.err
    wired = [s for s in r.json["steps"] if s["step"] in ("reschedule", "plan-xconnect")]
    added = sum(s.get("add", 0) for s in wired)
    assert added > 0 and added == sum(s["add"] for s in wired if s["step"] == "reschedule"), wired
    assert next(s for s in cli("show", "slices", "-o", "json").json if s["name"] == "train")["state"] == "connected"
    text = [line for line in dry.out.splitlines() if line.startswith("  move train:")]
    assert len(text) == 1 and text[0].endswith(f"wired +{added} -0 =0"), dry.out
    # the wire step after the move has nothing left to do, and says so rather than `+0 -0 =N`
    assert f"  wire train: all {added} in place already" in dry.out.splitlines(), dry.out


@pytest.mark.parametrize(
    ("document", "found"),
    [("[]", "not an empty JSON array"), ("null", "not null"), ('"List"', "not the string 'List'")],
)
def test_import_k8s_of_a_document_not_a_list_object_says_what_it_found(cli, tmp_path, document, found):
    """`[]` or `null` as the whole file: the message showed a type name as if it were the value
    (`(value 'list')`, `(value 'NoneType')`)."""
    assert cli("init", "--generation", "tpu7x").code == 0
    path = tmp_path / "n.json"
    path.write_text(document)
    for kind in ("k8s", "slices"):
        r = cli("import", kind, path)
        assert r.code == 2
        assert r.err.rstrip().endswith(found) and "(value " not in r.err, r.err


def test_import_k8s_of_a_huge_item_that_is_not_a_node_says_its_kind_not_its_value(cli, tmp_path):
    assert cli("init", "--generation", "tpu7x").code == 0
    path = tmp_path / "n.json"
    path.write_text(json.dumps({"kind": "List", "items": [list(range(10_000))]}))
    r = cli("import", "k8s", path)
    assert r.code == 2 and "field items.0: must be a Node object, not a JSON array of 10000 items" in r.err, r.err


def test_init_help_gives_each_generations_cube_limit(cli):
    """`--cubes-per-pod` said "at most its OCS ports per side, 68" whatever --generation: tpu7x allows 144."""
    from tpufleet.state import generations

    r = cli("init", "--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    limits = text[text.index("--cubes-per-pod") :].split("at most its OCS ports per side:")[1].split(")")[0]
    for name in generations.names():
        gen = generations.shipped(name)
        assert f"{name} {gen.ports_per_side}" in limits, (name, limits)
        assert f"{name} {gen.pod_cubes}" in text, name
        over = cli("init", "--generation", name, "--cubes-per-pod", str(gen.ports_per_side + 1))
        assert over.code == 2 and f"1-{gen.ports_per_side}" in over.err, over.err


def test_an_empty_reservation_list_against_a_mapped_reservation_warns_keeping_exit_codes(reserved, tmp_path):
    """`[]` is what gcloud prints for a mistyped block name: it used to pass for a clean "no changes"."""
    empty = tmp_path / "sb.json"
    empty.write_text("[]")
    r = reserved("import", "reservation", empty, "--detailed-exitcode", "-o", "json")
    assert r.code == 0 and not r.json["has_changes"]
    assert "state maps 144 sub-block(s) of block(s) block-5d21e0b4" in r.json["warning"]
    assert "tpufleet: warning: " in r.err and "144 sub-block(s)" in r.err
    drift = reserved("drift", "--reservation", empty)
    assert drift.code == 0 and "tpufleet: warning: " in drift.err
    again = reserved("import", "reservation", RESERVATION, "-o", "json")
    assert again.code == 0 and again.json["warning"] is None and "warning" not in again.err


def test_an_empty_reservation_list_on_a_fleet_without_one_does_not_warn(cli, tmp_path):
    assert cli("init", "--generation", "tpu7x").code == 0
    empty = tmp_path / "sb.json"
    empty.write_text("[]")
    r = cli("import", "reservation", empty, "-o", "json")
    assert r.code == 0 and r.json["warning"] is None and "warning" not in r.err


def test_status_lists_maintenance_announced_and_the_slices_on_it(reserved, tmp_path):
    assert reserved("allocate", "train", "--shape", "4x4x8", "--cubes", "c04,c05").code == 0
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(json.loads(RESERVATION.read_text()), 5)))
    assert reserved("import", "reservation", announced, "--apply").code == 0
    rows = reserved("status", "-o", "json").json["reservation"]["maintenance"]
    ahead = [(m["cube"], m["window_start"], m["slices"]) for m in rows if not m["drained"]]
    assert ahead == [("c05", "2099-06-16T09:00:00Z", ["train"])]
    assert len([m for m in rows if m["drained"]]) == 2  # the fixture's own maintenance, its windows past: drained
    line = next(x for x in reserved("status").out.splitlines() if x.startswith("maintenance announced"))
    assert "c05 from 2099-06-16T09:00:00Z (train on it)" in line


def test_serve_exposes_announced_maintenance_and_the_slices_its_drain_would_stop(reserved, tmp_path):
    from datetime import UTC, datetime

    from tpufleet.integrations.alertmetrics import alert_families
    from tpufleet.state import Store

    assert reserved("allocate", "train", "--shape", "4x4x8", "--cubes", "c04,c05").code == 0
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(json.loads(RESERVATION.read_text()), 5)))
    assert reserved("import", "reservation", announced, "--apply").code == 0
    families = {f.name: f for f in alert_families(Store(reserved.state).load(), [], {})}
    [start] = families["tpufleet_maintenance_window_start_timestamp_seconds"].samples
    [slices] = families["tpufleet_maintenance_slices"].samples
    assert start.labels["cube"] == slices.labels["cube"] == "c05"  # the fixture's own two are drained: not here
    assert start.value == datetime(2099, 6, 16, 9, tzinfo=UTC).timestamp() and slices.value == 1


def test_spares_and_capacity_count_a_cube_lost_when_its_announced_maintenance_falls_in_the_horizon(
    reserved, tmp_path, monkeypatch
):
    """Announced maintenance drains its cube at the window: within the horizon the cube is no spare and counts as a
    failure; beyond the horizon it is an ordinary cube."""
    from tpufleet.state import store

    assert reserved("allocate", "train", "--shape", "4x4x8", "--cubes", "c04,c05").code == 0
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(json.loads(RESERVATION.read_text()), 6)))
    assert reserved("import", "reservation", announced, "--apply").code == 0

    def spares_and_failures(now: str) -> tuple[list[str], int, int]:
        monkeypatch.setattr(store, "utc_now", lambda: now)
        [pod] = reserved("plan-spares", "-o", "json").json["pods"]
        [cap] = reserved("capacity", "--confidence", "0.95", "-o", "json").json["pods"]
        return pod["cubes_maintenance_in_horizon"], pod["free_healthy_cubes"], cap["expected_failures"]["failures"]

    far, free_far, failures_far = spares_and_failures("2099-01-01T00:00:00Z")  # window 5 months on
    near, free_near, failures_near = spares_and_failures("2099-06-12T00:00:00Z")  # within the 7-day horizon
    assert (far, near) == ([], ["c06"])
    assert free_near == free_far - 1 and failures_near == failures_far + 1


def test_allocation_takes_a_cube_under_announced_maintenance_last(reserved, tmp_path):
    given = json.loads(RESERVATION.read_text())
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(given, 0)))
    plan = reserved("import", "reservation", announced, "--apply", "-o", "json")
    [row] = plan.json["maintenance_announced"]
    whole = reserved("allocate", "a", "--shape", "4x4x8", "-o", "json")
    sub = reserved("allocate", "b", "--shape", "2x2x1", "-o", "json")
    assert whole.code == sub.code == 0
    assert row["cube"] not in whole.json["cubes"] and row["cube"] not in sub.json["cubes"]


def test_a_cube_under_announced_maintenance_is_still_taken_when_no_other_fits():
    from tpufleet.allocation import allocate
    from tpufleet.health import Health
    from tpufleet.model import default_fleet
    from tpufleet.shapes import parse_shape

    fleet = default_fleet()
    pod = fleet.pods[0]
    health = Health(maintenance=frozenset({pod.cubes[0]}))
    assert allocate(parse_shape("4x4x4"), fleet, {}, health, pod.name).cubes == (pod.cubes[1],)
    others = {c: set(range(16)) for c in pod.cubes[1:]}
    assert allocate(parse_shape("4x4x4"), fleet, others, health, pod.name).cubes == (pod.cubes[0],)


def test_explain_says_a_slice_on_a_cube_under_announced_maintenance_must_move_first(reserved, tmp_path):
    assert reserved("allocate", "train", "--shape", "4x4x8", "--cubes", "c04,c05").code == 0
    assert reserved("plan-xconnect", "train", "--apply").code == 0
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(json.loads(RESERVATION.read_text()), 5)))
    assert reserved("import", "reservation", announced, "--apply").code == 0
    sl = reserved("explain", "train", "-o", "json").json
    assert any(w.startswith("cube c05 goes into maintenance at 2099-06-16T09:00:00Z") for w in sl["why"])
    assert sl["next"][0].startswith("tpufleet plan-maintenance")
    cube = reserved("explain", "cube:c05", "-o", "json").json
    assert cube["state"] == "healthy" and cube["slices"] == ["train"]
    assert any(w.startswith("maintenance announced from 2099-06-16T09:00:00Z") for w in cube["why"])


def test_explain_job_says_which_slice_sits_on_a_cube_under_announced_maintenance(reserved, tmp_path):
    assert reserved("allocate", "llm", "--shape", "4x4x8", "--slices", "2").code == 0
    assert reserved("plan-xconnect", "llm", "--apply").code == 0
    held = {s["name"]: s["cubes"] for s in reserved("show", "slices", "-o", "json").json}
    index = int(held["llm-1"][0][1:])  # the fixture's sub-block N is cube cNN
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(json.loads(RESERVATION.read_text()), index)))
    assert reserved("import", "reservation", announced, "--apply").code == 0
    job = reserved("explain", "llm", "-o", "json").json
    assert any(step.startswith("tpufleet plan-maintenance") for step in job["next"]), job["next"]
    why = job["why"]
    cube = held["llm-1"][0]
    said = [w for w in why if f"cube {cube} goes into maintenance" in w]
    assert len(said) == 1 and said[0].startswith("slice llm-1: "), why
    assert why.index(said[0]) > why.index(next(w for w in why if w.startswith("slice llm-1: 4x4x8")))


def test_an_imported_drain_on_a_jobs_slice_says_the_whole_job_stops(reserved, tmp_path, monkeypatch):
    from tpufleet.state import store

    assert reserved("allocate", "llm", "--shape", "4x4x8", "--slices", "2").code == 0
    assert reserved("plan-xconnect", "llm", "--apply").code == 0
    cube = {s["name"]: s["cubes"] for s in reserved("show", "slices", "-o", "json").json}["llm-1"][0]
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(json.loads(RESERVATION.read_text()), int(cube[1:]))))
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")  # inside the window: the drain opens
    plan = reserved("import", "reservation", announced, "-o", "json")
    [hit] = plan.json["slices_hit"]
    assert (hit["slice"], hit["job"], hit["job_state"]) == ("llm-1", "llm", "stopped")
    assert (hit["job_active_slices"], hit["job_total_slices"]) == (1, 2)
    text = reserved("import", "reservation", announced, "--apply").out
    assert f"! cube:{cube} stops slice llm-1" in text and "; job llm stopped (1 of 2 slices active)" in text, text
    assert [j["state"] for j in reserved("show", "jobs", "-o", "json").json] == ["stopped"]


def test_status_says_a_started_window_waits_for_the_import_and_a_failed_cube_is_not_serving(
    reserved, tmp_path, monkeypatch
):
    from tpufleet.state import store

    announced = tmp_path / "sb.json"
    doc = _maintenance_announced_on(json.loads(RESERVATION.read_text()), 5)
    doc[6]["reservationSubBlockMaintenance"] = copy.deepcopy(doc[5]["reservationSubBlockMaintenance"])
    announced.write_text(json.dumps(doc))
    assert reserved("import", "reservation", announced, "--apply").code == 0
    assert reserved("inject-fault", "cube:c06").code == 0  # a failure: c06 serves nothing now
    plan = reserved("import", "reservation", announced, "-o", "json").json
    assert {a["cube"]: a["out_of_pool"] for a in plan["maintenance_announced"]} == {"c05": False, "c06": True}
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-16T10:00:00Z")
    line = next(x for x in reserved("status").out.splitlines() if x.startswith("maintenance announced"))
    assert (
        "c05 from 2099-06-16T09:00:00Z (started: `tpufleet import reservation SUB-BLOCKS.json --apply` opens its drain)"
        in line
    )
    assert "c06" not in line
    why = reserved("explain", "cube:c06", "-o", "json").json["why"]
    assert any("a fault holds the cube out of the pool now" in w for w in why)


def test_announced_maintenance_on_a_jobs_slice_names_the_job(reserved, tmp_path):
    assert reserved("allocate", "llm", "--shape", "4x4x8", "--slices", "2").code == 0
    cube = reserved("show", "slices", "-o", "json").json[0]["cubes"][0]
    index = next(
        i for i, sb in enumerate(json.loads(RESERVATION.read_text())) if sb["name"].endswith(cube[1:].zfill(4))
    )
    announced = tmp_path / "sb.json"
    announced.write_text(json.dumps(_maintenance_announced_on(json.loads(RESERVATION.read_text()), index)))
    plan = reserved("import", "reservation", announced, "-o", "json").json
    assert [(a["cube"], a["jobs"]) for a in plan["maintenance_announced"]] == [(cube, ["llm"])]
    assert "of job(s) llm" in reserved("import", "reservation", announced).out
