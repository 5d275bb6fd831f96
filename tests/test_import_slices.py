"""`tpufleet import slices`: the shipped Slice list (every state, on the TPU7x reservation's sub-blocks) against a
superpod whose reservation is imported: the exact drift, apply, the no-op repeat, each drift kind named against
a state that disagrees, and malformed input refused (exit 2 naming the Slice and the field; state untouched)."""

from __future__ import annotations

import copy
import io
import json
import sys
from pathlib import Path

import pytest
import yaml

from helpers import one_line, snapshot

GKE = Path(__file__).parent.parent / "fixtures" / "gke"
FIXTURE = GKE / "tpu7x-slices.json"
RESERVATION = GKE / "tpu7x-reservation-subblocks.json"
# The Slices tpufleet can hold (sub-block NNNN is cube cNN: import reservation maps them in physical order).
NEW = {
    "llm-train-0": ("8x8x8", "ACTIVE", [f"c{i:02d}" for i in range(8)]),
    "llm-train-1": ("4x8x8", "ACTIVE_DEGRADED", ["c16", "c17", "c18", "c19"]),
    "rl-rollout-0": ("4x4x8", "ACTIVATING", ["c24", "c25"]),
    "eval-0": ("4x4x4", "CREATED", ["c26"]),
    "ft-job-0": ("4x4x8", "INCOMPLETE", ["c28", "c29"]),
    "batch-0": ("4x4x4", "UNKNOWN", ["c30"]),
}
IGNORED = {"old-0": "ACTIVE", "pretrain-0": "FAILED", "pretrain-1": "SliceCreationFailed", "serve-0": "DEACTIVATING"}


@pytest.fixture(scope="module")
def slices() -> dict:
    return json.loads(FIXTURE.read_text())


