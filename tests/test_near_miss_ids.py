"""A target id typed with its kind left out, misspelt or in capitals, or a fault id in capitals or without its f, is
refused (exit 2, nothing changed) naming the id it may mean."""

from __future__ import annotations

import json

import pytest

from helpers import add_fault, one_line, snapshot


@pytest.mark.parametrize(
    "typed, meant",
    [
        ("c10", "cube:c10"),
        ("c10/3", "host:c10/3"),
        ("HOST:C10/3", "host:c10/3"),
        ("hots:c10/3", "host:c10/3"),
        ("pod0/x/5", "ocs:pod0/x/5"),
        ("c10/x/5/out", "link:c10/x/5/out"),
    ],
)
def test_inject_fault_of_a_near_miss_names_the_id(fleet, typed, meant):
    before = snapshot(fleet.state)
    r = fleet("inject-fault", typed, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].endswith(f"did you mean {meant}?")
    assert snapshot(fleet.state) == before


def test_an_id_like_none_gets_no_guess(fleet):
    assert "did you mean" not in one_line(fleet("inject-fault", "zz"), 2)


@pytest.mark.parametrize("typed, meant", [("F1", "f1"), ("1", "f1"), ("c10", "cube:c10")])
def test_clear_fault_of_a_near_miss_names_the_fault_or_target(fleet, typed, meant):
    add_fault(fleet.state, "cube:c10")
    before = snapshot(fleet.state)
    line = one_line(fleet("clear-fault", typed), 2)
    assert line.endswith(f"did you mean {meant}?")
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("typed", ["F1", "3", "0", "F0", "1" * 5000])
def test_clear_fault_of_a_number_no_open_fault_has_names_none(fleet, typed):
    add_fault(fleet.state, "cube:c10")  # f1 is open; none of these can clear it or another
    if typed == "F1":
        fleet("clear-fault", "f1")
    before = snapshot(fleet.state)
    line = one_line(fleet("clear-fault", typed), 2)
    assert "did you mean" not in line
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("verb", [("inject-fault",), ("explain",), ("clear-fault",)])
@pytest.mark.parametrize("typed", ["cube:c99", "cub:c99", "host:c99/1", "ocs:pod09/x/5"])
def test_a_near_miss_the_fleet_lacks_is_not_named(fleet, verb, typed):
    before = snapshot(fleet.state)
    line = one_line(fleet(*verb, typed), 2)
    assert "did you mean" not in line
    assert snapshot(fleet.state) == before


def test_a_near_miss_the_fleet_has_is_still_named(fleet):
    assert one_line(fleet("explain", "cube:c7"), 2).endswith(
        "did you mean cube:c07? (an id is written as tpufleet writes it: cubes cNN, other numbers without leading zeros)"
    )
