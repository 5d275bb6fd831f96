"""`tpufleet metrics` and serve's /metrics give a slice's series as the fleet counts slices (s9 before s10), as
`status`, `show slices` and the report list them."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

PER_SLICE = (
    "tpufleet_slice_all_to_all_retained_ratio",
    "tpufleet_slice_state",
    "tpufleet_slice_min_throughput_ratio",
    "tpufleet_slice_route_tables_stale",
    "tpufleet_slice_route_tables_missing",
)


def _slice_order(text: str) -> dict[str, list[str]]:
    order: dict[str, list[str]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            names = order.setdefault(s.name, [])
            if "slice" in s.labels and s.labels["slice"] not in names:
                names.append(s.labels["slice"])
    return order


def test_per_slice_series_come_as_slices_are_counted(fleet):
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    for name in ("s10", "s9", "s2"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
    server = Server(Source(Store(Path(fleet.state))), metrics_inputs(), None, 5)
    served = TestClient(build_app(server), raise_server_exceptions=False).get("/metrics")
    assert served.status_code == 200
    assert set(PER_SLICE) <= set(_slice_order(served.text))
    for text in (fleet("metrics").out, served.text):
        order = _slice_order(text)
        present = [name for name in PER_SLICE if name in order]
        assert present, sorted(order)
        for name in present:
            assert order[name] == ["s2", "s9", "s10"], name
