"""`tpufleet serve` reads each slice's stored tables once for a snapshot: every document of it (the ETag, status,
slices, the metrics, the page) read every file through again, seconds each on sixteen routed superpods. The
documents are what the command line gives, and a change of the tables makes a new snapshot that reads them again."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

from tpufleet.state import tablesindex

PAGES = ("/api/v1/status", "/api/v1/slices", "/metrics", "/", "/api/v1/jobs", "/api/v1/status")


def _client(state) -> TestClient:
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    return TestClient(build_app(Server(Source(Store(state)), metrics_inputs(), None, 5)), raise_server_exceptions=False)


@pytest.fixture
def two_routed(fleet):
    for name in ("a", "b"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0
    return fleet


@pytest.fixture
def reads(monkeypatch):
    seen: Counter[str] = Counter()
    real = tablesindex.holds_indexed

    def counting(path, name, entry, *whole):
        seen[name] += 1
        return real(path, name, entry, *whole)

    monkeypatch.setattr(tablesindex, "holds_indexed", counting)
    return seen


def test_each_tables_file_is_read_once_for_a_snapshot(two_routed, reads):
    client = _client(two_routed.state)
    for path in PAGES:
        assert client.get(path).status_code == 200, path
    assert reads == {"a": 1, "b": 1}
    assert client.get("/api/v1/status").json() == two_routed("status", "-o", "json").json


def test_tables_changed_make_a_snapshot_that_reads_them_again(two_routed, reads):
    client = _client(two_routed.state)
    assert client.get("/api/v1/status").json()["missing_routes"] == []
    routes = two_routed.state / "routes"
    (routes / "b.npz").unlink()
    (routes / "b.npz").write_bytes((routes / "a.npz").read_bytes())  # another slice's tables, a new inode
    for path in PAGES:
        assert client.get(path).status_code == 200, path
    assert client.get("/api/v1/status").json()["missing_routes"] == ["b"]
    assert "tpufleet_missing_route_tables 1" in client.get("/metrics").text
    served = client.get("/api/v1/slices").json()
    assert reads == {"a": 2, "b": 2}
    assert served == two_routed("show", "slices", "-o", "json").json
