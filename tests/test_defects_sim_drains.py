"""A planned drain in `simulate-fleet` gives notice: the jobs it moves are not disrupted."""

from __future__ import annotations

import json


def test_a_planned_drain_is_no_eviction_no_restart_wait_and_lowers_no_mtbf(cli, tmp_path):
    """Drains were logged as `eviction`: counted in disruptions.eviction and restart_wait_hours, and in the MTBF
    of goodput-report's checkpoint advice, though nothing failed."""
    out = tmp_path / "events.jsonl"
    args = ("simulate-fleet", "--days", "3", "--fault-scale", "host=0,link=0,ocs=0,drain=100", "-o", "json")
    r = cli(*args, "--out", out, state=False)
    assert r.code == 0, r.err
    s = r.json
    assert s["faults"]["drain"] > 0
    assert s["disruptions"]["eviction"] == 0 and s["disruptions"]["failure"] == 0
    assert s["restart_wait_hours"] == {}
    assert s["drain_moves"] > 0  # where they are counted instead
    names = [json.loads(line).get("event") for line in out.read_text().splitlines()]
    assert names.count("drain") == s["drain_moves"] and "eviction" not in names
    report = cli("goodput-report", out, "-o", "json", state=False)
    assert report.code == 0, report.err
    fleet = report.json["fleet"]
    assert fleet["disruptions"] == s["disruptions"]["preemption"]  # the drains' moves are none
    assert sum(j["disruptions_inferred"] for j in report.json["jobs"]) == 0
    assert (fleet["sg"], fleet["rg"], fleet["pg"]) == (s["sg"], s["rg"], s["pg"])
