"""Issue 26, the goodput items, through the CLI: gzip logs and standard input (10), --capacity over the logs'
capacity records (10), figures that stay finite whatever the input (12), the ml-goodput-measurement import against
the true timeline (11), memory bounded per line and per job (5), and messages that quote at most 60 characters.

Times in the ml-goodput timelines are seconds after 2026-01-05T00:00:00Z (B).
"""

from __future__ import annotations

import gzip
import html
import importlib
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import one_line, read_in_blocks
from tpufleet.goodput import eventlines, events

DEMO = Path(__file__).resolve().parents[1] / "tpufleet" / "data" / "demo-goodput.jsonl.gz"
B = 1767571200.0
NON_FINITE = re.compile(r"(?<![A-Za-z_])(inf|infinity|nan)(?![A-Za-z_])", re.IGNORECASE)  # .inf, Infinity, NaN


def report(cli: Any, *args: Any) -> dict[str, Any]:
    r = cli("goodput-report", *args, "-o", "json", state=False)
    assert r.code == 0, r.err
    return r.json


def without_files(rep: dict[str, Any]) -> dict[str, Any]:
    rep["input"].pop("files")
    return rep


def refused(cli: Any, *args: Any) -> str:
    """The one-line error of a refused report (exit 2)."""
    r = cli("goodput-report", *args, state=False)
    assert r.code == 2, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1, r.err
    return r.err


def feed_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def training(job: str = "a", **meta: Any) -> list[dict[str, Any]]:
    """A job record and three 10-s steps."""
    rows = [{"type": "job", "job": job, "chips": 4, **meta}]
    rows.append({"type": "event", "job": job, "time": B, "event": "job_start"})
    rows += [{"type": "event", "job": job, "time": B + 10 * k, "event": "step_start", "step": k} for k in (1, 2, 3)]
    return [*rows, {"type": "event", "job": job, "time": B + 40, "event": "job_end"}]


# ---- item 10: gzip, standard input, --capacity ------------------------------------------------------------
def test_a_gzip_log_reads_as_its_plain_text(cli, tmp_path):
    plain = tmp_path / "demo.jsonl"
    plain.write_bytes(gzip.decompress(DEMO.read_bytes()))
    assert without_files(report(cli, DEMO)) == without_files(report(cli, plain))


def test_sweep_keep_events_files_are_read(cli, tmp_path):
    # `sweep --keep-events` writes gzip.compress(..., mtime=0) under a .jsonl.gz name (tpufleet/sweep/runs.py)
    kept = tmp_path / "point0000-r0.jsonl.gz"
    kept.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in training()).encode(), mtime=0))
    (job,) = report(cli, kept)["jobs"]
    assert job["job"] == "a" and job["productive_steps"] == 3


@pytest.mark.parametrize("compressed", [False, True])
def test_dash_reads_standard_input(cli, tmp_path, monkeypatch, compressed):
    plain = gzip.decompress(DEMO.read_bytes())
    feed_stdin(monkeypatch, DEMO.read_bytes() if compressed else plain)
    from_stdin = report(cli, "-")
    (tmp_path / "demo.jsonl").write_bytes(plain)
    assert from_stdin["input"]["files"] == ["-"]
    assert without_files(from_stdin) == without_files(report(cli, tmp_path / "demo.jsonl"))


def test_dash_twice_is_refused(cli, monkeypatch):
    feed_stdin(monkeypatch, b"")
    assert "standard input" in refused(cli, "-", "-")


def test_a_damaged_gzip_log_is_one_line_naming_it(cli, tmp_path):
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(DEMO.read_bytes()[:1000])
    assert str(cut) in refused(cli, cut)


def test_the_size_limit_counts_decompressed_bytes(cli, tmp_path, monkeypatch):
    from tpufleet.state import goodputlogs

    monkeypatch.setattr(goodputlogs, "MAX_LOG_BYTES", 1024 * 1024)
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"\n" * (3 * 1024 * 1024)))  # 3 KB on disk, 3 MiB of text
    err = refused(cli, bomb)
    assert str(bomb) in err and "1 MiB" in err


def test_an_explicit_capacity_wins_over_the_logs_records_and_says_so(cli):
    in_logs = report(cli, DEMO)
    assert in_logs["fleet"]["capacity_basis"] == "events" and in_logs["input"]["capacity_records"] == 2
    r = cli("goodput-report", DEMO, "--capacity", "tpu-v4=8192,tpu-v5p=8192", "-o", "json", state=False)
    assert r.code == 0, r.err
    fleet = r.json["fleet"]
    assert fleet["capacity_basis"] == "flag"
    # the demo's records say 4096 + 4096 chips; the option doubles both: the capacity doubles and SG halves
    assert fleet["capacity_chip_s"] == pytest.approx(2 * in_logs["fleet"]["capacity_chip_s"], rel=1e-9)
    assert fleet["sg"] == pytest.approx(in_logs["fleet"]["sg"] / 2, abs=2e-6)
    (remark,) = r.err.strip().splitlines()
    assert "--capacity" in remark and "2 capacity record" in remark


