"""`state pull` into a directory whose state file is damaged (not JSON: cut short, zeroed) was refused as bad input,
so the database could not restore it in place. The pull replaces it, keeping the damaged file beside it, when the
directory's journal is the start of the database's; a directory that holds more or other history is still refused."""

from __future__ import annotations

import pgserver
import pytest

from helpers import one_line, snapshot

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url
pushed = pgserver.pushed  # a directory at serial 3, pushed


@pytest.mark.parametrize("damage", [b"", b'{"serial": 3, "fle', b"\0" * 4096])
def test_a_pull_restores_a_damaged_state_file_in_place_keeping_it_beside(pushed, pg_url, damage):
    state = pushed.state / "state.json"
    healthy = state.read_bytes()
    state.write_bytes(damage)
    assert pushed("status").code == 2
    r = pushed("state", "pull", pg_url, pushed.state, "-o", "json", state=False)
    assert r.code == 0, r.err
    kept = pushed.state / "state.json.damaged-3"
    assert r.json["changed"] is True and r.json["damaged_kept"] == str(kept) and r.json["serial"] == 3
    assert kept.read_bytes() == damage and state.read_bytes() == healthy
    assert pushed("status").code == 0 and pushed("inject-fault", "host:c41/1").code == 0
    text = pushed("state", "pull", pg_url, pushed.state, state=False)  # the directory is ahead now: refused
    assert text.code == 1


def test_a_pull_says_the_damaged_state_file_it_kept(pushed, pg_url):
    (pushed.state / "state.json").write_bytes(b"{")
    r = pushed("state", "pull", pg_url, pushed.state, state=False)
    assert r.code == 0 and "state.json.damaged-3" in r.out


def test_a_damaged_state_beside_a_journal_ahead_of_the_database_is_still_refused(pushed, pg_url):
    assert pushed("inject-fault", "host:c41/1").code == 0  # serial 4: not in the database
    (pushed.state / "state.json").write_bytes(b"{")
    before = snapshot(pushed.state)
    line = one_line(pushed("state", "pull", pg_url, pushed.state, state=False), code=1)
    assert "damaged state file" in line and "nothing was moved" in line
    assert snapshot(pushed.state) == before


def test_a_state_file_of_a_later_tpufleet_is_not_damaged_and_is_not_replaced(pushed, pg_url):
    state = pushed.state / "state.json"
    state.write_bytes(state.read_bytes().replace(b'"schema_version": ', b'"schema_version": 99'))
    before = snapshot(pushed.state)
    assert pushed("state", "pull", pg_url, pushed.state, state=False).code == 2
    assert snapshot(pushed.state) == before


def test_a_pull_killed_after_keeping_the_damaged_file_keeps_it_once(pushed, pg_url):
    import os
    import subprocess
    import sys

    from tpufleet.state import crashpoints

    (pushed.state / "state.json").write_bytes(b"{")
    env = {**os.environ, crashpoints.ENV: "atomic_write.before_fsync:1"}  # the journal: before the state file
    argv = [sys.executable, "-m", "tpufleet", "state", "pull", pg_url, str(pushed.state)]
    assert subprocess.run(argv, env=env, capture_output=True, check=False).returncode == -9
    r = pushed("state", "pull", pg_url, pushed.state, "-o", "json", state=False)
    assert r.code == 0 and r.json["damaged_kept"] == str(pushed.state / "state.json.damaged-3")
    assert sorted(p.name for p in pushed.state.glob("state.json.*")) == ["state.json.damaged-3"]
