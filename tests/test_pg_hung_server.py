"""A database server whose process stops answering while its host stays up (the backend stopped with SIGSTOP, a
server wedged on its disk): the host's kernel answers TCP keepalives, so only a bound kept by the client ends the
wait. Every round trip is bounded by the URL's `tcp_user_timeout` (here 1000 ms, so the tests are short): a command
fails with one line naming the state and the bound (exit 1, as a database that cannot be reached), `serve`'s /readyz
answers 503, and once the server runs again the state is as it was and the next command works. A wait for the
state's lock keeps its own, longer limit (--lock-timeout).

The backend is stopped as soon as the command's connection is made, before its first request, so the request
certainly meets a stopped process: no sleep races it."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer, db_name

from tpufleet.state import crashpoints, pgurl, pgwriter
from tpufleet.state.pgbackend import PostgresBackend
from tpufleet.state.pglock import LOCK_KEY
from tpufleet.state.pgurl import redacted

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url

BOUND = "tcp_user_timeout=1000"


class Stopper:
    """Stops (SIGSTOP) the server process of each connection tpufleet opens while armed; `resume` lets them all go."""

    def __init__(self) -> None:
        self.armed = False
        self.stopped: list[int] = []
        self.last: PostgresBackend | None = None  # the backend that asked for its connection last

    def stop(self, pid: int) -> None:
        os.kill(pid, signal.SIGSTOP)
        self.stopped.append(pid)
        stat = Path(f"/proc/{pid}/stat")
        while stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
            pass  # until the kernel shows it stopped (at once on Linux; no time is assumed)

    def resume(self) -> None:
        self.armed = False
        for pid in self.stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


@pytest.fixture
def stopper(monkeypatch) -> Iterator[Stopper]:
    stopper = Stopper()
    real = PostgresBackend.connection

    def connection(self: PostgresBackend) -> Any:
        fresh = self._conn is None or self._conn.closed
        conn = real(self)
        stopper.last = self
        if fresh and stopper.armed:
            stopper.stop(conn.info.backend_pid)
        return conn

    monkeypatch.setattr(PostgresBackend, "connection", connection)
    try:
        yield stopper
    finally:
        stopper.resume()


@pytest.fixture
def bounded(pg_url, capsys) -> Cli:
    """A fleet on the database, its URL bounding each round trip to 1 s."""
    url: Any = f"{pg_url}&{BOUND}"
    cli = Cli(capsys, url)  # (a URL goes to --state as typed)
    assert cli("init").code == 0
    assert cli("allocate", "a", "--shape", "4x4x4").code == 0
    return cli


def _says_no_answer(err: str, url: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tpufleet: error: "), err
    assert redacted(url) in lines[0] and "did not answer within 1s (tcp_user_timeout=1000)" in lines[0], err


def test_a_read_on_a_stopped_server_process_fails_within_the_bound_and_the_next_command_works(bounded, stopper):
    before = bounded("status", "-o", "json").json
    stopper.armed = True
    hung = bounded("status")
    assert hung.code == 1 and stopper.stopped
    _says_no_answer(hung.err, str(bounded.state))
    stopper.resume()
    after = bounded("status", "-o", "json")
    assert after.code == 0 and after.json == before


def test_a_commit_whose_server_process_stops_is_reported_and_the_state_is_intact(bounded, stopper, monkeypatch):
    serial = bounded("status", "-o", "json").json["serial"]
    real = crashpoints.reached

    def stop_at_the_journal(name: str) -> None:  # the transaction begun, its first write not yet sent
        if name == "journal.before_write":
            assert stopper.last is not None and stopper.last._conn is not None
            stopper.stop(stopper.last._conn.info.backend_pid)
        real(name)

    monkeypatch.setattr(pgwriter, "reached", stop_at_the_journal)
    hung = bounded("allocate", "b", "--shape", "4x4x4")
    monkeypatch.setattr(pgwriter, "reached", real)
    assert hung.code == 1
    _says_no_answer(hung.err, str(bounded.state))
    assert f"while committing serial {serial + 1}" in hung.err and "`tpufleet status` shows which" in hung.err
    stopper.resume()
    now = bounded("status", "-o", "json")
    assert now.code == 0 and now.json["serial"] == serial  # never committed: the stopped process never saw COMMIT
    assert bounded("allocate", "b", "--shape", "4x4x4").code == 0
    assert [s["name"] for s in bounded("show", "slices", "-o", "json").json] == ["a", "b"]


def test_a_wait_for_the_lock_keeps_its_own_longer_limit(bounded, pg_server: PgServer):
    import psycopg

    url = str(bounded.state)
    with psycopg.connect(pg_server.url(db_name(url)), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        waited = bounded("--lock-timeout", "2", "allocate", "b", "--shape", "4x4x4")
    assert waited.code == 3 and "is locked by" in waited.err, waited.err  # not the round trip's bound (exit 1)
    assert bounded("allocate", "b", "--shape", "4x4x4").code == 0


def test_migrates_wait_for_its_tables_keeps_its_own_longer_limit(bounded, pg_server: PgServer):
    import psycopg

    url = str(bounded.state)
    pg_server.sql("DELETE FROM tpufleet_schema WHERE version = 2", db_name(url))  # a version-1 database
    with psycopg.connect(pg_server.url(db_name(url))) as reader:  # a backup's open transaction, say: it read them
        reader.execute("SELECT count(*) FROM tpufleet_tables")
        waited = bounded("--lock-timeout", "2", "state", "migrate")
    assert waited.code == 3 and "are in use by another session" in waited.err, waited.err
    assert bounded("state", "migrate", "-o", "json").json["applied"] == [2]


@pytest.mark.parametrize(
    ("query", "bound"),
    [("", 60.0), ("?tcp_user_timeout=1500", 1.5), ("?tcp_user_timeout=%20250%20", 0.25), ("?tcp_user_timeout=0", None)],
)
def test_the_bound_is_the_urls_tcp_user_timeout_or_a_minute(query, bound):
    from tpufleet.state import pgwait

    backend = PostgresBackend(f"postgresql://u@db.example.com/fleet{query}")
    assert pgwait.bound_seconds(backend._checked(), pgurl.CONNECTION_DEFAULTS["tcp_user_timeout"])[0] == bound


def test_serve_readyz_is_503_while_the_server_process_is_stopped_then_ready_again(bounded, stopper):
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    source = Source(Store(str(bounded.state)))
    c = TestClient(build_app(Server(source, metrics_inputs(), None, 5)), raise_server_exceptions=False)
    serial = c.get("/readyz").json()["serial"]
    reads = source.reads.backend
    assert isinstance(reads, PostgresBackend) and reads._conn is not None
    stopper.stop(reads._conn.info.backend_pid)  # the connection it keeps, and each it opens again meanwhile
    stopper.armed = True
    r = c.get("/readyz")
    assert r.status_code == 503 and "did not answer within 1s" in r.json()["error"], r.text
    assert c.get("/healthz").status_code == 200
    stopper.resume()
    again = c.get("/readyz")
    assert again.status_code == 200 and again.json()["serial"] == serial
