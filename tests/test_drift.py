"""`tpufleet drift` (the three imports' plans against the state, for cron: exit 0 in sync, 4 drift, 2 bad input;
nothing changes) and the drift in `tpufleet metrics` (`tpufleet_drift_items{source, kind}`, valid exposition)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from helpers import one_line, snapshot

ROOT = Path(__file__).parent.parent / "fixtures"
SLICES = ROOT / "gke" / "tpu7x-slices.json"
RESERVATION = ROOT / "gke" / "tpu7x-reservation-subblocks.json"
NODES = ROOT / "k8s" / "pod-64.json"
NO_SLICE_DRIFT = {"not_in_tpufleet": 0, "conflict": 0, "not_in_cluster": 0, "shape": 0, "cubes": 0, "state": 0}


@pytest.fixture
def superpod(cli):
    assert cli("init", "--generation", "tpu7x").code == 0
    return cli


@pytest.fixture
def in_sync(superpod, tmp_path):
    """The reservation and the Slices (without maint-0, which runs on a cube drained for maintenance) applied."""
    doc = json.loads(SLICES.read_text())
    doc["items"] = [i for i in doc["items"] if i["metadata"]["name"] != "maint-0"]
    slices = tmp_path / "slices.json"
    slices.write_text(json.dumps(doc))
    assert superpod("import", "reservation", RESERVATION, "--apply").code == 0
    assert superpod("import", "slices", slices, "--apply").code == 0
    superpod.slices = slices
    return superpod


def test_in_sync_exits_0_and_changes_nothing(in_sync):
    before = snapshot(in_sync.state)
    r = in_sync("drift", "--reservation", RESERVATION, "--slices", in_sync.slices, "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    assert (d["drift"], d["in_sync"], sorted(d["sources"])) == (0, True, ["reservation", "slices"])
    assert d["sources"]["slices"]["kinds"] == NO_SLICE_DRIFT
    assert set(d["sources"]["reservation"]["kinds"].values()) == {0}
    assert d["sources"]["slices"]["plan"]["in_sync"] == 6
    assert snapshot(in_sync.state) == before
    assert in_sync("drift", "--slices", in_sync.slices).out.strip().endswith("in sync")


def test_drift_exits_4_with_counts_per_source_and_kind(in_sync):
    before = snapshot(in_sync.state)
    r = in_sync("drift", "--reservation", RESERVATION, "--slices", SLICES, "-o", "json")
    assert r.code == 4, r.err
    d = r.json
    assert (d["drift"], d["in_sync"]) == (1, False)
    assert d["sources"]["slices"]["kinds"] == {**NO_SLICE_DRIFT, "conflict": 1}
    assert [i["slice"] for i in d["sources"]["slices"]["plan"]["drift"]] == ["maint-0"]
    assert d["sources"]["reservation"]["drift"] == 0
    assert snapshot(in_sync.state) == before


def test_a_reservation_not_yet_imported_is_drift(superpod):
    before = snapshot(superpod.state)
    r = superpod("drift", "--reservation", RESERVATION, "-o", "json")
    assert r.code == 4, r.err
    kinds = r.json["sources"]["reservation"]["kinds"]
    assert {k: n for k, n in kinds.items() if n} == {
        "blocks_named": 1,
        "sub_blocks_new": 144,
        "degraded_new": 3,
        "drains_opened": 2,
    }
    assert r.json["drift"] == 150
    assert snapshot(superpod.state) == before


def test_nodes_drift_until_imported(fleet):
    r = fleet("drift", "--nodes", NODES, "-o", "json")
    assert r.code == 4, r.err
    plan = r.json["sources"]["nodes"]["plan"]
    assert r.json["sources"]["nodes"]["drift"] > 0 and plan["has_changes"]
    assert fleet("import", "k8s", NODES, "--apply").code == 0
    again = fleet("drift", "--nodes", NODES, "-o", "json")
    assert again.code == 0, again.err
    assert again.json["sources"]["nodes"]["drift"] == 0


def test_stdin_is_one_of_the_sources(in_sync, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SLICES.read_bytes())))
    r = in_sync("drift", "--slices", "-", "-o", "json")
    assert r.code == 4 and r.json["sources"]["slices"]["file"] == "<stdin>"


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--slices", "-", "--reservation", "-"),
        ("--slices", "no-such-file.json"),
        ("--mapping", "m.yaml", "--slices", str(SLICES)),
    ],
    ids=["nothing", "two-stdin", "missing", "mapping-without-nodes"],
)
def test_bad_input_exits_2(in_sync, args):
    before = snapshot(in_sync.state)
    one_line(in_sync("drift", *args))
    assert snapshot(in_sync.state) == before


def test_malformed_slice_list_exits_2(in_sync, tmp_path):
    doc = json.loads(SLICES.read_text())
    doc["items"][4]["spec"]["topology"] = "4x4"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    before = snapshot(in_sync.state)
    line = one_line(in_sync("drift", "--reservation", RESERVATION, "--slices", bad))
    assert "field items.4.spec.topology:" in line and "Slice ft-job-0:" in line
    assert snapshot(in_sync.state) == before


# ---- metrics -----------------------------------------------------------------------------------------------
def drift_samples(text: str) -> dict[tuple[str, str], float]:
    (fam,) = [f for f in text_string_to_metric_families(text) if f.name == "tpufleet_drift_items"]
    assert fam.type == "gauge" and fam.documentation
    return {(s.labels["source"], s.labels["kind"]): s.value for s in fam.samples}


def test_metrics_carry_the_drift_of_drift(in_sync):
    d = in_sync("drift", "--reservation", RESERVATION, "--slices", SLICES, "-o", "json").json
    r = in_sync("metrics", "--drift-reservation", RESERVATION, "--drift-slices", SLICES)
    assert r.code == 0, r.err
    samples = drift_samples(r.out)
    assert samples == {(source, kind): float(n) for source, s in d["sources"].items() for kind, n in s["kinds"].items()}
    assert samples[("slices", "conflict")] == 1 and sum(samples.values()) == 1


def test_metrics_warn_of_an_empty_reservation_list_as_drift_does(in_sync, tmp_path):
    """gcloud prints `[]` for a block or zone it does not find: no drift counted, so the cron's metrics say why."""
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    said = in_sync("drift", "--reservation", empty)
    r = in_sync("metrics", "--drift-reservation", empty)
    assert (said.code, r.code) == (0, 0)
    assert "warning" in said.err and r.err == said.err
    assert drift_samples(r.out)[("reservation", "unplaced")] == 0


