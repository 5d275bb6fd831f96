"""Defects found in the PostgreSQL state backend and `state push|pull` (each test failed before its fix): text in
another client or database encoding, routing tables lost by a push, a pull killed into a new directory, passwords
quoted by libpq or cut at Python's whitespace, bad URL parameters read as a server that is down.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer, db_name

from helpers import one_line
from tpufleet.state import crashpoints
from tpufleet.state.pgbackend import PostgresBackend

CTX = multiprocessing.get_context("fork")
pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url
REASON = "修理 needed"  # outside Latin-1


@pytest.fixture
def latin1_url(pg_server: PgServer) -> Iterator[str]:
    """A new, empty database in the LATIN1 encoding: its URL."""
    name = f"latin{os.getpid()}"
    pg_server.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    pg_server.sql(f"CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    yield pg_server.url(name)
    with contextlib.suppress(Exception):
        pg_server.sql(f"DROP DATABASE {name} WITH (FORCE)")


# ---- 1. a client or database encoding other than UTF-8 ---------------------------------------------------------------


def _inject(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> int:
    """inject-fault with a reason outside Latin-1, as typed (the journal and the lock's holder note sys.argv)."""
    args = ("inject-fault", "ocs:pod0/x/7", "--reason", REASON)
    monkeypatch.setattr(sys, "argv", ["tpufleet", "--state", str(cli.state), *args])
    return cli(*args).code


def test_a_latin1_client_encoding_takes_any_text(pg_url, capsys, monkeypatch):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    monkeypatch.setenv("PGCLIENTENCODING", "LATIN1")  # as libpq reads it: was a UnicodeEncodeError, exit 70
    assert _inject(cli, monkeypatch) == 0
    assert [f["reason"] for f in cli("faults", "-o", "json").json] == [REASON]
    assert cli("show", "journal", "-o", "json").json[-1]["command"].endswith(REASON)
    holder = PostgresBackend(pg_url)
    with holder.locked(5, f"tpufleet --reason {REASON}"):  # a UTF8 database holds it as typed
        assert f"--reason {REASON}" in holder.holder()


def test_a_latin1_database_takes_any_text_and_its_lock_holder_is_escaped(latin1_url, capsys, monkeypatch):
    cli = Cli(capsys, latin1_url)
    assert cli("init").code == 0
    assert _inject(cli, monkeypatch) == 0
    assert [f["reason"] for f in cli("faults", "-o", "json").json] == [REASON]
    holder = PostgresBackend(latin1_url)
    with holder.locked(5, f"tpufleet --reason {REASON}"):  # a text column in LATIN1: escaped, not refused
        assert "--reason \\u4fee\\u7406 needed" in holder.holder()


# ---- 2. `state push|pull` and routing tables ---------------------------------------------------------------------------


def _routed(cli: Cli) -> None:
    for args in (("init",), ("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply")):
        assert cli(*args).code == 0


def _killed_routes(state: Path) -> None:
    os.environ[crashpoints.ENV] = "transaction.before_side_files"  # committed; the tables still under a temp name
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    from tpufleet.cli import main

    main(["--state", str(state), "routes", "a"])


def test_push_installs_the_tables_a_killed_writer_left_waiting(tmp_path, pg_server: PgServer, pg_url, capsys):
    folder = Cli(capsys, tmp_path / "d")
    _routed(folder)
    proc = CTX.Process(target=_killed_routes, args=(tmp_path / "d",))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL and not (tmp_path / "d" / "routes" / "a.npz").exists()
    pushed = folder("state", "push", tmp_path / "d", pg_url, "-o", "json", state=False)
    assert pushed.code == 0 and pushed.json["tables"] == ["a"]  # was []: the tables read as missing
    assert (tmp_path / "d" / "routes" / "a.npz").exists()
    assert pg_server.sql("SELECT name FROM tpufleet_tables", db_name(pg_url)) == [("a",)]
    assert [s["routes"] for s in Cli(capsys, pg_url)("show", "slices", "-o", "json").json] == ["fresh"]


def test_a_push_or_pull_never_deletes_the_targets_copy_of_tables_the_source_lacks(
    tmp_path, pg_server: PgServer, pg_url, capsys
):
    folder, db = Cli(capsys, tmp_path / "d"), db_name(pg_url)
    _routed(folder)
    assert folder("routes", "a").code == 0
    assert folder("state", "push", tmp_path / "d", pg_url, state=False).code == 0
    table = tmp_path / "d" / "routes" / "a.npz"
    kept = table.read_bytes()
    table.unlink()  # the same serial and history; the directory lost its file
    line = one_line(folder("state", "push", tmp_path / "d", pg_url, state=False), 1)
    assert "slice 'a'" in line and str(table) in line and "nothing was moved" in line
    assert pg_server.sql("SELECT data FROM tpufleet_tables", db) == [(kept,)]  # was deleted
    assert folder("state", "pull", pg_url, tmp_path / "d", state=False).code == 0  # copied back
    assert table.read_bytes() == kept
    pg_server.sql("DELETE FROM tpufleet_tables", db)  # now the database lost them: the pull must keep the file
    line = one_line(folder("state", "pull", pg_url, tmp_path / "d", state=False), 1)
    assert "slice 'a'" in line and "row 'a' in tpufleet_tables" in line
    assert table.read_bytes() == kept


# ---- 3. a pull killed into a new directory ------------------------------------------------------------------------------


def _killed_pull(url: str, state: Path, point: str) -> None:
    os.environ[crashpoints.ENV] = point
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    from tpufleet.cli import main

    main(["state", "pull", url, str(state)])


@pytest.mark.parametrize("point", ["atomic_write.before_dir_fsync:1", "atomic_write.before_rename:2"])
def test_a_pull_killed_between_the_journal_and_the_state_of_a_new_directory_is_completed_by_the_next(
    tmp_path, pg_url, capsys, point
):
    db = Cli(capsys, pg_url)
    _routed(db)
    assert db("routes", "a").code == 0
    new = tmp_path / "new"
    proc = CTX.Process(target=_killed_pull, args=(pg_url, new, point))  # the journal renamed in, no state file
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    assert (new / "journal.jsonl").exists() and not (new / "state.json").exists()
    pulled = db("state", "pull", pg_url, new, "-o", "json", state=False)
    assert pulled.code == 0 and pulled.json["changed"] is True and pulled.json["tables"] == ["a"]  # was refused
    folder = Cli(capsys, new)
    assert folder("status", "-o", "json").json["serial"] == 4 and (new / "routes" / "a.npz").exists()
    assert folder("show", "journal", "-o", "json").json == db("show", "journal", "-o", "json").json


def test_a_pull_still_refuses_a_stateless_journal_of_another_history(tmp_path, pg_url, capsys):
    assert Cli(capsys, pg_url)("init").code == 0
    other = Cli(capsys, tmp_path / "d")
    assert other("init").code == 0 and other("allocate", "x", "--shape", "4x4x4").code == 0
    (tmp_path / "d" / "state.json").unlink()  # a lost state: its journal is not the database's
    line = one_line(other("state", "pull", pg_url, tmp_path / "d", state=False), 1)
    assert "holds a journal but no state file" in line and not (tmp_path / "d" / "state.json").exists()
