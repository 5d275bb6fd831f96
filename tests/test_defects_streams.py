"""The scripting contract where output and the journal meet the outside: a full disk on stdout, an output encoding
that lacks a character, a login name with a newline or an undecodable byte, and journal lines whose JSON is valid
but whose contents have the wrong shape. None is an internal error (exit 70)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import one_line, snapshot


def _run(
    state: Path, *args: str, env: dict[str, str] | None = None, stdout=subprocess.PIPE
) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    command = [sys.executable, "-m", "tpufleet", "--state", str(state), *args]
    return subprocess.run(command, env=full_env, stdout=stdout, stderr=subprocess.PIPE, text=True, check=False)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a device whose writes fail: disk full)")
def test_a_full_disk_on_stdout_is_exit_1_and_a_committed_change_stays(tmp_path):
    state = tmp_path / "s"
    assert _run(state, "init").returncode == 0
    with open("/dev/full", "w") as full:
        for args in (("status",), ("allocate", "x", "--shape", "4x4x4"), ("report", "-o", "html")):
            r = _run(state, *args, stdout=full)
            assert r.returncode == 1, (args, r.stderr)
            assert r.stderr.count("\n") == 1 and "cannot write the output" in r.stderr and "Traceback" not in r.stderr
            # only `allocate` changed the state: a read-only command says it changed nothing
            said = "committed as serial 2" if args[0] == "allocate" else "nothing changed"
            assert said in r.stderr and ("committed" in r.stderr) == (args[0] == "allocate"), (args, r.stderr)
    assert [s["name"] for s in json.loads(_run(state, "show", "slices", "-o", "json").stdout)] == ["x"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a device whose writes fail: disk full)")
def test_a_full_stderr_keeps_the_exit_code_of_help_traceback_and_interrupt(tmp_path):
    state = tmp_path / "s"
    assert _run(state, "init").returncode == 0
    cases = [
        (("import",), {}, 2),  # a group without its command shows its help on stderr
        (("--debug", "inject-fault", "bogus:1"), {}, 2),  # the traceback before the error line
        (("allocate", "a", "--shape", "4x4x4"), {"TPUFLEET_CRASH_AT": "atomic_write.before_rename"}, 143),
    ]
    with open("/dev/full", "w") as full:
        for args, env, code in cases:
            signal_env = {"TPUFLEET_CRASH_SIGNAL": "TERM"} if env else {}
            command = [sys.executable, "-m", "tpufleet", "--state", str(state), *args]
            done = subprocess.run(command, env={**os.environ, **env, **signal_env}, stderr=full, check=False)
            assert done.returncode == code, args
    assert _run(state, "show", "slices", "-o", "json").stdout.strip() == "[]"  # the stopped allocate left nothing


def test_an_output_encoding_without_the_characters_escapes_them(tmp_path):
    state = tmp_path / "s"
    assert _run(state, "init").returncode == 0
    assert _run(state, "inject-fault", "host:c01/1", "--reason", "修理 😀").returncode == 0
    latin = {"PYTHONIOENCODING": "latin-1"}
    table = _run(state, "faults", env=latin)
    assert table.returncode == 0 and "\\u4fee\\u7406 \\ud83d\\ude00" in table.stdout
    doc = _run(state, "faults", "-o", "json", env=latin)
    assert doc.returncode == 0 and json.loads(doc.stdout)[0]["reason"] == "修理 😀"  # JSON escapes: the same text


def test_a_login_name_never_shapes_the_journal_or_its_readers(tmp_path):
    state = tmp_path / "s"
    assert (
        _run(state, "init", env={"USER": "ops\nserial 9  forged", "LOGNAME": "ops\nserial 9  forged"}).returncode == 0
    )
    history = _run(state, "history")
    assert history.returncode == 0 and len(history.stdout.splitlines()) == 3  # header, rule, one entry
    users = [e["user"] for e in json.loads(_run(state, "history", "-o", "json").stdout)]
    assert users == ["ops\\nserial 9  forged"]


def _edit_journal(state: Path, line: int, edit) -> None:
    path = state / "journal.jsonl"
    lines = path.read_text().splitlines()
    doc = json.loads(lines[line])
    edit(doc)
    lines[line] = json.dumps(doc)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["delta"]["slices"].update(changed={"a": {"state": "x"}}),  # not an [old, new] pair
        lambda d: d["delta"]["faults"].update(opened=[5]),
        lambda d: d["delta"]["ocs"].update({"pod0/x/0": {"add": [[1]], "remove": []}}),
    ],
)
def test_diff_takes_a_delta_of_the_wrong_shape_as_without_detail(fleet, edit):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert fleet("allocate", "b", "--shape", "4x4x4").code == 0
    _edit_journal(fleet.state, 1, edit)
    r = fleet("diff", "0", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["without_detail"] == [2] and r.json["commits"] == 3 and r.json["slices"]["added"] == ["b"]


@pytest.mark.parametrize("key", ["pod0/x", "garbage", "pod0/w/1", "pod0/x/1/2"])
def test_diff_takes_a_line_of_a_key_that_is_no_ocs_as_without_detail(fleet, key):
    """A wiring's line touches dozens of OCS (grouped by pod and dimension in the table): a key that was no OCS
    id (`pod0/x`) ended `diff`'s table in exit 70. Such a line is one without detail, as any damaged delta."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("allocate", "b", "--shape", "4x4x4").code == 0
    _edit_journal(fleet.state, 2, lambda d: d["delta"]["ocs"].update({key: {"add": [[1, 2]], "remove": []}}))
    for output in ("table", "json"):
        r = fleet("diff", "2", "-o", output)
        assert r.code == 0, r.err
    assert r.json["without_detail"] == [3] and r.json["slices"]["added"] == ["b"] and r.json["ocs"] == {}
    assert "serials 3 were recorded without detail" in fleet("diff", "2").out


