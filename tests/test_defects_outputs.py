"""Defects a review of faults, routing and cross-connect plans found, each pinned by the outcome it must have."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import snapshot


@pytest.fixture
def routed(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/0").code == 0
    assert fleet("routes", "a").code == 0
    return fleet


@pytest.mark.parametrize(
    "args",
    [
        ("routes", "a", "--algorithm", "dor", "--out", "{state}/routes/a.npz"),
        ("routes", "a", "--table-capacity", "3", "--out", "{state}/routes/a.npz"),
        ("plan-xconnect", "a", "--out", "{state}/journal.jsonl"),
        ("report", "--out", "{state}/state.json"),
        ("report", "--out", "{state}/new-file.html"),
        ("simulate-fleet", "--days", "1", "--out", "{state}/events.jsonl"),
    ],
    ids=["dor-over-tables", "sparse-over-tables", "plan-over-journal", "report-over-state", "new-file", "simulate"],
)
def test_no_output_file_lands_in_the_state_directory(routed, args):
    """`--out` replaced the state's own files: tables it called "not stored", the journal, state.json itself."""
    before = snapshot(routed.state)
    r = routed(*(a.format(state=routed.state) for a in args))
    assert r.code == 2 and "inside the state directory" in r.err
    assert snapshot(routed.state) == before
    assert routed("status").code == 0 and routed("collective", "a", "--op", "all-to-all", "--bytes", "1MiB").code == 0


def _a2a(fleet) -> float:
    r = fleet("routes", "a", "-o", "json")
    assert r.code == 0, r.err
    return float(r.json["max_link_load"]["all-to-all"])


@pytest.mark.usefixtures("canonical_form_only")  # z/0 alone heavier than with x/0, as above 256 chips
@pytest.mark.parametrize("how", ["plan-xconnect", "apply-xconnect", "job"])
def test_a_wiring_that_changes_nothing_is_no_rewire(fleet, tmp_path, how):
    """`plan-xconnect --apply` with every cross-connect in place committed a serial and marked the slice wired
    anew, so `routes` took its lighter stored tables (137) for another wiring's and stored 139; a degraded slice
    became plainly connected."""
    if how == "job":
        assert fleet("allocate", "a", "--shape", "4x4x8", "--slices", "1").code == 0
        name, member = "a", "a-0"
    else:
        assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
        name, member = "a", "a"
    assert fleet("plan-xconnect", name, "--apply").code == 0
    for ocs in ("z/0", "x/0"):
        assert fleet("inject-fault", f"ocs:pod0/{ocs}").code == 0
    assert fleet("routes", name).code == 0
    assert fleet("clear-fault", "f2").code == 0
    before = snapshot(fleet.state)
    if how == "apply-xconnect":
        plan = tmp_path / "a.plan"
        assert fleet("plan-xconnect", name, "--out", plan).code == 0
        r = fleet("apply-xconnect", plan, "-o", "json")
    else:
        r = fleet("plan-xconnect", name, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["serial"] == fleet("status", "-o", "json").json["serial"]
    assert snapshot(fleet.state) == before  # nothing committed
    (row,) = [s for s in fleet("show", "slices", "-o", "json").json if s["name"] == member]
    assert row["state"] == "degraded"
    out = fleet("routes", member, "-o", "json").json
    assert out["kept_stored_tables"] is True and out["max_link_load"]["all-to-all"] == 137.0


def test_a_fault_whose_slice_cannot_move_to_a_pod_of_another_generation_is_recorded(cli):
    """In a fleet of a TPU7x pod and a TPU v4 pod, the replacement search asked the v4 pod for a 68-cube slice, its
    generation refused the shape as bad input, and the whole `inject-fault` was refused: the fault went unrecorded."""
    import json

    assert cli("init", "--generation", "tpu7x", "--pods", "2", "--cubes-per-pod", "68").code == 0
    path = cli.state / "state.json"
    doc = json.loads(path.read_text())
    doc["fleet"]["pods"][1]["generation"] = "tpu-v4"
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))
    assert cli("allocate", "big", "--shape", "8x8x68", "--pod", "pod0", "--no-fault-tolerant-routing").code == 0
    assert cli("plan-xconnect", "big", "--apply").code == 0
    r = cli("inject-fault", "ocs:pod0/x/3", "-o", "json")
    assert r.code == 0, r.err
    (impact,) = r.json["slices"]
    assert impact["action"] == "reschedule" and impact["replacement"]["status"] == "pending"
    assert "no other tpu7x pod than pod0" in impact["replacement"]["why"]  # never the v4 pod
    assert [f["target"] for f in cli("faults", "-o", "json").json] == ["ocs:pod0/x/3"]


