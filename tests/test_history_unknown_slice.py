"""`history --slice NAME` for a name no change in the journal touched: the empty timeline as before (exit 0), and a
note on stderr saying so, with the slice or job it may mean."""

from __future__ import annotations

import json

from helpers import snapshot


def test_a_mistyped_slice_gets_a_note_naming_the_one_meant(fleet):
    assert fleet("allocate", "llm", "--shape", "4x4x4").code == 0
    before = snapshot(fleet.state)
    r = fleet("history", "--slice", "lmm", "-o", "json")
    assert r.code == 0 and json.loads(r.out) == []
    assert "tpufleet: note: no change in the journal touched a slice or job named 'lmm'" in r.err
    assert "did you mean llm? `tpufleet history --slice llm`" in r.err
    assert snapshot(fleet.state) == before


def test_a_slice_with_changes_gets_no_note(fleet):
    assert fleet("allocate", "llm", "--shape", "4x4x4").code == 0
    assert fleet("release", "llm").code == 0
    r = fleet("history", "--slice", "llm", "-o", "json")
    assert r.code == 0 and len(json.loads(r.out)) == 2 and r.err == ""
