"""`tpufleet serve` as dashboards, scrapers, probes and Alertmanager meet it: ETags, threads, stops, big notifications."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest


def _client(state: Path) -> Any:
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    return TestClient(build_app(Server(Source(Store(state), [], None), metrics_inputs(), None, 5)))


def test_a_document_changed_by_tables_removed_by_hand_is_not_answered_304(routed):
    client = _client(Path(routed.state))
    first = client.get("/api/v1/status")
    assert first.status_code == 200 and first.json()["missing_routes"] == []
    assert first.headers["etag"] == f'"{first.json()["serial"]}"'  # as committed: the serial alone
    (routed.state / "routes" / "s.npz").unlink()
    again = client.get("/api/v1/status", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 200, "the document changed: a 304 would keep the client's stale copy"
    assert again.json()["missing_routes"] == ["s"] and again.json()["serial"] == first.json()["serial"]
    assert again.headers["etag"] != first.headers["etag"]
    held = client.get("/api/v1/slices", headers={"If-None-Match": again.headers["etag"]})
    assert held.status_code == 304 and held.headers["etag"] == again.headers["etag"]


_TOKEN = "s3cret-token-for-the-tests-0123456789"
_FIRING = {
    "version": "4",
    "status": "firing",
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "HostDown", "tpufleet_target": "host:c03/1"},
            "annotations": {},
            "startsAt": "2026-11-29T10:00:00Z",
            "fingerprint": "abc123",
        }
    ],
}


def test_an_alert_the_state_directory_refuses_is_409_not_a_bad_payload(fleet):
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    state = Path(fleet.state)
    server = Server(Source(Store(state)), metrics_inputs(), _TOKEN.encode(), 5)
    client = TestClient(build_app(server), raise_server_exceptions=False)
    state.chmod(0o770)  # as the CLI refuses to write it (exit 2), so does the alert intake
    try:
        r = client.post("/api/v1/alerts", json=_FIRING, headers={"Authorization": f"Bearer {_TOKEN}"})
    finally:
        state.chmod(0o700)
    assert r.status_code == 409, r.text  # 422 says the payload is not Alertmanager's: it is
    assert r.json()["status"] == 409 and str(state) in r.json()["error"]
    assert fleet("status", "-o", "json").json["open_faults"] == 0


async def _one_thread_for_the_reads() -> None:
    import anyio.to_thread

    anyio.to_thread.current_default_thread_limiter().total_tokens = 1  # as a pool whose threads are all taken


def test_an_alert_waiting_on_the_state_lock_leaves_the_reads_their_threads(fleet):
    """A burst of alerts waiting (up to --lock-timeout) on a lock a long command holds took every thread of the pool
    the reads are answered in: /healthz, /readyz and /metrics went unanswered until the lock came free."""
    from starlette.testclient import TestClient

    from helpers import GUARD_S, in_thread
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store
    from tpufleet.state.lock import exclusive

    srv = Server(Source(Store(Path(fleet.state), 4 * GUARD_S)), metrics_inputs(), _TOKEN.encode(), 5)
    bearer = {"Authorization": f"Bearer {_TOKEN}"}
    with TestClient(build_app(srv), raise_server_exceptions=False) as client:
        assert client.portal is not None  # (started by `with`: one event loop for every request)
        client.portal.call(_one_thread_for_the_reads)
        with exclusive(fleet.state, 5, "tpufleet hold-for-test"):
            _, alert_done, alert = in_thread(lambda: client.post("/api/v1/alerts", json=_FIRING, headers=bearer))
            deadline = time.monotonic() + GUARD_S
            while not srv._writing.locked() and not alert_done.is_set() and time.monotonic() < deadline:
                time.sleep(0.01)  # until the alert has its turn: then it waits on the state's lock
            assert srv._writing.locked(), alert
            _, answered, health = in_thread(lambda: client.get("/healthz"))
            in_time = answered.wait(GUARD_S)
        assert alert_done.wait(GUARD_S)
    assert in_time, "/healthz went unanswered while an alert waited on the state's lock"
    assert health[0].status_code == 200
    assert alert[0].status_code == 200 and alert[0].json()["opened"] == ["f1"]


def test_healthz_answers_while_reads_hang_on_a_state_that_stopped_answering(fleet, monkeypatch):
    """A database (or a file system) that stops answering without closing the connection leaves each read waiting;
    once they held every thread of the pool, /healthz, documented as answering while the process runs, did not."""
    from starlette.testclient import TestClient

    from helpers import GUARD_S, in_thread
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    source = Source(Store(Path(fleet.state)))
    hanging, freed = threading.Event(), threading.Event()
    answer = source.current

    def stuck() -> Any:
        hanging.set()
        freed.wait(GUARD_S)
        return answer()

    monkeypatch.setattr(source, "current", stuck)
    with TestClient(build_app(Server(source, metrics_inputs())), raise_server_exceptions=False) as client:
        assert client.portal is not None
        client.portal.call(_one_thread_for_the_reads)
        _, read_done, _read = in_thread(lambda: client.get("/api/v1/status"))
        assert hanging.wait(GUARD_S)  # the read holds the pool's one thread
        _, answered, health = in_thread(lambda: client.get("/healthz"))
        in_time = answered.wait(GUARD_S)
        freed.set()
        assert read_done.wait(GUARD_S)
    assert in_time, "/healthz went unanswered while a read hung"
    assert health[0].status_code == 200 and health[0].json() == {"status": "ok"}


def test_the_journal_is_encoded_once_a_serial_whatever_the_requests(routed, monkeypatch):
    """Each request for /api/v1/journal encoded the whole history again (a long one: a second of work a request,
    for anyone who can reach the port); made once a serial, as the other documents are, each `since` cut from it."""
    from tpufleet.serve import documents

    encoded: list[int] = []
    encode = documents.to_json

    def counted(data: Any) -> str:
        encoded.append(len(data))
        return encode(data)

    monkeypatch.setattr(documents, "to_json", counted)
    client = _client(Path(routed.state))
    every = routed("show", "journal", "-o", "json")
    serials = [e["serial"] for e in every.json]
    for since in (0, serials[1], serials[-2], serials[-1], 0, serials[1]):
        r = client.get("/api/v1/journal", params={"since": since})
        later = [e for e in every.json if e["serial"] > since]
        assert r.status_code == 200 and r.json() == later
        if since == 0:
            assert r.text == every.out  # byte for byte the CLI's, its last newline included
    assert len(encoded) == 1, encoded


def test_a_request_cut_short_by_the_stop_is_503_to_be_sent_again_not_500(fleet, monkeypatch):
    """SIGTERM: once the grace period ran out, uvicorn cancelled the requests still running (an alert waiting on
    the state's lock, a read on a database that stopped answering): each was answered 500 with a traceback on
    stderr, though a 500 is always a bug; now 503 with Retry-After, which Alertmanager retries."""
    import asyncio

    from helpers import GUARD_S
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    source = Source(Store(Path(fleet.state)))
    hanging, freed = threading.Event(), threading.Event()

    def stuck() -> Any:
        hanging.set()
        freed.wait(GUARD_S)
        raise AssertionError("the read was left to end")

    monkeypatch.setattr(source, "current", stuck)
    application = build_app(Server(source, metrics_inputs()))
    scope = {"type": "http", "method": "GET", "path": "/readyz", "raw_path": b"/readyz", "query_string": b""}
    scope |= {"headers": [], "http_version": "1.1", "scheme": "http", "root_path": ""}
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    async def stopped_while_running() -> None:
        task = asyncio.create_task(application(scope, receive, send))
        while not hanging.is_set():
            await asyncio.sleep(0.01)
        task.cancel()  # as uvicorn does once the grace period has run out
        try:
            await task
        finally:
            freed.set()

    asyncio.run(stopped_while_running())
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 503
    assert (b"retry-after", b"5") in sent[0]["headers"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    assert b'"status":503' in body and b"send it again" in body


def _host_alerts(cubes: int, hosts: int) -> list[dict[str, Any]]:
    """An alert a host, as a rule on each TPU host's exporter fires them: every host of the fleet down at once."""
    return [
        {
            "status": "firing",
            "labels": {
                "alertname": "TPUHostDown",
                "tpufleet_target": f"host:c{c:02d}/{h}",
                "instance": f"tpu-host-{c}-{h}.example.org:9100",
                "job": "tpu-hosts",
            },
            "annotations": {"summary": f"TPU host {h} of cube {c} is down", "description": "No answer for 2 minutes."},
            "startsAt": "2026-11-29T10:00:00.123456789Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus.example.org:9090/graph?g0.expr=up%7Bjob%3D%22tpu-hosts%22%7D+%3D%3D+0",
            "fingerprint": f"{c:08x}{h:08x}",
        }
        for c in range(cubes)
        for h in range(hosts)
    ]


def test_a_notification_of_every_host_of_a_superpod_is_taken_not_refused(cli):
    """A TPU7x superpod losing power fires an alert for each of its 2,304 hosts, grouped into one notification: it
    was refused whole (422 over 1,000 alerts, 413 over 1 MiB), which Alertmanager drops and never sends again, so
    the outage was never recorded. Each host's fault is now opened, and the repeat changes nothing."""
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    assert cli("init", "--generation", "tpu7x").code == 0
    alerts = _host_alerts(144, 16)
    body = {"version": "4", "status": "firing", "receiver": "tpufleet", "alerts": alerts}
    server = Server(Source(Store(Path(cli.state))), metrics_inputs(), _TOKEN.encode(), 5)
    client = TestClient(build_app(server), raise_server_exceptions=False)
    bearer = {"Authorization": f"Bearer {_TOKEN}"}
    r = client.post("/api/v1/alerts", json=body, headers=bearer)
    assert r.status_code == 200, r.text[:300]
    assert len(r.json()["opened"]) == 2304 == len(alerts)
    assert cli("status", "-o", "json").json["cubes"]["out"] == 144
    again = client.post("/api/v1/alerts", json=body, headers=bearer)
    assert again.status_code == 200 and again.json()["opened"] == []
    assert {a["action"] for a in again.json()["alerts"]} == {"unchanged"}


def test_the_page_keeps_reloading_itself_while_the_state_cannot_be_read(fleet):
    """A wall screen showing `/` met a state it could not read (a database restarting, a state file being
    repaired): the 503 carried no way back, so the screen stayed on the error after the state read again, until
    someone reloaded it. The error now asks the browser to reload after --refresh seconds, as the page does."""
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    state = Path(fleet.state) / "state.json"
    client = TestClient(build_app(Server(Source(Store(Path(fleet.state))), metrics_inputs(), None, 7)))
    assert client.get("/").status_code == 200
    kept = state.read_bytes()
    state.write_bytes(b"{")
    down = client.get("/")
    state.write_bytes(kept)
    assert down.status_code == 503 and down.json()["status"] == 503  # still the documented JSON error
    assert down.headers["refresh"] == "7"
    assert client.get("/").status_code == 200


@pytest.mark.parametrize("path", ["/readyz", "/metrics", "/api/v1/status", "/api/v1/journal", "/api/v1/alerts"])
def test_every_503_of_a_state_that_cannot_be_read_says_when_to_retry(fleet, path):
    """A 503 carries `Retry-After: 5` (README), as a journal that cannot be read and a lock held elsewhere had it;
    a state that cannot be read (its database down, its file damaged) was answered without it."""
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    (Path(fleet.state) / "state.json").write_bytes(b"{")
    server = Server(Source(Store(Path(fleet.state))), metrics_inputs(), _TOKEN.encode(), 5)
    client = TestClient(build_app(server), raise_server_exceptions=False)
    if path == "/api/v1/alerts":
        r = client.post(path, json=_FIRING, headers={"Authorization": f"Bearer {_TOKEN}"})
    else:
        r = client.get(path)
    assert r.status_code == 503 and r.json()["error"].startswith("the state cannot be read")
    assert r.headers["retry-after"] == "5"


@pytest.mark.parametrize("given", [("-o", "json"), ("--output", "table"), ("-oyaml",)])
def test_an_output_format_before_serve_is_refused_before_listening(fleet, monkeypatch, given):
    """`serve` takes no -o (its output is its HTTP answers): `tpufleet -o json serve` was taken, the format
    dropped, and the server started as if it meant something."""
    from tpufleet.cli import serve

    bound: list[object] = []

    def bind(*args: object) -> None:
        bound.append(args)
        pytest.fail("listened")

    monkeypatch.setattr(serve, "bind", bind)
    r = fleet(*given, "serve", "--listen", "127.0.0.1:0")
    assert r.code == 2 and not bound
    text = r.out + r.err  # (as JSON with -o json, as every refusal under it)
    assert len(text.strip().splitlines()) == 1 and "-o/--output" in text and "`serve`" in text
    assert fleet(*given, "serve", "--help").code == 0  # the help is still shown