def test_no_remark_when_the_logs_have_no_capacity_records(cli, tmp_path):
    log = write_lines(tmp_path / "a.jsonl", training())
    r = cli("goodput-report", log, "--capacity", "unknown=8", "-o", "json", state=False)
    assert r.code == 0 and r.err == "" and r.json["fleet"]["capacity_basis"] == "flag"


# ---- item 12: every figure finite ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"ideal_step_s": 1.7e308}, "ideal_step_s"),
        ({"ideal_step_s": "1e300"}, "ideal_step_s"),
        ({"flops_per_step": 1e300, "peak_flops_per_chip": 1.0}, "flops_per_step"),
    ],
)
def test_an_ideal_step_beyond_a_year_is_refused_naming_file_line_field_value(cli, tmp_path, meta, field):
    log = write_lines(tmp_path / "huge.jsonl", training(**meta))
    err = refused(cli, log, "-o", "yaml")
    assert f"{log}:1: field {field}:" in err and "(value " in err


def test_an_ideal_step_beyond_a_year_in_ml_goodput_metadata_is_refused(cli, tmp_path):
    log = tmp_path / "ml.jsonl"
    log.write_text(
        json.dumps({"job_name": "j", "job_start_time": B})
        + "\n"
        + json.dumps({"job_name": "j", "job_metadata": {"chips": 4, "ideal_step_s": 1.7e308}})
        + "\n"
    )
    assert f"{log}:2: field ideal_step_s:" in refused(cli, log, "--format", "ml-goodput")


def test_times_closer_to_the_epoch_than_a_microsecond_are_refused(cli, tmp_path):
    # steps 5e-324 s apart made PG's denominator subnormal and PG infinite (.inf in YAML)
    rows = [{"type": "job", "job": "a", "chips": 4, "ideal_step_s": 1}]
    rows += [{"type": "event", "job": "a", "time": t, "event": e} for t, e in ((0, "job_start"), (1e-323, "job_end"))]
    rows.insert(2, {"type": "event", "job": "a", "time": 5e-324, "event": "step_start", "step": 1})
    log = write_lines(tmp_path / "tiny.jsonl", rows)
    assert f"{log}:3: field time:" in refused(cli, log, "-o", "yaml")


@pytest.mark.parametrize("kind", ["json", "yaml", "csv", "md", "html", "table"])
def test_the_largest_allowed_figures_print_finite_in_every_format(cli, tmp_path, kind):
    year = events.MAX_IDEAL_STEP_S
    rows = training(ideal_step_s=year, flops_per_step=None)
    rows.append({"type": "capacity", "time": B, "accelerator": "unknown", "chips": 4})  # (the job's 4 chips fit)
    log = write_lines(tmp_path / "year.jsonl", rows)
    r = cli("goodput-report", log, "-o", kind, state=False)
    assert r.code == 0, r.err
    assert NON_FINITE.search(r.out) is None, NON_FINITE.search(r.out)
    if kind == "json":
        assert r.json["fleet"]["pg"] == pytest.approx(year / 10, rel=1e-6)  # a year an ideal step, 10 s a step


def test_checkpoint_advice_without_all_allocated_time_is_no_advice_not_exit_70(cli, tmp_path):
    # a job never holding all its chips, with a save and a failure: MTBF was 0 s / 1 and the advice divided by it
    rows = [{"type": "job", "job": "a", "chips": 4, "ideal_step_s": 1}]
    for t, name, extra in (
        (0, "job_start", {}),
        (0, "allocation", {"chips": 1}),
        (10, "step_start", {"step": 1}),
        (11, "checkpoint_start", {"step": 1}),
        (12, "checkpoint_end", {"step": 1}),
        (20, "failure", {}),
        (40, "job_end", {}),
    ):
        rows.append({"type": "event", "job": "a", "time": B + t, "event": name, **extra})
    fleet = report(cli, write_lines(tmp_path / "a.jsonl", rows))["fleet"]
    assert fleet["checkpoint_advice"] is None and fleet["all_allocated_chip_s"] == 0


