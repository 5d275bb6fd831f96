"""Native goodput logs through `goodput-report`: how a log's name picks CSV, and the rows and events refused (exit
2, one line naming file, line, field and value; skipped and counted with --skip-bad)."""

from __future__ import annotations

import gzip
import json
import re
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


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_a_csv_log_ended_by_any_line_break_reads_as_with_line_feeds(cli, tmp_path, newline):
    """A CSV log whose rows end with a lone CR was refused as "not valid CSV (... do you need to open the file in
    universal-newline mode?)", where a JSONL log so written is read: it is read, a bad row named by its line."""
    plain = tmp_path / "lf.csv"
    plain.write_text(CSV_HEADER + "".join(CSV_ROWS))
    log = tmp_path / "log.csv"
    log.write_bytes(plain.read_bytes().replace(b"\n", newline.encode()))
    assert figures(report(cli, log)) == figures(report(cli, plain))
    rows = [*CSV_ROWS]
    rows.insert(4, f"event,a,,,,{B + 5},step_start,-1\n")  # line 6: a step number below 0
    log.write_bytes((CSV_HEADER + "".join(rows)).replace("\n", newline).encode())
    assert f"{log}:6: field step:" in refused(cli, log)


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
    trailing = tmp_path / "trailing.csv"  # empty cells past the header (a spreadsheet's trailing commas): nothing lost
    trailing.write_text(CSV_HEADER + "".join(row.replace("\n", ",,\n") for row in CSV_ROWS))
    assert report(cli, trailing)["jobs"] == report(cli, clean)["jobs"]


def test_a_csv_row_with_fewer_fields_than_the_header_is_refused(cli, tmp_path):
    """A row cut short (a log still being written, a lost tail) is not a row of empty cells: refused naming file and
    line, or skipped and counted with --skip-bad."""
    log = tmp_path / "log.csv"
    rows = [*CSV_ROWS]
    rows.insert(4, f"event,a,,,,{B + 5},step_start\n")  # line 6: the step number's cell is missing
    log.write_text(CSV_HEADER + "".join(rows))
    err = refused(cli, log)
    assert f"{log}:6: field <row>:" in err and "7 fields, fewer than the header's 8 columns" in err
    rep = report(cli, log, "--skip-bad")
    assert rep["input"]["skipped"] == 1 and rep["input"]["records"] == len(CSV_ROWS)
    clean = tmp_path / "clean.csv"
    clean.write_text(CSV_HEADER + "".join(CSV_ROWS))
    assert rep["jobs"] == report(cli, clean)["jobs"]
    # a header ending in commas (a spreadsheet's export) names no more columns: its rows are whole without them
    commas = tmp_path / "commas.csv"
    commas.write_text(CSV_HEADER.replace("\n", ",,\n") + "".join(CSV_ROWS))
    assert report(cli, commas)["jobs"] == report(cli, clean)["jobs"]


def test_a_csv_header_naming_a_column_twice_is_refused(cli, tmp_path):
    """A second `time` column took every row's time from itself: the job's steps moved to its times unseen (and
    a row leaving it empty was refused as having no time). The header is refused, with --skip-bad too."""
    log = tmp_path / "log.csv"
    rows = [row.replace("\n", f",{B + 100 + k}\n") for k, row in enumerate(CSV_ROWS)]
    log.write_text(CSV_HEADER.replace("\n", ",time\n") + "".join(rows))
    err = refused(cli, log)
    assert f"{log}:1: field <header>:" in err and "'time'" in err
    assert f"{log}:1: field <header>:" in refused(cli, log, "--skip-bad")


