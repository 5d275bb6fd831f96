"""`tpufleet serve`: the goodput logs of `--goodput` are read again only when one of them changes (a commit does not
read them, and the state's documents never wait on a read of them); a log that is not a regular file (a FIFO put in
its place) is said not to read and is never opened to be read; SIGTERM ends the process even with a request stuck in
a read; an alert waits for the alerts before it and the state's lock at most the lock timeout in all."""

from __future__ import annotations

import functools
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import GUARD_S, beside_a_fifo, in_thread, snapshot

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

ROOT = Path(__file__).parent.parent
GOODPUT = ROOT / "fixtures" / "goodput" / "fleet.jsonl"
TOKEN = "s3cret-token-for-the-tests-0123456789"


def server(state: Path, goodput: list[Path], make: Callable[[], dict[str, Any]] | None = None) -> Any:
    """The server as `tpufleet serve --goodput LOG...` builds it; `make` in place of its read of the logs."""
    from tpufleet.cli.serve import goodput_extras, metrics_inputs
    from tpufleet.serve.app import Server
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    source = Source(Store(state), goodput, make or goodput_extras(goodput, "native"))
    return Server(source, metrics_inputs(), TOKEN.encode(), 5)


def client(srv: Any) -> TestClient:
    from tpufleet.serve.app import build_app

    return TestClient(build_app(srv), raise_server_exceptions=False)


