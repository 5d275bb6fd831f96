"""Defects of the read-side commands (`status`, `suspects`, `export`, `diff`, `history`, ...) found by probing a
small fleet: each test fails without its fix."""

from __future__ import annotations


def test_status_lists_stale_tables_by_slice_name_as_counted(fleet):
    """`status` listed the slices with stale routing tables as text (`s10, s9`), unlike its own list of slices."""
    for name in ("s9", "s10"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    status = fleet("status", "-o", "json").json
    assert status["stale_routes"] == ["s9", "s10"]
    assert fleet("status").out.splitlines()[-1].endswith(": s9, s10")
