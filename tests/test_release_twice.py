"""`release` of a slice or job already released is refused (exit 1, nothing changed) naming the commit that released
it; a name never used is refused as unknown, as before."""

from __future__ import annotations

import json

from helpers import one_line, snapshot


def test_releasing_a_slice_twice_names_the_release(fleet):
    assert fleet("allocate", "small", "--shape", "4x4x4").code == 0
    first = fleet("release", "small", "-o", "json")
    assert first.code == 0
    serial = json.loads(first.out)["serial"]
    before = snapshot(fleet.state)
    r = fleet("release", "small", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 1 and said["exit_code"] == 1
    assert said["error"].startswith(f"'small' is already released: serial {serial} removed it")
    assert "nothing to release" in said["error"]
    assert snapshot(fleet.state) == before


def test_releasing_a_slice_of_a_released_job_names_the_jobs_release(fleet):
    assert fleet("allocate", "jb", "--shape", "4x4x4", "--slices", "2").code == 0
    assert fleet("release", "jb").code == 0
    line = one_line(fleet("release", "jb-0"), 1)
    assert "'jb-0' is already released" in line and "release jb`" in line


def test_a_name_never_used_is_refused_as_unknown(fleet):
    assert fleet("allocate", "small", "--shape", "4x4x4").code == 0
    assert fleet("release", "small").code == 0
    line = one_line(fleet("release", "other"), 1)
    assert "unknown slice or job 'other'" in line and "already released" not in line
