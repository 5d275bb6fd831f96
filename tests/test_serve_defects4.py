"""`tpufleet report`, `tpufleet metrics` and `tpufleet serve` agree with `status` on the same state."""

from __future__ import annotations

from typing import Any


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
    reported = {s["name"]: s["routes"] for s in cli("report", "-o", "json").json["slices"]}
    assert shown == reported == {"a": "missing"}
    assert "| missing " in cli("report", "-o", "md").out