def test_a_csv_header_with_an_unnamed_column_before_a_named_one_is_refused(cli, tmp_path):
    """`type,,job,...`: the second cell of every row was dropped unseen (a job's name typed there, the rows read as
    another job's). The header is refused naming the column's position, with --skip-bad too; unnamed columns past
    the last named one (a spreadsheet's trailing commas) stay accepted."""
    log = tmp_path / "log.csv"
    log.write_text(CSV_HEADER.replace("type,", "type,,") + "".join(row.replace(",", ",x,", 1) for row in CSV_ROWS))
    err = refused(cli, log)
    assert f"{log}:1: field <header>: column 2 has no name" in err and "(value '')" in err
    assert f"{log}:1: field <header>: column 2 has no name" in refused(cli, log, "--skip-bad")
    leading = tmp_path / "leading.csv"
    leading.write_text("," + CSV_HEADER + "".join("," + row for row in CSV_ROWS))
    assert f"{leading}:1: field <header>: column 1 has no name" in refused(cli, leading)


def test_a_csv_header_cell_of_spaces_alone_is_an_unnamed_column(cli, tmp_path):
    """`type,  ,job`: a column named by spaces alone had its cells read under that "name" and dropped unseen, as an
    unnamed one's were; it is refused as unnamed (blank), and past the last named column it names no column."""
    log = tmp_path / "log.csv"
    log.write_text(CSV_HEADER.replace("type,", "type,  ,") + "".join(row.replace(",", ",x,", 1) for row in CSV_ROWS))
    err = refused(cli, log)
    assert f"{log}:1: field <header>: column 2 has no name (it is blank)" in err and "(value '  ')" in err
    trailing = tmp_path / "trailing.csv"
    rows = [row.replace("\n", ",\n") for row in CSV_ROWS]
    rows[3] = rows[3].replace(",\n", ",7\n")  # line 5
    trailing.write_text(CSV_HEADER.replace("\n", ", \t \n") + "".join(rows))
    err = refused(cli, trailing)
    assert f"{trailing}:5: field <row>:" in err and "past the header's 8 named columns" in err
    # rows stopping at the last named column were refused as "fewer than the header's 9 columns"
    short = tmp_path / "short.csv"
    short.write_text(CSV_HEADER.replace("\n", ",  \n") + "".join(CSV_ROWS))
    assert report(cli, short)["input"]["records"] == len(CSV_ROWS)


@pytest.mark.parametrize("column", ["job", "ideal_step_s"])
def test_a_csv_header_naming_a_field_with_spaces_around_it_is_refused(cli, tmp_path, column):
    """`type, job, ...` (a space after each comma): the column " ideal_step_s" was read as no field, its cells
    dropped unseen (PG 0.444 "estimated" instead of the declared 0.222), and " job" said "field job: is required"
    on the first row."""
    log = tmp_path / "log.csv"
    log.write_text(CSV_HEADER.replace(f",{column},", f", {column},") + "".join(CSV_ROWS))
    for args in ((), ("--skip-bad",)):
        err = refused(cli, log, *args)
        assert f"{log}:1: field <header>: column" in err and "spaces around its name" in err
        assert f"(value ' {column}')" in err
    other = tmp_path / "other.csv"  # a column the reader does not know keeps its name as written
    other.write_text(CSV_HEADER.replace("\n", ", note\n") + "".join(row.replace("\n", ",x\n") for row in CSV_ROWS))
    assert report(cli, other)["input"]["records"] == len(CSV_ROWS)


@pytest.mark.parametrize("written", ["Type", "JOB", "Ideal_Step_S"])
def test_a_csv_header_naming_a_field_in_capitals_is_refused(cli, tmp_path, written):
    """A spreadsheet's `Type,Job,...,Ideal_Step_S`: the column was read as no field, its cells dropped unseen (PG
    an estimate instead of the declared ideal), or every row refused as "field type: must be job, event, ..."."""
    log = tmp_path / "log.csv"
    log.write_text(CSV_HEADER.replace(written.lower(), written, 1) + "".join(CSV_ROWS))
    err = refused(cli, log)
    assert f"{log}:1: field <header>: column" in err and "in capitals" in err and f"(value {written!r})" in err


