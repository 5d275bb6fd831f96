"""`state pull` into a directory at the database's serial whose journal has a damaged line in the middle was refused
as another history. When every line that reads is the database's line at that place, and the damaged lines stand
where the database has good ones, the pull replaces the journal with the database's, keeping the damaged one beside
it; a journal that differs in a line that reads is still refused, nothing changed."""

from __future__ import annotations

import pgserver
import pytest

from helpers import snapshot

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url
pushed = pgserver.pushed  # a directory at serial 3, pushed


def _replace_line(path, index: int, line: bytes) -> bytes:
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    lines[index] = line
    path.write_bytes(b"".join(lines))
    return whole


@pytest.mark.parametrize("index", [0, 1, 2])
def test_a_pull_repairs_a_damaged_journal_line_keeping_the_damaged_journal_beside(pushed, pg_url, index):
    path = pushed.state / "journal.jsonl"
    healthy = _replace_line(path, index, b"garbage\n")
    damaged = path.read_bytes()
    r = pushed("state", "pull", pg_url, pushed.state, "-o", "json", state=False)
    assert r.code == 0, r.err
    kept = pushed.state / "journal.jsonl.damaged-3"
    assert r.json["changed"] is True and r.json["journal_kept"] == str(kept) and r.json["damaged_kept"] is None
    assert path.read_bytes() == healthy and kept.read_bytes() == damaged
    history = pushed("history", "-o", "json")
    assert history.code == 0 and history.err == "" and [e["serial"] for e in history.json] == [1, 2, 3]


def test_a_pull_says_the_damaged_journal_it_kept(pushed, pg_url):
    _replace_line(pushed.state / "journal.jsonl", 1, b"garbage\n")
    r = pushed("state", "pull", pg_url, pushed.state, state=False)
    assert r.code == 0 and "journal.jsonl.damaged-3" in r.out


def test_a_journal_whose_good_line_differs_from_the_databases_is_still_refused(pushed, pg_url):
    path = pushed.state / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    _replace_line(path, 1, lines[1].replace(b'"user":', b'"user":"someone else","was":', 1))
    before = snapshot(pushed.state)
    assert pushed("state", "pull", pg_url, pushed.state, state=False).code == 1
    assert snapshot(pushed.state) == before


def test_a_pull_repairs_a_damaged_journal_line_beside_a_damaged_state_file(pushed, pg_url):
    path, state = pushed.state / "journal.jsonl", pushed.state / "state.json"
    healthy, healthy_state = _replace_line(path, 1, b"garbage\n"), state.read_bytes()
    state.write_bytes(b"{")
    r = pushed("state", "pull", pg_url, pushed.state, "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["journal_kept"] == str(pushed.state / "journal.jsonl.damaged-3")
    assert r.json["damaged_kept"] == str(pushed.state / "state.json.damaged-3")
    assert path.read_bytes() == healthy and state.read_bytes() == healthy_state


def test_a_push_of_a_journal_the_database_holds_whole_names_the_pull_that_mends_it(pushed, pg_url):
    """Refused, rightly, as another history; the refusal did not say that `state pull` repairs such a journal."""
    _replace_line(pushed.state / "journal.jsonl", 1, b"garbage\n")
    before = snapshot(pushed.state)
    r = pushed("state", "push", pushed.state, pg_url, state=False)
    assert r.code == 1 and "state pull" in r.err and "damaged lines" in r.err, r.err
    assert snapshot(pushed.state) == before
    assert pushed("state", "pull", pg_url, pushed.state, state=False).code == 0
