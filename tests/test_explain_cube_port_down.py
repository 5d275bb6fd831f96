"""`explain cube:CUBE` of a cube with an optical link down said `healthy` and named no fault, though `allocate
--cubes` and `plan-xconnect` refuse the cube naming that fault and `clear-fault cube:CUBE` names it as open inside
it; it names the fault and its clear now."""

from __future__ import annotations


def test_a_cube_with_an_optical_link_down_is_explained_with_that_fault(fleet):
    assert fleet("inject-fault", "link:c05/y/3/in").code == 0  # f1
    r = fleet("allocate", "a", "--shape", "4x4x8", "--cubes", "c05,c06")
    assert r.code == 1 and "f1" in r.err
    r = fleet("explain", "cube:c05", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["state"] == "optical port down: link:c05/y/3/in failed"
    assert [f["id"] for f in r.json["faults"]] == ["f1"]
    assert r.json["next"] == ["tpufleet clear-fault f1"]
    assert fleet("inject-fault", "host:c05/2").code == 0  # f2: now out of the pool
    r = fleet("explain", "cube:c05", "-o", "json")
    assert r.json["state"] == "out of the pool: host:c05/2 failed"
    assert sorted(f["id"] for f in r.json["faults"]) == ["f1", "f2"]
