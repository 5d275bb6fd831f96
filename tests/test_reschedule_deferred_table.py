"""`reschedule` of a slice landing where an OCS is down defers its pairs there (`deferred` in -o json); the table
said only to run `routes`, not that the pairs wait for the repair and `plan-xconnect --apply` after it, which
`explain` gives."""

from __future__ import annotations


def test_the_table_names_the_deferred_ocs_and_the_wiring_after_its_repair(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0  # c00,c01
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0  # f1: a runs on, rerouted
    assert fleet("inject-fault", "host:c00/1").code == 0  # f2: a is evicted
    r = fleet("reschedule", "a")
    assert r.code == 0, r.err
    deferred = [line for line in r.out.splitlines() if "ocs:pod0/x/3" in line]
    assert len(deferred) == 1 and "`tpufleet plan-xconnect a --apply`" in deferred[0]
    assert fleet("explain", "a", "-o", "json").json["next"][-2:] == [
        "tpufleet plan-xconnect a --apply",
        "tpufleet routes a",
    ]