def test_a_csv_row_filling_an_unnamed_column_past_the_header_is_refused(cli, tmp_path):
    """A header ending in commas names no more columns: a row filling one of them was read without that cell,
    unseen. The row is refused as one with a filled field past the header (skipped and counted with --skip-bad)."""
    log = tmp_path / "log.csv"
    rows = [row.replace("\n", ",,\n") for row in CSV_ROWS]
    rows[3] = rows[3].replace(",,\n", ",7,\n")  # line 5
    log.write_text(CSV_HEADER.replace("\n", ",,\n") + "".join(rows))
    err = refused(cli, log)
    assert f"{log}:5: field <row>:" in err and "past the header's 8 named columns" in err and "'7,'" in err
    rep = report(cli, log, "--skip-bad")
    assert rep["input"]["skipped"] == 1 and rep["input"]["records"] == len(CSV_ROWS) - 1


def allocations(job: dict[str, Any], *held: dict[str, Any]) -> list[str]:
    """A job record (first), allocation events and a short run of steps, as native JSON lines."""
    name = job["job"]
    rows: list[dict[str, Any]] = [{"type": "job", "accelerator": "tpu-v4", "ideal_step_s": 1.0, **job}]
    rows += [{"type": "event", "job": name, "time": B, "event": "allocation", **h} for h in held]
    rows.append({"type": "event", "job": name, "time": B, "event": "job_start"})
    rows += [{"type": "event", "job": name, "time": B + 1.0 + k, "event": "step_start", "step": k} for k in range(3)]
    rows.append({"type": "event", "job": name, "time": B + 10.0, "event": "job_end"})
    return [json.dumps(r) for r in rows]


READERS = ["standard", "msgspec", "columnar"]


def use_reader(monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    """Native pieces read by one reader: msgspec's, Arrow's columns, or line by line."""
    from tpufleet.goodput import columnar, fastread

    if reader == "msgspec" and not fastread.available():
        pytest.skip("msgspec is not installed")
    if reader == "columnar" and not columnar.available():
        pytest.skip("PyArrow is not installed")
    if reader != "msgspec":
        monkeypatch.setattr(fastread, "_DECODER", None)
    if reader == "standard":
        monkeypatch.setattr(columnar, "pa", None)


BEYOND = {  # (job record, allocations, the bad allocation's line, field, value)
    "chips": ({"job": "s", "chips": 8}, [{"chips": 8}, {"chips": 16}], 3, "chips", "16"),
    "slice": (
        {"job": "m", "chips": 8, "slices": 2},
        [{"chips": 4, "slice": 0}, {"chips": 4, "slice": 5}],
        3,
        "slice",
        "5",
    ),
    "slice chips": (
        {"job": "m", "chips": 8, "slices": 2},
        [{"chips": 4, "slice": 0}, {"chips": 9, "slice": 1}],
        3,
        "chips",
        "9",
    ),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", BEYOND.keys())
def test_an_allocation_beyond_its_job_record_is_a_bad_line(cli, tmp_path, monkeypatch, reader, case):
    """An allocation of more chips than the job's record says, or of a slice beyond its slices, was taken as
    the whole job held (or its chips capped): it is refused naming file, line, field and value, and --skip-bad
    skips it (the report is then that of the log without it), whichever reader decodes the piece."""
    use_reader(monkeypatch, reader)
    job, held, line, field, value = BEYOND[case]
    lines = allocations(job, *held)
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    err = refused(cli, log)
    assert f"{log}:{line}: field {field}: " in err and f"(value {value})" in err, err
    without = tmp_path / "without.jsonl"
    without.write_text("\n".join(lines[: line - 1] + lines[line:]) + "\n")
    skipped = report(cli, log, "--skip-bad")
    assert skipped["input"]["skipped"] == 1
    assert figures(skipped) == figures(report(cli, without))


@pytest.mark.parametrize("reader", READERS)
def test_allocations_within_the_record_are_read_as_before(cli, tmp_path, monkeypatch, reader):
    use_reader(monkeypatch, reader)
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(allocations({"job": "s", "chips": 8}, {"chips": 4}, {"chips": 8})) + "\n")
    assert report(cli, log)["jobs"][0]["all_allocated_s"] == 10
    sliced = allocations({"job": "m", "chips": 8, "slices": 2}, {"chips": 4, "slice": 0}, {"chips": 4, "slice": 1})
    log.write_text("\n".join(sliced) + "\n")
    assert report(cli, log)["jobs"][0]["all_allocated_s"] == 10


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", BEYOND.keys())
def test_a_job_record_after_allocations_beyond_it_is_refused(cli, tmp_path, monkeypatch, reader, case):
    """The record read last: which of the two is wrong cannot be told, so the record is refused naming its line
    (exit 2), and --skip-bad does not skip it, as two records of a job that disagree."""
    use_reader(monkeypatch, reader)
    job, held, _line, field, _value = BEYOND[case]
    lines = allocations(job, *held)
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([*lines[1:], lines[0]]) + "\n")
    record_field = "slices" if field == "slice" else "chips"
    for extra in ((), ("--skip-bad",)):
        err = refused(cli, log, *extra)
        assert f"{log}:{len(lines)}: field {record_field}: " in err, err
        assert f"(value {job[record_field]})" in err, err


