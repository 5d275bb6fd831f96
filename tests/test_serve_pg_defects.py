"""`tpufleet serve` and the database state under the faults an independent review found: alerts posted at once
(each must be stored), a database restarted under a running server (503 and a reconnect, never 409), passwords in
the URL (never recorded), a state row edited by hand, `state pull` onto another history, and the lock's holder row.

Against the real server tests/pgserver.py starts; these tests skip, saying why, without one."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

pg_server = pgserver.pg_server
pg_url = pgserver.pg_url

TOKEN = "s3cret-token-for-the-tests-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


def server(url: str):
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    return Server(Source(Store(url)), metrics_inputs(), TOKEN.encode(), 5)


def alert(fingerprint: str, target: str, summary: str = "") -> bytes:
    one = {
        "status": "firing",
        "fingerprint": fingerprint,
        "startsAt": "2026-01-01T00:00:00Z",
        "labels": {"alertname": "HostDown", "tpufleet_target": target},
        "annotations": {"summary": summary},
    }
    return json.dumps({"version": "4", "alerts": [one]}).encode()


def test_alerts_received_at_once_on_a_database_are_each_stored(pg_url, capsys):
    """The request threads shared one connection: their transactions nested and the session's lock let all of them
    in, so a commit answered 200 could be rolled back by another thread (faults lost)."""
    from tpufleet.serve.alertpayload import parse

    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    srv = server(pg_url)
    count = 8
    start = threading.Barrier(count)
    answers: dict[int, object] = {}

    def post(i: int) -> None:
        alerts = parse(alert(f"a{i}", f"host:c{i + 1:02d}/0"))
        start.wait()
        answers[i] = srv._receive(alerts)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a["serial"] for a in answers.values()) == list(range(2, count + 2))  # type: ignore[index]
    faults = cli("faults", "-o", "json").json
    assert sorted(f["target"] for f in faults) == sorted(f"host:c{i + 1:02d}/0" for i in range(count))
    assert cli("status", "-o", "json").json["serial"] == count + 1


def test_an_alert_while_the_database_restarts_is_503_to_be_retried_then_stored(pg_url, pg_server: PgServer, capsys):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    srv = server(pg_url)
    from tpufleet.serve.app import build_app

    c = TestClient(build_app(srv), raise_server_exceptions=False)
    assert c.post("/api/v1/alerts", headers=BEARER, content=alert("b1", "host:c01/0")).status_code == 200
    pg_server.stop()
    try:
        r = c.post("/api/v1/alerts", headers=BEARER, content=alert("b2", "host:c02/0"))
        assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text  # Alertmanager retries a 5xx, not a 4xx
    finally:
        pg_server.start()
    assert c.get("/api/v1/status").status_code == 200  # the lost read connection opened again at once
    r = c.post("/api/v1/alerts", headers=BEARER, content=alert("b2", "host:c02/0"))
    assert r.status_code == 200 and r.json()["opened"] == ["f2"], r.text


def test_a_password_in_the_url_is_never_recorded(pg_server: PgServer, pg_url, capsys, monkeypatch):
    """The journal (append-only, served without a token) and the lock's holder row kept the command line as typed."""
    db = pgserver.db_name(pg_url)
    pg_server.sql("DROP ROLE IF EXISTS carol")
    pg_server.sql("CREATE ROLE carol LOGIN SUPERUSER PASSWORD 'pa#ss/9?word'")
    typed = f"postgresql://carol:pa%23ss%2F9%3Fword@127.0.0.1:{pg_server.port}/{db}"
    in_query = f"postgresql://carol@127.0.0.1:{pg_server.port}/{db}?password=pa%23ss%2F9%3Fword"
    for url, command in ((typed, "init"), (in_query, "status")):
        monkeypatch.setattr(sys, "argv", ["tpufleet", "--state", url, command])
        r = Cli(capsys, url)(command, "-o", "json")  # type: ignore[arg-type]
        assert r.code == 0 and "pa%23ss" not in r.out + r.err and "pa#ss" not in r.out + r.err
    upper = in_query.replace("?password=", "?PASSWORD=")  # not libpq's: bad input, and not shown either
    r = Cli(capsys, upper)("status")  # type: ignore[arg-type]
    assert r.code == 2 and "pa%23ss" not in r.err and "pa#ss" not in r.err, r.err
    monkeypatch.setattr(sys, "argv", ["tpufleet", f"--state={typed}", "inject-fault", "host:c01/0"])
    assert Cli(capsys, typed)("inject-fault", "host:c01/0").code == 0  # type: ignore[arg-type]
    rows = pg_server.sql("SELECT line FROM tpufleet_journal ORDER BY seq", db)
    lines = [bytes(line).decode() for (line,) in rows]  # type: ignore[call-overload]
    assert len(lines) == 2 and all("pa%23ss" not in line and "pa#ss" not in line for line in lines), lines
    assert f"--state=postgresql://carol@127.0.0.1:{pg_server.port}/{db} inject-fault" in lines[-1]
    assert pg_server.sql("SELECT count(*) FROM tpufleet_lock", db) == [(0,)]  # the holder row goes with the lock


