"""`explain` given a component's id without its kind (`c7`, `c07/3`, `pod0/x/5`), near no slice or job: refused
(exit 1, nothing changed) naming the component it may mean and its explain; a slice's near miss is told as before."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize("typed, meant", [("c7", "cube:c07"), ("c07/3", "host:c07/3"), ("pod0/x/5", "ocs:pod0/x/5")])
def test_explain_of_a_kindless_id_names_the_component(fleet, typed, meant):
    before = snapshot(fleet.state)
    r = fleet("explain", typed, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 1 and said["exit_code"] == 1
    assert said["error"].endswith(f"did you mean {meant}? (`tpufleet explain {meant}`)")
    assert snapshot(fleet.state) == before


def test_a_cube_the_fleet_lacks_is_an_unknown_name(fleet):
    line = one_line(fleet("explain", "c99"), 1)
    assert "unknown slice or job 'c99'" in line and "cube:" not in line