def write(tmp_path: Path, doc: object, name: str = "slices.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def kinds(d: dict) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for item in d["drift"]:
        out.setdefault(item["kind"], []).append((item["slice"], item["tpufleet_slice"]))
    return out


def test_fixture_is_valid_against_the_slice_crd(slices):
    from test_fleetio_export import slice_crd

    check = slice_crd()
    for item in slices["items"]:
        check(item)
    reasons = {c["reason"] for i in slices["items"] for c in i.get("status", {}).get("conditions", [])}
    assert reasons == {
        "ACTIVE",
        "ACTIVE_DEGRADED",
        "ACTIVATING",
        "INCOMPLETE",
        "UNKNOWN",
        "FAILED",
        "SliceCreationFailed",
        "DEACTIVATING",
    }


def test_plan_of_the_fixture(reserved):
    before = snapshot(reserved.state)
    r = reserved("import", "slices", FIXTURE, "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert (d["slices"], d["matched"], d["in_sync"]) == (11, 0, 0)
    assert {s["slice"]: (s["topology"], s["state"], s["cubes"]) for s in d["slices_new"]} == NEW
    assert all(s["pod"] == "pod0" for s in d["slices_new"])
    assert kinds(d) == {
        "not_in_tpufleet": sorted((n, None) for n in NEW),
        "conflict": [("maint-0", None)],  # ACTIVE on c40, which the reservation's maintenance drains
    }
    (conflict,) = [i for i in d["drift"] if i["kind"] == "conflict"]
    assert "c40 is out of the pool" in conflict["reason"]
    assert {g["slice"]: g["state"] for g in d["ignored"]} == IGNORED
    assert d["drift_counts"] == {
        "not_in_tpufleet": 6,
        "conflict": 1,
        "not_in_cluster": 0,
        "shape": 0,
        "cubes": 0,
        "state": 0,
    }
    assert d["has_changes"] and not d["applied"]
    assert reserved("import", "slices", FIXTURE, "--detailed-exitcode").code == 4
    assert snapshot(reserved.state) == before  # a plan changes nothing


def test_apply_then_repeat_is_a_no_op(reserved):
    r = reserved("import", "slices", FIXTURE, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["applied"] and r.json["serial"] == 3
    shown = {s["name"]: s for s in reserved("show", "slices", "-o", "json").json}
    assert {n: (s["shape"], s["cubes"], s["state"]) for n, s in shown.items()} == {
        n: (topology, cubes, "allocated") for n, (topology, _, cubes) in NEW.items()
    }
    assert reserved("status", "-o", "json").json["cubes"]["allocated"] == 18  # 8 + 4 + 2 + 1 + 2 + 1
    before = snapshot(reserved.state)
    again = reserved("import", "slices", FIXTURE, "--detailed-exitcode", "-o", "json")
    assert again.code == 0, again.err
    d = again.json
    assert (d["matched"], d["in_sync"], d["slices_new"], d["has_changes"]) == (6, 6, [], False)
    assert kinds(d) == {"conflict": [("maint-0", None)]}  # still drift: not for import to settle
    assert reserved("import", "slices", FIXTURE, "--apply", "-o", "json").json["applied"] is False
    assert snapshot(reserved.state) == before


def test_each_kind_of_drift_is_named(reserved):
    """tpufleet's own slices disagreeing with the list: another shape, other cubes, a slice with no Slice, a
    connected slice the cluster reports FAILED, one the cluster reports degraded."""
    for name, shape, cubes in (
        ("llm-train-0", "4x4x8", "c00,c01"),
        ("rl-rollout-0", "4x4x8", "c50,c51"),
        ("tpf-only", "4x4x4", "c60"),
        ("pretrain-0", "4x4x8", "c32,c33"),
        ("llm-train-1", "4x8x8", "c16,c17,c18,c19"),
    ):
        r = reserved("allocate", name, "--shape", shape, "--cubes", cubes)
        assert r.code == 0, r.err
    for name in ("pretrain-0", "llm-train-1"):
        assert reserved("plan-xconnect", name, "--apply").code == 0
    d = reserved("import", "slices", FIXTURE, "-o", "json").json
    assert kinds(d) == {
        "not_in_tpufleet": [("batch-0", None), ("eval-0", None), ("ft-job-0", None)],
        "conflict": [("maint-0", None)],
        "not_in_cluster": [(None, "tpf-only")],
        "shape": [("llm-train-0", "llm-train-0")],
        "cubes": [("rl-rollout-0", "rl-rollout-0")],
        "state": [("llm-train-1", "llm-train-1"), ("pretrain-0", "pretrain-0")],
    }
    reasons = {(i["kind"], i["slice"] or i["tpufleet_slice"]): i["reason"] for i in d["drift"]}
    assert reasons[("shape", "llm-train-0")] == "the Slice is 8x8x8, tpufleet's slice 4x4x8"
    assert reasons[("state", "pretrain-0")] == "GKE reports FAILED; tpufleet runs it (connected)"
    assert "ACTIVE_DEGRADED" in reasons[("state", "llm-train-1")]
    assert (d["matched"], d["in_sync"]) == (4, 0)
    assert {g["slice"] for g in d["ignored"]} == {"old-0", "pretrain-1", "serve-0"}  # pretrain-0 is matched


def test_an_exported_slice_matches_by_its_annotation(reserved, tmp_path):
    assert reserved("allocate", "Job.A", "--shape", "4x4x8", "--cubes", "c70,c71").code == 0
    assert reserved("plan-xconnect", "Job.A", "--apply").code == 0
    exported = reserved("export", "slices", "-o", "json").json
    (item,) = exported["items"]
    assert item["metadata"]["name"].startswith("job-a-")  # "Job.A" made valid, with a suffix hashed from it
    d = reserved("import", "slices", write(tmp_path, exported), "-o", "json").json
    assert (d["matched"], d["in_sync"], d["drift"]) == (1, 1, [])


def test_an_export_of_no_slice_imports_back_in_sync(reserved, tmp_path):
    """With no Slice to write (no whole-cube TPU7x slice yet, or only sub-cube ones), `export slices` wrote an empty
    file, which `import slices` refused as empty (exit 2): the round trip the README promises failed, and a cron
    running `drift --slices` on it broke. It writes an empty `v1 List`, as `kubectl get slices -o yaml` does."""
    assert reserved("allocate", "dev", "--shape", "2x2x4").code == 0  # a sub-cube slice: no Slice for it
    out = tmp_path / "slices.yaml"
    assert reserved("export", "slices", "--out", out).code == 0
    assert yaml.safe_load(out.read_text()) == {"apiVersion": "v1", "kind": "List", "items": []}
    assert reserved("export", "slices").out == out.read_text()  # stdout: the same manifests
    r = reserved("import", "slices", out, "--detailed-exitcode", "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["slices"], r.json["drift"], r.json["has_changes"]) == (0, [], False)
    assert reserved("drift", "--slices", out).code == 0


def test_stdin(reserved, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FIXTURE.read_bytes())))
    r = reserved("import", "slices", "-", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["source"] == "<stdin>" and len(r.json["slices_new"]) == 6


def _edit(doc: dict, index: int, path: str, value: object) -> dict:
    doc = copy.deepcopy(doc)
    obj = doc["items"][index]
    *parents, last = path.split(".")
    for key in parents:
        obj = obj[int(key)] if isinstance(obj, list) else obj[key]
    if isinstance(obj, list):
        obj[int(last)] = value
    else:
        obj[last] = value
    return doc


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        ((0, "spec.topology", "8x8"), "items.0.spec.topology", "three sides"),
        ((0, "spec.topology", "eight"), "items.0.spec.topology", "not a topology"),
        ((3, "spec.topology", "4x4x6"), "items.3.spec.topology", "multiples of 4"),
        ((3, "spec.topology", "2x2x1"), "items.3.spec.topology", "smaller than a 4x4x4 partition"),
        # not whole partitions: the shape rule names the topology (a count of 80 chips' partitions was "1", wrong)
        ((2, "spec.topology", "4x4x5"), "items.2.spec.topology", "multiples of 4"),
        ((2, "spec.topology", "4x4x0"), "items.2.spec.topology", "a side of 0 chips"),
        ((2, "spec.topology", "8x8x6"), "items.2.spec.topology", "multiples of 4"),  # 6 partitions' chips
        ((0, "spec.type", "tpu-v4-podslice"), "items.0.spec.type", "must be tpu7x or v6e"),
        ((0, "spec.type", 7), "items.0.spec.type", "must be tpu7x or v6e"),
        ((2, "spec.partitionIds.1", "no-such-sub-block"), "items.2.spec.partitionIds.1", "no such partition"),
        ((2, "spec.partitionIds", "c24"), "items.2.spec.partitionIds", "non-empty list"),
        ((2, "spec.partitionIds.1", "ironwood-superpod-block-0001-sub-0024"), "items.2.spec.partitionIds.1", "also"),
        ((2, "spec.partitionIds.1", "c24"), "items.2.spec.partitionIds", "two partitions are one cube"),
        ((3, "spec.partitionIds", ["c26", "c27"]), "items.3.spec.partitionIds", "1 partition(s)"),
        ((1, "status.conditions.0.reason", "Running"), "items.1.status.conditions.0.reason", "not a Slice state"),
        ((1, "metadata.name", "Bad_Name"), "items.1.metadata.name", "not a Slice name"),
        ((1, "metadata.name", "l" * 55), "items.1.metadata.name", "55 characters, over a Slice name's 54"),
        ((1, "metadata.name", "llm-train-0"), "items.1.metadata.name", "also the name of item 0"),
        ((1, "kind", "Pod"), "items.1.kind", "must be Slice"),
        (
            (1, "kind", "Node"),
            "items.1.kind",
            "this is a node list (kubectl get nodes -o json), which `tpufleet import k8s`",
        ),
        ((1, "metadata.deletionTimestamp", 5), "items.1.metadata.deletionTimestamp", "must be a time"),
        ((1, "metadata.deletionTimestamp", "not a time"), "items.1.metadata.deletionTimestamp", "must be a time"),
    ],
)
def test_malformed_slices_exit_2_naming_the_slice_and_field(reserved, slices, tmp_path, edit, field, words):
    before = snapshot(reserved.state)
    path = write(tmp_path, _edit(slices, *edit))
    line = one_line(reserved("import", "slices", path, "--apply"))
    assert f"field {field}:" in line and words in line, line
    name = slices["items"][edit[0]]["metadata"]["name"]
    assert edit[1] == "metadata.name" or edit[2] == "Node" or f"Slice {name}:" in line
    assert snapshot(reserved.state) == before


@pytest.mark.parametrize(
    "doc",
    [[], {"kind": "List"}, {"items": {"a": 1}}, "slices", {"items": [1]}, {"kind": "NodeList", "items": []}],
    ids=["bare", "no-items", "map", "str", "int", "node-list"],
)
def test_not_a_list_exits_2(reserved, tmp_path, doc):
    before = snapshot(reserved.state)
    line = one_line(reserved("import", "slices", write(tmp_path, doc), "--apply"))
    assert "slices.json: field" in line
    assert snapshot(reserved.state) == before


@pytest.mark.parametrize(
    ("doc", "said"),
    [
        ({"items": {}}, "field items: must be a list of Slices (kubectl get slices -o json) (value {})"),
        ({"items": None}, "field items: must be a list of Slices (kubectl get slices -o json) (value None)"),
        ({"items": "x"}, "field items: must be a list of Slices (kubectl get slices -o json) (value 'x')"),
        ({"kind": "List"}, "field items: missing (must be a list of Slices, kubectl get slices -o json)"),
        ({"items": [{}]}, "field items.0.metadata.name: missing or not a Slice name ([a-z]([-a-z0-9]*[a-z0-9])?)"),
    ],
)
def test_items_not_a_list_are_named_by_their_own_value(reserved, tmp_path, doc, said):
    """`{"items": {}}` and `{"items": null}` said "(value 'dict')", the document's type, not the field's value."""
    path = write(tmp_path, doc)
    assert one_line(reserved("import", "slices", path)) == f"tpufleet: error: {path}: {said}"


def test_a_slice_of_a_generation_the_fleet_has_not_exits_2(cli, slices, tmp_path):
    assert cli("init", "--pods", "2", "--cubes-per-pod", "16", "--generation", "tpu-v4").code == 0
    doc = {"items": [_edit(slices, 0, "spec.partitionIds", [f"c{i:02d}" for i in range(8)])["items"][0]]}
    line = one_line(cli("import", "slices", write(tmp_path, doc)))
    assert "field items.0.spec.type:" in line and "no pod of this fleet is tpu7x" in line


def test_a_model_fleets_export_as_tpu7x_imports_back_in_sync(cli, tmp_path):
    """The built-in TPU v4 model (no generation) exports Slices with `--type tpu7x` when it stands for a TPU7x
    reservation; `import slices` and `drift --slices` refused that very file ("no pod of this fleet is tpu7x"),
    so the README's drift cron failed on every run. A pod without a generation takes a Slice of any type."""
    assert cli("init").code == 0
    assert cli("allocate", "a", "--shape", "8x8x8").code == 0 and cli("plan-xconnect", "a", "--apply").code == 0
    assert cli("allocate", "b", "--shape", "4x4x8").code == 0  # allocated, not wired: ACTIVATING
    out = tmp_path / "slices.yaml"
    assert cli("export", "slices", "--type", "tpu7x", "--out", out).code == 0
    before = snapshot(cli.state)
    r = cli("import", "slices", out, "--detailed-exitcode", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["has_changes"] is False
    assert cli("drift", "--slices", out).code == 0
    assert snapshot(cli.state) == before


def test_help_has_examples(cli):
    r = cli("import", "slices", "--help", state=False)
    assert r.code == 0 and "Examples:" in r.out


def test_export_slices_as_written_imports_back_in_sync(reserved, tmp_path):
    """`export slices` writes YAML, a Slice a document (`---` between them), for `kubectl apply -f`: `import
    slices` and `drift --slices` read that file back, in sync, as they read kubectl's JSON."""
    for name, cubes in (("train", "c70,c71"), ("serve", "c72")):
        assert reserved("allocate", name, "--shape", "4x4x8" if "," in cubes else "4x4x4", "--cubes", cubes).code == 0
    out = tmp_path / "slices.yaml"
    assert reserved("export", "slices", "--out", out).code == 0
    assert out.read_text().count("kind: Slice") == 2
    before = snapshot(reserved.state)
    r = reserved("import", "slices", out, "--apply", "--detailed-exitcode", "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["matched"], r.json["in_sync"], r.json["drift"], r.json["has_changes"]) == (2, 2, [], False)
    assert reserved("drift", "--slices", out).code == 0
    assert snapshot(reserved.state) == before


def test_kubectl_yaml_of_the_list_reads_as_its_json(reserved, slices, tmp_path):
    import yaml

    as_json = reserved("import", "slices", FIXTURE, "-o", "json").json
    path = tmp_path / "slices.yaml"
    path.write_text(yaml.safe_dump(slices))
    as_yaml = reserved("import", "slices", path, "-o", "json")
    assert as_yaml.code == 0, as_yaml.err
    assert {k: v for k, v in as_yaml.json.items() if k != "source"} == {
        k: v for k, v in as_json.items() if k != "source"
    }


@pytest.mark.parametrize("text", ["# nothing\n", "---\n---\n"], ids=["comment", "separators"])
def test_yaml_without_a_document_exits_2(reserved, tmp_path, text):
    path = tmp_path / "slices.yaml"
    path.write_text(text)
    before = snapshot(reserved.state)
    line = one_line(reserved("import", "slices", path, "--apply"))
    assert line.startswith(f"tpufleet: error: {path}: field <root>:")
    assert snapshot(reserved.state) == before


def _ready(doc: dict, index: int, name: str, sub_block: str, status: str | None, reason: str = "ACTIVE") -> dict:
    """Item `index` of the list as a 4x4x4 Slice `name` on `sub_block`, its Ready condition `status` / `reason`
    (none with None)."""
    item = copy.deepcopy(doc["items"][index])
    item["metadata"]["name"] = name
    item["spec"].update(topology="4x4x4", partitionIds=[f"ironwood-superpod-block-0001-sub-{sub_block}"])
    condition = {"lastTransitionTime": "2026-06-14T10:00:00Z", "message": "", "reason": reason, "type": "Ready"}
    item["status"] = {"conditions": [{**condition, "status": status}] if status else []}
    return item


def test_a_slice_not_ready_is_state_drift_while_tpufleet_runs_it(reserved, slices, tmp_path):
    """A Slice runs when its Ready condition is True and its reason ACTIVE or ACTIVE_DEGRADED: one not Ready
    (ACTIVE but Ready False, ACTIVATING, no Ready condition yet) whose tpufleet slice is wired was in sync."""
    items = [
        _ready(slices, 0, "serve-1", "0027", "False"),
        _ready(slices, 0, "rl-rollout-0", "0024", "False", "ACTIVATING"),
        _ready(slices, 0, "eval-0", "0026", None),
        _ready(slices, 0, "serve-2", "0028", "True"),  # running: in sync
    ]
    for item in items:
        cube = f"c{item['spec']['partitionIds'][0][-2:]}"
        name = item["metadata"]["name"]
        assert reserved("allocate", name, "--shape", "4x4x4", "--cubes", cube).code == 0
        assert reserved("plan-xconnect", name, "--apply").code == 0
    d = reserved("import", "slices", write(tmp_path, {"kind": "List", "items": items}), "-o", "json").json
    assert (d["matched"], d["in_sync"]) == (4, 1)
    assert {i["slice"]: (i["kind"], i["reason"]) for i in d["drift"]} == {
        "serve-1": ("state", "GKE reports ACTIVE (Ready False): not running; tpufleet runs it (connected)"),
        "rl-rollout-0": (
            "state",
            "GKE reports ACTIVATING (Ready False) since 2026-06-14T10:00:00Z, over 30 minutes: stuck: not running; "
            "tpufleet runs it (connected)",
        ),
        "eval-0": ("state", "GKE reports CREATED (no Ready condition): not running; tpufleet runs it (connected)"),
    }


def test_a_slice_not_ready_is_not_taken_as_running_for_cubes_tpufleet_holds_free(reserved, slices, tmp_path):
    """Two Slices tpufleet does not know on one cube: the running one has it, whatever the names' order; one whose
    Ready condition is False is said not Ready, though its reason is ACTIVE, and recorded after the running."""
    items = [
        _ready(slices, 0, "a-standby", "0027", "False"),
        _ready(slices, 0, "b-serve", "0027", "True"),
        _ready(slices, 0, "c-warm", "0028", "False"),
    ]
    d = reserved("import", "slices", write(tmp_path, {"kind": "List", "items": items}), "-o", "json").json
    assert d["slices_new"] == [
        {"slice": "b-serve", "topology": "4x4x4", "state": "ACTIVE", "ready": "True", "pod": "pod0", "cubes": ["c27"]},
        {"slice": "c-warm", "topology": "4x4x4", "state": "ACTIVE", "ready": "False", "pod": "pod0", "cubes": ["c28"]},
    ]
    reasons = {i["slice"]: (i["kind"], i["reason"]) for i in d["drift"]}
    assert reasons["c-warm"] == ("not_in_tpufleet", "ACTIVE (Ready False) 4x4x4 on cubes tpufleet holds free: c28")
    assert reasons["a-standby"][0] == "conflict"
    assert reasons["a-standby"][1].startswith("ACTIVE (Ready False) on c27: ")


def test_two_ready_conditions_exit_2_naming_the_slice_and_field(reserved, slices, tmp_path):
    """Conditions are keyed by their type: with two Ready conditions the Slice's state is not known (the first one
    was taken)."""
    doc = copy.deepcopy(slices)
    conditions = doc["items"][1]["status"]["conditions"]
    conditions.append({**conditions[0], "status": "False", "reason": "FAILED"})
    path = write(tmp_path, doc)
    before = snapshot(reserved.state)
    line = one_line(reserved("import", "slices", path, "--apply"))
    assert line == (
        f"tpufleet: error: {path}: field items.1.status.conditions.1.type: Slice llm-train-1: also the type of "
        "condition 0 (one condition of a type) (value 'Ready')"
    )
    assert snapshot(reserved.state) == before


@pytest.mark.parametrize(
    ("now", "drift"),
    [("2026-06-14T10:05:00Z", False), ("2026-06-14T10:30:00Z", False), ("2026-06-14T10:30:01Z", True)],
)
def test_a_slice_activating_after_tpufleet_wired_it_is_in_sync_for_30_minutes(
    reserved, slices, tmp_path, monkeypatch, now, drift
):
    """Wired in the twin by `plan-xconnect --apply`, a Slice is ACTIVATING while GKE brings it up: `drift` (for
    cron) called that state drift at once, exit 4. Within 30 minutes of its Ready condition's change it is in sync
    and listed as activating; after, it is stuck, state drift naming since when."""
    from tpufleet.state import store

    item = _ready(slices, 0, "rl-rollout-0", "0024", "False", "ACTIVATING")  # changed at 2026-06-14T10:00:00Z
    assert reserved("allocate", "rl-rollout-0", "--shape", "4x4x4", "--cubes", "c24").code == 0
    assert reserved("plan-xconnect", "rl-rollout-0", "--apply").code == 0
    path = write(tmp_path, {"kind": "List", "items": [item]})
    monkeypatch.setattr(store, "utc_now", lambda: now)
    d = reserved("import", "slices", path, "-o", "json").json
    assert d["in_sync"] == (0 if drift else 1)
    assert [i["kind"] for i in d["drift"]] == (["state"] if drift else [])
    expected = (
        [] if drift else [{"slice": "rl-rollout-0", "tpufleet_slice": "rl-rollout-0", "since": "2026-06-14T10:00:00Z"}]
    )
    assert d["activating"] == expected
    r = reserved("drift", "--slices", path, "-o", "json")
    assert r.code == (4 if drift else 0), r.err
    if not drift:
        assert "  . activating rl-rollout-0 since 2026-06-14T10:00:00Z: GKE is bringing up what tpufleet wired" in (
            reserved("import", "slices", path).out
        )


def test_an_activating_slice_tpufleet_has_not_wired_stays_allocated_and_in_sync(reserved, slices, tmp_path):
    """An allocated slice agrees with any Slice state (GKE's controller wires it): not listed as activating."""
    item = _ready(slices, 0, "rl-rollout-0", "0024", "False", "ACTIVATING")
    assert reserved("allocate", "rl-rollout-0", "--shape", "4x4x4", "--cubes", "c24").code == 0
    d = reserved("import", "slices", write(tmp_path, {"kind": "List", "items": [item]}), "-o", "json").json
    assert (d["in_sync"], d["drift"], d["activating"]) == (1, [], [])


def test_a_ready_condition_time_that_is_no_time_is_refused_naming_it(reserved, slices, tmp_path):
    item = _ready(slices, 0, "rl-rollout-0", "0024", "False", "ACTIVATING")
    item["status"]["conditions"][0]["lastTransitionTime"] = "yesterday"
    path = write(tmp_path, {"kind": "List", "items": [item]})
    r = reserved("import", "slices", path)
    assert r.code == 2
    assert all(part in r.err for part in (str(path), "items.0.status.conditions.0.lastTransitionTime", "'yesterday'"))


def test_a_running_slice_is_recorded_whatever_unplaced_node_pools_hold(cli, tmp_path):
    """The plan adopts a Slice the cluster runs whatever unplaced node pools hold (they may be that very Slice's
    nodes), but `--apply` allocated it with the pools counted against the free cubes, and exited 1: a pool of 140
    cubes on a superpod of 144 kept an 8-cube Slice from ever being recorded, `drift` reporting it for ever."""
    labels = {
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        "cloud.google.com/gke-tpu-topology": "16x20x28",
        "cloud.google.com/gke-nodepool": "big",
    }
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    node = lambda i: {"metadata": {"name": f"gke-big-{i}", "labels": labels}, "spec": {}, "status": ready}  # noqa: E731
    pool = write(tmp_path, {"apiVersion": "v1", "kind": "List", "items": [node(i) for i in range(2240)]}, "pool.json")
    running = {"type": "Ready", "status": "True", "reason": "ACTIVE", "lastTransitionTime": "2026-12-01T00:00:00Z"}
    spec = {"type": "tpu7x", "topology": "8x8x8", "partitionIds": [f"c{i:02d}" for i in range(8)]}
    item = {"apiVersion": "accelerator.gke.io/v1beta1", "kind": "Slice", "metadata": {"name": "s8"}, "spec": spec}
    listed = write(
        tmp_path, {"apiVersion": "v1", "kind": "List", "items": [{**item, "status": {"conditions": [running]}}]}
    )
    assert cli("init", "--generation", "tpu7x").code == 0 and cli("import", "k8s", pool, "--apply").code == 0
    assert cli("import", "slices", listed, "--detailed-exitcode").code == 4  # the plan: it would be recorded
    r = cli("import", "slices", listed, "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["applied"] and [s["slice"] for s in r.json["slices_new"]] == ["s8"]
    (row,) = cli("show", "slices", "-o", "json").json
    assert row["name"] == "s8" and row["cubes"] == spec["partitionIds"]
    assert cli("drift", "--slices", listed).code == 0


def test_a_slice_of_the_longest_name_is_exported_under_it(reserved, slices, tmp_path):
    """A Slice named with 50 to 63 characters was recorded under its name, then exported under a shorter one
    (`export slices` made names of at most 49): `kubectl apply` of the export added a second Slice on the same
    partitions. Names are read and written within the same limit, 54 (GKE's Slice reference)."""
    name = "llm-train-" + "x" * 44
    doc = _edit(slices, 0, "metadata.name", name)
    assert reserved("import", "slices", write(tmp_path, doc), "--apply").code == 0
    exported = reserved("export", "slices", "-o", "json").json
    assert name in [item["metadata"]["name"] for item in exported["items"]]
    assert reserved("drift", "--slices", write(tmp_path, exported, "exported.json")).code == 0
