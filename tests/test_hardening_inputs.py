"""Hardening of every input file and the options of goodput-report and simulate-fleet (tracker issue "Hardening",
items 7, 8, 9, 11, 13 and 15), through the CLI.

The contract: bad input exits 2 with one line on stderr naming the file, the field and the value, and leaves the
state untouched; 70 (internal error) never happens. The last tests fuzz every input format with Hypothesis.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import snapshot
from oracles.synthetic_jobs import training_job

ROOT = Path(__file__).resolve().parents[1]
FLEET_LOG = ROOT / "fixtures" / "goodput" / "fleet.jsonl"
SHIPPED = ROOT / "tpufleet" / "data"

BOMB = """a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def one_line_error(r, *needles: str) -> None:
    """Exit 2, exactly one line on stderr, containing every needle."""
    lines = r.err.strip().splitlines()
    assert r.code == 2, (r.code, r.err[-500:])
    assert len(lines) == 1, r.err[-1000:]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def native_lines() -> list[str]:
    return FLEET_LOG.read_text().splitlines()


def write_log(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def replace_field(line_no: int, key: str, raw: str) -> list[str]:
    """The fleet log with field `key` of line `line_no` (0-based) replaced by a raw JSON token."""
    lines = native_lines()
    rec = json.loads(lines[line_no])
    rec[key] = "__RAW__"
    lines[line_no] = json.dumps(rec).replace('"__RAW__"', raw)
    return lines


def event_line(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if '"event":"step_start"' in line.replace(" ", ""))


# ---- 7: one bounded reader; YAML bombs --------------------------------------------------------------------
def test_yaml_bomb_in_a_scenario_is_refused_at_once(fleet, tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    before = snapshot(fleet.state)
    # refused for its aliases, before any is expanded (how fast is measured in benchmarks/, not here)
    r = fleet("inject-fault", "--from", bomb)
    one_line_error(r, str(bomb), "anchors and aliases")
    assert snapshot(fleet.state) == before
    for option in ("--workload", "--fault-rates"):
        r = fleet("simulate-fleet", "--days", "1", "--out", tmp_path / "e.jsonl", option, bomb, state=False)
        one_line_error(r, str(bomb), "anchors and aliases")


def test_a_plain_anchor_is_refused_too_and_a_file_without_one_works(fleet, tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("- &x {target: 'host:c01/3', reason: disk}\n")
    one_line_error(fleet("inject-fault", "--from", scenario, "--dry-run"), "anchors and aliases")
    scenario.write_text("- {target: 'host:c01/3', reason: disk}\n- cube:c02\n")
    r = fleet("inject-fault", "--from", scenario, "--dry-run", "-o", "json")
    assert r.code == 0, r.err
    assert len(r.json) == 2


@pytest.mark.parametrize(
    ("name", "text", "key"),
    [
        ("s.yaml", "- {target: 'host:c01/3', target: 'host:c02/3', reason: disk}\n", "'target'"),
        ("s.json", '[{"target": "host:c01/3", "reason": "disk", "reason": "fan"}]', "'reason'"),
        ("s.yaml", "- target: host:c01/3\n  reason: disk\n  reason: fan\n", "'reason'"),
    ],
)
def test_a_key_given_twice_is_refused_not_guessed(fleet, tmp_path, name, text, key):
    """Python's JSON decoder and PyYAML keep a repeated key's last value, other tools its first: which fault was
    meant is unknown, so the file is refused (exit 2, one line naming the file and the key), the state untouched."""
    scenario = tmp_path / name
    scenario.write_text(text)
    before = snapshot(fleet.state)
    one_line_error(fleet("inject-fault", "--from", scenario), str(scenario), f"key {key} is given twice")
    assert snapshot(fleet.state) == before


def test_a_key_given_twice_in_a_json_file_is_refused(cli, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"type":"event","job":"j","time":"2026-01-05T00:00:00Z","event":"job_start"}\n'
        '{"type":"event","job":"j","time":"2026-01-05T01:00:00Z","event":"job_end"}\n'
    )
    exclude = tmp_path / "exclude.json"
    exclude.write_text(
        '[{"start": "2026-01-05T00:00:00Z", "end": "2026-01-05T00:10:00Z", "end": "2026-01-05T00:50:00Z"}]'
    )
    r = cli("goodput-report", log, "--exclude", exclude, state=False)
    one_line_error(r, str(exclude), "key 'end' is given twice")
    # the line of the second one, the same key in other objects (and inside strings) not counted
    exclude.write_text(
        '[{"start": "2026-01-05T00:00:00Z", "end": "2026-01-05T00:10:00Z"},\n'
        ' {"start": "2026-01-05T00:20:00Z", "end": "2026-01-05T00:30:00Z", "reason": "\\"end\\": {"},\n'
        ' {"start": "2026-01-05T00:40:00Z",\n'
        '  "end": "2026-01-05T00:45:00Z",\n'
        '  "end": "2026-01-05T00:50:00Z"}]'
    )
    r = cli("goodput-report", log, "--exclude", exclude, state=False)
    one_line_error(r, str(exclude), "key 'end' is given twice in one object (line 5)")
    # objects are met as they close: the inner one's repeat (line 5) is the one named, with its line
    exclude.write_text('{"start": 1,\n "start": 2,\n "inner": {\n  "x": 1,\n  "x": 2}}')
    r = cli("goodput-report", log, "--exclude", exclude, state=False)
    one_line_error(r, str(exclude), "key 'x' is given twice in one object (line 5)")


# The contract is exit 2, one line naming the file, the state untouched: how deep a YAML library lets a document
# nest before it refuses it, in its own words, is the library's business (PyYAML 6.0.4 began to refuse some).
@pytest.mark.parametrize(
    "text, needle",
    [
        ("[" * 5000 + "]" * 5000, "nested more than 64 levels"),  # measured by tpufleet before any parser
        ("x:\n" + "".join("  " * i + "y:\n" for i in range(1, 200)), ""),
        ("- target: " + "9" * 5000 + "\n", "4,300 digits"),
        ("- {target: 'host:c01/3', reason: " + "r" * 2000 + "}\n", "reason"),
        ("[" + ",".join(["cube:c01"] * 10_001) + "]", "10000"),
    ],
)
def test_nested_huge_or_long_scenarios_are_refused(fleet, tmp_path, text, needle):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    before = snapshot(fleet.state)
    one_line_error(fleet("inject-fault", "--from", scenario), str(scenario), needle)
    assert snapshot(fleet.state) == before


def test_an_unquoted_time_in_any_yaml_input_is_text_for_its_field(fleet, tmp_path):
    """YAML would make a time of it, and fail the whole file on one outside the calendar: it stays text, as JSON
    has it, and the field's own check judges it."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "- {target: 'host:c01/3', reason: 2026-02-30T13:00:00Z}\n- {target: cube:c02, reason: 2026-07-01}\n"
    )
    r = fleet("inject-fault", "--from", scenario, "--dry-run", "-o", "json")
    assert r.code == 0, r.err
    scenario.write_text("- {target: 2026-02-30T13:00:00Z}\n")
    before = snapshot(fleet.state)
    one_line_error(fleet("inject-fault", "--from", scenario), str(scenario), "2026-02-30T13:00:00Z")
    assert snapshot(fleet.state) == before


def test_json_scenarios_go_through_the_same_reader(fleet, tmp_path):
    scenario = tmp_path / "s.json"
    scenario.write_text('[{"target": "host:c01/3", "planned": true}]')
    assert fleet("inject-fault", "--from", scenario, "--dry-run").code == 0
    scenario.write_text('[{"target": "host:c01/3", "planned": ' + "[" * 300 + "]" * 300 + "}]")
    one_line_error(fleet("inject-fault", "--from", scenario), "nested more than 64 levels")


def test_files_over_their_size_cap_are_refused_without_reading_them(fleet, tmp_path):
    from tpufleet.state.inputfiles import MAX_SPEC_BYTES

    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * (MAX_SPEC_BYTES // 10 + 1) + "- cube:c01\n")
    one_line_error(fleet("inject-fault", "--from", big), str(big), "larger than the 1 MiB allowed")
    one_line_error(fleet("inject-fault", "--from", tmp_path), str(tmp_path), "cannot be read")
    one_line_error(fleet("inject-fault", "--from", tmp_path / "nope.yaml"), "cannot be read")


@pytest.mark.parametrize(
    "body, needle",
    [
        ("[" * 5000 + "]" * 5000, "nested more than 64 levels"),
        ('{"kind": NaN}', "NaN is not a number"),
        ('{"serial": 1e400}', "number too large"),
        ('{"serial": ' + "9" * 5000 + "}", "4,300 digits"),
    ],
)
def test_plan_files_are_read_through_the_bounded_reader(fleet, tmp_path, body, needle):
    plan = tmp_path / "p.json"
    plan.write_text(body)
    one_line_error(fleet("apply-xconnect", plan), str(plan), needle)


def test_a_plan_with_an_ocs_index_too_long_for_int_is_refused(fleet, tmp_path):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "p.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    doc = json.loads(plan.read_text())
    doc["ocs"][0]["id"] = "ocs:pod0/x/" + "1" * 4400
    plan.write_text(json.dumps(doc))
    before = snapshot(fleet.state)
    one_line_error(fleet("apply-xconnect", plan), str(plan), "ocs.0.id")
    assert snapshot(fleet.state) == before


# ---- 11: non-UTF-8 and other hostile files --------------------------------------------------------------
def test_non_utf8_input_files_name_the_byte_offset(fleet, tmp_path):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"- target: 'host:c01/3'\n  reason: caf\xe9\n")
    one_line_error(fleet("inject-fault", "--from", bad), str(bad), "not UTF-8", "offset 36")
    for option in ("--workload", "--fault-rates"):
        r = fleet("simulate-fleet", "--days", "1", "--out", tmp_path / "e.jsonl", option, bad, state=False)
        one_line_error(r, str(bad), "offset 36")
    log = tmp_path / "log.jsonl"
    log.write_bytes(FLEET_LOG.read_bytes() + b'{"type": "job", "job": "\xff"}\n')
    one_line_error(fleet("goodput-report", log, state=False), str(log), "not UTF-8")
    log.write_bytes(b"\xef\xbb\xbf" + FLEET_LOG.read_bytes())  # a UTF-8 byte-order mark is fine
    assert fleet("goodput-report", log, state=False).code == 0


@pytest.mark.parametrize(
    "line_no, key, raw, needle",
    [
        (None, "time", "NaN", "NaN is not a number"),
        (None, "time", "Infinity", "Infinity is not a number"),
        (None, "time", "-Infinity", "-Infinity is not a number"),
        (None, "time", "1e18", "outside 1970-01-01 .. 2200-01-01"),
        (None, "time", "-1e12", "outside 1970-01-01 .. 2200-01-01"),
        (None, "time", "1e400", "outside 1970-01-01 .. 2200-01-01"),
        (None, "time", '"9999-12-31T23:59:59Z"', "outside 1970-01-01 .. 2200-01-01"),
        (None, "time", '"nan"', "not an ISO 8601 time or POSIX seconds"),  # text: only ASCII digits are a number
        (None, "time", "1" + "0" * 400, "outside 1970-01-01 .. 2200-01-01"),
        (None, "step", "Infinity", "Infinity is not a number"),
        (None, "step", "1e400", "field step"),
        (None, "step", "9" * 5000, "4,300 digits"),
        (None, "step", "1" + "0" * 3000, "field step"),
        (3, "chips", "1e400", "field chips"),
        (3, "chips", "1" + "0" * 400, "field chips"),
        (1, "chips", "1e400", "field chips"),
        (1, "chips", "-5", "field chips"),
        (3, "ideal_step_s", "1e400", "field ideal_step_s"),
        (None, "time", "[" * 3000 + "]" * 3000, "nested too deeply"),
    ],
)
def test_hostile_numbers_in_native_logs(cli, tmp_path, line_no, key, raw, needle):
    lines = native_lines()
    line_no = event_line(lines) if line_no is None else line_no
    log = write_log(tmp_path / "log.jsonl", replace_field(line_no, key, raw))
    r = cli("goodput-report", log, "--period", "day", state=False)
    one_line_error(r, f"{log}:{line_no + 1}", needle)
    r = cli("goodput-report", log, "--period", "day", "--skip-bad", "-o", "json", state=False)
    assert r.code == 0 and r.json["input"]["skipped"] == 1, r.err


def test_one_time_of_1e300_with_period_day_is_refused_quickly(cli, tmp_path):
    lines = native_lines()
    i = event_line(lines)
    log = write_log(tmp_path / "log.jsonl", replace_field(i, "time", "1e300"))
    # refused from the time's range, before any period is made
    one_line_error(cli("goodput-report", log, "--period", "day", state=False), f"{log}:{i + 1}", "field time")


def test_periods_are_counted_before_they_are_made(cli, tmp_path, monkeypatch):
    from tpufleet.goodput import metrics

    far = [
        {"type": "event", "job": "j", "time": 0, "event": "job_start"},
        {"type": "event", "job": "j", "time": 7258000000, "event": "job_end"},
    ]
    log = write_log(tmp_path / "far.jsonl", [json.dumps(x) for x in far])
    r = cli("goodput-report", log, "--period", "week", "-o", "json", state=False)  # 1970 .. 2199: 12,000 weeks
    assert r.code == 0, r.err
    assert len(r.json["periods"]) == 12002  # the ISO weeks from Monday 1969-12-29 to 2199-12-30
    monkeypatch.setattr(metrics, "MAX_PERIODS", 1000)
    one_line_error(cli("goodput-report", log, "--period", "week", state=False), "too many periods", "12,002 weeks")


@pytest.mark.parametrize(
    "until, problem",
    [
        ("1e300", "outside 1970"),
        ("nan", "is not a date"),
        ("inf", "is not a date"),
        ("9999-01-01T00:00:00Z", "outside 1970"),
    ],
)
def test_window_options_are_bounded(cli, until, problem):
    one_line_error(cli("goodput-report", FLEET_LOG, "--until", until, state=False), "--until", problem)


def test_csv_fields_of_any_length_are_judged_not_crashed_on(cli, tmp_path):
    log = tmp_path / "log.csv"
    header = "type,job,time,event,step,chips"
    ok = "event,a,2026-01-05T00:00:00Z,job_start,,"
    log.write_text(f"{header}\n{ok}\nevent,{'x' * 200_000},2026-01-05T00:01:00Z,job_end,,\n")
    one_line_error(cli("goodput-report", log, state=False), f"{log}:3", "field job", "longer than 4096")
    r = cli("goodput-report", log, "--skip-bad", "-o", "json", state=False)
    assert r.code == 0 and r.json["input"]["skipped"] == 1
    log.write_text(f'{header}\n{ok}\nevent,a,"{"y" * 200_000}",job_end,,\n')
    one_line_error(cli("goodput-report", log, state=False), f"{log}:3", "field time")


def test_goodput_logs_over_the_size_cap_are_refused(cli, tmp_path, monkeypatch):
    from tpufleet.state import goodputlogs

    monkeypatch.setattr(goodputlogs, "MAX_LOG_BYTES", 1000)
    one_line_error(cli("goodput-report", FLEET_LOG, state=False), str(FLEET_LOG), "larger than the 1,000 bytes")


# ---- 9 and 11: simulate-fleet options and input files --------------------------------------------------
@pytest.mark.parametrize(
    "args, needle",
    [
        (["--checkpoint-interval", "0.1"], "--checkpoint-interval"),
        (["--checkpoint-interval", "nan"], "--checkpoint-interval"),
        (["--checkpoint-interval", "inf"], "--checkpoint-interval"),
        (["--restart-overhead", "nan"], "--restart-overhead"),
        (["--restart-overhead", "1e300"], "--restart-overhead"),
        (["--days", "nan"], "--days"),
        (["--days", "1e300"], "--days"),
        (["--seed", "-1"], "--seed"),
        (["--seed", "9" * 5000], "--seed"),
        (["--days", "3650", "--pods", "16"], "simulation too large"),
        (["--days", "30", "--checkpoint-interval", "1"], "simulation too large"),
    ],
)
def test_simulate_fleet_options_are_bounded(cli, tmp_path, args, needle):
    out = tmp_path / "e.jsonl"
    days = [] if "--days" in args else ["--days", "1"]  # an option once: a repeat is refused on its own
    r = cli("simulate-fleet", *days, "--out", out, *args, state=False)
    one_line_error(r, needle)  # refused from the options alone, before any simulated event
    assert not out.exists()


@pytest.mark.parametrize(
    "text, needle",
    [
        ("arrival_rate_per_hour: 1.0e9", "arrival_rate_per_hour"),
        ("arrival_rate_per_hour: .inf", "arrival_rate_per_hour"),
        ("arrival_rate_per_hour: .nan", "arrival_rate_per_hour"),
        ("duration_hours: {median: 5, sigma: 1.0e300}", "duration_hours.sigma"),
        ("duration_hours: {median: .inf}", "duration_hours.median"),
        ("duration_hours: {max: 1.0e300}", "duration_hours.max"),
        ("jobs: [{shape: 4x4x4, duration_hours: .inf}]", "jobs.0.duration_hours"),
        ("jobs: [{shape: 4x4x4, duration_hours: 1, priority_rank: 1.0e20}]", "jobs.0.priority_rank"),
        ("jobs: [{shape: 4x4x4, duration_hours: 1, priority_rank: 1e20}]", "jobs.0.priority_rank"),
        ("shapes: [{shape: 4x4x4, weight: 0}, {shape: 4x4x8, weight: 0}]", "shapes"),
        ("phases: {training: 0}", "phases"),
        ("frameworks: {jax: 0, pytorch: 0}", "frameworks"),
        ("priorities: [a, b]\npriority_weights: [0, 0]", "priority_weights"),
        ("shapes: [{shape: 4x4x4, weight: 1.0e300}, {shape: 4x4x8, weight: 1.0e300}]", "shapes.0.weight"),
        ("arrival_rate_per_hour: 1000\nduration_hours: {median: 1000, max: 1000}", "simulation too large"),
    ],
)
def test_workload_values_are_bounded(cli, tmp_path, text, needle):
    workload = tmp_path / "w.yaml"
    workload.write_text(f"schema_version: 1\n{text}\n")
    r = cli("simulate-fleet", "--days", "1", "--out", tmp_path / "e.jsonl", "--workload", workload, state=False)
    one_line_error(r, needle)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("host_per_day: 1.0e9", "host_per_day"),
        ("link_per_day: .inf", "link_per_day"),
        ("ocs_per_day: 2", "ocs_per_day"),
        ("drain_per_day: .nan", "drain_per_day"),
        ("repair_hours: {host: 1.0e300}", "repair_hours.host"),
        ("rerouted_slowdown: 1.0e300", "rerouted_slowdown"),
        ("link_per_day: 1.0", "simulation too large"),
    ],
)
def test_fault_rates_are_bounded(cli, tmp_path, text, needle):
    rates = tmp_path / "r.yaml"
    rates.write_text(f"schema_version: 1\n{text}\n")
    r = cli("simulate-fleet", "--days", "30", "--out", tmp_path / "e.jsonl", "--fault-rates", rates, state=False)
    one_line_error(r, needle)


def test_a_rate_at_its_cap_still_runs(cli, tmp_path):
    rates = tmp_path / "r.yaml"
    rates.write_text("schema_version: 1\nhost_per_day: 1.0\nrepair_hours: {host: 8760}\n")
    r = cli("simulate-fleet", "--days", "0.05", "--out", tmp_path / "e.jsonl", "--fault-rates", rates, state=False)
    assert r.code == 0, r.err


@pytest.mark.parametrize("command", ["goodput-report", "simulate-fleet"])
def test_out_into_a_missing_directory_or_onto_a_directory(cli, tmp_path, command):
    args = [FLEET_LOG] if command == "goodput-report" else ["--days", "0.05"]
    for out in (tmp_path / "missing" / "r.txt", tmp_path):
        r = cli(command, *args, "--out", out, state=False)
        one_line_error(r, "--out", str(out))


# ---- 13: ml-goodput --skip-bad ----------------------------------------------------------------------------
def test_ml_goodput_skip_bad_skips_whole_entries_and_counts_them(cli, tmp_path):
    _, ml = training_job("llm", 1767571200, runs=2, seed=1)
    good = [json.dumps({"jsonPayload": x}) for x in ml]
    bad = [
        "{not json",
        json.dumps({"job_name": "llm", "step_count": "seven", "step_start_time": 1767571300.0}),
        json.dumps({"job_name": "llm", "job_start_time": 1767571300.0, "step_count": 3, "step_start_time": 1e300}),
        json.dumps({"job_name": "llm", "tpu_init_start_time": "soon"}),
        json.dumps({"job_name": "llm", "event_type": "save", "step": 3}),
        json.dumps({"job_name": "llm", "job_metadata": {"chips": "many"}}),
        json.dumps({"job_name": "llm", "job_metadata": {"type": "capacity", "chips": 5}}).replace("5", "1e400"),
        json.dumps({"job_name": 7}),
        '{"job_name": "llm", "job_end_time": NaN}',
        '{"job_name": "llm", "x": ' + "[" * 3000 + "]" * 3000 + "}",
        "[]",
    ]
    clean = tmp_path / "clean.jsonl"
    write_log(clean, good)
    dirty = tmp_path / "dirty.jsonl"
    write_log(dirty, good[:5] + bad + good[5:])
    r = cli("goodput-report", dirty, "--format", "ml-goodput", state=False)
    one_line_error(r, f"{dirty}:6")
    want = cli("goodput-report", clean, "--format", "ml-goodput", "-o", "json", state=False).json
    got = cli("goodput-report", dirty, "--format", "ml-goodput", "--skip-bad", "-o", "json", state=False).json
    assert got["input"]["skipped"] == len(bad)
    assert got["input"]["records"] == want["input"]["records"]
    assert got["jobs"] == want["jobs"]  # a bad entry added nothing, not even its good fields


# ---- 15: what the outputs cannot carry; --capacity ----------------------------------------------------------
def test_markdown_escapes_html_and_csv_neutralises_formulas(cli, tmp_path):
    evil = tmp_path / "evil.jsonl"
    text = FLEET_LOG.read_text()
    text = text.replace('"waiter"', '"<script>alert(1)</script>|x"').replace('"serve"', '"=HYPERLINK(1)"')
    evil.write_text(text.replace('"pax"', '"@SUM(A1)"'))
    md = cli("goodput-report", evil, "-o", "md", state=False)
    assert md.code == 0, md.err
    assert "<script>" not in md.out and "&lt;script&gt;alert(1)&lt;/script&gt;\\|x" in md.out
    out = cli("goodput-report", evil, "-o", "csv", state=False)
    assert out.code == 0, out.err
    cells = [c for row in csv.reader(io.StringIO(out.out)) for c in row]
    assert "'=HYPERLINK(1)" in cells and "framework='@SUM(A1)" not in cells
    assert not any(c[:1] in ("=", "+", "-", "@") for c in cells if not c.lstrip("-").replace(".", "").isdigit())


@pytest.mark.parametrize(
    "value, needle",
    [
        ("tpu-v4=4096,tpu-v4=4096", "given twice"),
        ("tpu-v4=" + "9" * 5000, "not ACCELERATOR=CHIPS"),
        ("tpu-v4=Infinity", "not ACCELERATOR=CHIPS"),
        ("tpu-v4=1e400", "not ACCELERATOR=CHIPS"),
        ("tpu-v4=\u00b2", "not ACCELERATOR=CHIPS"),
        ("tpu-v4=-1", "not ACCELERATOR=CHIPS"),
    ],
)
def test_capacity_option_is_checked(cli, tmp_path, value, needle):
    log = write_log(tmp_path / "log.jsonl", [x for x in native_lines() if '"capacity"' not in x])
    one_line_error(cli("goodput-report", log, "--capacity", value, state=False), "--capacity", needle)
    r = cli("goodput-report", log, "--capacity", "tpu-v4=4096,tpu-v5p=128", "-o", "json", state=False)
    assert r.code == 0 and r.json["fleet"]["capacity_basis"] == "flag"


# ---- fuzz: every input format --------------------------------------------------------------------------------
FUZZ = settings(
    max_examples=max(12, settings().max_examples // 3),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RAW_TOKENS = [
    "9" * 5000,
    "1" + "0" * 400,
    "-" + "1" + "0" * 400,
    "1e400",
    "-1e400",
    "1e300",
    "1e18",
    "-1e12",
    "NaN",
    "Infinity",
    "-Infinity",
    ".inf",
    ".nan",
    "[" * 2000 + "]" * 2000,
    "{" * 500,
    "&a x",
    "*a",
    '"' + "x" * 200_000 + '"',
    '"=1+1"',
    '"\\u0000"',
    "0",
    "-1",
    "1.5",
    "true",
    "null",
    '""',
    "[]",
    "{}",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
mutation = st.one_of(
    st.tuples(st.just("value"), values),
    st.tuples(st.just("raw"), st.sampled_from(RAW_TOKENS)),
    st.tuples(st.just("bytes"), st.binary(max_size=200)),
)


def check_contract(r, file: Path, fmt: str = "table") -> None:
    """A mutated input file is either still acceptable (exit 0, the output whole in its format) or bad input (exit 2,
    one line naming the file). Nothing else: such a file is never a refusal (1), let alone a crash (70)."""
    assert r.code in (0, 2), (r.code, r.err[-2000:])
    if r.code == 2:
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and str(file) in lines[0], r.err[-2000:]
    elif fmt == "json":
        json.loads(r.out)
    elif fmt == "csv":
        assert list(csv.reader(io.StringIO(r.out))), r.out[:200]


def mutated_yaml(doc: Any, path: list, how: tuple) -> bytes:
    """`doc` as YAML with the field at `path` (keys / indexes) replaced as `how` says, or random bytes."""
    kind, what = how
    if kind == "bytes":
        return what
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = what if kind == "value" else "__RAW__"
    text = yaml.safe_dump(doc, default_flow_style=True, width=10**9)
    return text.replace("__RAW__", what).encode() if kind == "raw" else text.encode()


def mutated_jsonl(lines: list[str], line_no: int, key: str, how: tuple) -> bytes:
    kind, what = how
    rec = json.loads(lines[line_no])
    if kind == "bytes":
        new = what
    else:
        if isinstance(rec.get("jsonPayload"), dict):
            rec = rec["jsonPayload"]
        rec[key] = what if kind == "value" else "__RAW__"
        new = json.dumps(rec).replace('"__RAW__"', what).encode() if kind == "raw" else json.dumps(rec).encode()
    return b"\n".join([*(x.encode() for x in lines[:line_no]), new, *(x.encode() for x in lines[line_no + 1 :])])


def _paths(doc: object, prefix: list) -> list[list]:
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append([*prefix, k])
            out += _paths(v, [*prefix, k])
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append([*prefix, i])
            out += _paths(v, [*prefix, i])
    return out


SCENARIO = [{"target": "host:c01/3", "planned": True, "reason": "disk"}, "cube:c02", {"target": "ocs:pod0/x/5"}]
WORKLOAD = yaml.safe_load((SHIPPED / "workload.yaml").read_text())
WORKLOAD["jobs"] = [{"id": "a", "shape": "4x4x4", "duration_hours": 2, "arrival_hours": 0.1, "priority_rank": 1}]
RATES = yaml.safe_load((SHIPPED / "fault-rates.yaml").read_text())


@FUZZ
@given(st.data(), mutation, st.booleans())
def test_fuzz_scenario_files(fleet, tmp_path, data, how, as_json):
    import copy

    doc = copy.deepcopy(SCENARIO)
    path = data.draw(st.sampled_from(_paths(doc, [])))
    scenario = tmp_path / ("s.json" if as_json else "s.yaml")
    scenario.write_bytes(mutated_yaml(doc, path, how))
    before = snapshot(fleet.state)
    check_contract(fleet("inject-fault", "--from", scenario, "--dry-run"), scenario)
    assert snapshot(fleet.state) == before


@FUZZ
@given(st.data(), mutation, st.sampled_from(["--workload", "--fault-rates"]))
def test_fuzz_workload_and_fault_rate_files(cli, tmp_path, data, how, option):
    import copy

    doc = copy.deepcopy(WORKLOAD if option == "--workload" else RATES)
    path = data.draw(st.sampled_from(_paths(doc, [])))
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(mutated_yaml(doc, path, how))
    check_contract(
        cli("simulate-fleet", "--days", "0.01", "--out", tmp_path / "e.jsonl", option, spec, state=False), spec
    )


def _goodput_args(data) -> list[str]:
    args = []
    if data.draw(st.booleans()):
        args.append("--skip-bad")
    if data.draw(st.booleans()):
        args += ["--period", data.draw(st.sampled_from(["day", "week"]))]
    return [*args, "-o", data.draw(st.sampled_from(["json", "csv", "md", "table"]))]


@FUZZ
@given(st.data(), mutation)
def test_fuzz_native_jsonl(cli, tmp_path, data, how):
    lines = native_lines()
    line_no = data.draw(st.integers(0, len(lines) - 1))
    keys = [*json.loads(lines[line_no]), "time", "chips", "step", "type", "job"]
    log = tmp_path / "log.jsonl"
    log.write_bytes(mutated_jsonl(lines, line_no, data.draw(st.sampled_from(keys)), how))
    args = _goodput_args(data)
    check_contract(cli("goodput-report", log, *args, state=False), log, args[-1])


@FUZZ
@given(st.data(), st.one_of(st.text(max_size=30), st.sampled_from(RAW_TOKENS), st.binary(max_size=100)))
def test_fuzz_native_csv(cli, tmp_path, data, cell):
    records = [json.loads(x) for x in native_lines()]
    columns = sorted({k for r in records for k in r})
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    rows = buf.getvalue().splitlines()
    row = data.draw(st.integers(0, len(rows) - 1))
    cells = next(csv.reader([rows[row]]))
    col = data.draw(st.integers(0, len(cells) - 1))
    if isinstance(cell, bytes):
        line = rows[row].encode()
        rows_bytes = [r.encode() for r in rows]
        rows_bytes[row] = line[: len(line) // 2] + cell + line[len(line) // 2 :]
        body = b"\n".join(rows_bytes)
    else:
        cells[col] = cell
        out = io.StringIO()
        csv.writer(out, lineterminator="").writerow(cells)
        rows[row] = out.getvalue()
        body = "\n".join(rows).encode()
    log = tmp_path / "log.csv"
    log.write_bytes(body)
    args = _goodput_args(data)
    check_contract(cli("goodput-report", log, *args, state=False), log, args[-1])


_, ML = training_job("llm", 1767571200, runs=2, steps_per_run=6, seed=3)
ML_LINES = [json.dumps({"jsonPayload": x}) for x in ML] + [
    json.dumps({"job_name": "llm", "job_metadata": {"chips": 64, "accelerator": "tpu-v4", "ideal_step_s": 8.0}})
]


@FUZZ
@given(st.data(), mutation)
def test_fuzz_ml_goodput_entries(cli, tmp_path, data, how):
    line_no = data.draw(st.integers(0, len(ML_LINES) - 1))
    rec = json.loads(ML_LINES[line_no])
    keys = [*rec.get("jsonPayload", rec), "job_name", "job_metadata", "step_count", "event_type", "jsonPayload"]
    log = tmp_path / "ml.jsonl"
    log.write_bytes(mutated_jsonl(ML_LINES, line_no, data.draw(st.sampled_from(keys)), how))
    args = _goodput_args(data)
    check_contract(cli("goodput-report", log, "--format", "ml-goodput", *args, state=False), log, args[-1])


def test_a_yaml_merge_key_still_merges_and_its_keys_may_be_overridden():
    from tpufleet.state.inputfiles import parse_yaml

    assert parse_yaml("a: 1\n<<: {b: 2, a: 3}\n", "f.yaml") == {"a": 1, "b": 2}


def test_csv_keeps_a_value_that_starts_with_the_quote_apart_from_a_quoted_one(cli, tmp_path):
    """Jobs `-x` and `'-x` both came out `'-x`: the guard's quote could not be undone. A leading `'` is now quoted
    too, so dropping one leading `'` gives each value back; numbers, negative ones too, stay numbers."""
    log = tmp_path / "quotes.jsonl"
    records = [{"type": "job", "job": job, "chips": 4} for job in ("-x", "'-x", "'plain", "=1+1")]
    for job in ("-x", "'-x", "'plain", "=1+1"):
        records.append({"type": "event", "job": job, "event": "allocation", "time": 10, "chips": 4})
        records.append({"type": "event", "job": job, "event": "job_end", "time": 50})
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = cli("goodput-report", log, "-o", "csv", state=False)
    assert out.code == 0, out.err
    jobs = [row[1] for row in csv.reader(io.StringIO(out.out)) if row[0] == "job"]
    assert sorted(jobs) == sorted(["'-x", "''-x", "''plain", "'=1+1"])
    assert sorted(j[1:] if j.startswith("'") else j for j in jobs) == sorted(["-x", "'-x", "'plain", "=1+1"])
    from tpufleet.cli.render import flat_table

    assert flat_table([{"n": -1.5, "name": "-x", "quoted": "'-x"}], "csv") == "n,name,quoted\n-1.5,'-x,''-x"


@pytest.mark.parametrize(
    ("summary", "field"),
    [("x", "summary"), (None, "summary"), (1.5, "summary"), ({}, "summary.add"), ({"add": -1}, "summary.add")],
)
def test_a_plans_summary_not_of_counts_is_bad_input(fleet, tmp_path, summary, field):
    """A malformed `summary` was refused as "edited after it was made?" (exit 1), a plan of other counts; it is
    bad input naming the field (exit 2), as any other field of the wrong type."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "p.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    doc = json.loads(plan.read_text())
    doc["summary"] = {**doc["summary"], **summary} if isinstance(summary, dict) and summary else summary  # {}: none
    plan.write_text(json.dumps(doc))
    before = snapshot(fleet.state)
    r = fleet("apply-xconnect", plan)
    assert r.code == 2 and f"{plan}: field {field}" in r.err and r.err.count("\n") == 1, r.err
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("shape", ["4x4", "axbxc", "4x4x8x2", "", "4 x 4 x 8"])
def test_a_plans_shape_that_is_no_shape_is_bad_input(fleet, tmp_path, shape):
    """A `shape` that is no AxBxC was refused as "edited after it was made?" (exit 1), a plan of another shape; it
    is bad input naming the field (exit 2). A well-formed other shape stays the refusal of an edited plan."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "p.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    doc = json.loads(plan.read_text())
    plan.write_text(json.dumps({**doc, "shape": shape}))
    before = snapshot(fleet.state)
    r = fleet("apply-xconnect", plan)
    assert r.code == 2 and f"{plan}: field shape" in r.err and r.err.count("\n") == 1, r.err
    plan.write_text(json.dumps({**doc, "shape": "8x4x4"}))
    r = fleet("apply-xconnect", plan)
    assert r.code == 1 and "edited after it was made?" in r.err, r.err
    assert snapshot(fleet.state) == before
