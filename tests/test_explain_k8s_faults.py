"""A fault `import k8s` opened is closed by the next import whose node list no longer reports it; `clear-fault` by
hand while the node is still unwell is undone by that import. `explain` (of the slice it stops, its job, the
component) gave `tpufleet clear-fault fN` as the step; it names the import, and says why, as for a reservation's
drain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NODES = Path(__file__).parent.parent / "fixtures/k8s/pod-64.json"
IMPORT = "tpufleet import k8s NODES.json --apply"


@pytest.fixture
def stopped(cli, tmp_path):
    """A two-cube pod, both cubes held (slice k on c00, job j on c01); then a node of c00 goes NotReady and
    `import k8s` opens its fault: k is evicted with nowhere to go. Returns the CLI, the healthy and the unwell
    node lists."""
    doc = json.loads(NODES.read_text())
    doc["items"] = doc["items"][:32]  # the first two cubes' nodes
    well, unwell = tmp_path / "well.json", tmp_path / "unwell.json"
    well.write_text(json.dumps(doc))
    doc["items"][3]["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    unwell.write_text(json.dumps(doc))
    for args in (
        ("init", "--cubes-per-pod", "2"),
        ("import", "k8s", well, "--apply"),
        ("allocate", "k", "--shape", "4x4x4"),
        ("plan-xconnect", "k", "--apply"),
        ("allocate", "j", "--shape", "4x4x4", "--slices", "1"),
        ("import", "k8s", unwell, "--apply"),
    ):
        r = cli(*args)
        assert r.code == 0, (args, r.err)
    return cli, well, unwell


def test_explain_names_the_import_not_clear_fault(stopped):
    cli, _, _ = stopped
    (fault,) = cli("faults", "-o", "json").json
    assert fault["reason"].startswith("k8s: ")
    slice_ = cli("explain", "k", "-o", "json").json
    assert slice_["state"] == "evicted"
    assert slice_["next"] == [IMPORT, "tpufleet reschedule k", "tpufleet routes k"]
    assert any(w.startswith(f"{fault['id']} was opened by `tpufleet import k8s`") for w in slice_["why"])
    component = cli("explain", fault["target"], "-o", "json").json
    assert component["next"] == [IMPORT]
    assert not any("clear-fault" in step for step in slice_["next"] + component["next"])


def test_another_fault_is_still_cleared_by_hand(stopped):
    cli, _, _ = stopped
    assert cli("inject-fault", "host:c01/1").code == 0
    fault = next(f for f in cli("faults", "-o", "json").json if f["target"] == "host:c01/1")
    assert cli("explain", "host:c01/1", "-o", "json").json["next"] == [f"tpufleet clear-fault {fault['id']}"]


def test_the_named_import_closes_the_fault_and_the_steps_then_move_the_slice(stopped):
    """The steps explain gives, run in order with the node well again, leave no fault and the slice running."""
    cli, well, _ = stopped
    for step in cli("explain", "k", "-o", "json").json["next"]:
        args = step.removeprefix("tpufleet ").split()
        args = [str(well) if a == "NODES.json" else a for a in args]
        r = cli(*args)
        assert r.code == 0, (step, r.err)
    assert cli("faults", "-o", "json").json == []
    row = next(s for s in cli("show", "slices", "-o", "json").json if s["name"] == "k")
    assert row["state"] == "connected"
