"""A journal row put into the database by hand holding a newline byte: a journal line is one JSON object, so the row
is one line wherever it is read, in the database and in the directory a pull writes (was two lines, neither the row)."""

from __future__ import annotations

import json

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer, db_name

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url


def _hand_row(pg_server: PgServer, pg_url: str, line: str) -> None:
    literal = line.replace("'", "''")
    pg_server.sql(
        f"INSERT INTO tpufleet_journal (serial, line) VALUES (1, convert_to(E'{literal}', 'UTF8'))", db_name(pg_url)
    )


def _entry(summary: str) -> dict:
    return {"serial": 1, "time": "2026-01-06T00:00:00Z", "user": "ops", "pid": 1, "command": "psql", "summary": summary}


@pytest.mark.parametrize(
    ("line", "entry"),
    [
        (json.dumps(_entry("by hand")).replace(", ", ",\\n"), True),  # newlines between tokens (E'' literals)
        (json.dumps(_entry("two@lines")).replace("@", "\\n"), True),  # a raw newline inside a string
        ("not json\\nat all", False),
    ],
)
def test_a_journal_row_holding_a_newline_is_pulled_as_one_line(tmp_path, pg_url, pg_server, capsys, line, entry):
    db = Cli(capsys, pg_url)
    assert db("init").code == 0
    _hand_row(pg_server, pg_url, line)
    assert db("inject-fault", "host:c01/0").code == 0
    folder = Cli(capsys, tmp_path / "d")
    pulled = folder("state", "pull", pg_url, folder.state, "-o", "json", state=False)
    assert pulled.code == 0, pulled.err
    assert pulled.json["journal_lines"] == 3
    assert len((folder.state / "journal.jsonl").read_bytes().splitlines()) == 3
    for place in (db, folder):
        shown = place("show", "journal", "-o", "json")
        assert shown.code == 0 and len(shown.json) == (3 if entry else 2)
        assert ("damaged line(s) 2 skipped" in shown.err) is not entry
    again = folder("state", "push", folder.state, pg_url, "-o", "json", state=False)
    assert again.code == 0 and again.json["changed"] is False
