"""`tpufleet serve` on a fleet state in PostgreSQL: the documents are the CLI's, a commit by another command is seen
on the next request, reads never wait for the write lock, Alertmanager's webhook opens a fault once and clears it,
and a server that went away and came back is served again without a restart.

Against the real server tests/pgserver.py starts; these tests skip, saying why, without one (or without the serve
extra)."""

from __future__ import annotations

import json
from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url

ALERTS = Path(__file__).parent.parent / "fixtures" / "alertmanager"
TOKEN = "s3cret-token-for-the-tests-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


def client(url: str) -> TestClient:
    """The application as `tpufleet serve` builds it, on the database (a new one each call: a restart)."""
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    server = Server(Source(Store(url)), metrics_inputs(), TOKEN.encode(), 5)
    return TestClient(build_app(server), raise_server_exceptions=False)


@pytest.fixture
def busy(pg_url, capsys) -> Cli:
    """A fleet on the database: slice a wired with stored tables, then degraded by an OCS fault."""
    cli = Cli(capsys, pg_url)  # a URL goes to --state as typed
    for command in (
        ("init",),
        ("allocate", "a", "--shape", "4x4x8"),
        ("plan-xconnect", "a", "--apply"),
        ("routes", "a"),
        ("inject-fault", "ocs:pod0/x/3", "--reason", "OCS x/3: lost power supply"),
    ):
        assert cli(*command).code == 0, command
    return cli


def rows(pg_server: PgServer, url: str, sql: str) -> list[tuple[object, ...]]:
    return pg_server.sql(sql, pgserver.db_name(url))


@pytest.mark.parametrize(
    "path, command",
    [
        ("/api/v1/status", ["status"]),
        ("/api/v1/slices", ["show", "slices"]),
        ("/api/v1/faults?all=true", ["faults", "--all"]),
        ("/api/v1/journal", ["show", "journal"]),
    ],
)
def test_each_document_on_a_database_is_the_clis_json(busy, path, command):
    r = client(str(busy.state)).get(path)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.text.rstrip("\n") == busy(*command, "-o", "json").out.rstrip("\n")  # byte for byte


def test_a_commit_by_another_command_is_seen_on_the_next_request(busy):
    c = client(str(busy.state))
    first = c.get("/api/v1/status")
    serial = first.json()["serial"]
    assert first.headers["etag"] == f'"{serial}"' and first.json()["open_faults"] == 1
    assert c.get("/api/v1/status", headers={"If-None-Match": f'"{serial}"'}).status_code == 304
    assert busy("clear-fault", "ocs:pod0/x/3").code == 0  # another connection, another process's command
    after = c.get("/api/v1/status", headers={"If-None-Match": f'"{serial}"'})
    assert after.status_code == 200 and after.headers["etag"] == f'"{serial + 1}"'
    assert after.json()["open_faults"] == 0
    assert after.text.rstrip("\n") == busy("status", "-o", "json").out.rstrip("\n")
    assert c.get("/readyz").json() == {"status": "ready", "serial": serial + 1}


def test_reads_never_wait_for_the_write_lock(busy):
    import psycopg

    from tpufleet.state.pglock import LOCK_KEY

    c = client(str(busy.state))
    serial = c.get("/api/v1/status").json()["serial"]
    with psycopg.connect(str(busy.state), autocommit=True) as holder:
        assert holder.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone() == (True,)
        assert "locked by" in busy("--lock-timeout", "0", "clear-fault", "ocs:pod0/x/3").err  # writers wait...
        for path in ("/api/v1/status", "/metrics", "/", "/readyz", "/api/v1/journal"):
            assert c.get(path).status_code == 200, path  # ... readers do not
        fresh = client(str(busy.state)).get("/api/v1/status")  # nor a server started meanwhile
        assert fresh.status_code == 200 and fresh.json()["serial"] == serial