# ---- item 11: the ml-goodput-measurement import against the true timeline ------------------------------------
def ml_log(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def ml(**kw: Any) -> dict[str, Any]:
    return {"job_name": "j", **{k: B + v if k.endswith("_time") else v for k, v in kw.items()}}


def checkpoint(kind: str, step: int, start: float, seconds: float) -> dict[str, Any]:
    """A checkpoint-logger entry as the package writes it (no job name: the file's only job)."""
    prefix = "checkpoint_manager_blocking" if kind == "save" else "checkpoint_manager"
    checkpointer = "checkpointer_blocking" if kind == "save" else "checkpointer"
    entry = {"event_type": kind, "step": step, "directory": "gs://b/c", f"{prefix}_start_time": B + start}
    entry |= {f"{prefix}_duration_secs": seconds, f"{checkpointer}_duration_secs": seconds}
    if kind == "save":
        entry |= {"wait_for_prev_duration_secs": 0.0, "get_old_steps_duration_secs": 0.0}
    return entry


def ml_job(cli: Any, log: Path) -> dict[str, Any]:
    (job,) = report(cli, log, "--format", "ml-goodput")["jobs"]
    return job


def restore_inside_prep() -> list[dict[str, Any]]:
    """Run 1: init 0..2, prep 2..6, steps 1..4 from 10 every 10 s, a save of step 2 at 21..22. Run 2 from 100:
    init 100..102, training prep 102..106 holding the restore of step 2 at 103..105 (MaxText restores while it
    prepares), steps 3..5 from 110; end 140."""
    run1 = [ml(job_start_time=0), ml(tpu_init_start_time=0), ml(tpu_init_end_time=2)]
    run1 += [ml(training_prep_start_time=2), ml(training_prep_end_time=6)]
    run1 += [ml(step_count=s, step_start_time=10 + 10 * (s - 1)) for s in (1, 2, 3, 4)]
    run1.append(checkpoint("save", 2, 21, 1))
    run2 = [ml(job_start_time=100), ml(tpu_init_start_time=100), ml(tpu_init_end_time=102)]
    run2 += [ml(training_prep_start_time=102), checkpoint("restore", 2, 103, 2), ml(training_prep_end_time=106)]
    run2 += [ml(step_count=s, step_start_time=110 + 10 * (s - 3)) for s in (3, 4, 5)]
    return run1 + run2 + [ml(job_end_time=140)]


def test_training_prep_after_a_restore_holds_the_restore_made_inside_it(cli, tmp_path):
    """Run 2's prep is its whole 4 s (it was 2 s: the restore inside it outranked it), 8 s over both runs, as
    the package counts it. The package also counts the nested restore's 2 s (6 s of badput in those 4 s, taken
    from OTHER); tpufleet gives each instant one label, so the restore made while preparing is prep."""
    job = ml_job(cli, ml_log(tmp_path / "ml.jsonl", restore_inside_prep()))
    assert job["badput_s"]["training_prep"] == 8 and job["badput_s"]["checkpoint_restore"] == 0
    assert job["badput_s"]["tpu_initialization"] == 4 and job["all_allocated_s"] == 140


def complete_restart(first_step: int, load_in_lost_step: bool) -> list[dict[str, Any]]:
    """Run 1: steps from `first_step`, four of them every 5 s from 10; a restart at 100 from the same first step
    (no checkpoint: a complete restart), five steps every 5 s from 110; end 140. Optionally run 1's second step
    loads data 16..19."""
    steps = range(first_step, first_step + 5)
    run1 = [ml(job_start_time=0)] + [ml(step_count=s, step_start_time=10 + 5 * k) for k, s in enumerate(steps[:4])]
    if load_in_lost_step:
        run1 += [ml(data_loading_start_time=16), ml(data_loading_end_time=19)]
    run2 = [ml(job_start_time=100)] + [ml(step_count=s, step_start_time=110 + 5 * k) for k, s in enumerate(steps)]
    return run1 + run2 + [ml(job_end_time=140)]


def test_a_complete_restart_wastes_every_lost_step_whole(cli, tmp_path):
    """Run 1's steps are all redone: 10..25 is lost (the disruption is placed at the last step's start, 25, by
    the package's rule), 15 s, data loading inside a lost step included (it was 12 s: the 3 s load outranked
    the lost step). The package counts 15 s wasted and the load again as data loading (6 s: twice)."""
    job = ml_job(cli, ml_log(tmp_path / "ml.jsonl", complete_restart(1, load_in_lost_step=True)))
    assert job["badput_s"]["wasted_progress_from_disruption"] == 15
    assert job["badput_s"]["data_loading_sync"] == 0
    assert job["badput_s"]["infrastructure_recovery_from_disruption"] == 75  # 25..100
    assert job["productive_s"] == 30  # 110..140


def test_a_complete_restart_from_step_0_is_wasted_progress_too(cli, tmp_path):
    """Steps numbered from 0: the same 15 s of run 1 are lost. ml-goodput-measurement 0.2.3 counts no wasted
    progress here (0 s, the 15 s in OTHER), as if step 0 were no step: the package is wrong against the timeline
    and tpufleet keeps the timeline (the oracle test below shows the package's figure)."""
    job = ml_job(cli, ml_log(tmp_path / "ml.jsonl", complete_restart(0, load_in_lost_step=False)))
    assert job["badput_s"]["wasted_progress_from_disruption"] == 15


try:
    package: Any = importlib.import_module("ml_goodput_measurement.src.goodput")
except ImportError:
    package = None


@pytest.mark.skipif(package is None, reason="ml-goodput-measurement is not installed")
def test_the_package_agrees_where_the_timelines_say_and_differs_where_documented(cli, tmp_path):
    from test_goodput_mlimport import package_figures

    prep = restore_inside_prep()
    _, theirs = package_figures(prep)
    mine = ml_job(cli, ml_log(tmp_path / "prep.jsonl", prep))["badput_s"]
    assert theirs["training_prep"] == mine["training_prep"] == 8
    assert theirs["checkpoint_restore"] == 2 != mine["checkpoint_restore"]  # counted twice by the package
    lost = complete_restart(1, load_in_lost_step=True)
    _, theirs = package_figures(lost)
    mine = ml_job(cli, ml_log(tmp_path / "lost.jsonl", lost))["badput_s"]
    assert theirs["wasted_progress_from_disruption"] == mine["wasted_progress_from_disruption"] == 15
    _, theirs = package_figures(complete_restart(0, load_in_lost_step=False))
    assert theirs.get("wasted_progress_from_disruption", 0) == 0  # the package's figure for steps from 0


# ---- item 5: memory bounded per line and per job -------------------------------------------------------------
def long_line_log(path: Path, position: str) -> Path:
    """A job whose record carries a nested list longer than the line limit, first or after other lines."""
    nested = '{"type":"job","job":"a","chips":4,"notes":[' + "[]," * (events.MAX_LINE_BYTES // 3) + "[]]}\n"
    good = "".join(json.dumps(r) + "\n" for r in training())
    path.write_text(nested + good if position == "first" else good + nested)
    return path


@pytest.mark.parametrize(("position", "line"), [("first", 1), ("last", 7)])
def test_a_line_over_the_limit_is_refused_before_it_is_decoded(cli, tmp_path, position, line):
    log = long_line_log(tmp_path / "long.jsonl", position)
    err = refused(cli, log)
    assert f"{log}:{line}: field <line>:" in err and f"{events.MAX_LINE_BYTES:,}" in err


def test_a_line_over_the_limit_is_one_skipped_record_with_skip_bad(cli, tmp_path):
    log = long_line_log(tmp_path / "long.jsonl", "first")
    rep = report(cli, log, "--skip-bad")
    assert rep["input"]["skipped"] == 1 and rep["input"]["records"] == 6
    assert rep["jobs"][0]["productive_steps"] == 3


def test_a_line_over_the_limit_split_across_pieces(cli, tmp_path, monkeypatch):
    blocks = read_in_blocks(monkeypatch, 64 * 1024)  # the long line spans many pieces
    log = long_line_log(tmp_path / "long.jsonl", "last")
    assert f"{log}:7: field <line>:" in refused(cli, log)
    rep = report(cli, log, "--skip-bad")
    assert rep["input"]["skipped"] == 1 and rep["jobs"][0]["productive_steps"] == 3
    assert len(blocks.reads) == 2 and blocks.fewest() > events.MAX_LINE_BYTES // (64 * 1024)


PIECE = 64 * 1024
LONG_LINE_ENDS = {  # where the line end of a line over the limit starts (the pieces read before it are whole)
    "mid-piece": 2 * events.MAX_LINE_BYTES + 100,
    "last-byte-of-a-piece": 33 * PIECE - 1,  # more than a piece over the limit: dropped up to its end
    "last-byte-of-the-piece-over-the-limit": 17 * PIECE - 1,  # found over the limit in the piece it ends in
}


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("end", LONG_LINE_ENDS)
def test_the_lines_after_a_line_over_the_limit_keep_their_numbers(cli, tmp_path, monkeypatch, newline, end):
    """A line over the limit spanning pieces was dropped up to its first line-end byte: in a CR LF log the LF was
    then an empty line (every later line named one on), and where its CR was the last byte of a piece, the next
    line was dropped too. Now the line ends where the readers say it does."""
    blocks = read_in_blocks(monkeypatch, PIECE)
    first, last = '{"type":"job","job":"b","chips":4}', '{"type":"job","job":"b","chips":8}'
    start = len(first) + len(newline)
    long = '{"type":"job","job":"a","notes":"' + "x" * (LONG_LINE_ENDS[end] - start - 35) + '"}'
    log = tmp_path / "long.jsonl"
    log.write_text(newline.join([first, long, last]) + newline, newline="")
    assert log.read_bytes().index(newline.encode(), start) == LONG_LINE_ENDS[end]
    assert f"{log}:2: field <line>:" in refused(cli, log)
    err = refused(cli, log, "--skip-bad")
    assert f"{log}:3: field chips: the record of job 'b' at {log}:1 says 4 (value 8)" in err
    assert blocks.fewest() > events.MAX_LINE_BYTES // PIECE


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("piece", [None, (events.MAX_LINE_BYTES + 1) // 17], ids=["one-piece", "end-last-in-a-piece"])
def test_a_line_of_exactly_the_limit_is_read_whatever_ends_it(cli, tmp_path, monkeypatch, newline, piece):
    """A line of exactly MAX_LINE_BYTES was "longer than the 1,048,576 bytes allowed" when a CR LF ended it (its CR
    counted), or a lone CR that was a piece's last byte; ended by a LF, it was read. Now the line's own bytes count."""
    blocks = read_in_blocks(monkeypatch, piece) if piece else None
    assert not piece or piece * 17 == events.MAX_LINE_BYTES + 1  # its line end's first byte ends piece 17
    head = '{"type":"job","job":"a","chips":4,"notes":"'
    line = head + "x" * (events.MAX_LINE_BYTES - len(head) - 2) + '"}'
    log = tmp_path / "exact.jsonl"
    log.write_text(newline.join([line, *map(json.dumps, training())]) + newline, newline="")
    assert len(line.encode()) == events.MAX_LINE_BYTES
    rep = report(cli, log)
    assert rep["input"]["skipped"] == 0 and rep["input"]["records"] == 7
    assert blocks is None or blocks.fewest() > 16


LATER_BAD_LINES = {
    "not-utf8": (b'{"type":"event","job":"a\xff","time":1767571200.0,"event":"job_end"}', "not UTF-8 text"),
    "over-the-limit": (b'{"type":"job","job":"b","notes":"' + b"x" * events.MAX_LINE_BYTES + b'"}', "longer than"),
}


@pytest.mark.parametrize("later", LATER_BAD_LINES)
def test_the_first_bad_line_of_a_piece_is_the_one_named(cli, tmp_path, later):
    """A bad record at line 2 and, further on in the same 8 MiB piece, a line not UTF-8 or over the limit: that
    later line was named (a piece's bytes were checked before any of its records was read), so which error a log
    gave hung on where its pieces fell. Now the first bad line is named, as when the two are pieces apart."""
    good = [json.dumps(r).encode() for r in training()]
    bad_time = b'{"type":"event","job":"a","time":"x","event":"job_start"}'
    line, problem = LATER_BAD_LINES[later]
    log = tmp_path / "two-bad.jsonl"
    log.write_bytes(b"\n".join([good[0], bad_time, *good[1:], line]) + b"\n")
    assert (
        refused(cli, log)
        == f"tpufleet: error: {log}:2: field time: not an ISO 8601 time or POSIX seconds (value 'x')\n"
    )
    log.write_bytes(b"\n".join([*good, line]) + b"\n")
    assert f"{log}:7: field <line>: {problem}" in refused(cli, log)


def test_an_ml_goodput_line_over_the_limit_is_refused(cli, tmp_path):
    log = tmp_path / "ml.jsonl"
    log.write_text(json.dumps({"job_name": "j", "job_start_time": B, "x": [[]] * events.MAX_LINE_BYTES}) + "\n")
    assert f"{log}:1: field <line>:" in refused(cli, log, "--format", "ml-goodput")


@pytest.mark.parametrize("fast", [True, False])
def test_more_jobs_than_the_limit_is_one_line_naming_the_log(cli, tmp_path, monkeypatch, fast):
    from tpufleet.goodput import fastread

    monkeypatch.setattr(events, "MAX_JOBS", 5)
    if not fast:
        monkeypatch.setattr(fastread, "_DECODER", None)
    rows = [r for k in range(5) for r in training(f"j{k}")]
    assert len(report(cli, write_lines(tmp_path / "five.jsonl", rows))["jobs"]) == 5
    log = write_lines(tmp_path / "six.jsonl", rows + training("j5"))
    err = refused(cli, log)
    assert str(log) in err and "more than 5 jobs" in err and "'j5'" in err


def test_more_ml_goodput_jobs_than_the_limit_is_refused(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(events, "MAX_JOBS", 2)
    log = ml_log(tmp_path / "ml.jsonl", [{"job_name": f"j{k}", "job_start_time": B} for k in range(3)])
    assert "more than 2 jobs" in refused(cli, log, "--format", "ml-goodput")


# Memory per job is measured in benchmarks/bench_input_memory.py (a figure beside its baseline, not a test).


# ---- messages quote at most 60 characters of a bad value ------------------------------------------------------
@pytest.mark.parametrize(
    "record",
    [
        {"type": "job", "job": "a", "chips": 4, "ideal_step_s": "9" * 5000},
        {"type": "job", "job": "a", "chips": 4, "flops_per_step": "9" * 5000, "peak_flops_per_chip": 1},
        {"type": "event", "job": "a", "time": "1" * 5000, "event": "job_start"},
    ],
)
def test_messages_quote_at_most_60_characters_of_a_bad_value(cli, tmp_path, record):
    log = write_lines(tmp_path / "bad.jsonl", [record])
    err = refused(cli, log)
    value = err.rsplit("(value ", 1)[1].rstrip().removesuffix(")")
    assert len(value) <= 60, err


def test_the_too_many_jobs_message_quotes_at_most_60_characters(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(events, "MAX_JOBS", 1)
    rows = training("a") + training("b" * 4000)
    err = refused(cli, write_lines(tmp_path / "two.jsonl", rows))
    assert len(err.rsplit("(value ", 1)[1].rstrip().removesuffix(")")) <= 60


def test_a_job_seen_only_in_per_slice_allocations_counts_against_the_job_limit(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(events, "MAX_JOBS", 2)
    lines = [
        '{"type":"event","job":"a","time":1767571300.0,"event":"job_start"}',
        '{"type":"event","job":"b","time":1767571300.0,"event":"job_start"}',
        '{"type":"event","job":"c","time":1767571301.0,"event":"allocation","chips":4,"slice":0}',
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    r = cli("goodput-report", str(log))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "log.jsonl" in r.err and "more than 2 jobs" in r.err and "'c'" in r.err
    lines[1] = lines[1].replace('"job_start"', '"allocation","chips":4,"slice":1').replace('"b"', '"a"')
    log.write_text("\n".join(lines) + "\n")  # a job's slices are one job: two jobs fit
    assert cli("goodput-report", str(log), "-o", "json").code == 0


@pytest.mark.parametrize(
    "lines",
    [
        ['{"type":"event","job":"a","time":1767571300.0,"event":"submitted"}'],
        ['{"type":"event","job":"a","time":1767571300.0,"event":"job_start"}'],
        [
            '{"type":"event","job":"a","time":1767571300.0,"event":"job_start"}',
            '{"type":"event","job":"a","time":1767571300.0,"event":"job_end"}',
        ],
    ],
    ids=["submitted-only", "started-only", "no-time-between"],
)
def test_a_job_with_no_time_span_draws_an_empty_timeline(cli, tmp_path, lines):
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    r = cli("goodput-report", str(log), "-o", "html")
    assert r.code == 0, r.err
    assert "<html" in r.out.lower() and '"a"' in r.out


@pytest.mark.parametrize("fmt", ["native", "ml-goodput"])
def test_a_lone_surrogate_escape_is_bad_input_naming_the_line(cli, tmp_path, fmt):
    native = [
        '{"type":"job","job":"\\ud800x","accelerator":"tpu-v4","chips":4}',
        '{"type":"event","job":"\\ud800x","time":1767571200.0,"event":"job_start"}',
        '{"type":"event","job":"\\ud800x","time":1767571300.0,"event":"job_end"}',
    ]
    ml = [
        '{"job_name": "a\\udfff", "job_start_time": 1767571200.0}',
        '{"job_name": "a\\udfff", "job_end_time": 1767571300.0}',
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(native if fmt == "native" else ml) + "\n")
    for output in ("table", "json", "html"):
        r = cli("goodput-report", str(log), "--format", fmt, "-o", output)
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1, (output, r.err)
        assert "log.jsonl:1:" in r.err and "surrogate" in r.err


def test_a_lone_surrogate_in_an_exclusion_is_bad_input(cli, tmp_path):
    spans = tmp_path / "spans.json"
    spans.write_text('[{"start": 1767571200, "end": 1767571300, "reason": "\\ud800"}]')
    r = cli("goodput-report", str(DEMO), "--exclude", str(spans), "-o", "json")
    assert r.code == 2 and "spans.json" in r.err and "surrogate" in r.err, r.err


def test_an_exclusion_file_that_is_no_list_is_named_as_a_whole_file(cli, tmp_path):
    """It was named at a "line 0" no editor has (`spans.json:0: field <file>`), where every other file refused
    as a whole is `FILE: field <root>`."""
    spans = tmp_path / "spans.json"
    spans.write_text('{"start": 1}')
    r = cli("goodput-report", str(DEMO), "--exclude", str(spans), state=False)
    assert r.code == 2
    assert one_line(r) == (
        f"tpufleet: error: {spans}: field <root>: must be a JSON list of {{start, end, reason}} (value {{'start': 1}})"
    )


START = '{"jsonPayload": {"job_name": "a", "job_start_time": 1767571200}}'
END = '{"jsonPayload": {"job_name": "a", "job_end_time": 1767571300}}'


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (f"[{START},{END}]\n" + '{"job_name": "b", "job_start_time": 1767571200}\n', 2, "content after the array"),
        (f"[{START}]\n[{END}]\n", 2, "content after the array"),
        (f"[{START}\n {END}]\n", 2, "a comma or ] expected"),
        (f"[{START},\n,{END}]\n", 2, "not valid JSON"),
        (f"[{START},\n]\n", 2, "not valid JSON"),
        (f"[\n{START},\n", 3, "the array is not closed"),
    ],
)
def test_a_cloud_logging_array_is_read_whole_or_refused_naming_the_line(cli, tmp_path, text, line, says):
    """Lines after the array's end (a second export appended, say) were dropped without a word; elements must
    stand one comma apart, as JSON has them. --skip-bad cannot skip them: where an entry starts is unknown."""
    path = tmp_path / "entries.json"
    path.write_text(text)
    for extra in ((), ("--skip-bad",)):
        message = refused(cli, str(path), "--format", "ml-goodput", *extra)
        assert f" {path}:{line}: " in message and says in message, message
    path.write_text(f"[\n  {START},\n\n  {END}\n]\n\n")
    assert report(cli, str(path), "--format", "ml-goodput")["input"]["records"] == 2


def event(job: str, t: float, name: str, **extra: Any) -> str:
    return json.dumps({"type": "event", "job": job, "time": t, "event": name, **extra})


@pytest.mark.parametrize(
    ("lines", "window"),
    [
        # the job ran 100..200; its only event inside --since is a stray one after its end
        ([event("a", 100, "job_start"), event("a", 200, "job_end"), event("a", 300, "submitted")], ("--since", "250")),
        # the job ran 100..200; its only event inside --until is a stray step before its start
        (
            [event("a", 40, "step_start", step=1), event("a", 100, "job_start"), event("a", 200, "job_end")],
            ("--until", "50"),
        ),
    ],
)
def test_a_window_holding_only_events_outside_every_job_is_refused_not_reversed(cli, tmp_path, lines, window):
    """The report's window ran backwards (start 250, end 200), every figure empty and exit 0."""
    path = tmp_path / "stray.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert "no job events in the input inside --since/--until" in refused(cli, str(path), *window)
    inside = {"--since": "150", "--until": "150"}[window[0]]
    rep = report(cli, str(path), window[0], inside)
    assert rep["fleet"]["window"]["start"] <= rep["fleet"]["window"]["end"]


def test_markdown_shows_job_names_as_text_not_links_images_or_emphasis(cli, tmp_path):
    # a job named like a Markdown image made every viewer of the report fetch that address
    names = ["![x](http://tracker.invalid/p.png)", "[ok](http://phish.invalid)", "*bold* _it_ `code`", "a\\|b"]
    log = write_lines(tmp_path / "names.jsonl", [row for name in names for row in training(name)])
    r = cli("goodput-report", log, "-o", "md", state=False)
    assert r.code == 0, r.err
    markdown_it = pytest.importorskip("markdown_it")
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(r.out)
    assert "<img" not in page and "<a " not in page and "<em>" not in page and "<code>" not in page
    for name in names:
        assert f"<td>{html.escape(name, quote=False)}</td>" in page


def test_blank_lines_are_skipped_without_a_parse_each(monkeypatch, tmp_path):
    """Each blank line went through the JSON parser and its exception before being skipped: a log of blank lines
    (1 MB compressed, 256 MiB of newlines) tied the machine up for half an hour. The same answer, no parse."""
    parsed: list[str] = []
    real = eventlines.parse_json_line  # type: ignore[attr-defined]  # patched where read_native_lines finds it

    def counting(raw: str) -> Any:
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(eventlines, "parse_json_line", counting)
    record = json.dumps({"type": "job", "job": "j", "chips": 64, "accelerator": "tpu-v4"})
    lines = [(i, text) for i, text in enumerate(["", "  ", "\t", record, " \r"], start=1)]
    log = eventlines.read_native_lines(iter(lines), "log.jsonl", events.Log())
    assert parsed == [record] and log.skipped == 0


@pytest.mark.parametrize("mark", ["\u2028", "\u2029", "\x85"])
def test_a_job_named_with_a_unicode_line_separator_is_one_record_not_two_halves(cli, tmp_path, mark):
    """JSON lets U+2028, U+2029 and U+0085 stand raw in a string (json.dumps with ensure_ascii=False writes them so),
    and a JSON-lines log ends its lines with a line feed; the standard reader split lines where str.splitlines()
    does, so such a job's records were 'not valid JSON' (exit 2, or skipped with --skip-bad)."""
    name = f"train{mark}eval"

    def line(record: Any) -> str:
        return json.dumps(record, ensure_ascii=False)

    native = tmp_path / "log.jsonl"
    records = [
        {"type": "capacity", "time": B, "accelerator": "tpu-v4", "chips": 64},
        {"type": "job", "job": name, "accelerator": "tpu-v4", "chips": 8},
        {"type": "event", "job": name, "time": B, "event": "job_start"},
        {"type": "event", "job": name, "time": B + 100, "event": "step_start", "step": 1},
        {"type": "event", "job": name, "time": "2026-01-05T00:03:20Z", "event": "job_end"},  # a time as text
    ]
    native.write_text("".join(line(r) + "\r\n" for r in records), encoding="utf-8")
    (job,) = report(cli, native)["jobs"]
    assert job["job"] == name and job["productive_steps"] == 1
    ml = tmp_path / "ml.jsonl"
    entries = [
        {"job_name": name, "job_start_time": B},
        {"job_name": name, "step_count": 1, "step_start_time": B + 10},
        {"job_name": name, "step_count": 2, "step_start_time": B + 20},
        {"job_name": name, "job_end_time": B + 30},
    ]
    ml.write_text("\n".join(line(e) for e in entries), encoding="utf-8")
    (job,) = report(cli, ml, "--format", "ml-goodput")["jobs"]
    assert job["job"] == name


def test_mpg_is_the_product_of_the_unrounded_factors(cli, tmp_path):
    """SG 2/3, RG 1, PG 0.5: MPG is 1/3, 0.333333; the product of the factors already rounded to 6 places gave
    0.333334 (job, fleet, segment, period and window rows alike)."""
    log = write_lines(
        tmp_path / "a.jsonl",
        [
            {"type": "job", "job": "a", "chips": 4, "ideal_step_s": 5},
            {"type": "event", "job": "a", "time": B, "event": "submitted"},
            {"type": "event", "job": "a", "time": B + 10, "event": "job_start"},
            {"type": "event", "job": "a", "time": B + 10, "event": "step_start", "step": 1},
            {"type": "event", "job": "a", "time": B + 20, "event": "step_start", "step": 2},
            {"type": "event", "job": "a", "time": B + 30, "event": "job_end"},
        ],
    )
    rep = report(cli, log, "--period", "day", "--window", "30s")
    rows = [rep["fleet"], *rep["segments"], *rep["periods"], *rep["windows"], *rep["jobs"]]
    assert [(r["sg"], r["rg"], r["pg"], r["mpg"]) for r in rows] == [(0.666667, 1.0, 0.5, 0.333333)] * len(rows)


def test_a_record_without_type_shows_no_value_and_an_ml_goodput_entry_names_its_format(cli, tmp_path):
    """A native log's record without `type` was refused with `(value None)`, as if it held null; an
    ml-goodput-measurement log read as native (no --format) said nothing of the format either."""
    entry = write_lines(tmp_path / "ml.jsonl", [{"job_name": "a", "job_start_time": 5.0}])
    err = refused(cli, entry)
    assert "ml.jsonl:1: field type:" in err and "(value" not in err and "--format ml-goodput" in err
    plain = write_lines(tmp_path / "n.jsonl", [{"job": "a"}])
    err = refused(cli, plain)
    assert "n.jsonl:1: field type:" in err and "(value" not in err and "--format" not in err
    assert "(value None)" in refused(cli, write_lines(tmp_path / "null.jsonl", [{"type": None, "job": "a"}]))


def test_a_job_without_job_start_holds_its_chips_from_its_first_event_after_submission(cli, tmp_path):
    """Submitted at 0, stepping from 50 to its end at 70, no job_start and no allocation logged: it was counted
    all-allocated from its submission (70 s, SG 1, 50 s of `other`) instead of from its first step (20 s)."""
    log = write_lines(
        tmp_path / "q.jsonl",
        [
            {"type": "job", "job": "q", "chips": 4, "ideal_step_s": 10},
            {"type": "event", "job": "q", "time": B, "event": "submitted"},
            {"type": "event", "job": "q", "time": B + 50, "event": "step_start", "step": 1},
            {"type": "event", "job": "q", "time": B + 60, "event": "step_start", "step": 2},
            {"type": "event", "job": "q", "time": B + 70, "event": "job_end"},
        ],
    )
    (job,) = report(cli, log)["jobs"]
    assert (job["all_allocated_s"], job["demand_s"], job["productive_s"]) == (20.0, 70.0, 20.0)
    assert (job["sg"], job["rg"], job["badput_s"]["other"]) == (0.285714, 1.0, 0.0)


def test_a_raw_control_character_in_a_log_line_is_named_once_with_its_column(cli, tmp_path):
    """A tab typed raw inside a job name was refused as "Invalid control character at at column 23"."""
    log = tmp_path / "tab.jsonl"
    log.write_text('{"type":"job","job":"a\tb","chips":4}\n')
    err = refused(cli, log)
    assert "tab.jsonl:1: field <line>: not valid JSON (" in err and "at column 23)" in err and " at at " not in err


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_markdown_and_html_reports_say_what_the_input_lacks(cli, tmp_path, monkeypatch, fmt):
    """`-o md` and `-o html` said nothing of the records --skip-bad skipped, nor of a gzip log cut off before its
    end (the table, the JSON and stderr did): a report shared from them read as complete."""
    records = [r for k in range(200) for r in training(f"job-{k}")]
    whole = gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode(), mtime=0)
    monkeypatch.chdir(tmp_path)
    log = Path("cut.jsonl.gz")
    log.write_bytes(whole[: len(whole) // 2])
    r = cli("goodput-report", log, "--skip-bad", "-o", fmt, state=False)
    assert r.code == 0, r.err
    assert "skipped 1 malformed record(s)" in r.out
    cut_line = cli("goodput-report", log, "--skip-bad", "-o", "json", state=False).json["input"]["cut_off"][0]["line"]
    assert f"gzip stream cut off at {log}:{cut_line}: the rest of that log is missing" in r.out
