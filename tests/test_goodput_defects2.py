"""goodput-report defects of the second review (/tmp/h_serve: H1-H3, M4, M5), each pinned: a fleet ratio over
accelerators without a capacity (H1), an interval of an ml-goodput entry that ends before it starts (H2), a
capacity smaller than the chips the jobs hold (H3), Dask's worker log on a bad record (M4), and job records that
disagree, or are missing (M5). Each refusal is exit 2 with one line naming file, line, field and value, the same
whichever reader (line by line, msgspec's, Arrow's columns, the ml-goodput columns, a Dask cluster) reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import read_in_blocks
from tpufleet.errors import BadInput
from tpufleet.goodput import columnar, fastread, mlfast
from tpufleet.ops.goodput import build
from tpufleet.state import goodputpool

B = 1767571200.0  # 2026-01-05T00:00:00Z


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def job(name: str, chips: int = 8, accelerator: str = "tpu-v4", **more: Any) -> dict[str, Any]:
    return {"type": "job", "job": name, "accelerator": accelerator, "chips": chips, "ideal_step_s": 5, **more}


def ran(name: str, start: float, end: float, chips: int | None = 8) -> list[dict[str, Any]]:
    """A job holding `chips` (no allocation event when None) from `start`, stepping every 10 s, ending at `end`."""
    rows = (
        [] if chips is None else [{"type": "event", "job": name, "time": start, "event": "allocation", "chips": chips}]
    )
    rows.append({"type": "event", "job": name, "time": start, "event": "job_start"})
    t, step = start, 1
    while t < end:
        rows.append({"type": "event", "job": name, "time": t, "event": "step_start", "step": step})
        t, step = t + 10, step + 1
    rows.append({"type": "event", "job": name, "time": end, "event": "job_end"})
    return rows


def capacity(chips: int, time: float = B, accelerator: str = "tpu-v4") -> dict[str, Any]:
    return {"type": "capacity", "time": time, "accelerator": accelerator, "chips": chips}


READERS = ("lines", "msgspec", "columns")


def by_reader(paths: list[Path], reader: str, fmt: str = "native", **options: Any) -> Any:
    """The report, or ("error", message), with only one of the native readers on (or the ml-goodput columns, for
    "msgspec", off for "lines"); pieces of 256 bytes, so a native log is many pieces (checked: an ml-goodput log is
    read whole)."""
    with pytest.MonkeyPatch.context() as mp:
        blocks = read_in_blocks(mp, 256)
        mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 1 << 62)
        if reader != "msgspec":
            mp.setattr(fastread, "_DECODER", None)
            mp.setattr(mlfast, "_DECODER", None)
        if reader != "columns":
            mp.setattr(columnar, "pa", None)
        answer: Any
        try:
            answer = build(paths, fmt, by=["accelerator"], period="day", **options)
        except BadInput as exc:
            answer = ("error", str(exc))
    assert blocks.fewest() > 1 if fmt == "native" else not blocks.reads, blocks.reads
    return answer


def same_by_every_reader(paths: list[Path], fmt: str = "native", **options: Any) -> Any:
    """What each reader gives, checked to be one answer."""
    answers = [by_reader(paths, reader, fmt, **options) for reader in READERS]
    assert answers[1] == answers[0] and answers[2] == answers[0]
    return answers[0]


def refused(cli: Any, *args: Any) -> str:
    """The one line of a refused report (exit 2)."""
    r = cli("goodput-report", *[str(a) for a in args], state=False)
    assert r.code == 2, (r.code, r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1, r.err
    return r.err.strip()


# ---- M5: job records that disagree, events without a record ------------------------------------------------------
def test_two_records_of_one_job_that_disagree_are_refused_naming_both(cli, tmp_path):
    small = write(tmp_path / "small.jsonl", [job("A", 8)])
    big = write(tmp_path / "big.jsonl", [job("A", 16)])
    events = write(tmp_path / "events.jsonl", ran("A", B, B + 40))
    for first, second in ((small, big), (big, small)):  # the order of the logs no longer decides the chips
        err = refused(cli, first, events, second)
        old, new = (8, 16) if first is small else (16, 8)
        assert err == (
            f"tpufleet: error: {second}:1: field chips: the record of job 'A' at {first}:1 says {old} (value {new})"
        )
    assert refused(cli, small, events, big, "--skip-bad").endswith(f"at {small}:1 says 8 (value 16)")


def test_the_first_disagreement_in_the_log_is_named_by_every_reader(tmp_path):
    rows = [job("A", 8), *ran("A", B, B + 300), job("B", 8, framework="jax"), *ran("B", B, B + 300)]
    b_line = len(rows) - len(ran("B", B, B + 300))
    rows += [job("A", 8), job("B", 8, framework="pax"), job("A", 8, accelerator="tpu-v5p")]  # B's comes first
    path = write(tmp_path / "log.jsonl", rows)
    expected = f"{path}:{len(rows) - 1}: field framework: the record of job 'B' at {path}:{b_line} says 'jax'"
    assert same_by_every_reader([path]) == ("error", expected + " (value 'pax')")


def test_a_record_repeated_alike_is_one_record(tmp_path):
    one = write(tmp_path / "one.jsonl", [job("A"), *ran("A", B, B + 40)])
    two = write(tmp_path / "two.jsonl", [job("A"), *ran("A", B, B + 40), job("A")])
    a, b = same_by_every_reader([one]), same_by_every_reader([two])
    assert a["jobs"] == b["jobs"] and a["fleet"] == b["fleet"]


def test_ml_goodput_metadata_that_disagrees_is_refused_by_both_readers(tmp_path):
    meta = {"job_name": "j", "job_metadata": {"chips": 8, "accelerator": "tpu-v5p", "ideal_step_s": 0.5}}
    other = {"job_name": "j", "job_metadata": {"chips": 4, "accelerator": "tpu-v5p", "ideal_step_s": 0.5}}
    steps = [{"job_name": "j", "job_start_time": B}] + [
        {"job_name": "j", "step_count": k, "step_start_time": B + k} for k in range(1, 30)
    ]
    path = tmp_path / "ml.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [meta, *steps, other]))
    kind, message = same_by_every_reader([path], "ml-goodput")
    assert (kind, message) == (
        "error",
        f"{path}:{len(steps) + 2}: field chips: the record of job 'j' at {path}:1 says 8 (value 4)",
    )


def test_events_without_a_job_record_take_the_chips_of_their_largest_allocation(cli, tmp_path):
    path = write(tmp_path / "events.jsonl", ran("A", B, B + 50, chips=8))
    r = cli("goodput-report", path, "-o", "json", state=False)
    assert r.code == 0, r.err
    rep = r.json
    assert rep["jobs"][0]["chips"] == 8 and rep["fleet"]["all_allocated_chip_s"] == 8 * 50  # was 1 chip: 50
    assert rep["input"]["jobs_without_record"] == ["A"]
    assert "tpufleet: note: no job record for 'A': each counted as accelerator 'unknown'" in r.err
    plain = write(tmp_path / "plain.jsonl", ran("B", B, B + 50, chips=None))  # no allocation: 1 chip, as before
    assert same_by_every_reader([plain])["jobs"][0]["chips"] == 1
    recorded = write(tmp_path / "recorded.jsonl", [job("A", 8), *ran("A", B, B + 50, chips=8)])
    r = cli("goodput-report", recorded, "-o", "json", state=False)
    assert r.json["input"]["jobs_without_record"] == [] and "no job record" not in r.err


# ---- H1: the fleet's figures count the accelerators that have a capacity --------------------------------------
def test_a_capacity_of_another_accelerator_gives_no_fleet_sg_above_1(cli, tmp_path):
    """The review's case: 16 tpu-v4 chips for an hour over a flag naming only tpu-v5p gave SG 16 and MPG 0.27."""
    path = write(tmp_path / "v4.jsonl", [job("X", 16), *ran("X", B, B + 3600, chips=16)])
    r = cli("goodput-report", path, "--capacity", "tpu-v5p=1", "-o", "json", state=False)
    assert r.code == 0, r.err
    fleet = r.json["fleet"]
    assert fleet["accelerators_without_capacity"] == ["tpu-v4"] and fleet["jobs"] == 0
    assert fleet["sg"] == 0.0 and fleet["mpg"] == 0.0 and fleet["all_allocated_chip_s"] == 0  # tpu-v5p unused
    assert [s["sg"] for s in r.json["segments"] if s["value"] == "tpu-v4"] == [None]
    assert len(r.json["jobs"]) == 1  # the job keeps its row
    assert "tpufleet: note: no capacity for 'tpu-v4': its jobs are left out of the fleet, period and window" in r.err