def test_metrics_without_drift_options_have_no_drift_family(in_sync):
    names = {f.name for f in text_string_to_metric_families(in_sync("metrics").out)}
    assert "tpufleet_cubes" in names and "tpufleet_drift_items" not in names
    one_line(in_sync("metrics", "--drift-mapping", "m.yaml"))


def test_promtool_accepts_the_drift_family(in_sync):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (the distribution's prometheus package provides it)")
    text = in_sync("metrics", "--drift-slices", SLICES, "--drift-reservation", RESERVATION).out
    assert "tpufleet_drift_items{" in text
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_drift_help_has_examples(cli):
    r = cli("drift", "--help", state=False)
    assert r.code == 0 and "Examples:" in r.out


def test_one_sub_block_change_is_one_drift_item(in_sync, tmp_path):
    """A sub-block turned DEGRADED (or back) was two items, `degraded_new` and `sub_blocks_updated`, and one whose
    maintenance began two, `drains_opened` and `sub_blocks_updated`: each change is counted once, by what it is."""
    doc = json.loads(RESERVATION.read_text())
    doc[5]["healthInfo"] = {"healthStatus": "DEGRADED", "healthyHostCount": 15, "degradedHostCount": 1}
    doc[7]["physicalTopology"].pop("subBlock")  # not a change: a list without positions keeps the recorded ones
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(doc))
    d = in_sync("drift", "--reservation", changed, "-o", "json").json["sources"]["reservation"]
    assert d["plan"]["sub_blocks_updated"] == [doc[5]["name"]]  # the import's own list: every record it writes
    assert d["drift"] == 1 and {k: n for k, n in d["kinds"].items() if n} == {"degraded_new": 1}
    assert in_sync("import", "reservation", changed, "--apply").code == 0
    r = in_sync("drift", "--reservation", RESERVATION, "-o", "json").json["sources"]["reservation"]
    assert r["drift"] == 1 and {k: n for k, n in r["kinds"].items() if n} == {"degraded_cleared": 1}
