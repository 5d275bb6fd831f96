"""How a log, an export or the state given twice, or as '-', is refused: each option named once, the name the
operator typed, and the same words for standard input everywhere; a log file named '-' is read as ./-."""

from __future__ import annotations

from pathlib import Path

from helpers import one_line, snapshot


def test_metrics_names_goodput_once_when_its_log_is_standard_input_twice(fleet):
    """`metrics --goodput - --goodput -` said `bad options --goodput and --goodput`, naming one option twice."""
    before = snapshot(fleet.state)
    line = one_line(fleet("metrics", "--goodput", "-", "--goodput", "-"), 2)
    said = "bad option --goodput: - (standard input) is given more than once; only one log can be"
    assert line == f"tpufleet: error: {said}"
    assert snapshot(fleet.state) == before


def test_serve_says_standard_input_is_not_read_however_often_goodput_is_dash(fleet):
    """`serve --goodput - --goodput -` was told its events would count twice, as if standard input were read; one
    `--goodput -` is told serve cannot read it again as it changes. Both now say that (refused before listening)."""
    said = "tpufleet: error: <stdin>: field <root>: cannot be read again as it changes: give the log's file"
    once = one_line(fleet("serve", "--listen", "127.0.0.1:0", "--goodput", "-"), 2)
    twice = one_line(fleet("serve", "--listen", "127.0.0.1:0", "--goodput", "-", "--goodput", "-"), 2)
    assert once == twice == said


def test_a_log_given_twice_is_named_as_the_operator_typed_it(fleet, tmp_path, monkeypatch):
    """`metrics --goodput a.jsonl --goodput ./a.jsonl` said `a.jsonl is given twice (also as a.jsonl)`: the
    second name lost its `./`, so the message named one spelling twice."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.jsonl").write_text("")
    said = "bad goodput logs: ./a.jsonl is given twice (also as a.jsonl): its events would count twice"
    for args in (
        ("metrics", "--goodput", "a.jsonl", "--goodput", "./a.jsonl"),
        ("goodput-report", "a.jsonl", "./a.jsonl"),
    ):
        assert one_line(fleet(*args), 2) == f"tpufleet: error: {said}"


def test_drift_says_standard_input_as_every_other_message_does(fleet):
    """`drift --nodes - --slices -` said `only one can be - (stdin)`, where every other message says
    `(standard input)`; it now names the options given '-', as `metrics` does."""
    said = "bad options --nodes and --slices: each is - (standard input); only one can be"
    assert one_line(fleet("drift", "--nodes", "-", "--slices", "-"), 2) == f"tpufleet: error: {said}"
    exports = ("--drift-nodes", "-", "--drift-reservation", "-", "--drift-slices", "-")
    said = (
        "bad options --drift-nodes, --drift-reservation and --drift-slices: each is - (standard input); only one can be"
    )
    assert one_line(fleet("metrics", *exports), 2) == f"tpufleet: error: {said}"


STATE_DASH = "'-' is not standard input here; name a directory or a postgresql:// URL (for a directory so named: ./-)"


def test_a_state_named_dash_is_refused_and_nothing_is_made(cli, tmp_path, monkeypatch):
    """`tpufleet --state - init` made a state directory named `-` (exit 0), where every output named `-` is
    refused; so did TPUFLEET_STATE=- and a config file's `state = "-"`. A directory so named is still ./-."""
    monkeypatch.chdir(tmp_path)
    line = one_line(cli("--state", "-", "init", state=False), 2)
    assert line == f"tpufleet: error: bad option --state '-': {STATE_DASH}"
    monkeypatch.setenv("TPUFLEET_STATE", "-")
    line = one_line(cli("init", state=False), 2)
    assert line == f"tpufleet: error: bad environment variable TPUFLEET_STATE '-': {STATE_DASH}"
    monkeypatch.delenv("TPUFLEET_STATE")
    (tmp_path / "config.toml").write_text('state = "-"\n')
    monkeypatch.setenv("TPUFLEET_CONFIG", str(tmp_path / "config.toml"))
    line = one_line(cli("init", state=False), 2)
    assert line.startswith(f"tpufleet: error: {tmp_path / 'config.toml'}: field state: is not standard input here")
    assert not (tmp_path / "-").exists()
    monkeypatch.delenv("TPUFLEET_CONFIG")
    assert cli("--state", "./-", "init", state=False).code == 0
    assert (tmp_path / "-").is_dir()


GOODPUT_LOG = Path(__file__).parent.parent / "fixtures/goodput/slow_steps.jsonl"


def test_a_log_file_named_dash_is_read_when_given_as_dot_slash_dash(fleet, tmp_path, monkeypatch):
    """`goodput-report ./-` read standard input, not the file named `-` (a Path of `./-` reads `-`), where every
    other file option reads the file so named."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_bytes(GOODPUT_LOG.read_bytes())
    whole = fleet("goodput-report", GOODPUT_LOG, "-o", "json")
    dashed = fleet("goodput-report", "./-", "-o", "json")
    assert (whole.code, dashed.code) == (0, 0), dashed.err
    assert dashed.json["fleet"] == whole.json["fleet"]
    metrics = fleet("metrics", "--goodput", "./-", "-o", "json")
    assert metrics.code == 0, metrics.err
