"""Inputs an option and input fuzzer found mishandled (a review of every command's options and input files): each
now exits 0 with the right answer or 2 naming the option or file, and leaves the state as it was."""

from __future__ import annotations

import io
import json
import os
import sys
import threading

import pytest

from helpers import beside_a_fifo, one_line, snapshot
from tpufleet.goodput.times import BadRecord, parse_time
from tpufleet.state import inputfiles


def test_a_fault_rate_too_small_to_strike_strikes_nothing(fleet):
    """A rate of 1e-320 a day is 0 a second: the simulator divided by it (exit 70)."""
    for scale in ("1e-320", "host=1e-320"):
        r = fleet("simulate-fleet", "--days", "0.05", "--fault-scale", scale, "-o", "json")
        assert r.code == 0, r.err
        assert r.json["faults"] == {"host": 0, "link": 0, "ocs": 0, "drain": 0}


@pytest.mark.parametrize("scale", ["\u0663", "host=1_0", "host", "host=2,ocs", "nan", "2 x"])
def test_fault_scale_takes_plain_ascii_numbers_only(fleet, scale):
    r = fleet("simulate-fleet", "--days", "0.05", "--fault-scale", scale)
    assert r.code == 2 and "bad option --fault-scale" in r.err and r.err.count("\n") == 1


@pytest.mark.parametrize("since", ["\u0663", "1_0", "", " "])
def test_goodput_since_takes_plain_ascii_numbers_and_no_empty_bound(cli, since):
    log = "fixtures/goodput/fleet.jsonl"
    for option in ("--since", "--until"):
        r = cli("goodput-report", log, option, since, state=False)
        assert r.code == 2 and f"bad option {option}" in r.err, r.err


def test_a_log_time_in_other_digits_is_a_bad_record():
    assert parse_time("1767571200", "f", 1) == 1767571200.0
    for text in ("\u0661\u0667\u0666\u0667\u0665\u0667\u0661\u0662\u0660\u0660", "1_767_571_200", "inf"):
        with pytest.raises(BadRecord):
            parse_time(text, "f", 1)


def test_a_number_yaml_read_as_text_says_how_to_write_it(fleet, tmp_path):
    rates = tmp_path / "rates.yaml"
    rates.write_text("schema_version: 1\nhost_per_day: 1e-30\n")
    r = fleet("simulate-fleet", "--days", "0.05", "--fault-rates", rates)
    assert r.code == 2 and "field host_per_day: must be a number" in r.err and "1.0e-30" in r.err


def test_collective_bytes_and_table_capacity_are_bounded(fleet):
    for step in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        assert fleet(*step).code == 0
    base = ("collective", "a", "--op", "all-reduce")
    assert fleet(*base, "--bytes", "1.5").code == 2  # no half byte
    assert fleet(*base, "--bytes", "1.5KiB", "-o", "json").json["bytes"] == 1536
    r = fleet(*base, "--bytes", "1GiB", "--table-capacity", str(10**30))
    assert r.code == 2 and "--table-capacity" in r.err


@pytest.mark.parametrize("traffic", ["", " ", ","])
def test_routes_with_no_traffic_pattern_is_bad_input(fleet, traffic):
    for step in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply")):
        assert fleet(*step).code == 0
    before = snapshot(fleet.state)
    r = fleet("routes", "a", "--traffic", traffic)
    assert r.code == 2 and "--traffic" in r.err and snapshot(fleet.state) == before


