"""`tpufleet serve` as an operator's dashboard and a scraper see it: what a cached document's ETag promises."""

from __future__ import annotations

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