def test_the_fleet_counts_only_the_jobs_of_accelerators_with_a_capacity(cli, tmp_path):
    rows = [capacity(64), job("v4", 16), *ran("v4", B, B + 600, chips=16)]
    rows += [job("v5", 32, accelerator="tpu-v5p"), *ran("v5", B, B + 600, chips=32)]
    path = write(tmp_path / "two.jsonl", rows)
    rep = same_by_every_reader([path], windows=[("1h", 3600.0)])
    fleet, v4 = rep["fleet"], next(s for s in rep["segments"] if s["value"] == "tpu-v4")
    assert fleet["accelerators_without_capacity"] == ["tpu-v5p"] and fleet["jobs"] == 1
    assert fleet["sg"] == v4["sg"] == 0.25  # 16 of 64 chips; the tpu-v5p's 32 made it 0.75
    assert fleet["all_allocated_chip_s"] == 16 * 600 and fleet["capacity_chip_s"] == 64 * 600
    assert [p["sg"] for p in rep["periods"]] == [0.25] and [w["sg"] for w in rep["windows"]] == [0.25]
    r = cli("goodput-report", path, state=False)
    assert r.code == 0 and "(capacity: events; none for tpu-v5p: its jobs are not in the fleet figures)" in r.out
    both = write(tmp_path / "both.jsonl", [capacity(32, accelerator="tpu-v5p"), *rows])
    assert same_by_every_reader([both])["fleet"]["accelerators_without_capacity"] == []


