"""A slice whose stale routing tables' file is removed is in `missing_routes` only, not in `stale_routes` too
(`status`, `report`), and counted once by the metrics (`tpufleet_missing_route_tables`, the per-slice
`tpufleet_slice_route_tables_missing`), so one cause fires one alert."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families


def _samples(text: str) -> dict[tuple[str, str], float]:
    return {
        (s.name, s.labels.get("slice", "")): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if "route_tables" in s.name
    }


def test_stale_tables_removed_are_missing_only(routed):
    assert routed("inject-fault", "link:c00/x/3/out").code == 0  # the tables of s go stale
    assert routed("status", "-o", "json").json["stale_routes"] == ["s"]
    (routed.state / "routes" / "s.npz").unlink()
    status = routed("status", "-o", "json").json
    assert (status["stale_routes"], status["missing_routes"]) == ([], ["s"])
    report = routed("report", "-o", "json").json
    assert (report["stale_routes"], report["missing_routes"]) == ([], ["s"])
    counts = _samples(routed("metrics").out)
    assert counts[("tpufleet_stale_route_tables", "")] == 0 and counts[("tpufleet_missing_route_tables", "")] == 1


def test_serve_gives_the_slice_one_series_at_1_missing(routed):
    """`serve`'s per-slice series, which the mixin's alert reads, say missing only too."""
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    (routed.state / "routes" / "s.npz").unlink()
    client = TestClient(build_app(Server(Source(Store(routed.state), [], None), metrics_inputs(), None, 5)))
    series = _samples(client.get("/metrics").text)
    assert series[("tpufleet_slice_route_tables_stale", "s")] == 0
    assert series[("tpufleet_slice_route_tables_missing", "s")] == 1
    assert client.get("/api/v1/status").json()["stale_routes"] == []


def test_serve_says_when_a_rerouted_slices_tables_still_cross_its_fault(routed):
    """Rerouted around a fault its stored tables predate, the slice's traffic still crosses the failed part: a
    series of its own (the mixin's critical alert), 0 again once `routes` stores tables around the fault."""
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    def through() -> float:
        client = TestClient(build_app(Server(Source(Store(routed.state), [], None), metrics_inputs(), None, 5)))
        return _samples(client.get("/metrics").text)[("tpufleet_slice_route_tables_through_faults", "s")]

    assert through() == 0
    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    assert through() == 1
    assert routed("routes", "s").code == 0
    assert through() == 0
    assert routed("inject-fault", "link:c00/y/3/out").code == 0
    assert routed("clear-fault", "f1").code == 0  # stale by the clear, still made before f2
    assert through() == 1


def test_a_degraded_slice_never_routed_is_said_to_cross_its_fault(fleet):
    """Wired, never routed, then rerouted around a fault: no stored tables, so neither stale nor missing, and no
    series said its traffic crosses the fault (no alert ever fired), though `explain` gives `routes` first."""
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    def through() -> float:
        client = TestClient(build_app(Server(Source(Store(fleet.state), [], None), metrics_inputs(), None, 5)))
        return _samples(client.get("/metrics").text)[("tpufleet_slice_route_tables_through_faults", "e")]

    assert fleet("allocate", "e", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "e", "--apply").code == 0
    assert through() == 0  # connected, not yet routed: nothing crosses a fault
    assert fleet("inject-fault", "link:c00/z/4/out").code == 0
    assert fleet("status", "-o", "json").json["slices"][0]["state"] == "degraded"
    assert through() == 1
    assert fleet("explain", "e", "-o", "json").json["next"][0] == "tpufleet routes e"
    assert fleet("routes", "e").code == 0
    assert through() == 0
