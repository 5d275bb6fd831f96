"""`--state` naming a directory with no fleet beside one of a close name that has one (`fleet-stat` for
`fleet-state`): refused (exit 1, nothing made) with `did you mean --state ...`; beside none, as before."""

from __future__ import annotations

import json

import pytest

from helpers import one_line


@pytest.fixture
def named(cli, tmp_path):
    state = tmp_path / "fleet-state"
    assert cli("--state", state, "init", state=False).code == 0
    return cli, state


@pytest.mark.parametrize("typed", ["fleet-stat", "fleet-statee", "Fleet-State"])
def test_a_near_miss_of_a_state_directory_names_it(named, tmp_path, typed):
    cli, state = named
    r = cli("--state", tmp_path / typed, "status", "-o", "json", state=False)
    said = json.loads(r.err)
    assert r.code == 1 and said["exit_code"] == 1
    assert said["error"].startswith(f"no fleet state in {tmp_path / typed}")
    assert said["error"].endswith(f"did you mean --state {state}?")
    assert not (tmp_path / typed).exists()


def test_a_writer_given_a_near_miss_makes_nothing(named, tmp_path):
    cli, state = named
    line = one_line(cli("--state", tmp_path / "fleet-stat", "allocate", "a", "--shape", "4x4x4", state=False), 1)
    assert line.endswith(f"did you mean --state {state}?") and not (tmp_path / "fleet-stat").exists()


def test_a_directory_like_none_gets_no_guess(named, tmp_path):
    cli, _ = named
    assert "did you mean" not in one_line(cli("--state", tmp_path / "other", "status", state=False), 1)
