"""Defects found in the PostgreSQL backend by a fourth review (each test failed before its fix)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer, db_name

from helpers import one_line
from tpufleet.state import crashpoints
from tpufleet.state.pglock import LOCK_KEY

CTX = multiprocessing.get_context("fork")

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url


# ---- a killed holder's row named while another session (psql) holds the lock --------------------------------------------


def _killed_inject(url: str) -> None:
    os.environ[crashpoints.ENV] = "journal.before_write"  # holding the lock, its holder row written
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    from tpufleet.cli import main

    main(["--state", url, "inject-fault", "host:c01/1"])


def test_a_lock_held_by_another_session_never_names_a_killed_holders_row(pg_server: PgServer, pg_url, capsys):
    import psycopg

    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    proc = CTX.Process(target=_killed_inject, args=(pg_url,))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    assert pg_server.sql("SELECT pid FROM tpufleet_lock", db_name(pg_url)) == [(proc.pid,)]  # its row stays
    with psycopg.connect(pg_url, autocommit=True) as other:  # a DBA's psql session takes tpufleet's lock
        other.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        line = one_line(cli("--lock-timeout", "0.2", "inject-fault", "host:c01/1"), 3)
    assert f"pid {proc.pid} " not in line  # was the killed inject-fault, "since" its start
    assert "locked by an unknown process" in line
    assert cli("inject-fault", "host:c01/1").code == 0  # the lock is free again: the row is replaced


# ---- a mistyped database URL taken for a directory -------------------------------------------------------------------


@pytest.mark.parametrize(
    "typed", ["postgresql:/bob:s3cret@db/f", " postgresql://bob:s3cret@db/f", "POSTGRES:bob:s3cret@db/f"]
)
def test_a_mistyped_database_url_is_refused_not_made_a_directory_named_with_its_password(
    typed, capsys, tmp_path: Path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    for args in (("init",), ("status",)):
        line = one_line(Cli(capsys, typed)(*args), 2)
        assert "s3cret" not in line and "bob@db/f" in line and "no postgresql:// URL" in line
    line = one_line(Cli(capsys, tmp_path)("state", "pull", "postgresql://bob@db/f", typed, state=False), 2)
    assert "s3cret" not in line and "is not a state directory" in line
    line = one_line(Cli(capsys, tmp_path)("state", "push", tmp_path, typed, state=False), 2)
    assert "s3cret" not in line and "is not a postgresql:// URL" in line
    assert list(tmp_path.iterdir()) == []  # was a state directory ./postgresql:/bob:s3cret@db/f, journal and all


# ---- a state directory's lock held by another program named the last command ---------------------------------------


def test_a_directory_lock_held_by_another_program_never_names_the_last_command(capsys, tmp_path: Path):
    import fcntl

    cli = Cli(capsys, tmp_path / "d")
    assert cli("init").code == 0
    assert cli("inject-fault", "host:c01/1").code == 0
    with open(tmp_path / "d" / ".lock", "rb") as held:  # `flock .lock tar ...`: a backup holds the lock
        fcntl.flock(held, fcntl.LOCK_EX)
        line = one_line(cli("--lock-timeout", "0.2", "inject-fault", "host:c01/2"), 3)
    assert "inject-fault host:c01/1" not in line  # was "locked by pid N (tpufleet ... inject-fault host:c01/1, ...)"
    assert "locked by an unknown process" in line
    assert cli("inject-fault", "host:c01/2").code == 0