def test_an_empty_log_is_named(cli, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = cli("goodput-report", empty, state=False)
    assert r.code == 2 and "no job events in the input" in r.err and str(empty) in r.err


def test_a_serial_past_2_53_is_refused_and_a_journal_gap_is_not_listed(fleet):
    path = fleet.state / "state.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "serial": 10**30}))
    r = fleet("status")
    assert r.code == 2 and "field serial" in r.err
    path.write_text(json.dumps({**doc, "serial": 2**53 - 1}))
    r = fleet("diff", "1")  # listed every missing serial, without end
    assert r.code == 1 and "have no journal line" in r.err
    r = fleet("inject-fault", "host:c01/1")  # the next serial would not load: refused, nothing written
    assert r.code == 2 and "nothing changed" in r.err


def test_a_job_record_number_in_other_digits_is_a_bad_record(cli, tmp_path):
    log = tmp_path / "log.jsonl"
    job = {"type": "job", "job": "j", "chips": 8, "ideal_step_s": "1_0"}
    start = {"type": "event", "job": "j", "time": 1767571200.0, "event": "job_start"}
    log.write_text(json.dumps(job) + "\n" + json.dumps(start) + "\n")
    r = cli("goodput-report", log, state=False)
    assert r.code == 2 and "field ideal_step_s" in r.err


# ---- a FIFO given as an input file ---------------------------------------------------------------------------
FIFO_READERS = [
    ("inject-fault", "--from", "{fifo}"),
    ("apply-xconnect", "{fifo}"),
    ("import", "k8s", "{fifo}"),
    ("plan-maintenance", "--notices", "{fifo}"),
    ("goodput-report", "{fifo}"),
    ("serve", "--listen", "127.0.0.1:0", "--token-file", "{fifo}"),
]


@pytest.mark.parametrize("command", FIFO_READERS, ids=lambda c: " ".join(c[:2]))
def test_a_fifo_nothing_writes_to_is_refused_not_waited_on(fleet, tmp_path, command):
    """A FIFO (mkfifo) that no process writes to hung the command for good in its open; now: exit 2, naming it."""
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    before = snapshot(fleet.state)
    r = beside_a_fifo(lambda: fleet(*(part.format(fifo=fifo) for part in command)), fifo)
    assert r.code == 2 and str(fifo) in r.err and "a FIFO that nothing wrote to" in r.err, r.err
    assert snapshot(fleet.state) == before


def test_a_fifo_whose_writer_comes_is_read_whole(fleet, tmp_path, monkeypatch):
    """The writer may open it a moment after the command (`mkfifo f; kubectl ... > f &`): it is waited for."""
    # The writer thread only has to be scheduled: given a minute (not 2 s), a busy machine cannot fail the test.
    monkeypatch.setattr(inputfiles, "FIFO_WRITER_WAIT_S", 60.0)
    fifo = tmp_path / "faults.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text('[{"target": "cube:c01"}]'), daemon=True)
    writer.start()
    r = fleet("inject-fault", "--from", fifo, "--dry-run", "-o", "json")
    writer.join()
    assert r.code == 0, r.err
    assert [f["target"] for f in r.json] == ["cube:c01"]


# ---- an empty input -------------------------------------------------------------------------------------------
EMPTY_READERS = [
    ("import", "k8s", "{file}"),
    ("import", "reservation", "{file}"),
    ("import", "slices", "{file}"),
    ("import", "k8s", "fixtures/k8s/nodes.json", "--mapping", "{file}"),
    ("drift", "--slices", "{file}"),
    ("inject-fault", "--from", "{file}"),
    ("apply-xconnect", "{file}"),
    ("plan-maintenance", "--notices", "{file}"),
    ("simulate-fleet", "--days", "0.01", "--workload", "{file}"),
    ("plan-spares", "--fault-rates", "{file}"),
    ("goodput-report", "fixtures/goodput/fleet.jsonl", "--exclude", "{file}"),
    ("serve", "--listen", "127.0.0.1:0", "--token-file", "{file}"),
]


@pytest.mark.parametrize("text", ["", " \n\n  \n"], ids=["0 bytes", "white space"])
@pytest.mark.parametrize("command", EMPTY_READERS, ids=lambda c: " ".join(c[:2]))
def test_an_empty_input_file_is_said_to_be_empty(fleet, tmp_path, command, text):
    """An empty file was "not valid JSON (Expecting value at line 1 column 1)", "must be a mapping (value None)" or
    "must be a JSON object of kind List ... (value 'NoneType')": it is now said to be empty, naming it (exit 2)."""
    empty = tmp_path / "input.json"
    empty.write_text(text)
    before = snapshot(fleet.state)
    line = one_line(fleet(*(part.format(file=empty) for part in command)), 2)
    assert str(empty) in line and line.endswith(("the file is empty", "the file is empty (only white space)")), line
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("command", [("import", "k8s", "-"), ("import", "reservation", "-"), ("drift", "--nodes", "-")])
def test_an_empty_standard_input_is_said_to_be_empty(fleet, monkeypatch, command):
    """`tpufleet import k8s - </dev/null` said `must be a JSON object of kind List ... (value 'NoneType')`."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    line = one_line(fleet(*command), 2)
    assert line == "tpufleet: error: <stdin>: field <root>: standard input is empty", line
