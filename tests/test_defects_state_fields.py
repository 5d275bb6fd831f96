"""Fields of state.json checked at load (and so at save) as the tool writes them: a hand edit the next command
would trip over is refused at once, naming the field and the value."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot

LAST_FAULT_NUMBER = 10**18 - 1  # f999999999999999999: fault ids are at most 19 characters


def _edit(state, change) -> None:
    path = state / "state.json"
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("counter", [LAST_FAULT_NUMBER + 1, 2**63])
def test_a_fault_counter_past_the_last_fault_id_is_refused_at_load(fleet, counter):
    _edit(fleet.state, lambda d: d.update(next_fault=counter))
    line = one_line(fleet("status"))
    assert "field next_fault" in line and f"(value {counter})" in line and "fault number too large" in line
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "cube:c20"))
    assert "field next_fault" in line and "faults." not in line
    assert snapshot(fleet.state) == before


def test_the_last_fault_counter_loads_and_its_fault_is_refused_naming_the_counter(fleet):
    _edit(fleet.state, lambda d: d.update(next_fault=LAST_FAULT_NUMBER))
    assert fleet("status").code == 0
    line = one_line(fleet("inject-fault", "cube:c20"))
    assert "refused" in line and "field next_fault" in line and f"(value {LAST_FAULT_NUMBER + 1})" in line
