"""`export kueue-topology`: every Topology object, v1beta2 (the default) and v1beta1, valid against the published
Kueue Topology CRD's schema for its version (tests/crds/kueue-topology-crd.json, with its source and tag), and
against the CRD's two CEL rules a new object must pass (checked here by hand: JSON Schema does not run CEL)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import fastjsonschema
import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures"
CRD = json.loads((Path(__file__).parent / "crds" / "kueue-topology-crd.json").read_text())
HOSTNAME = "kubernetes.io/hostname"


def validator(version: str):
    return fastjsonschema.compile(CRD["versions"][version])


def check_topology(doc: dict) -> None:
    """The CRD's schema for the object's version, then its CEL rules: levels unique, the hostname level last."""
    version = doc["apiVersion"].removeprefix("kueue.x-k8s.io/")
    validator(version)(doc)
    labels = [level["nodeLabel"] for level in doc["spec"]["levels"]]
    assert len(set(labels)) == len(labels), labels
    assert HOSTNAME not in labels or labels[-1] == HOSTNAME, labels


@pytest.fixture(params=["v4-nodes", "tpu7x-reservation"])
def exported(request, cli):
    if request.param == "v4-nodes":
        assert cli("init").code == 0
        assert cli("import", "k8s", FIXTURES / "k8s" / "pod-64.json", "--apply").code == 0
    else:
        assert cli("init", "--generation", "tpu7x").code == 0
        reservation = FIXTURES / "gke" / "tpu7x-reservation-subblocks.json"
        assert cli("import", "reservation", reservation, "--apply").code == 0
    return cli


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_every_topology_passes_the_published_crd(exported, version):
    r = exported("export", "kueue-topology", "--api-version", version, "-o", "json")
    assert r.code == 0, r.err
    topologies = [d for d in r.json["items"] if d["kind"] == "Topology"]
    assert len(topologies) == 1 and topologies[0]["apiVersion"] == f"kueue.x-k8s.io/{version}"
    for doc in topologies:
        check_topology(doc)
        assert doc["spec"]["levels"][-1]["nodeLabel"] == HOSTNAME


def test_the_schema_refuses_what_the_api_server_would(exported):
    (doc,) = [d for d in exported("export", "kueue-topology", "-o", "json").json["items"] if d["kind"] == "Topology"]
    check = validator("v1beta2")
    edits: list[dict[str, object]] = [{"levels": []}, {"levels": [{"nodeLabel": "Not A Label"}]}, {"levels": [{}]}, {}]
    for edit in edits:
        bad = copy.deepcopy(doc)
        bad["spec"] = edit
        with pytest.raises(fastjsonschema.JsonSchemaValueException):
            check(bad)
    both = copy.deepcopy(doc)
    both["spec"]["levels"] = list(reversed(both["spec"]["levels"]))
    with pytest.raises(AssertionError):
        check_topology(both)  # the hostname level first: the CEL rule refuses it


def test_the_crd_file_names_its_source_and_both_versions():
    assert "kubernetes-sigs/kueue" in CRD["source"] and "v0.19.2" in CRD["source"]
    assert sorted(CRD["versions"]) == ["v1beta1", "v1beta2"]