# ---- H3: a capacity smaller than the chips the jobs hold --------------------------------------------------------
def test_a_capacity_record_smaller_than_the_chips_held_is_refused_naming_it(cli, tmp_path):
    """The review's case: 16 chips held on a capacity record of 8 gave SG 2.0 and MPG 1.0, exit 0."""
    path = write(tmp_path / "cap.jsonl", [capacity(8), job("A", 16), *ran("A", B, B + 10, chips=16)])
    err = refused(cli, path)
    assert err == f"tpufleet: error: {path}:1: field chips: fewer than the 16 tpu-v4 chips the jobs hold at " + (
        "2026-01-05T00:00:00Z (value 8)"
    )
    assert same_by_every_reader([path]) == ("error", err.removeprefix("tpufleet: error: "))


def test_jobs_that_together_hold_more_than_a_later_capacity_are_refused_at_that_moment(tmp_path):
    rows = [capacity(32), capacity(12, B + 100), job("A", 8), job("C", 8)]
    rows += [*ran("A", B, B + 300), *ran("C", B + 150, B + 300)]  # 16 chips held from B + 150 on, 12 in force
    path = write(tmp_path / "two.jsonl", rows)
    assert same_by_every_reader([path]) == (
        "error",
        f"{path}:2: field chips: fewer than the 16 tpu-v4 chips the jobs hold at 2026-01-05T00:02:30Z (value 12)",
    )
    fits = write(tmp_path / "fits.jsonl", [capacity(32), capacity(16, B + 100), *rows[2:]])
    fleet = same_by_every_reader([fits])["fleet"]
    assert fleet["sg"] is not None and fleet["sg"] <= 1


def test_chips_held_before_the_first_capacity_record_are_refused_naming_it(tmp_path):
    rows = [job("A", 8), *ran("A", B, B + 300), capacity(64, B + 100)]
    path = write(tmp_path / "late.jsonl", rows)
    assert same_by_every_reader([path]) == (
        "error",
        f"{path}:{len(rows)}: field time: the jobs hold 8 tpu-v4 chips at 2026-01-05T00:00:00Z, before this first "
        "tpu-v4 capacity record (value 2026-01-05T00:01:40Z)",  # the record's time as a time, not POSIX seconds
    )


def test_a_capacity_option_smaller_than_the_chips_held_is_refused_naming_the_option(cli, tmp_path):
    path = write(tmp_path / "a.jsonl", [job("A", 16), *ran("A", B, B + 10, chips=16)])
    err = refused(cli, path, "--capacity", "tpu-v4=12,tpu-v5p=4")
    assert err == "tpufleet: error: bad option --capacity: 'tpu-v4=12': fewer chips than the 16 the jobs hold at " + (
        "2026-01-05T00:00:00Z"
    )
    r = cli("goodput-report", path, "--capacity", "tpu-v4=16", "-o", "json", state=False)
    assert r.code == 0 and r.json["fleet"]["sg"] == 1.0