def test_the_report_never_replaces_a_log_it_reads(fleet, tmp_path):
    """`--out` naming a log given (by its name, a symlink or as the --exclude file) wrote the report over it: the
    log was gone. Refused before anything is read, the log as it was."""
    log = tmp_path / "log.csv"
    log.write_text(CSV_HEADER + "".join(CSV_ROWS))
    link = tmp_path / "link.csv"
    link.symlink_to(log)
    exclude = tmp_path / "maintenance.json"
    exclude.write_text("[]")
    before = log.read_bytes(), exclude.read_bytes()
    for out, extra in ((log, ()), (link, ()), (exclude, ("--exclude", exclude))):
        err = refused(fleet, log, *extra, "--out", out)
        assert f"bad option --out '{out}'" in err
    r = fleet("metrics", "--goodput", log, "--out", link)
    assert r.code == 2 and "bad option --out" in r.err
    assert (log.read_bytes(), exclude.read_bytes()) == before


@pytest.mark.parametrize("reader", READERS)
def test_a_log_of_lone_cr_line_ends_over_a_mib_reads_as_its_lf_twin(tmp_path, monkeypatch, reader):
    """Lines ending at a lone CR are lines (as the README says, and as a log under a MiB was read): one over a MiB,
    read a piece at a time, was refused as line 1 "longer than the 1,048,576 bytes allowed for a line"; a bad line
    in it is named by its number, as in the same log with line feeds."""
    from test_goodput_fastpath import varied_log

    from tpufleet.errors import BadInput
    from tpufleet.goodput.events import MAX_LINE_BYTES
    from tpufleet.ops.goodput import build

    use_reader(monkeypatch, reader)
    lines = [json.dumps({"type": "capacity", "time": B, "accelerator": "tpu-v4", "chips": 100_000})]
    batch = 0
    while sum(len(line) + 1 for line in lines) <= 2 * MAX_LINE_BYTES:
        mine = [x for x in varied_log(batch, 6, 0) if '"capacity"' not in x and '"schema"' not in x]
        lines += [re.sub(r'"j([0-9])', rf'"b{batch}-j\1', x) for x in mine]  # each batch's jobs their own
        batch += 1
    lf, cr = tmp_path / "lf.jsonl", tmp_path / "cr.jsonl"
    lf.write_text("\n".join(lines) + "\n")
    cr.write_bytes(lf.read_bytes().replace(b"\n", b"\r"))
    expected = build([lf], capacity=[("tpu-v4", 100_000), ("tpu-v5e", 100_000)])
    got = build([cr], capacity=[("tpu-v4", 100_000), ("tpu-v5e", 100_000)])
    assert json.dumps(got).replace("cr.jsonl", "lf.jsonl") == json.dumps(expected)
    at = len(lines) * 3 // 4
    lines[at] = json.dumps({"type": "event", "job": "x", "time": "soon", "event": "job_start"})
    lf.write_text("\n".join(lines) + "\n")
    cr.write_bytes(lf.read_bytes().replace(b"\n", b"\r"))
    for path in (lf, cr):
        with pytest.raises(BadInput, match=rf"{path.name}:{at + 1}: field time"):
            build([path])
