"""A near miss equally near two names gets no guess: `--pod pod` on pods pod0 and pod1 was answered "did you mean
pod0?", the first in the list, which could send an operator to the wrong pod. The refusal lists both instead."""

from __future__ import annotations

import json

from helpers import snapshot


def test_a_tie_gets_no_guess_and_the_refusal_lists_both(cli):
    assert cli("init", "--pods", "2").code == 0
    before = snapshot(cli.state)
    r = cli("allocate", "x", "--shape", "4x4x4", "--pod", "pod", "-o", "json")
    said = json.loads(r.err)["error"]
    assert r.code == 2 and "did you mean" not in said and "pod0" in said and "pod1" in said
    assert snapshot(cli.state) == before
    r = cli("allocate", "x", "--shape", "4x4x4", "--pod", "pod00", "-o", "json")
    assert "did you mean pod0?" in json.loads(r.err)["error"]  # one nearest: still named


def test_a_slice_as_near_two_of_a_jobs_slices_gets_no_guess(fleet):
    assert fleet("allocate", "jb", "--shape", "4x4x4", "--slices", "2").code == 0
    r = fleet("reschedule", "jb-2")
    assert r.code == 1 and "did you mean" not in r.err and "jb-0, jb-1" in r.err