def test_alerts_open_a_fault_once_and_clear_it_on_the_database(busy, pg_server):
    url = str(busy.state)
    c = client(url)

    def post(name: str) -> dict:
        r = c.post("/api/v1/alerts", headers=BEARER, content=(ALERTS / name).read_bytes())
        assert r.status_code == 200, r.text
        return dict(r.json())

    before = c.get("/api/v1/status").json()["serial"]
    fired = post("firing.json")
    assert fired["opened"] == ["f2"] and fired["alerts"][0]["action"] == "opened" and fired["serial"] == before + 1
    opened = [f for f in busy("faults", "-o", "json").json if f["target"] == "host:c07/3"]
    assert len(opened) == 1 and "[alertmanager 4f2c9a6b1d0e7c35" in opened[0]["reason"]
    assert c.get("/api/v1/status").json()["serial"] == before + 1  # the server's own commit, seen by its reads
    for again in (c, client(url)):  # repeated, and after a restart of the server: nothing new
        r = again.post("/api/v1/alerts", headers=BEARER, content=(ALERTS / "firing.json").read_bytes())
        assert r.json()["opened"] == [] and r.json()["alerts"][0]["action"] == "unchanged"
    journal = busy("show", "journal", "-o", "json").json
    assert journal[-1]["command"] == "tpufleet serve: POST /api/v1/alerts" and journal[-1]["serial"] == before + 1
    cleared = post("resolved.json")
    assert cleared["cleared"] == ["f2"] and cleared["serial"] == before + 2
    assert [f["target"] for f in busy("faults", "-o", "json").json] == ["ocs:pod0/x/3"]
    serials = [s for (s,) in rows(pg_server, url, "SELECT serial FROM tpufleet_journal ORDER BY seq")]
    assert serials == list(range(1, before + 3))  # one line per commit, consecutive


def test_a_database_that_went_away_is_503_then_served_again_without_a_restart(busy, pg_server):
    c = client(str(busy.state))
    serial = c.get("/api/v1/status").json()["serial"]
    pg_server.stop()
    try:
        for path in ("/api/v1/status", "/readyz"):
            r = c.get(path)
            assert r.status_code == 503 and "cannot" in r.json()["error"], path
        assert c.get("/healthz").status_code == 200
    finally:
        pg_server.start()
    again = c.get("/api/v1/status")
    assert again.status_code == 200 and again.json()["serial"] == serial


def test_the_server_reads_on_a_connection_of_its_own(pg_url):
    """The alert intake's write transaction is on the store's connection; a read there would see it uncommitted."""
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    store = Store(pg_url)
    source = Source(store)
    assert source.reads is not store and source.reads.backend is not store.backend
    directory = Store(Path("unused"))
    assert Source(directory).reads is directory


def test_a_role_that_may_only_select_serves_every_read(busy, pg_server):
    """As the README's `tpufleet_viewer`: reads need SELECT and nothing more (no lock, no write of any kind)."""
    url = str(busy.state)
    db = pgserver.db_name(url)
    role = f"viewer_{db}"
    pg_server.sql(f"CREATE ROLE {role} LOGIN")
    try:
        pg_server.sql(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}", db)
        c = client(pg_server.url(db, user=role))
        for path in ("/api/v1/status", "/api/v1/faults?all=true", "/api/v1/journal", "/metrics", "/", "/readyz"):
            assert c.get(path).status_code == 200, path
        assert c.get("/api/v1/status").text.rstrip("\n") == busy("status", "-o", "json").out.rstrip("\n")
        serial = c.get("/api/v1/status").json()["serial"]
        r = c.post("/api/v1/alerts", headers=BEARER, content=(ALERTS / "firing.json").read_bytes())
        assert c.get("/api/v1/status").json()["serial"] == serial
        assert r.status_code == 409 and "permission denied" in r.json()["error"], r.text  # writes need more grants
    finally:
        pg_server.sql(f"DROP OWNED BY {role}", db)
        pg_server.sql(f"DROP ROLE {role}")


def test_a_real_server_on_a_database_answers_concurrent_clients_across_a_commit(busy):
    """uvicorn's worker threads share the reads' connection: concurrent requests, a commit meanwhile, all answered."""
    import os
    import re
    import signal
    import subprocess
    import sys
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    url = str(busy.state)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    command = [sys.executable, "-m", "tpufleet", "--state", url, "serve", "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert f"serving {url} (serial " in line, line  # the URL as messages show it (this one has no password)
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line)[1])  # type: ignore[index]

        def serials(_: int) -> list[int]:
            seen = []
            for _k in range(8):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status", timeout=30) as r:
                    assert r.status == 200
                    seen.append(json.loads(r.read())["serial"])
            return seen

        first = serials(0)[0]
        with ThreadPoolExecutor(8) as pool:
            running = pool.map(serials, range(8))
            assert busy("clear-fault", "ocs:pod0/x/3").code == 0
            seen = list(running)
        assert all(s == sorted(s) and set(s) <= {first, first + 1} for s in seen)  # never back, never between
        assert serials(0)[-1] == first + 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_routing_table_row_deleted_by_hand_is_seen_on_the_next_request(busy, pg_server):
    app = client(busy.state)
    assert app.get("/api/v1/status").json()["missing_routes"] == []
    rows(pg_server, busy.state, "DELETE FROM tpufleet_tables WHERE name = 'a'")
    assert app.get("/api/v1/status").json()["missing_routes"] == ["a"]
    assert 'tpufleet_slice_route_tables_missing{slice="a"} 1.0' in app.get("/metrics").text
