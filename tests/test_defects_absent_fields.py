"""A field that is absent has no value to show: its message ends at the problem. It said "(value None)", which
reads as a field holding null; a field that holds null still shows "(value None)", as every other value is
shown."""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest
from test_defects_sweep_sim import one_line, write

from tpufleet.errors import BadStateFile
from tpufleet.generations_document import _EXAMPLE, from_document

SHIPPED_PROFILE = resources.files("tpufleet") / "data" / "hardware-profile.yaml"


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("  hop_latency: 1.0e-6\n", "", "field ici.hop_latency: is required"),
        ("  hop_latency: 1.0e-6\n", "  hop_latency: null\n", "field ici.hop_latency: must be a number (value None)"),
        ("schema_version: 1\n", "", "field schema_version: must be 1"),
    ],
)
def test_a_profile_without_a_figure_names_it_without_a_value(cli, tmp_path, old, new, said):
    text = SHIPPED_PROFILE.read_text()
    assert old in text
    profile = write(tmp_path, text.replace(old, new), "profile.yaml")
    argv = ("collective", "--topology", "4x4x4", "--op", "all-reduce", "--bytes", "1MiB", "--profile", profile)
    r = cli(*argv, state=False)
    assert r.code == 2 and one_line(r.err).endswith(f"profile.yaml: {said}"), r.err


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ({"type": "job", "chips": 4}, "field job: is required"),
        ({"type": "job", "job": None, "chips": 4}, "field job: is required (value None)"),
        ({"type": "job", "job": "a"}, "field chips: is required"),
        ({"type": "event", "event": "allocation", "time": 5, "chips": 4}, "field job: is required"),
        ({"type": "event", "job": "a", "event": "allocation", "chips": 4}, "field time: is required"),
        (
            {"type": "event", "job": "a", "event": "allocation", "time": None, "chips": 4},
            "field time: not a time (value None)",
        ),
        ({"type": "schema"}, "field version: is required"),
    ],
)
def test_a_goodput_record_without_a_field_names_it_without_a_value(cli, tmp_path, record, said):
    log = write(tmp_path, json.dumps(record) + "\n", "log.jsonl")
    r = cli("goodput-report", log, state=False)
    assert r.code == 2 and one_line(r.err).endswith(f"log.jsonl:1: {said}"), r.err


@pytest.mark.parametrize(
    ("doc", "said"),
    [
        ({"kind": "List"}, "field items: missing (must be a list)"),
        ({"items": []}, "field kind: must be List or NodeList (kubectl get nodes -o json)"),
        ({"kind": None, "items": []}, "field kind: must be List or NodeList (kubectl get nodes -o json) (value None)"),
        ({"kind": "List", "items": [{"kind": "Node"}]}, "field items.0.metadata: missing (must be an object)"),
    ],
)
def test_a_node_list_without_a_field_names_it_without_a_value(fleet, tmp_path, doc, said):
    nodes = write(tmp_path, json.dumps(doc), "nodes.json")
    r = fleet("import", "k8s", nodes)
    assert r.code == 2 and one_line(r.err).endswith(f"nodes.json: {said}"), r.err


def test_a_generation_profile_without_a_figure_names_it_without_a_value():
    doc = copy.deepcopy(_EXAMPLE)
    section = next(k for k, v in doc.items() if isinstance(v, dict))
    figure = next(iter(doc[section]))
    del doc[section][figure]
    with pytest.raises(BadStateFile) as caught:
        from_document(doc, "gen.yaml")
    assert str(caught.value) == f"gen.yaml: field {section}.{figure}: is required"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"step_start_time": 1767571210.0, "x": 1}, "field job_name: is required: a string of at most 4096 characters"),
        ({"job_name": "a", "step_start_time": 1767571210.0}, "field step_count: must be a whole number from 0 to "),
        ({"job_name": "a", "elastic_slice_counts_timestamp": 1767571210.0}, "field total_slices: is required"),
    ],
)
def test_an_ml_goodput_entry_without_a_field_names_it_without_a_value(cli, tmp_path, entry, said):
    log = write(tmp_path, json.dumps(entry) + "\n", "ml.jsonl")
    line = one_line(cli("goodput-report", log, "--format", "ml-goodput", state=False).err)
    assert f"ml.jsonl:1: {said}" in line and "(value" not in line, line


@pytest.mark.parametrize(
    ("name", "text", "args", "said"),
    [
        (
            "spec.yaml",
            "schema_version: 1\ngrid: {days: [1]}\n",
            ("sweep", "{f}", "--out", "{d}/o", "--serial"),
            "field simulation: is required",
        ),
        (
            "rates.yaml",
            "{}\n",
            ("simulate-availability", "--fault-rates", "{f}", "--trials", "10"),
            "field schema_version: is required",
        ),
    ],
)
def test_a_schema_checked_file_names_the_missing_field_itself(cli, tmp_path, name, text, args, said):
    """A missing field was named by its parent, with the whole parent as the value and the validator's words:
    "field <root>: it must contain ['simulation'] properties (value {...})"."""
    path = write(tmp_path, text, name)
    r = cli(*(a.format(f=path, d=tmp_path) for a in args), state=False)
    assert r.code == 2 and one_line(r.err).endswith(f"{name}: {said}"), r.err


def test_a_fault_batch_item_without_its_target_is_named_by_it(fleet, tmp_path):
    path = write(tmp_path, '[{"kind": "host"}]', "faults.json")
    r = fleet("inject-fault", "--from", path, "--dry-run")
    assert r.code == 2 and one_line(r.err).endswith("faults.json: field 0.target: is required"), r.err
