"""`--state` given a file: refused (exit 2) saying what to pass instead, the state's directory for one of its files."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize("name", ["state.json", "journal.jsonl"])
@pytest.mark.parametrize("args", [("status",), ("allocate", "x", "--shape", "4x4x4"), ("init",)])
def test_a_states_file_as_state_names_its_directory(fleet, name, args):
    before = snapshot(fleet.state)
    line = one_line(fleet("--state", str(fleet.state / name), *args, state=False), 2)
    assert f"pass that directory (--state {fleet.state})" in line
    assert snapshot(fleet.state) == before


def test_another_file_as_state_says_to_pass_a_directory(fleet, tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("hi\n")
    r = fleet("--state", str(other), "status", "-o", "json", state=False)
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert "notes.txt" in said["error"] and "(--state DIR)" in said["error"]
    assert other.read_text() == "hi\n"


def test_a_states_file_in_a_directory_with_a_space_names_it_as_the_shell_takes_it(cli, tmp_path):
    import shlex

    state = tmp_path / "my fleet"
    assert cli("--state", str(state), "init", state=False).code == 0
    line = one_line(cli("--state", str(state / "state.json"), "status", state=False), 2)
    assert f"pass that directory (--state {shlex.quote(str(state))})" in line
