"""An empty framework name (`"framework": ""`) is refused wherever a job's framework is given: a native job record
(every JSON-lines reader), an ml-goodput `job_metadata` entry, a workload's `frameworks` mix; exit 2 naming the
file, line, field and value, or skipped with `--skip-bad`. In a CSV log an empty cell is no field: `unknown`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tpufleet.errors import BadInput
from tpufleet.goodput import columnar, fastread
from tpufleet.ops.goodput import build
from tpufleet.state import goodputpool

B = 1767571200.0
JOB = {"type": "job", "job": "a", "accelerator": "tpu-v4", "chips": 8, "framework": "", "ideal_step_s": 10}
EVENTS = [
    {"type": "event", "job": "a", "time": B, "event": "job_start"},
    {"type": "event", "job": "a", "time": B, "event": "step_start", "step": 1},
    {"type": "event", "job": "a", "time": B + 40, "event": "job_end"},
]


def log(tmp_path: Path, job: dict[str, Any]) -> Path:
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*EVENTS[:1], job, *EVENTS[1:]]))
    return path


def test_an_empty_framework_is_refused_naming_file_line_field_and_value(cli, tmp_path):
    path = log(tmp_path, JOB)
    r = cli("goodput-report", path, state=False)
    assert r.code == 2
    assert f"{path}:2: field framework: must not be empty" in r.err and "(value '')" in r.err
    ok = cli("goodput-report", path, "--skip-bad", "-o", "json", state=False)
    assert ok.code == 0 and ok.json["input"]["skipped"] == 1
    assert ok.json["input"]["jobs_without_record"] == ["a"]


def test_a_framework_left_out_or_null_is_unknown(cli, tmp_path):
    for job in ({k: v for k, v in JOB.items() if k != "framework"}, {**JOB, "framework": None}):
        r = cli("goodput-report", log(tmp_path, job), "-o", "json", state=False)
        assert r.code == 0 and r.json["jobs"][0]["framework"] == "unknown"


@contextmanager
def only_reader(reader: str) -> Iterator[None]:
    """Logs read in this process by one reader alone: the standard one, msgspec's or the columnar one (skipped
    where its library is not installed)."""
    if reader == "msgspec" and not fastread.available():
        pytest.skip("msgspec is not installed")
    if reader == "columns" and not columnar.available():
        pytest.skip("PyArrow is not installed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 1 << 62)
        if reader != "msgspec":
            mp.setattr(fastread, "_DECODER", None)
        if reader == "standard":
            mp.setattr(columnar, "pa", None)
        yield


@pytest.mark.parametrize("reader", ["standard", "msgspec", "columns"])
def test_every_json_lines_reader_refuses_it_alike(tmp_path, reader):
    path = log(tmp_path, JOB)
    with only_reader(reader):
        with pytest.raises(BadInput, match=r"a\.jsonl:2: field framework: must not be empty"):
            build([path])
        assert build([path], skip_bad=True)["input"]["skipped"] == 1


def test_a_cluster_refuses_it_alike(tmp_path):
    pytest.importorskip("distributed", reason="Dask is an optional extra: no cluster here")
    with pytest.raises(BadInput, match=r"a\.jsonl:2: field framework: must not be empty"):
        build([log(tmp_path, JOB)], workers=1)


def test_an_ml_goodput_metadata_entry_with_an_empty_framework_is_refused(cli, tmp_path):
    path = tmp_path / "ml.jsonl"
    entries = [
        {"job_name": "a", "job_start_time": B},
        {"job_name": "a", "job_metadata": {"chips": 8, "framework": ""}},
        {"job_name": "a", "step_count": 1, "step_start_time": B},
        {"job_name": "a", "job_end_time": B + 40},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    r = cli("goodput-report", path, "--format", "ml-goodput", state=False)
    assert r.code == 2 and f"{path}:2: field framework: must not be empty" in r.err
    ok = cli("goodput-report", path, "--format", "ml-goodput", "--skip-bad", "-o", "json", state=False)
    assert ok.code == 0 and ok.json["input"]["skipped"] == 1


def test_an_empty_csv_cell_is_no_framework(cli, tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(
        "type,job,accelerator,chips,framework,time,event,step\n"
        "job,a,tpu-v4,8,,,,\n"
        f"event,a,,,,{B},job_start,\n"
        f"event,a,,,,{B},step_start,1\n"
        f"event,a,,,,{B + 40},job_end,\n"
    )
    r = cli("goodput-report", path, "-o", "json", state=False)
    assert r.code == 0 and r.json["jobs"][0]["framework"] == "unknown"


def test_a_workload_with_an_empty_framework_name_is_refused(cli, tmp_path):
    workload = tmp_path / "w.yaml"
    workload.write_text('schema_version: 1\nframeworks: {"": 1, "jax": 1}\n')
    r = cli("simulate-fleet", "--days", "0.1", "--workload", workload, state=False)
    assert r.code == 2
    assert f"{workload}: field frameworks: key '' is not accepted" in r.err


@pytest.mark.parametrize(
    ("field", "problem"),
    [
        ("accelerator", "must not be empty (leave the field out: unknown)"),
        ("phase", "must be one of training, serving, bulk_inference"),
        ("topology", "must not be empty (leave the field out)"),
        ("priority", "must not be empty (leave the field out)"),
    ],
)
def test_the_other_names_of_a_job_are_refused_empty_too(cli, tmp_path, field, problem):
    # "" was read as the field left out: a serving job with `"phase": ""` was accounted as training
    job = {k: v for k, v in JOB.items() if k != "framework"} | {"phase": "serving", field: ""}
    path = log(tmp_path, job)
    r = cli("goodput-report", path, state=False)
    assert r.code == 2 and f"{path}:2: field {field}: {problem}" in r.err and "(value '')" in r.err
    csv_log = tmp_path / "a.csv"  # an empty CSV cell is still the field left out
    csv_log.write_text(
        f"type,job,accelerator,chips,phase,topology,priority,time,event\njob,a,tpu-v4,8,serving,,,,\n"
        f"event,a,,,,,,{B},job_start\nevent,a,,,,,,{B + 40},job_end\n"
    )
    ok = cli("goodput-report", csv_log, "-o", "json", state=False)
    assert ok.code == 0 and ok.json["jobs"][0]["phase"] == "serving"


CAPACITY = {"type": "capacity", "time": B, "accelerator": "", "chips": 100000}


@pytest.mark.parametrize("reader", ["standard", "msgspec", "columns"])
def test_a_capacity_record_with_an_empty_accelerator_is_refused_by_every_reader(tmp_path, reader):
    """A capacity record's `"accelerator": ""` was read as "unknown": its 100,000 chips went into the fleet's
    capacity and the fleet's SG fell 50x with no word. Refused as in a job record; `--skip-bad` skips it."""
    path = tmp_path / "a.jsonl"
    good = {**JOB, "framework": "jax"}
    path.write_text("".join(json.dumps(r) + "\n" for r in [good, CAPACITY, *EVENTS]))
    with only_reader(reader):
        with pytest.raises(BadInput, match=r"a\.jsonl:2: field accelerator: must not be empty \(leave the field out"):
            build([path])
        skipped = build([path], skip_bad=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in [good, *EVENTS]))
        without = build([path])
    assert skipped["input"]["skipped"] == 1
    assert skipped["fleet"] == without["fleet"]


def test_a_capacity_row_with_an_empty_accelerator_cell_is_unknown(cli, tmp_path):
    """In CSV an empty cell is no field: the row is a capacity of no named accelerator, exactly as the JSON record
    that leaves the key out."""
    rows = [
        "type,job,time,event,step,accelerator,chips,ideal_step_s",
        "job,a,,,,tpu-v4,8,10",
        f"capacity,,{B},,,,16,",
        f"event,a,{B},job_start,,,,",
        f"event,a,{B},step_start,1,,,",
        f"event,a,{B + 40},job_end,,,,",
    ]
    csv = tmp_path / "a.csv"
    csv.write_text("\n".join(rows) + "\n")
    capacity = {"type": "capacity", "time": B, "chips": 16}
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in [{**JOB, "framework": "jax"}, capacity, *EVENTS]))
    from_csv = cli("goodput-report", csv, "-o", "json", state=False)
    from_json = cli("goodput-report", jsonl, "-o", "json", state=False)
    assert from_csv.code == from_json.code == 0, from_csv.err + from_json.err
    assert from_csv.json["fleet"] == from_json.json["fleet"]
    assert from_json.json["fleet"]["capacity_chip_s"] == 16 * 40
