"""A command refuses its options before it reads standard input: `metrics --goodput - --drift-mapping -` read the
log piped to it whole (waiting for its writer to finish) and then refused --drift-mapping, the input lost."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from helpers import one_line

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize(
    ("more", "said"),
    [
        (("--drift-mapping", "-"), "bad option --drift-mapping: it maps the node list; give --drift-nodes too"),
        (
            ("--drift-nodes", FIXTURES / "k8s" / "pod-64.json", "--drift-mapping", "-"),
            "'-' is not standard input here; give the mapping file's name",
        ),
    ],
)
def test_metrics_refuses_its_drift_options_before_reading_a_log_on_standard_input(fleet, monkeypatch, more, said):
    piped = io.BytesIO((FIXTURES / "goodput" / "fleet.jsonl").read_bytes())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped))
    assert said in one_line(fleet("metrics", "--goodput", "-", *more))
    assert piped.tell() == 0  # nothing of standard input was read


def test_import_reservation_refuses_an_unknown_pod_before_reading_standard_input(cli, monkeypatch):
    """`gcloud ... | tpufleet import reservation - --pod typo` read the list whole before the pod was found unknown."""
    assert cli("init", "--generation", "tpu7x").code == 0
    piped = io.BytesIO((FIXTURES / "gke" / "tpu7x-reservation-subblocks.json").read_bytes())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped))
    said = one_line(cli("import", "reservation", "-", "--pod", "pod9"))
    assert said == "tpufleet: error: bad option --pod: unknown pod 'pod9' (pods: pod0)"
    assert piped.tell() == 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("drift", "--nodes", "-", "--reservation", "missing.json"), "missing.json: field <root>: cannot be read"),
        (("drift", "--slices", "-", "--nodes", "missing.json"), "missing.json: field <root>: cannot be read"),
        (("metrics", "--goodput", "-", "--drift-slices", "missing.json"), "missing.json: field <root>: cannot be read"),
    ],
)
def test_files_are_read_before_standard_input(fleet, monkeypatch, tmp_path, args, said):
    """`kubectl ... | tpufleet drift --nodes - --reservation typo.json` read the piped list whole before the file
    named wrong was found missing: the files are read first, standard input last."""
    monkeypatch.chdir(tmp_path)
    piped = io.BytesIO((FIXTURES / "k8s" / "pod-64.json").read_bytes())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped))
    assert said in one_line(fleet(*args))
    assert piped.tell() == 0


@pytest.mark.parametrize(
    "args",
    [
        ("import", "k8s", "-"),
        ("import", "reservation", "-"),
        ("import", "slices", "-"),
        ("drift", "--slices", "-"),
        ("metrics", "--goodput", "-"),
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_missing_state_is_refused_before_standard_input_is_read(cli, monkeypatch, args):
    """`kubectl get nodes -o json | tpufleet --state typo import k8s -` read the list whole, then found no fleet
    state: the state is looked for first."""
    piped = io.BytesIO((FIXTURES / "k8s" / "pod-64.json").read_bytes())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped))
    assert one_line(cli(*args), 1).startswith("tpufleet: error: no fleet state in ")
    assert piped.tell() == 0
