"""A node cordoned and then NotReady: a failure (the documented rule: a cordon says nothing of who cordoned, and
`kubectl cordon` and GKE's node upgrade set the same), unless GKE's own signal on the node says it is servicing it:
the label `cloud.google.com/active-node-maintenance: ONGOING` (GKE's host maintenance of a GPU/TPU node) or a drain
taint other than the cordon's (`cloud.google.com/impending-node-termination`, GKE's graceful termination;
`ToBeDeletedByClusterAutoscaler`). Then the NotReady is a planned drain; once the signal is gone, a failure again.
The lists are shaped as kubectl prints them: a cordon is `spec.unschedulable` with its
`node.kubernetes.io/unschedulable:NoSchedule` taint, a node gone silent `Ready=Unknown NodeStatusUnknown`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json"
ACTIVE = "cloud.google.com/active-node-maintenance"


def _list(tmp_path: Path, name: str, labels: dict[str, str] | None = None, taints: tuple[str, ...] = ()) -> Path:
    """The fixture with its first node cordoned and gone silent, carrying `labels` and these `NoSchedule` taints."""
    doc = json.loads(FIXTURE.read_text())
    node = doc["items"][0]
    node["metadata"]["labels"].update(labels or {})
    node["spec"]["unschedulable"] = True
    node["spec"]["taints"] = [
        *node["spec"]["taints"],
        *({"key": key, "effect": "NoSchedule", "timeAddedAt": "2026-11-20T09:00:00Z"} for key in taints),
    ]
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    ready.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.")
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _opened(r) -> list[tuple[str, bool]]:
    assert r.code == 0, r.err
    return [(f["target"], f["planned"]) for f in (*r.json["faults_opened"], *r.json["drains_opened"])]


CORDON = "node.kubernetes.io/unschedulable"


@pytest.fixture
def imported(fleet):
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    return fleet


def test_cordoned_then_notready_without_gke_signal_is_a_failure(imported, tmp_path):
    path = _list(tmp_path, "a.json", taints=(CORDON,))
    assert [planned for _, planned in _opened(imported("import", "k8s", path, "-o", "json"))] == [False]


@pytest.mark.parametrize(
    ("labels", "taints"),
    [
        ({ACTIVE: "ONGOING"}, (CORDON,)),
        ({}, (CORDON, "cloud.google.com/impending-node-termination")),
        ({}, (CORDON, "ToBeDeletedByClusterAutoscaler")),
    ],
)
def test_cordoned_then_notready_under_gke_maintenance_is_planned(imported, tmp_path, labels, taints):
    path = _list(tmp_path, "m.json", labels, taints)
    assert [planned for _, planned in _opened(imported("import", "k8s", path, "-o", "json"))] == [True]


def test_the_drain_becomes_a_failure_once_gke_no_longer_says_maintenance(imported, tmp_path):
    during = _list(tmp_path, "during.json", {ACTIVE: "ONGOING"}, (CORDON,))
    ((target, planned),) = _opened(imported("import", "k8s", during, "--apply", "-o", "json"))
    assert planned
    assert imported("import", "k8s", during, "--detailed-exitcode").code == 0  # a repeat: no change
    after = _list(tmp_path, "after.json", {}, (CORDON,))
    r = imported("import", "k8s", after, "-o", "json")
    assert _opened(r) == [(target, False)] and [f["target"] for f in r.json["faults_cleared"]] == [target]


def test_an_other_value_of_the_label_is_no_maintenance(imported, tmp_path):
    path = _list(tmp_path, "p.json", {ACTIVE: "PENDING"}, (CORDON,))
    assert [planned for _, planned in _opened(imported("import", "k8s", path, "-o", "json"))] == [False]


def test_export_of_the_drain_imports_back_unchanged(imported, tmp_path):
    during = _list(tmp_path, "during.json", {ACTIVE: "ONGOING"}, (CORDON,))
    assert imported("import", "k8s", during, "--apply").code == 0
    out = tmp_path / "export.json"
    assert imported("export", "node-labels", "-o", "json", "--out", out).code == 0
    assert imported("import", "k8s", out, "--detailed-exitcode").code == 0
