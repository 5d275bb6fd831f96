"""`history --slice NAME` of a mistyped name suggested only names still in the state, so a released slice or job
(whose history is mostly what is asked) got no "did you mean"; the journal's names are suggested too."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("typed", "meant", "allocate"), [("train1", "Train1", ()), ("j1", "J1", ("--slices", "2"))])
def test_a_released_name_is_suggested(fleet, typed, meant, allocate):
    assert fleet("allocate", meant, "--shape", "4x4x4", *allocate).code == 0
    assert fleet("release", meant).code == 0
    r = fleet("history", "--slice", typed)
    assert r.code == 0
    assert f"no change in the journal touched a slice or job named {typed!r} (did you mean {meant}?" in r.err
    assert fleet("history", "--slice", meant, "-o", "json").json != []


def test_a_name_near_nothing_gets_no_suggestion(fleet):
    assert fleet("allocate", "Train1", "--shape", "4x4x4").code == 0
    assert "did you mean" not in fleet("history", "--slice", "zzzzzz").err