def _flip_port_bytes(path) -> None:
    data = bytearray(path.read_bytes())
    for k in range(20):
        data[300 + k] ^= 0x5A  # inside the deflated `port` member: a damaged stream, not a damaged directory
    path.write_bytes(bytes(data))


def _meta_a_list(path) -> None:
    import numpy as np

    members = dict(np.load(path))
    members["meta"] = np.array("[1, 2]")
    np.savez_compressed(path.with_suffix(""), **members)


def _meta_nested_deep(path) -> None:
    import numpy as np

    members = dict(np.load(path))
    members["meta"] = np.array("[" * 200_000 + "]" * 200_000)  # past the standard decoder's recursion limit
    np.savez_compressed(path.with_suffix(""), **members)


def _port_claims_4_tib(path) -> None:
    """The `port` member's .npy header says 2**21 x 2**21 int8 entries over the few bytes it holds."""
    import io
    import zipfile

    import numpy as np

    members = dict(np.load(path))
    header = np.lib.format.header_data_from_array_1_0(members["port"])
    header["shape"] = (2**21, 2**21)
    forged = io.BytesIO()
    np.lib.format.write_array_header_1_0(forged, header)
    forged.write(members.pop("port").tobytes())
    np.savez_compressed(path.with_suffix(""), **members)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("port.npy", forged.getvalue())


