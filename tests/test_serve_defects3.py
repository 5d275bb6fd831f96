"""`tpufleet serve`: the goodput logs of `--goodput` are read again only when one of them changes (a commit does not
read them, and the state's documents never wait on a read of them)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

ROOT = Path(__file__).parent.parent
GOODPUT = ROOT / "fixtures" / "goodput" / "fleet.jsonl"
TOKEN = "s3cret-token-for-the-tests-0123456789"
GUARD_S = 30.0  # how long a test waits for what must come at once before it calls it a hang


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


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, threading.Event, list[Any]]:
    """`call` run in a thread of its own: (the thread, set once it returned, what it returned)."""
    done, out = threading.Event(), []

    def run() -> None:
        try:
            out.append(call())
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done, out


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