# ---- H2: an ml-goodput entry's interval that ends before it starts ----------------------------------------------
INTERVAL_KEYS = [
    ("custom_badput_event_start_time", "custom_badput_event_end_time"),
    ("tpu_init_start_time", "tpu_init_end_time"),
    ("training_prep_start_time", "training_prep_end_time"),
    ("data_loading_start_time", "data_loading_end_time"),
    ("elastic_wait_start_time", "elastic_wait_end_time"),
    ("elastic_reinit_start_time", "elastic_reinit_end_time"),
    ("job_start_time", "job_end_time"),
]


def ml_log(path: Path, middle: dict[str, Any]) -> Path:
    """A job stepping every 10 s from B + 10 to B + 100, with `middle` (an entry of job j) as its line 3."""
    entries = [{"job_name": "j", "job_start_time": B}, {"job_name": "j", "step_count": 0, "step_start_time": B + 10}]
    entries.append({"job_name": "j", **middle})
    entries += [{"job_name": "j", "step_count": k, "step_start_time": B + 10 * (k + 1)} for k in range(1, 10)]
    entries.append({"job_name": "j", "job_end_time": B + 100})
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


@pytest.mark.parametrize("start, end", INTERVAL_KEYS)
def test_an_interval_ending_before_its_start_is_refused_by_every_reader(cli, tmp_path, start, end):
    """The review's case: a custom badput from 118 to 115 was charged until the job's end (22 s, not 3), exit 0."""
    extra = {"custom_badput_event_type": "eval"} if start.startswith("custom") else {}
    path = ml_log(tmp_path / "rev.jsonl", {**extra, start: B + 18, end: B + 15})
    message = f"{path}:3: field {end}: before its start, {start} {B + 18} (value {B + 15})"
    assert same_by_every_reader([path], "ml-goodput") == ("error", message)
    assert refused(cli, path, "--format", "ml-goodput") == f"tpufleet: error: {message}"
    skipped = same_by_every_reader([path], "ml-goodput", skip_bad=True)
    without = same_by_every_reader([ml_log(tmp_path / "without.jsonl", {})], "ml-goodput")
    assert skipped["input"]["skipped"] == 1 and skipped["jobs"] == without["jobs"]
    ordered = same_by_every_reader([ml_log(tmp_path / "ok.jsonl", {**extra, start: B + 15, end: B + 15})], "ml-goodput")
    assert ordered["input"]["skipped"] == 0  # an interval of no time is not reversed


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_a_reversed_interval_in_a_gcloud_array_is_refused_at_its_line(tmp_path, newline):
    """An entry is named by the line it starts on, whatever ends the lines (in an array written with lone CRs, every
    entry was named as on line 1)."""
    entries = [
        {"jsonPayload": {"job_name": "j", "job_start_time": B}},
        {"jsonPayload": {"job_name": "j", "tpu_init_start_time": B + 5, "tpu_init_end_time": B + 2}},
    ]
    path = tmp_path / "array.json"
    path.write_bytes(("[\n" + ",\n".join(json.dumps(e) for e in entries) + "\n]\n").replace("\n", newline).encode())
    assert same_by_every_reader([path], "ml-goodput") == (
        "error",
        f"{path}:3: field tpu_init_end_time: before its start, tpu_init_start_time {B + 5} (value {B + 2})",
    )