def served(c: TestClient) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = c.get("/metrics").text
    return {f.name: [(s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def live_log(tmp_path: Path) -> Path:
    log = tmp_path / "gp.jsonl"
    log.write_bytes(GOODPUT.read_bytes())
    return log


def grow(log: Path) -> None:
    """A writer appends to the log (its last event again: an exact repeat, which counts once)."""
    last = log.read_bytes().splitlines(keepends=True)[-1]
    with log.open("ab") as fh:
        fh.write(last)


# ---- the goodput logs are read when they change, not on a commit ---------------------------------------------------
def test_a_commit_does_not_read_the_goodput_logs_again(fleet, tmp_path):
    from tpufleet.cli.serve import goodput_extras

    log = live_log(tmp_path)
    make, reads = goodput_extras([log], "native"), []

    def counted() -> dict[str, Any]:
        reads.append(log.stat().st_size)
        return make()

    c = client(server(fleet.state, [log], counted))
    first = served(c)
    assert len(reads) == 1 and first["tpufleet_goodput_logs_read_ok"] == [({}, 1.0)]
    serial = c.get("/readyz").json()["serial"]
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0  # a commit: the state changes, the logs do not
    assert c.get("/readyz").json() == {"status": "ready", "serial": serial + 1}
    after = served(c)
    assert after["tpufleet_state_serial"] == [({}, float(serial + 1))]  # the metrics follow the commit...
    assert after["tpufleet_goodput_ratio"] == first["tpufleet_goodput_ratio"]  # ...with the goodput read before
    assert len(reads) == 1
    grow(log)  # the log changes: read again at the next scrape, once
    assert served(c)["tpufleet_goodput_logs_read_ok"] == [({}, 1.0)]
    served(c)
    assert c.get("/api/v1/status").status_code == 200
    assert len(reads) == 2 and reads[1] > reads[0]


def test_the_state_documents_never_wait_on_a_read_of_the_logs(fleet, tmp_path):
    from tpufleet.cli.serve import goodput_extras

    log = live_log(tmp_path)
    make = goodput_extras([log], "native")
    reading, release, calls = threading.Event(), threading.Event(), []

    def slow() -> dict[str, Any]:
        calls.append(1)
        if len(calls) > 1:  # the first read is quick; the next one holds until released
            reading.set()
            assert release.wait(GUARD_S * 2)
        return make()

    srv = server(fleet.state, [log], slow)
    c = client(srv)
    assert served(c)["tpufleet_goodput_logs_read_ok"] == [({}, 1.0)]
    serial = c.get("/readyz").json()["serial"]
    grow(log)  # a change: the next scrape reads the logs again, and takes long
    scrape, scraped, scraped_out = in_thread(lambda: client(srv).get("/metrics"))
    try:
        assert reading.wait(GUARD_S)
        assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
        for path in ("/readyz", "/api/v1/status", "/api/v1/faults", "/"):
            _, answered, out = in_thread(functools.partial(client(srv).get, path))
            assert answered.wait(GUARD_S), f"{path} waited on the read of the goodput logs"
            assert out[0].status_code == 200, path
        assert client(srv).get("/readyz").json()["serial"] == serial + 1  # the commit, seen at once
        assert not scraped.is_set()  # the scrape is still reading
    finally:
        release.set()
    assert scraped.wait(GUARD_S)
    scrape.join()
    assert scraped_out[0].status_code == 200 and "tpufleet_goodput_ratio" in scraped_out[0].text


# ---- a log that is not a regular file --------------------------------------------------------------------------------
def test_a_log_replaced_by_a_fifo_is_said_not_to_read_and_is_never_opened(fleet, tmp_path, capsys):
    log = live_log(tmp_path)
    saved = log.read_bytes()
    c = client(server(fleet.state, [log]))
    assert served(c)["tpufleet_goodput_logs_read_ok"] == [({}, 1.0)]
    log.unlink()
    os.mkfifo(log)  # no writer will ever open it: a read would wait for good
    for path in ("/readyz", "/api/v1/status", "/api/v1/journal"):
        assert beside_a_fifo(functools.partial(c.get, path), log).status_code == 200, path
    now = beside_a_fifo(functools.partial(served, c), log)
    assert now["tpufleet_goodput_logs_read_ok"] == [({}, 0.0)]
    assert not [name for name in now if name.startswith("tpufleet_goodput_") and "logs_read" not in name]
    assert f"goodput left out until the logs read again: {log}: field <root>: cannot be read: a FIFO, not a " in (
        capsys.readouterr().err
    )
    log.unlink()
    log.write_bytes(saved)  # the log back: read again
    assert served(c)["tpufleet_goodput_logs_read_ok"] == [({}, 1.0)]


@pytest.mark.parametrize("kind", ["fifo", "directory", "stdin"])
def test_serve_refuses_a_log_that_is_not_a_regular_file_before_listening(fleet, tmp_path, kind):
    log = tmp_path / "gp.jsonl"
    if kind == "fifo":
        os.mkfifo(log)
    elif kind == "directory":
        log.mkdir()
    else:
        log = Path("-")
    r = beside_a_fifo(functools.partial(fleet, "serve", "--listen", "127.0.0.1:0", "--goodput", str(log)), log)
    assert r.code == 2 and "cannot be read" in r.err, r.err
    assert "serving" not in r.err


def test_goodput_report_still_reads_a_fifo(tmp_path):
    """Only serve, which reads its logs again as they change, wants files: a report reads a pipe as ever."""
    from tpufleet.state import goodputlogs

    fifo = tmp_path / "gp.jsonl"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(GOODPUT.read_bytes()), daemon=True)
    writer.start()
    piped = goodputlogs.load([fifo], "native", False)
    writer.join()
    assert piped.records == goodputlogs.load([GOODPUT], "native", False).records


# ---- SIGTERM with a request stuck in a read ----------------------------------------------------------------------
STUCK_SERVER = """
import sys

import tpufleet.cli.serve as serve
from tpufleet.cli import main
from tpufleet.serve import documents

serve.GRACEFUL_SECONDS = 1  # the requests in flight get a second (10 s in service)
fifo = sys.argv.pop(1)


def stuck(snap):
    print("test: a request is reading a FIFO nobody writes", file=sys.stderr, flush=True)
    with open(fifo, "rb") as fh:  # opening it waits for a writer: none ever comes
        return fh.read()


documents.status = stuck
main()
"""


@pytest.mark.slow
def test_sigterm_ends_the_process_even_with_a_request_stuck_in_a_read(fleet, tmp_path):
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", STUCK_SERVER, str(fifo), "--state", str(fleet.state), "serve"]
    proc = subprocess.Popen([*command, "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stderr.readline())[1])  # type: ignore[index]
        request = socket.create_connection(("127.0.0.1", port), timeout=GUARD_S)
        request.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: localhost\r\n\r\n")
        _, said_it, line = in_thread(proc.stderr.readline)  # bounded: a request refused before it reads would hang
        assert said_it.wait(GUARD_S) and "reading a FIFO nobody writes" in line[0]  # the request's thread is stuck
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=GUARD_S) == 0
        said = proc.stderr.read()
        assert "stopped on SIGTERM" in said and "1 request(s) still running after the stop left unfinished" in said
        request.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---- alerts waiting their turn -----------------------------------------------------------------------------------
FIRING = (ROOT / "fixtures" / "alertmanager" / "firing.json").read_bytes()
BEARER = {"Authorization": f"Bearer {TOKEN}"}


def alerts_server(state: Path, lock_timeout: float) -> Any:
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    return Server(Source(Store(state, lock_timeout)), metrics_inputs(), TOKEN.encode(), 5)


def test_an_alert_behind_another_waits_at_most_the_lock_timeout(fleet):
    """An alert being applied (its turn held here) holds the next one up to the lock timeout, not for good: then 503
    with Retry-After, nothing changed, and the intake takes alerts again once the turn is free."""
    srv = alerts_server(fleet.state, 0.1)
    before = snapshot(fleet.state)
    assert srv._writing.acquire(timeout=GUARD_S)  # another alert's turn
    try:
        _, answered, out = in_thread(lambda: client(srv).post("/api/v1/alerts", headers=BEARER, content=FIRING))
        assert answered.wait(GUARD_S), "the alert waited for its turn without a limit"
    finally:
        srv._writing.release()
    r = out[0]
    assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
    assert "busy with the alerts received before; gave up after 0.1s (see --lock-timeout)" in r.json()["error"]
    assert snapshot(fleet.state) == before
    assert client(srv).post("/api/v1/alerts", headers=BEARER, content=FIRING).status_code == 200


def test_the_wait_for_its_turn_counts_against_the_lock_timeout(fleet):
    """The state's lock held by another command: an alert that spent its whole lock timeout waiting for its turn
    (the server's clock says so) does not wait the lock timeout again for the state's lock: 503 at once."""
    from tpufleet.state.lock import exclusive

    srv = alerts_server(fleet.state, 600)
    times = iter([1000.0, 1600.0])  # before its turn, and once it has it: the 600 s all spent
    srv.clock = lambda: next(times)
    before = snapshot(fleet.state)
    with exclusive(fleet.state, 5, "tpufleet hold-for-test"):
        _, answered, out = in_thread(lambda: client(srv).post("/api/v1/alerts", headers=BEARER, content=FIRING))
        assert answered.wait(GUARD_S), "the alert waited for the state's lock the whole lock timeout again"
    r = out[0]
    assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
    error = r.json()["error"]
    assert "is locked by pid" in error and "tpufleet hold-for-test" in error
    assert "having waited 600.0s behind the alerts received before" in error
    assert snapshot(fleet.state) == before
