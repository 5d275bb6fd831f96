"""`tpufleet report`, `tpufleet metrics` and `tpufleet serve` agree with `status` on the same state."""

from __future__ import annotations

import re
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
