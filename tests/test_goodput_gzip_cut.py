"""A gzip-compressed log cut off mid-way (a copy or an upload that stopped): the whole lines before the cut are
read, and the cut is one bad line naming file and line; an error (exit 2, one line) without --skip-bad. Every
reader agrees: native JSON lines (the fast decoders and the line reader), CSV, ml-goodput's (the columnar and
the entry-by-entry importer), and the reading on a Dask worker."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from test_goodput_fastpath import B, varied_log
from test_goodput_log_checks import READERS, use_reader

from tpufleet.ops import goodputparts
from tpufleet.ops.goodput import build
from tpufleet.state import goodputlogs


def cut_gzip(text: str, path: Path, keep: float = 0.6) -> tuple[str, int]:
    """`text` gzip-compressed into `path`, cut off after `keep` of its bytes: (the whole lines before the cut, the
    line the cut falls on)."""
    packed = gzip.compress(text.encode(), mtime=0)
    cut = packed[: int(len(packed) * keep)]
    path.write_bytes(cut)
    recovered = zlib.decompressobj(31).decompress(cut).decode()
    assert len(recovered) < len(text)
    whole = recovered[: recovered.rfind("\n") + 1]
    return whole, whole.count("\n") + 1


def comparable(rep: dict[str, Any]) -> dict[str, Any]:
    return {"fleet": rep["fleet"], "jobs": rep["jobs"], "records": rep["input"]["records"]}


def check_cut(cli: Any, tmp_path: Path, text: str, name: str, *options: str) -> None:
    """The cut log with --skip-bad reports what its whole lines give, with the cut one bad line named; without
    --skip-bad it is one error naming the file and the line."""
    whole, line = cut_gzip(text, tmp_path / f"{name}.gz")
    plain = tmp_path / name
    plain.write_text(whole)
    expected = cli("goodput-report", plain, *options, "--skip-bad", "-o", "json", state=False)
    assert expected.code == 0, expected.err
    r = cli("goodput-report", tmp_path / f"{name}.gz", *options, "--skip-bad", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert comparable(r.json) == comparable(expected.json)
    assert r.json["input"]["skipped"] == expected.json["input"]["skipped"] + 1
    assert r.json["input"]["cut_off"] == [{"file": str(tmp_path / f"{name}.gz"), "line": line}]
    assert f"{name}.gz:{line}: the gzip stream is cut off" in r.err
    table = cli("goodput-report", tmp_path / f"{name}.gz", *options, "--skip-bad", state=False)
    assert f"gzip stream cut off at {tmp_path / name}.gz:{line}" in table.out
    refused = cli("goodput-report", tmp_path / f"{name}.gz", *options, state=False)
    assert refused.code == 2, refused.err
    assert refused.err.strip().count("\n") == 0
    assert f"{name}.gz:{line}: field <line>: the gzip stream is cut off here" in refused.err


@pytest.mark.parametrize("reader", READERS)
def test_a_cut_native_log_reads_its_whole_lines(cli, tmp_path, monkeypatch, reader):
    use_reader(monkeypatch, reader)
    check_cut(cli, tmp_path, "\n".join(varied_log(3, 6, 0)) + "\n", "log.jsonl")


def test_a_cut_csv_log_reads_its_whole_rows(cli, tmp_path):
    rows = [
        "type,job,accelerator,chips,ideal_step_s,time,event,step",
        "job,a,tpu-v4,8,1,,,",
        f"event,a,,,,{B},job_start,",
    ]
    rows += [f"event,a,,,,{B + 1 + k},step_start,{k}" for k in range(2000)]
    rows.append(f"event,a,,,,{B + 3000},job_end,")
    check_cut(cli, tmp_path, "\n".join(rows) + "\n", "log.csv")


@pytest.mark.parametrize("entry_by_entry", [False, True])
def test_a_cut_ml_goodput_log_reads_its_whole_entries(cli, tmp_path, entry_by_entry):
    name = "r\\u0065" if entry_by_entry else "re"  # an escape: the log is read entry by entry, not on columns
    entries = [{"job_name": "re", "job_start_time": B}]
    entries += [{"job_name": "re", "step_count": k, "step_start_time": B + 10 + k} for k in range(3000)]
    text = "\n".join(json.dumps(e).replace('"re"', f'"{name}"', 1) for e in entries) + "\n"
    check_cut(cli, tmp_path, text, "ml.jsonl", "--format", "ml-goodput")


def test_a_cut_json_array_of_entries_is_named_as_cut(cli, tmp_path):
    """A JSON array (gcloud's export) is read whole: cut, it is refused, with --skip-bad too, saying it is cut
    (not that the entry the cut runs through is no JSON)."""
    entries = [{"jsonPayload": {"job_name": "re", "step_count": k, "step_start_time": B + k}} for k in range(3000)]
    _whole, line = cut_gzip(json.dumps(entries, indent=2), tmp_path / "entries.json.gz")
    for args in ((), ("--skip-bad",)):
        r = cli("goodput-report", tmp_path / "entries.json.gz", "--format", "ml-goodput", *args, state=False)
        assert r.code == 2 and f"entries.json.gz:{line}: field <line>: the gzip stream is cut off here" in r.err


def test_a_dask_worker_reads_a_cut_log_as_the_report_does(tmp_path):
    whole, line = cut_gzip("\n".join(varied_log(4, 6, 0)) + "\n", tmp_path / "log.jsonl.gz")
    *_, counts = goodputparts.summarize_part(
        str(tmp_path / "log.jsonl.gz"), "native", True, None, None, [], False, None, False
    )
    assert counts.cut_off == [(str(tmp_path / "log.jsonl.gz"), line)] and counts.skipped == 1
    log, _content = goodputlogs.load_part(tmp_path / "log.jsonl.gz", "native", True)
    assert log.records == len(whole.splitlines())


def test_a_cluster_names_the_cut_as_the_serial_report_does(tmp_path):
    pytest.importorskip("distributed", reason="Dask is an optional extra: no cluster here")
    cut_gzip("\n".join(varied_log(4, 6, 0)) + "\n", tmp_path / "log.jsonl.gz")
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(line.replace('"j', '"other-j') for line in varied_log(5, 3, 0)[2:]) + "\n")
    paths = [tmp_path / "log.jsonl.gz", other]
    serial = build(paths, skip_bad=True, capacity=[("tpu-v4", 100_000), ("tpu-v5e", 100_000)])
    shared = build(paths, skip_bad=True, capacity=[("tpu-v4", 100_000), ("tpu-v5e", 100_000)], workers=2)
    assert json.dumps(shared) == json.dumps(serial)
    assert serial["input"]["cut_off"][0]["file"] == str(tmp_path / "log.jsonl.gz")


def test_a_log_being_written_reads_its_whole_lines_without_an_error(tmp_path):
    """`serve` reads logs still being written: a gzip log is cut short until its writer closes it."""
    whole, _line = cut_gzip("\n".join(varied_log(6, 4, 0)) + "\n", tmp_path / "log.jsonl.gz")
    log = goodputlogs.load([tmp_path / "log.jsonl.gz"], "native", False, whole_lines=True)
    assert log.records == len(whole.splitlines()) and not log.cut_off and not log.skipped


def test_a_cut_stream_on_standard_input_is_named_as_input_files_names_it(tmp_path):
    """`input.cut_off[].file` gave `<stdin>` where `input.files` gives `-`: a script matching one against the other
    found no file. Both say `-`; the table and the warning say standard input's name, `<stdin>`."""
    import subprocess
    import sys

    _, line = cut_gzip("\n".join(varied_log(3, 6, 0)) + "\n", tmp_path / "cut.gz")
    cmd = [sys.executable, "-m", "tpufleet", "goodput-report", "-", "--skip-bad"]
    data = (tmp_path / "cut.gz").read_bytes()
    r = subprocess.run([*cmd, "-o", "json"], input=data, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    read = json.loads(r.stdout)["input"]
    assert read["files"] == ["-"] and read["cut_off"] == [{"file": "-", "line": line}]
    assert f"<stdin>:{line}: the gzip stream is cut off" in r.stderr.decode()
    table = subprocess.run(cmd, input=data, capture_output=True, timeout=120)
    assert f"gzip stream cut off at <stdin>:{line}" in table.stdout.decode()


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_standard_input_redirected_from_a_file_or_piped_is_the_files_report(tmp_path, packed):
    """`-` read from a file it was redirected from (a stream that can seek: it is sought back over the bytes that
    told gzip from text) or from a pipe (they are put in front): the same report as the file named, but its name."""
    import subprocess
    import sys

    text = "\n".join(varied_log(4, 5, 0)) + "\n"
    path = tmp_path / ("log.jsonl.gz" if packed else "log.jsonl")
    path.write_bytes(gzip.compress(text.encode(), mtime=0) if packed else text.encode())
    cmd = [sys.executable, "-m", "tpufleet", "goodput-report", "-o", "json"]
    named = json.loads(subprocess.run([*cmd, str(path)], capture_output=True, check=True, timeout=120).stdout)
    with path.open("rb") as redirected:
        sought = subprocess.run([*cmd, "-"], stdin=redirected, capture_output=True, check=True, timeout=120)
    piped = subprocess.run([*cmd, "-"], input=path.read_bytes(), capture_output=True, check=True, timeout=120)
    named["input"]["files"] = ["-"]
    assert json.loads(sought.stdout) == json.loads(piped.stdout) == named
