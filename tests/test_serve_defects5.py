"""`tpufleet metrics`, `tpufleet serve`, `report` and the monitoring mixin say what `status` says: routing tables
removed by hand, planned OCS drains, open faults with drains, damaged journal lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _wired_with_tables(fleet: Any) -> None:
    for step in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        r = fleet(*step)
        assert r.code == 0, (step, r.err)


def _client(state: Path) -> Any:
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    return TestClient(build_app(Server(Source(Store(state), [], None), metrics_inputs(), None, 5)))


def test_metrics_count_routing_tables_removed_by_hand_as_status_lists_them(fleet):
    _wired_with_tables(fleet)
    (fleet.state / "routes" / "a.npz").unlink()
    assert fleet("status", "-o", "json").json["missing_routes"] == ["a"]
    samples = _samples(fleet("metrics").out)
    assert samples["tpufleet_missing_route_tables", ()] == 1
    assert samples["tpufleet_stale_route_tables", ()] == 0  # the existing series keeps its meaning


def test_serve_sees_routing_tables_removed_by_hand_before_the_next_commit(fleet):
    _wired_with_tables(fleet)
    client = _client(Path(fleet.state))
    slice_a = (("slice", "a"),)
    assert _samples(client.get("/metrics").text)["tpufleet_slice_route_tables_missing", slice_a] == 0
    assert client.get("/api/v1/status").json()["missing_routes"] == []
    (fleet.state / "routes" / "a.npz").unlink()
    samples = _samples(client.get("/metrics").text)
    assert samples["tpufleet_slice_route_tables_missing", slice_a] == 1
    assert samples["tpufleet_missing_route_tables", ()] == 1
    assert samples["tpufleet_slice_route_tables_stale", slice_a] == 0
    assert client.get("/api/v1/status").json()["missing_routes"] == ["a"]


def test_a_planned_ocs_drain_is_counted_drained_not_failed_everywhere(fleet):
    for step in (("inject-fault", "ocs:pod0/y/2", "--planned"), ("inject-fault", "ocs:pod0/x/3")):
        assert fleet(*step).code == 0, step
    healths = sorted(r["health"] for r in fleet("show", "ocs", "-o", "json").json if r["health"] != "ok")
    assert healths == ["drained", "failed"]
    ocs = fleet("status", "-o", "json").json["ocs"]
    assert (ocs["failed"], ocs["drained"]) == (1, 1)
    assert "OCS: 1 failed, 1 drained," in fleet("status").out
    assert fleet("report", "-o", "json").json["ocs"] == ocs
    assert "OCS 1 failed, 1 drained of 48" in fleet("report", "-o", "html").out
    samples = _samples(fleet("metrics").out)
    pod0 = (("pod", "pod0"),)
    assert (samples["tpufleet_ocs_failed", pod0], samples["tpufleet_ocs_drained", pod0]) == (1, 1)


def _damage_last_journal_line(state: Path) -> int:
    journal = state / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[-1] = b'{"serial": ' + str(len(lines)).encode() + b", damaged\n"
    journal.write_bytes(b"".join(lines))
    return len(lines)


def test_report_says_it_skipped_a_damaged_journal_line_as_show_journal_does(fleet):
    assert fleet("inject-fault", "host:c01/2").code == 0
    line = _damage_last_journal_line(Path(fleet.state))
    shown = fleet("show", "journal")
    warning = shown.err.strip()
    assert f"damaged line(s) {line} skipped" in warning
    for fmt in ("table", "json", "md", "html"):
        r = fleet("report", "-o", fmt)
        assert r.code == 0 and r.err.strip() == warning, fmt
    doc = fleet("report", "-o", "json").json
    assert doc["journal_damaged_lines"] == [line]
    assert all(e["serial"] != line for e in doc["journal"])
    assert f"Damaged journal line(s) {line} skipped" in fleet("report", "-o", "html").out
    assert f"Damaged journal line(s) {line} skipped" in fleet("report", "-o", "md").out
    page = _client(Path(fleet.state)).get("/").text
    assert f"Damaged journal line(s) {line} skipped" in page
