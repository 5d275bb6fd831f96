"""Defects a review of faults, routing and cross-connect plans found, each pinned by the outcome it must have."""

from __future__ import annotations

import pytest

from helpers import snapshot


@pytest.fixture
def routed(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/0").code == 0
    assert fleet("routes", "a").code == 0
    return fleet


@pytest.mark.parametrize(
    "args",
    [
        ("routes", "a", "--algorithm", "dor", "--out", "{state}/routes/a.npz"),
        ("routes", "a", "--table-capacity", "3", "--out", "{state}/routes/a.npz"),
        ("plan-xconnect", "a", "--out", "{state}/journal.jsonl"),
        ("report", "--out", "{state}/state.json"),
        ("report", "--out", "{state}/new-file.html"),
        ("simulate-fleet", "--days", "1", "--out", "{state}/events.jsonl"),
    ],
    ids=["dor-over-tables", "sparse-over-tables", "plan-over-journal", "report-over-state", "new-file", "simulate"],
)
def test_no_output_file_lands_in_the_state_directory(routed, args):
    """`--out` replaced the state's own files: tables it called "not stored", the journal, state.json itself."""
    before = snapshot(routed.state)
    r = routed(*(a.format(state=routed.state) for a in args))
    assert r.code == 2 and "inside the state directory" in r.err
    assert snapshot(routed.state) == before
    assert routed("status").code == 0 and routed("collective", "a", "--op", "all-to-all", "--bytes", "1MiB").code == 0
