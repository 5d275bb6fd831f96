"""`clear-fault` of an OCS drops the pairs an earlier tenant left on ports a slice was wired to while it was down
(`xconnects_dropped`); the table left that change to the OCS out, saying only what was cleared."""

from __future__ import annotations


def test_the_table_names_the_cross_connects_an_ocs_repair_dropped(fleet):
    assert fleet("allocate", "x", "--shape", "4x4x4", "--cubes", "c01").code == 0
    assert fleet("plan-xconnect", "x", "--apply").code == 0
    assert fleet("release", "x").code == 0  # its cross-connects stay
    assert fleet("inject-fault", "ocs:pod0/z/8").code == 0  # f1
    assert fleet("allocate", "a", "--shape", "4x4x8", "--cubes", "c01,c02").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    r = fleet("clear-fault", "f1")
    assert r.code == 0, r.err
    dropped = [line for line in r.out.splitlines() if "ocs:pod0/z/8:" in line]
    assert len(dropped) == 1 and " 1 cross-connect(s)" in dropped[0] and "1 -> 1" in dropped[0]
