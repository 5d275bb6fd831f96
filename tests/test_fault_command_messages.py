"""What the fault commands say when they refuse: the operator's own mistake named plainly, and what to do instead."""

from __future__ import annotations

import pytest

from helpers import snapshot


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