def test_diff_counts_a_damaged_line_as_a_commit_without_detail(fleet):
    for name in ("a", "b", "c"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
    path = fleet.state / "journal.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = '{"serial": 3, garbage'
    lines[3] = '{"serial": 4, "also": garbage'  # the last line too: the state's serial ends the range
    path.write_text("\n".join(lines) + "\n")
    r = fleet("diff", "0", "-o", "json")
    assert r.code == 0 and (r.json["to"], r.json["commits"], r.json["without_detail"]) == (4, 4, [3, 4])
    assert r.json["slices"]["added"] == ["a"] and "damaged line(s) 3, 4" in r.err


@pytest.mark.parametrize(
    "record",
    [
        {"id": "f900", "planned": False, "opened": "2026-11-01T00:00:00Z", "cleared": "2026-11-02T00:00:00Z"},
        {"id": "f900", "target": "bogus", "planned": False, "reason": "", "opened": "2026-11-01T00:00:00Z"},
    ],
)
def test_a_damaged_moved_fault_is_a_damaged_line_for_suspects_and_faults(fleet, record):
    assert fleet("inject-fault", "host:c05/1").code == 0
    _edit_journal(fleet.state, 1, lambda d: d.update(moved_faults=[record]))
    before = snapshot(fleet.state)
    for args in (("suspects",), ("faults", "--all"), ("history",)):
        r = fleet(*args)
        assert r.code == 0 and "damaged line(s) 2 skipped" in r.err, (args, r.err)
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("show", "slices", "--tail", "1"), "--tail: only with `show journal`"),
        (("show", "inventory", "--pod", "pod9"), "--pod: only with `show map`"),
        (("simulate-availability", "--cubes", "1,,2"), "--cubes"),
        (("simulate-availability", "--cubes", "1_0"), "--cubes"),
        (("simulate-availability", "--cubes", ""), "--cubes: empty list"),
        (("--state", "mysql://u:secret@h/db", "status"), "a mysql:// URL"),
    ],
)
def test_options_are_used_or_refused_never_ignored(fleet, args, said):
    before = snapshot(fleet.state)
    r = fleet(*args, state="--state" not in args)  # a --state of its own, not beside the fleet's
    assert r.code == 2 and said in r.err and "secret" not in r.err, r.err
    assert snapshot(fleet.state) == before


def test_an_over_long_reason_says_how_long_it_was_as_typed(fleet):
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "host:c30/1", "--reason", "\x1b" * 1000))
    assert "1,000 characters (4,000 once its control characters are escaped); at most 1,024" in line
    assert "1,100 characters; at most 1,024" in one_line(fleet("inject-fault", "host:c30/1", "--reason", "a" * 1100))
    assert snapshot(fleet.state) == before
    assert fleet("inject-fault", "host:c30/1", "--reason", "a" * 1024).code == 0


def test_a_job_name_from_the_logs_never_shapes_a_report(cli, tmp_path):
    """A newline or escape sequence in a job's name: one row in the table, escaped in md and html (control
    characters are never valid HTML text), kept as data in csv (as JSON keeps it, escaped by JSON itself)."""
    fixture = Path(__file__).parent.parent / "fixtures" / "goodput" / "fleet.jsonl"
    name = 'wa,it"er\n|x|\x1b[31m<b>'
    log = tmp_path / "jobs.jsonl"
    log.write_text(fixture.read_text().replace('"waiter"', json.dumps(name)))
    table = cli("goodput-report", log)
    assert table.code == 0 and "\x1b" not in table.out
    [row] = [line for line in table.out.splitlines() if line.startswith("wa,it")]
    assert "\\n|x|\\x1b[31m<b>" in row
    for fmt in ("md", "html"):
        out = cli("goodput-report", log, "-o", fmt).out
        assert "\x1b" not in out and "<b>" not in out, fmt
    import csv
    import io

    rows = list(csv.reader(io.StringIO(cli("goodput-report", log, "-o", "csv").out)))
    assert any(name in row for row in rows)
    assert name in {j["job"] for j in cli("goodput-report", log, "-o", "json").json["jobs"]}


def test_a_closed_stdout_is_output_that_cannot_be_written_not_an_internal_error(tmp_path):
    """`tpufleet allocate x --shape 4x4x4 >&-` (a cron line that closes stdout) committed the slice, then exited 70,
    "internal error: AttributeError: 'NoneType' object has no attribute 'flush'". Now it is output that cannot be
    written: exit 1, said on stderr, the change committed; a refusal keeps its own code and message."""
    state = tmp_path / "s"
    assert _run(state, "init").returncode == 0

    def closed_stdout(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "tpufleet", "--state", str(state), *args]
        return subprocess.run(command, stdout=None, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1))

    r = closed_stdout("allocate", "x", "--shape", "4x4x4")
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "cannot write the output: standard output is closed" in r.stderr
    r = closed_stdout("allocate", "y", "--shape", "4x4x4", "-o", "json")
    assert json.loads(r.stderr)["exit_code"] == 1
    r = closed_stdout("explain", "nope")
    assert r.returncode == 1 and "unknown slice or job 'nope'" in r.stderr and "cannot write" not in r.stderr
    shown = json.loads(_run(state, "show", "slices", "-o", "json").stdout)
    assert [s["name"] for s in shown] == ["x", "y"]
    assert _run(state, "history").returncode == 0  # the journal is whole: nothing was written into it
