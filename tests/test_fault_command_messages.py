"""What the fault commands say when they refuse: the operator's own mistake named plainly, and what to do instead."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_a_scenario_reason_that_is_not_text_is_refused_as_not_text(fleet, tmp_path, value):
    """A NaN or infinite reason was refused as "must be a finite number", as if the reason were a number."""
    scenario = tmp_path / "faults.yaml"
    scenario.write_text(f'- {{target: "host:c06/2", reason: {value}}}\n')
    before = snapshot(fleet.state)
    r = fleet("inject-fault", "--from", scenario)
    assert r.code == 2
    assert str(scenario) in r.err and "0.reason" in r.err and "must be a string" in r.err
    assert "finite" not in r.err and r.err.count("\n") == 1
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(("item", "value"), [("null", "None"), ("5", "5"), ("[host:c06/2]", "['host:c06/2']")])
def test_a_scenario_item_neither_id_nor_mapping_names_both_forms(fleet, tmp_path, item, value):
    """`- null` in a scenario was refused as "must be a mapping", though a target id alone is as good an item."""
    scenario = tmp_path / "faults.yaml"
    scenario.write_text(f"- host:c05/1\n- {item}\n")
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "--from", scenario))
    said = "field 1: must be a target id (such as cube:c05) or a mapping {target, planned?, reason?}"
    assert line == f"tpufleet: error: {scenario}: {said} (value {value})"
    assert snapshot(fleet.state) == before


def test_clearing_a_cube_with_no_fault_of_its_own_names_the_faults_inside_it(fleet):
    """`clear-fault cube:c06` with only a host of it down said "no open fault on cube:c06", and nothing of the host's."""
    assert fleet("inject-fault", "host:c06/2").code == 0
    before = snapshot(fleet.state)
    r = fleet("clear-fault", "cube:c06")
    assert r.code == 1 and r.err.count("\n") == 1
    assert "no open fault on cube:c06" in r.err and "f1 on host:c06/2" in r.err and "clear-fault f1" in r.err
    assert snapshot(fleet.state) == before


def test_only_a_few_faults_inside_are_named_and_the_rest_counted(fleet):
    for machine in range(5):
        assert fleet("inject-fault", f"host:c06/{machine}").code == 0
    r = fleet("clear-fault", "cube:c06")
    assert r.code == 1
    assert "f1 on host:c06/0, f2 on host:c06/1, f3 on host:c06/2 and 2 more" in r.err and "f4" not in r.err


def test_a_target_with_nothing_open_inside_says_only_that(fleet):
    assert fleet("inject-fault", "host:c06/2").code == 0
    r = fleet("clear-fault", "host:c06/1")
    assert r.code == 1 and "no open fault on host:c06/1" in r.err and "f1" not in r.err


def test_a_target_with_nothing_open_inside_says_where_the_open_faults_are_listed(fleet):
    """`clear-fault host:c06/1` (meaning host:c06/2) said only "no open fault on host:c06/1": no way on."""
    assert fleet("inject-fault", "host:c06/2").code == 0
    before = snapshot(fleet.state)
    r = fleet("clear-fault", "host:c06/1", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 1 and said["exit_code"] == 1
    assert said["error"].endswith("open faults elsewhere: 1 (`tpufleet faults` lists them)")
    assert snapshot(fleet.state) == before


def test_a_target_cleared_in_a_fleet_with_nothing_open_says_so(fleet):
    line = one_line(fleet("clear-fault", "host:c06/1"), 1)
    assert line.endswith("no open fault on host:c06/1; no fault is open")