# ---- M4, M5 on a Dask cluster --------------------------------------------------------------------------------------
def test_a_bad_record_read_on_dask_workers_is_one_line_on_stderr(tmp_path):
    """Each worker's task failure printed Dask's ~7-line "Compute Failed" block and traceback before the error."""
    pytest.importorskip("distributed", reason="Dask is an optional extra: no cluster here")
    import os
    import subprocess
    import sys

    good = write(tmp_path / "ok.jsonl", [job("A"), *ran("A", B, B + 40)])
    bad = write(tmp_path / "bad.jsonl", [job("C"), *ran("C", B, B + 40)])
    bad.write_text(bad.read_text().replace('"step": 2', '"step": "x"'))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run(
        [sys.executable, "-m", "tpufleet", "goodput-report", str(good), str(bad), "--workers", "2"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 2
    assert (
        run.stderr
        == f"tpufleet: error: {bad}:5: field step: must be a whole number from 0 to 1,000,000,000,000,000 (value 'x')\n"
    )


def test_records_that_disagree_in_logs_read_on_dask_workers_are_the_serial_error(tmp_path):
    pytest.importorskip("distributed", reason="Dask is an optional extra: no cluster here")
    small = write(tmp_path / "small.jsonl", [job("A", 8), job("B", 8), *ran("B", B, B + 40)])
    events = write(tmp_path / "events.jsonl", ran("A", B, B + 40))
    big = write(tmp_path / "big.jsonl", [*ran("B", B + 50, B + 90), job("B", 8, topology="2x2x2"), job("A", 16)])
    paths = [small, events, big]
    with pytest.raises(BadInput) as serial:
        build(paths)
    with pytest.raises(BadInput) as on_cluster:
        build(paths, workers=2)
    message = f"{big}:8: field topology: the record of job 'B' at {small}:2 says '' (value '2x2x2')"
    assert str(on_cluster.value) == str(serial.value) == message


def test_the_records_taken_from_a_log_keep_its_order():
    """A log read again on a worker for its shared jobs gave them in the order of a set of names: with two records
    that disagree, the one named could be the later one, not the serial reading's first."""
    from tpufleet.goodput.events import Job, Log, take_jobs

    names = {f"job{k}" for k in range(20)}
    log = Log()
    for name in reversed(list(names)):  # read in the reverse of the set's own order
        log.add_job(Job(name))
        log.add_event(name, B, 0)
    taken = take_jobs(log, names)
    assert list(taken.jobs) == list(taken.events) == list(reversed(list(names)))


def test_a_fleet_with_no_productive_time_has_an_mpg_of_zero(cli, tmp_path):
    """Every job stuck in its TPU's start: RG 0, PG not known (no productive time), and MPG was null, so the
    metrics had no `factor="mpg"` sample and the alert on it stayed silent when goodput was at its worst."""
    log = write(
        tmp_path / "stuck.jsonl",
        [
            {"type": "capacity", "time": B, "accelerator": "tpu-v4", "chips": 1000},
            job("big", chips=512),
            {"type": "event", "job": "big", "time": B, "event": "job_start"},
            {"type": "event", "job": "big", "time": B, "event": "tpu_init_start"},
            {"type": "event", "job": "big", "time": B + 3600, "event": "job_end"},
        ],
    )
    fleet = cli("goodput-report", log, "-o", "json", state=False).json["fleet"]
    assert (fleet["sg"], fleet["rg"], fleet["pg"], fleet["mpg"]) == (0.512, 0.0, None, 0.0)
    assert cli("init").code == 0
    text = cli("metrics", "--goodput", log).out
    assert 'tpufleet_goodput_ratio{dimension="fleet",factor="mpg",segment="all"} 0.0\n' in text
    assert 'factor="pg"' not in text


@pytest.mark.parametrize("written", ["2_56", "\u0663", "\uff12\uff15\uff16", "25 6"])
def test_a_whole_number_in_digits_other_than_ascii_is_refused_in_csv_and_json(cli, tmp_path, written):
    """Python's int() reads `2_56`, Arabic-Indic and full-width digits: a log's chips or step so written was taken
    (full-width 256 as 256), where every decimal field and every option refuses them. Both formats, both readers."""
    records = [job("A"), *ran("A", B, B + 40)]
    as_json = write(tmp_path / "a.jsonl", records)
    as_json.write_text(as_json.read_text().replace('"step": 2', f'"step": {json.dumps(written)}'))
    as_csv = tmp_path / "a.csv"
    as_csv.write_text(f"type,job,chips\njob,A,{written}\n")
    for path, line, field in ((as_json, 5, "step"), (as_csv, 2, "chips")):
        r = cli("goodput-report", path, state=False)
        assert r.code == 2 and f"{path}:{line}: field {field}: must be a whole number from " in r.err, r.err
    spaced = tmp_path / "b.csv"
    events = "event,A,2026-01-05T00:00:00Z,job_start,\nevent,A,2026-01-05T00:01:00Z,job_end,\n"
    spaced.write_text("type,job,time,event,chips\njob,A,,, 256 \n" + events)  # spaces around digits: still read
    assert cli("goodput-report", spaced, "-o", "json", state=False).code == 0
