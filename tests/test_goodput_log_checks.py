"""Native goodput logs through `goodput-report`: how a log's name picks CSV, and the rows and events refused (exit
2, one line naming file, line, field and value; skipped and counted with --skip-bad)."""

from __future__ import annotations

import gzip
from typing import Any

import pytest

from tpufleet.state import goodputlogs

B = 1767571200.0  # 2026-01-05T00:00:00Z
CSV_HEADER = "type,job,accelerator,chips,ideal_step_s,time,event,step\n"
CSV_ROWS = [
    "job,a,tpu-v4,8,1,,,\n",
    f"event,a,,8,,{B},allocation,\n",
    f"event,a,,,,{B},job_start,\n",
    f"event,a,,,,{B + 1},step_start,0\n",
    f"event,a,,,,{B + 2},step_start,1\n",
    f"event,a,,,,{B + 10},job_end,\n",
]


def report(cli: Any, *args: Any) -> dict[str, Any]:
    r = cli("goodput-report", *args, "-o", "json", state=False)
    assert r.code == 0, r.err
    return r.json


def refused(cli: Any, *args: Any) -> str:
    """The one-line error of a refused report (exit 2)."""
    r = cli("goodput-report", *args, state=False)
    assert r.code == 2, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1, r.err
    return r.err


def figures(rep: dict[str, Any]) -> dict[str, Any]:
    return {"fleet": rep["fleet"], "jobs": rep["jobs"], "records": rep["input"]["records"]}


@pytest.mark.parametrize("name", ["log.csv.gz", "LOG.CSV.GZ"])
def test_a_gzip_compressed_csv_log_reads_as_csv(cli, tmp_path, name):
    plain = tmp_path / "log.csv"
    plain.write_text(CSV_HEADER + "".join(CSV_ROWS))
    packed = tmp_path / name
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    expected = report(cli, plain)
    assert expected["fleet"]["jobs"] == 1 and expected["input"]["records"] == len(CSV_ROWS)
    assert figures(report(cli, packed)) == figures(expected)
    log, _size = goodputlogs.load_part(packed, "native", False)  # a log a Dask worker reads
    assert log.records == len(CSV_ROWS)


def test_a_csv_row_with_more_fields_than_the_header_is_refused(cli, tmp_path):
    """An extra cell belongs to no column: the row is refused naming file and line (it was read without it), and
    --skip-bad skips and counts it as any other bad row."""
    log = tmp_path / "log.csv"
    rows = [*CSV_ROWS]
    rows.insert(4, f"event,a,,,,{B + 5},step_start,2,extra\n")  # line 6
    log.write_text(CSV_HEADER + "".join(rows))
    err = refused(cli, log)
    assert f"{log}:6: field <row>:" in err and "9 fields" in err and "'extra'" in err
    rep = report(cli, log, "--skip-bad")
    assert rep["input"]["skipped"] == 1 and rep["input"]["records"] == len(CSV_ROWS)
    clean = tmp_path / "clean.csv"
    clean.write_text(CSV_HEADER + "".join(CSV_ROWS))
    assert rep["jobs"] == report(cli, clean)["jobs"]