def test_a_state_row_whose_serial_is_not_its_documents_is_refused(pg_url, pg_server: PgServer, capsys, tmp_path):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    pg_server.sql("UPDATE tpufleet_state SET serial = 100", pgserver.db_name(pg_url))
    from tpufleet.cli import main

    for args in (["--state", pg_url, "inject-fault", "host:c01/0"], ["state", "pull", pg_url, str(tmp_path / "d")]):
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code == 2
        assert "serial column says 100" in capsys.readouterr().err
    assert not (tmp_path / "d" / "state.json").exists()


def test_pull_onto_a_directory_holding_another_history_without_its_state_is_refused(pg_url, capsys, tmp_path):
    here = tmp_path / "here"
    local = Cli(capsys, here)
    assert local("init").code == 0 and local("inject-fault", "host:c01/0").code == 0
    assert Cli(capsys, pg_url)("init").code == 0
    (here / "state.json").unlink()
    journal = (here / "journal.jsonl").read_bytes()
    from tpufleet.cli import main

    with pytest.raises(SystemExit) as done:
        main(["state", "pull", pg_url, str(here)])
    assert done.value.code == 1 and "holds a journal but no state file" in capsys.readouterr().err
    assert (here / "journal.jsonl").read_bytes() == journal and not (here / "state.json").exists()


def test_push_from_a_missing_directory_makes_nothing(pg_url, capsys, tmp_path):
    from tpufleet.cli import main

    with pytest.raises(SystemExit) as done:
        main(["state", "push", str(tmp_path / "nowhere"), pg_url])
    assert done.value.code == 1 and "no fleet state" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://[::1/fleet",
        "postgresql://me@/fleet?host=/tmp/nowhere&application_name=%ff",
        "postgresql://me@/fleet?host=/tmp/nowhere&no_such_setting=1",
    ],
)
def test_a_malformed_database_url_is_bad_input(url, capsys):
    from tpufleet.cli import main

    for args in (["--state", url, "status"], ["state", "migrate", url]):
        with pytest.raises(SystemExit) as done:
            main(args)
        err = capsys.readouterr().err
        assert done.value.code == 2 and err.count("\n") == 1 and "bad database URL" in err, err


def test_the_holder_row_is_cleared_so_a_later_holder_is_not_misnamed(pg_url, pg_server: PgServer, capsys):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0 and cli("inject-fault", "host:c01/0").code == 0
    db = pgserver.db_name(pg_url)
    assert pg_server.sql("SELECT count(*) FROM tpufleet_lock", db) == [(0,)]
    from tpufleet.state.pgbackend import PostgresBackend

    assert PostgresBackend(pg_url).holder() == "an unknown process"


def test_the_journal_is_served_with_an_old_lines_password_and_stray_byte_hidden(tmp_path, capsys):
    """Lines written before commands were recorded so: a password in a URL, and a byte the locale could not decode
    (a lone surrogate to Python, which no UTF-8 answer could carry: HTTP 500)."""
    from tpufleet.serve.app import build_app

    state = tmp_path / "fleet"
    assert Cli(capsys, state)("init").code == 0
    line = {"serial": 1, "time": "2026-01-01T00:00:00Z", "user": "ops", "summary": "init"}
    line["command"] = "tpufleet --state postgresql://bob:hunter2@db/f inject-fault host:c01/0 --reason caf\udce9"
    (state / "journal.jsonl").write_text(json.dumps(line) + "\n")
    srv = server(str(state))
    r = TestClient(build_app(srv), raise_server_exceptions=False).get("/api/v1/journal")
    assert r.status_code == 200, r.text
    command = r.json()[0]["command"]
    assert "hunter2" not in command and command.endswith("--reason caf\\xe9"), command


