"""`faults --since TIME`: only the faults opened at that time or later (with --all, cleared ones too), so an operator
asks what failed this week without reading every fault the fleet ever had."""

from __future__ import annotations

import json

from helpers import snapshot


def _backdate(fleet, fault_id: str, opened: str) -> None:
    """The fault's opening time as a fault opened then would carry it (the state file's `opened`)."""
    path = fleet.state / "state.json"
    doc = json.loads(path.read_text())
    (fault,) = [f for f in doc["faults"] if f["id"] == fault_id]
    fault["opened"] = opened
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))


def test_since_lists_only_the_faults_opened_then_or_later(fleet):
    for target in ("cube:c03", "cube:c04", "cube:c05"):
        assert fleet("inject-fault", target).code == 0
    assert fleet("clear-fault", "f3").code == 0
    _backdate(fleet, "f1", "2026-01-02T00:00:00Z")
    ids = lambda *args: [r["id"] for r in fleet("faults", *args, "-o", "json").json]  # noqa: E731
    assert ids() == ["f1", "f2"]
    assert ids("--since", "2026-06-01") == ["f2"]
    assert ids("--all", "--since", "2026-06-01") == ["f2", "f3"]
    assert ids("--all", "--since", "2026-01-02T00:00:00Z") == ["f1", "f2", "f3"]
    assert ids("--since", "999999w") == ["f1", "f2"]  # an age back to the calendar's start: everything


def test_a_bad_since_is_exit_2_and_changes_nothing(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    before = snapshot(fleet.state)
    r = fleet("faults", "--since", "yesterday")
    assert r.code == 2 and "--since" in r.err and "'yesterday'" in r.err
    assert snapshot(fleet.state) == before


def test_until_bounds_the_listing_and_a_reversed_range_gives_the_swapped_line(fleet):
    for target in ("cube:c03", "cube:c04", "cube:c05"):
        assert fleet("inject-fault", target).code == 0
    _backdate(fleet, "f1", "2026-01-02T00:00:00Z")
    _backdate(fleet, "f2", "2026-03-02T00:00:00Z")
    ids = lambda *args: [r["id"] for r in fleet("faults", *args, "-o", "json").json]  # noqa: E731
    assert ids("--until", "2026-01-02T00:00:00Z") == ["f1"]  # the bound itself included
    assert ids("--since", "2026-02-01", "--until", "2026-04-01") == ["f2"]
    assert ids("--until", "2000-01-01") == []
    before = snapshot(fleet.state)
    r = fleet("faults", "--since", "1d", "--until", "7d")
    assert r.code == 2 and "swap them: --since 7d --until 1d" in r.err
    assert snapshot(fleet.state) == before


def test_until_a_date_takes_that_whole_day(fleet):
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    _backdate(fleet, "f1", "2026-11-30T15:00:00Z")
    r = fleet("faults", "--since", "2026-11-30", "--until", "2026-11-30", "-o", "json")
    assert r.code == 0 and [f["id"] for f in r.json] == ["f1"]
    r = fleet("faults", "--until", "2026-11-29", "-o", "json")
    assert r.code == 0 and r.json == []
