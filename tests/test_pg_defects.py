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