def test_an_unreadable_journal_is_503_not_500(tmp_path, capsys):
    from tpufleet.serve.app import build_app

    state = tmp_path / "fleet"
    assert Cli(capsys, state)("init").code == 0
    (state / "journal.jsonl").unlink()
    (state / "journal.jsonl").mkdir()
    c = TestClient(build_app(server(str(state))), raise_server_exceptions=False)
    for path in ("/api/v1/journal", "/api/v1/faults?all=true", "/metrics", "/"):
        r = c.get(path)
        assert r.status_code == 503 and "cannot be read" in r.json()["error"], (path, r.status_code)


def test_an_alert_with_a_lone_surrogate_is_422_and_changes_nothing(tmp_path, capsys):
    from tpufleet.serve.app import build_app

    state = tmp_path / "fleet"
    cli = Cli(capsys, state)
    assert cli("init").code == 0
    before = (state / "state.json").read_bytes()
    body = alert("s1", "host:c05/0").replace(b"HostDown", b"Host\\ud800Down")
    r = TestClient(build_app(server(str(state))), raise_server_exceptions=False).post(
        "/api/v1/alerts", headers=BEARER, content=body
    )
    assert r.status_code == 422 and "surrogate" in r.json()["error"], r.text
    assert (state / "state.json").read_bytes() == before


def test_an_alert_summary_of_control_characters_is_cut_to_fit_and_opened(tmp_path, capsys):
    """The summary was cut before its control characters were escaped (each four times longer): refused, 422."""
    from tpufleet.constants import MAX_REASON_CHARS
    from tpufleet.serve.app import build_app

    state = tmp_path / "fleet"
    cli = Cli(capsys, state)
    assert cli("init").code == 0
    body = alert("c1", "host:c05/0", summary="\x01" * 1000)
    r = TestClient(build_app(server(str(state))), raise_server_exceptions=False).post(
        "/api/v1/alerts", headers=BEARER, content=body
    )
    assert r.status_code == 200 and r.json()["opened"] == ["f1"], r.text
    reason = cli("faults", "-o", "json").json[0]["reason"]
    assert len(reason) <= MAX_REASON_CHARS and reason.endswith("[alertmanager c1 since 2026-01-01T00:00:00Z]")
    assert reason.startswith("HostDown: \\x01\\x01")


def test_the_shown_command_hides_passwords_however_written():
    from tpufleet.state.lock import shown_command

    for typed, secret in (
        ("postgresql://bob:pa#ss9word@127.0.0.1:5432/pw", "pa#ss9word"),
        ("postgresql://alice:sek?rit123@127.0.0.1:5432/pw", "sek?rit123"),
        ("postgresql://alice:sek/rit123@127.0.0.1:5432/pw", "rit123"),
        ("postgresql://alice@127.0.0.1:5432/pw?PASSWORD=sekrit123", "sekrit123"),
        ("postgres://alice@h/pw?sslmode=require&password=x%40y", "x%40y"),
    ):
        shown = shown_command(f"tpufleet --state {typed} status")
        assert secret not in shown and shown.endswith(" status") and ("alice" in shown or "bob" in shown), shown


def test_paths_are_left_as_they_are(tmp_path):
    from tpufleet.state.lock import shown_command

    text = f"tpufleet --state {Path(tmp_path)} inject-fault host:c01/0 --reason 'user@host: disk'"
    assert shown_command(text) == text


def test_a_nul_character_in_the_state_location_is_bad_input(tmp_path, capsys, monkeypatch):
    from tpufleet.cli import main

    config = tmp_path / "config.toml"
    config.write_text('state = "/tmp/a\\u0000b"\n')
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    with pytest.raises(SystemExit) as done:
        main(["status"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and f"{config}: field state" in err and "NUL" in err, err