@pytest.mark.parametrize(
    "damage",
    [_flip_port_bytes, _meta_a_list, _meta_nested_deep, _port_claims_4_tib],
    ids=["deflate-stream", "meta-not-an-object", "meta-nested-deep", "port-claims-4-TiB"],
)
def test_damaged_stored_tables_are_named_and_routes_replaces_them(routed, damage):
    """A damaged deflate stream, a `meta` that is no JSON object or is nested past the decoder's recursion limit,
    and a member whose header claims terabytes were exit 70 in `collective` and in `routes`, the command that
    replaces them."""
    damage(routed.state / "routes" / "a.npz")
    r = routed("collective", "a", "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 2 and "a.npz" in r.err
    assert routed("routes", "a").code == 0
    assert routed("collective", "a", "--op", "all-reduce", "--bytes", "1MiB").code == 0


def test_a_plan_whose_made_is_not_a_time_is_bad_input(fleet, tmp_path):
    """`made` had no schema: a number there made `apply-xconnect` compare it with a time and exit 70."""
    import json

    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("inject-fault", "host:c10/1").code == 0 and fleet("clear-fault", "f1").code == 0
    plan = tmp_path / "a.plan"
    assert fleet("plan-xconnect", "a", "--out", plan).code == 0
    doc = json.loads(plan.read_text())
    doc["made"] = 12345
    doc["ocs"][0]["add"][0][1] = 63
    plan.write_text(json.dumps(doc))
    r = fleet("apply-xconnect", plan)
    assert r.code == 2 and "made" in r.err and "12345" in r.err


def test_a_job_plan_is_checked_as_a_slice_plan_is(fleet, tmp_path):
    """A job plan with its cubes' places swapped and its summary edited was applied (exit 0); a slice's is refused."""
    import json

    assert fleet("allocate", "j", "--shape", "4x4x8", "--slices", "2").code == 0
    plan = tmp_path / "j.plan"
    assert fleet("plan-xconnect", "j", "--out", plan).code == 0
    before = snapshot(fleet.state)
    doc = json.loads(plan.read_text())
    part = doc["plans"][0]
    first, second = list(part["cubes"])
    part["cubes"][first], part["cubes"][second] = part["cubes"][second], part["cubes"][first]
    plan.write_text(json.dumps(doc))
    r = fleet("apply-xconnect", plan)
    assert r.code == 1 and "does not say what the plan for slice 'j-0' does" in r.err
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("key", ["f²", "f003", "f٣"])
def test_a_fault_id_not_written_as_the_tool_writes_it_is_bad_input(fleet, key):
    """`f²` was exit 70; `f003` and `f٣` said fault f3, which is open, was cleared earlier."""
    for host in ("host:c01/1", "host:c02/1", "host:c03/1"):
        assert fleet("inject-fault", host).code == 0
    r = fleet("clear-fault", key)
    assert r.code == 2 and "bad fault id" in r.err
    assert len(fleet("faults", "-o", "json").json) == 3


def test_a_journal_line_with_a_damaged_moved_fault_is_a_damaged_line_not_a_crash(fleet):
    import json

    assert fleet("inject-fault", "host:c01/1").code == 0
    journal = fleet.state / "journal.jsonl"
    lines = journal.read_text().splitlines()
    entry = json.loads(lines[1])
    entry["moved_faults"] = [{"id": "zz"}]
    lines[1] = json.dumps(entry)
    journal.write_text("\n".join(lines) + "\n")
    r = fleet("faults", "--all", "-o", "json")
    assert r.code == 0, r.err
    assert [f["id"] for f in r.json] == ["f1"] and "damaged line(s) 2 skipped" in r.err  # as every reader does


def test_an_ocs_back_from_repair_joins_no_two_slices(fleet):
    """While z/2 was down, B and C were wired around it and the pairs a released slice left there on their ports
    stayed; once repaired, they joined B's cube to C's. The repair now drops them, and `explain` says to re-wire
    before routing (its `routes` first was refused as miswired)."""
    assert fleet("allocate", "old", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "old", "--apply").code == 0 and fleet("release", "old").code == 0
    assert fleet("inject-fault", "ocs:pod0/z/2").code == 0
    for name, cube in (("B", "c01"), ("C", "c00")):
        assert fleet("allocate", name, "--shape", "4x4x4", "--cubes", cube).code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0 and fleet("routes", name).code == 0
    r = fleet("clear-fault", "f1", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["xconnects_dropped"] and r.json["rewire"] == ["B", "C"]
    (z2,) = [o for o in fleet("show", "ocs", "-o", "json").json if o["id"] == "ocs:pod0/z/2"]
    assert z2["xconnects"] == []
    explained = fleet("explain", "B", "-o", "json").json
    assert "wired and healthy" not in explained["why"]
    assert explained["next"] == ["tpufleet plan-xconnect B --apply", "tpufleet routes B"]
    for step in explained["next"]:
        assert fleet(*step.split()[1:]).code == 0, step
    assert fleet("explain", "B", "-o", "json").json["why"] == ["wired and healthy"]


def test_a_jobs_next_steps_are_commands_in_order(fleet):
    assert fleet("allocate", "j", "--shape", "4x4x8", "--slices", "2", "--no-fault-tolerant-routing").code == 0
    assert fleet("plan-xconnect", "j", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    explained = fleet("explain", "j", "-o", "json").json
    assert explained["next"] == [
        "tpufleet clear-fault f1",
        "tpufleet reschedule j-0",
        "tpufleet routes j-0",
        "tpufleet reschedule j-1",
        "tpufleet routes j-1",
    ]
    assert any("waits for f1's repair" in line for line in explained["why"])


def test_the_throughput_floor_is_judged_on_the_exact_share(fleet):
    """The share kept is judged exactly, not as shown: 512/553 = 0.925859 was judged as 0.9259, so a floor of
    0.92586 kept the slice rerouted. Now 512/552 = 0.927536 (shown 0.9275): a floor just above the exact share
    moves the slice, one between the shown and the exact share keeps it."""
    assert fleet("allocate", "p", "--shape", "8x8x8", "--min-throughput", "0.92754").code == 0
    assert fleet("plan-xconnect", "p", "--apply").code == 0
    (impact,) = fleet("inject-fault", "ocs:pod0/x/5", "--dry-run", "-o", "json").json["slices"]
    assert impact["action"] == "reschedule" and "0.927536" in impact["reason"]
    assert fleet("policy", "p", "--min-throughput", "0.92752").code == 0
    (impact,) = fleet("inject-fault", "ocs:pod0/x/5", "--dry-run", "-o", "json").json["slices"]
    assert impact["action"] == "reroute" and impact["reroute"]["all_to_all_retained"] == 0.9275


def test_an_electrical_link_is_one_fault_whichever_end_names_it(fleet):
    """`ici:c05/0,0,0/+z` and `ici:c05/0,0,1/-z` are one cable: they opened two faults, and clearing one name left
    the cube out of the pool."""
    first = fleet("inject-fault", "ici:c05/0,0,1/-z", "-o", "json").json
    assert first["target"] == "ici:c05/0,0,0/+z"
    again = fleet("inject-fault", "ici:c05/0,0,0/+z", "-o", "json").json
    assert again["duplicate_of"] == first["fault_id"]
    assert fleet("clear-fault", "ici:c05/0,0,1/-z").code == 0
    assert fleet("faults", "-o", "json").json == []
    assert fleet("status", "-o", "json").json["cubes"]["out"] == 0  # the cube is back in the pool


def test_a_slice_routed_around_missing_cross_connects_says_so(fleet):
    """Wired while z/2 was down and routed after its repair, before it was wired again: "degraded around " (no
    fault), and "it returns to healthy tables when  are repaired"."""
    assert fleet("inject-fault", "ocs:pod0/z/2").code == 0
    assert fleet("allocate", "B", "--shape", "4x4x8").code == 0 and fleet("plan-xconnect", "B", "--apply").code == 0
    assert fleet("clear-fault", "f1").code == 0 and fleet("routes", "B").code == 0
    why = fleet("explain", "B", "-o", "json").json["why"]
    assert "around missing cross-connects" in why[0] and "wired again" in why[1]
    assert "around missing cross-connects" in fleet("status").out


@pytest.mark.parametrize(
    "args",
    [
        ("metrics",),
        ("export", "slurm-topology"),
        ("export", "slurm-topology", "--format", "yaml"),
        ("export", "kueue-topology"),
        ("export", "slices"),
        ("export", "node-labels"),
    ],
)
def test_yaml_output_is_the_json_data(fleet, args):
    """`metrics -o yaml` printed the exposition text (no YAML at all), `export slurm-topology -o yaml` the conf
    file, `export kueue-topology|slices -o yaml` a stream of documents where JSON has a List."""
    import json

    import yaml

    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    as_json, as_yaml = fleet(*args, "-o", "json"), fleet(*args, "-o", "yaml")
    assert as_json.code == as_yaml.code == 0
    assert yaml.safe_load(as_yaml.out) == json.loads(as_json.out)


def test_tables_not_stored_are_a_json_error_with_o_json(fleet):
    """`routes -o json` exiting 1 wrote a plain-text line on stderr, where every other refusal writes JSON."""
    import json

    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0 and fleet("plan-xconnect", "a", "--apply").code == 0
    r = fleet("routes", "a", "--max-vcs", "1", "-o", "json")
    assert r.code == 1 and r.json["stored"] is False
    error = json.loads(r.err)
    assert error["exit_code"] == 1 and "not stored" in error["error"]


def test_a_drained_ocs_is_drained_in_show_ocs_as_in_the_map(fleet):
    assert fleet("inject-fault", "ocs:pod0/y/3", "--planned").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    health = {o["id"]: o["health"] for o in fleet("show", "ocs", "-o", "json").json}
    assert health["ocs:pod0/y/3"] == "drained" and health["ocs:pod0/x/1"] == "failed" and health["ocs:pod0/z/0"] == "ok"


def test_new_slices_get_cubes_and_pods_they_can_be_wired_on(fleet):
    """A failed optical link's port is refused by `plan-xconnect`, yet `allocate` kept handing out its cube (and
    `explain` said to release and allocate again, which gave it back); a slice without fault-tolerant routing was
    put on a pod whose OCS was down."""
    assert fleet("init", "--pods", "2", "--force").code == 0
    assert fleet("inject-fault", "link:c00/y/3/in").code == 0
    a = fleet("allocate", "a", "--shape", "4x4x8", "-o", "json").json
    assert "c00" not in a["cubes"] and fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    b = fleet("allocate", "b", "--shape", "4x4x8", "--no-fault-tolerant-routing", "-o", "json").json
    assert b["pod"] == "pod1" and fleet("plan-xconnect", "b", "--apply").code == 0
    j = fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2", "--no-fault-tolerant-routing", "-o", "json").json
    assert {s["pod"] for s in j["slices"]} == {"pod1"} and fleet("plan-xconnect", "j", "--apply").code == 0
    # routing would bridge the down OCS, but below the slice's healthy throughput: pod1, every OCS up, has room
    ft = fleet("allocate", "c", "--shape", "4x4x4", "-o", "json").json
    assert ft["pod"] == "pod1" and fleet("plan-xconnect", "c", "--apply").code == 0
    # pod1 without room, pod0 takes it, its OCS down or not (routed around), never on c00's failed port
    assert fleet("allocate", "d", "--shape", "8x16x16", "-o", "json").json["pod"] == "pod1"  # 32 of its 59 free
    e = fleet("allocate", "e", "--shape", "8x16x16", "-o", "json").json
    assert e["pod"] == "pod0" and "c00" not in e["cubes"] and fleet("plan-xconnect", "e", "--apply").code == 0


def test_a_jobs_next_steps_never_name_a_cleared_fault(fleet):
    assert fleet("allocate", "j", "--shape", "4x4x8", "--slices", "2", "--no-fault-tolerant-routing").code == 0
    assert fleet("plan-xconnect", "j", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0 and fleet("clear-fault", "f1").code == 0
    explained = fleet("explain", "j", "-o", "json").json
    assert explained["next"] == [
        "tpufleet reschedule j-0",
        "tpufleet routes j-0",
        "tpufleet reschedule j-1",
        "tpufleet routes j-1",
    ]
    assert not any("waits for" in line for line in explained["why"])
    for step in explained["next"]:
        assert fleet(*step.split()[1:]).code == 0, step


def test_policy_that_changes_nothing_commits_nothing(fleet):
    """Showing a policy gave the next serial as its own, and setting a value to what it was committed a serial."""
    assert fleet("allocate", "a", "--shape", "4x4x8", "--min-throughput", "0.5").code == 0
    serial = fleet("status", "-o", "json").json["serial"]
    assert fleet("policy", "a", "-o", "json").json["serial"] == serial
    before = snapshot(fleet.state)
    same = fleet("policy", "a", "--min-throughput", "0.5", "-o", "json")
    assert same.code == 0 and same.json["serial"] == serial and snapshot(fleet.state) == before
    changed = fleet("policy", "a", "--min-throughput", "0.7", "-o", "json")
    assert changed.json["serial"] == serial + 1 == fleet("status", "-o", "json").json["serial"]


def test_a_sub_cube_slice_takes_the_first_cube_in_the_fleets_order(fleet):
    """Among equally free cubes the best fit compared names as text: pod1's c100 came before c64."""
    assert fleet("init", "--pods", "2", "--force").code == 0
    for i in range(64):  # pod0 full
        assert fleet("allocate", f"w{i}", "--shape", "4x4x4", "--pod", "pod0").code == 0
    r = fleet("allocate", "small", "--shape", "2x2x1", "-o", "json")
    assert r.code == 0 and r.json["cubes"] == ["c64"]


def test_the_map_header_counts_cubes_reserved_for_a_move(fleet):
    """The pod line summed to fewer cubes than the pod has: cubes reserved for an evicted slice were left out."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("inject-fault", "host:c00/1").code == 0  # evicts s, reserves a cube for its move
    counts = fleet("show", "map", "-o", "json").json["pods"][0]["counts"]
    assert counts["reserved"] == 1
    line = next(x for x in fleet("show", "map").out.splitlines() if x.startswith("pod pod0:"))
    assert f"{counts['free']} free, 1 reserved, {counts['out']} out" in line
    numbers = [int(w) for w in line.replace(",", "").split() if w.isdigit()]
    assert numbers[0] == sum(numbers[1:]) == 64


def test_a_failure_on_a_drained_target_names_the_drain_it_is_folded_into(fleet):
    """A failure injected on a host under a planned drain is no new fault: the answer said only "already has open
    fault f1", so the drain read as a fault and nothing warned that clearing the drain ends the failure too."""
    assert fleet("inject-fault", "host:c06/2", "--planned").code == 0
    before = snapshot(fleet.state)
    r = fleet("inject-fault", "host:c06/2")
    assert r.code == 0 and snapshot(fleet.state) == before
    assert r.out.strip() == (
        "host:c06/2 already has open planned drain f1: nothing changed (it also stands for a failure found "
        "during it: clear f1 only once repaired)"
    )
    assert fleet("inject-fault", "host:c06/2", "-o", "json").json["duplicate_of"] == "f1"
    assert fleet("inject-fault", "host:c07/2").code == 0
    assert fleet("inject-fault", "host:c07/2").out.strip() == "host:c07/2 already has open fault f2: nothing changed"


@pytest.mark.parametrize(
    "args",
    [
        ("report", "--out"),
        ("goodput-report", str(Path("fixtures/goodput/fleet.jsonl").resolve()), "--out"),
        ("metrics", "--out"),
        ("export", "kueue-topology", "--out"),
        ("simulate-fleet", "--days", "0.01", "--out"),
        ("plan-xconnect", "s", "--out"),
        ("simulate-availability", "--trials", "10", "--cubes", "1", "--plot"),
    ],
    ids=lambda a: a[0],
)
def test_a_written_file_is_named_on_one_line_with_its_controls_escaped(fleet, tmp_path, monkeypatch, args):
    """`report --out` (and the others) named the file it wrote raw: a newline in the name split the line, an
    escape sequence reached the terminal; the name is written escaped, on the line that says so, as errors write it."""
    monkeypatch.chdir(tmp_path)
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    name = "q\nr\x1b[31m" + (".svg" if args[0] == "simulate-availability" else "")
    r = fleet(*args, name)
    assert r.code == 0, r.err
    assert (tmp_path / name).exists()
    said = r.out + r.err
    assert "\x1b" not in said and "q\\nr\\x1b[31m" in said
    assert "q\nr" not in said


def test_a_share_stored_as_0_9275_reads_0_928(fleet):
    """512/552 = 0.927536 is stored and given in JSON as 0.9275; the float 0.9275 is just below it, so three places
    of it read 0.927 in every table and line. They read 0.928, as the README's worked figure and a reader's rounding
    of the JSON have it."""
    assert fleet("allocate", "p", "--shape", "8x8x8").code == 0
    assert fleet("plan-xconnect", "p", "--apply").code == 0
    r = fleet("inject-fault", "ocs:pod0/x/4", "-o", "json")
    assert r.json["slices"][0]["reroute"]["all_to_all_retained"] == 0.9275
    assert "(keeps 0.928 of all-to-all" in fleet("status").out
    assert "keeps 0.928 of its all-to-all" in fleet("explain", "p").out
    assert "keeps 0.928, 3 VCs" in fleet("report").out
    routed = fleet("routes", "p")
    assert "throughput retained 0.928" in routed.out and "0.927 " not in routed.out


def test_a_repair_names_the_never_wired_slice_whose_plan_it_refused(fleet):
    """`nf` (no fault-tolerant routing) allocated while y/3 was down: its `plan-xconnect --apply` was refused. The
    repair's `rewire` named only wired slices missing pairs, never `nf`; it names it, and its step works. A slice
    not wired whose plan the fault never refused (a sub-cube one) is no news of the repair."""
    assert fleet("inject-fault", "ocs:pod0/y/3").code == 0  # f1
    assert fleet("allocate", "nf", "--shape", "4x4x8", "--no-fault-tolerant-routing").code == 0
    assert fleet("plan-xconnect", "nf", "--apply").code == 1
    assert fleet("allocate", "sc", "--shape", "2x2x2").code == 0
    r = fleet("clear-fault", "f1", "-o", "json")
    assert r.code == 0 and r.json["rewire"] == ["nf"], r.json
    assert fleet("plan-xconnect", "nf", "--apply").code == 0
    assert {s["name"]: s["state"] for s in fleet("show", "slices", "-o", "json").json}["nf"] == "connected"
