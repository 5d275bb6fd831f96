"""`reschedule` of a slice that is not evicted: refused (exit 1, nothing changed) naming the command that says what
the slice needs."""

from __future__ import annotations

import json

import pytest

from helpers import snapshot


@pytest.mark.parametrize("wire", [False, True])
def test_reschedule_of_a_slice_not_evicted_names_explain(fleet, wire):
    assert fleet("allocate", "llm", "--shape", "4x4x8").code == 0
    if wire:
        assert fleet("plan-xconnect", "llm", "--apply").code == 0
    before = snapshot(fleet.state)
    r = fleet("reschedule", "llm", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 1 and said["exit_code"] == 1
    assert "not evicted; nothing to reschedule" in said["error"] and "`tpufleet explain llm`" in said["error"]
    assert snapshot(fleet.state) == before
