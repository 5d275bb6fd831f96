"""`tpufleet report`, `tpufleet metrics` and `tpufleet serve` agree with `status` on the same state."""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from helpers import GUARD_S, in_thread


def _wired_with_tables(cli: Any) -> Any:
    for step in (("init",), ("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        r = cli(*step)
        assert r.code == 0, (step, r.err)
    return cli


def test_report_says_routing_tables_removed_by_hand_are_missing_as_status_does(cli):
    _wired_with_tables(cli)
    (cli.state / "routes" / "a.npz").unlink()
    assert cli("status", "-o", "json").json["missing_routes"] == ["a"]
    shown = {s["name"]: s["routes"] for s in cli("show", "slices", "-o", "json").json}
    report = cli("report", "-o", "json").json
    reported = {s["name"]: s["routes"] for s in report["slices"]}
    assert shown == reported == {"a": "missing"}
    assert (report["missing_routes"], report["stale_routes"]) == (["a"], [])  # as status lists them
    assert "| missing " in cli("report", "-o", "md").out


def _cube_fill(page: str, cube: str) -> str:
    found = re.search(rf"<title>cube {cube} \(position \d+\): [^<]*</title><rect [^>]*fill=\"([^\"]+)\"", page)
    assert found is not None, cube
    return found.group(1)


def test_the_html_report_shows_a_cube_reserved_for_an_evicted_slice_as_reserved_not_free(fleet):
    for step in (("allocate", "a", "--shape", "4x4x4"), ("inject-fault", "host:c00/1")):
        assert fleet(*step).code == 0, step
    pod = fleet("report", "-o", "json").json["map"]["pods"][0]
    reserved = [c["cube"] for c in pod["cubes"] if c["state"] == "reserved"]
    free = [c["cube"] for c in pod["cubes"] if c["state"] == "free"]
    assert len(reserved) == 1 and pod["counts"]["reserved"] == 1
    page = fleet("report", "-o", "html").out
    assert _cube_fill(page, reserved[0]) != _cube_fill(page, free[0])
    counts = pod["counts"]
    assert (
        f"{counts['slice']} in slices, {counts['free']} free, 1 reserved, {counts['out']} out, "
        f"{counts['drained']} drained" in page
    )


def test_a_long_journal_read_holds_up_no_other_document_of_the_serial(fleet, monkeypatch):
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.ops import views
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    reading, release = threading.Event(), threading.Event()
    show = views.show

    def slow_journal(store: Any, what: Any, tail: Any = None) -> Any:
        if what == "journal":  # a journal of a long history: its read takes long
            reading.set()
            assert release.wait(GUARD_S * 2)
        return show(store, what, tail)

    monkeypatch.setattr(views, "show", slow_journal)
    app = build_app(Server(Source(Store(Path(fleet.state)), [], None), metrics_inputs(), None, 5))

    def get(path: str) -> Any:
        return TestClient(app, raise_server_exceptions=False).get(path)

    _, journal_read, journal_out = in_thread(lambda: get("/api/v1/journal"))
    try:
        assert reading.wait(GUARD_S)
        for path in ("/metrics", "/api/v1/status", "/api/v1/slices"):
            _, answered, out = in_thread(functools.partial(get, path))
            assert answered.wait(GUARD_S), f"{path} waited on the read of the journal"
            assert out[0].status_code == 200, path
        assert not journal_read.is_set()
    finally:
        release.set()
    assert journal_read.wait(GUARD_S)
    assert journal_out[0].status_code == 200 and journal_out[0].json()[0]["serial"] == 1
