"""`plan-xconnect` of a slice wired already that runs on rerouted around a failed optical link (its cross-connect
stays) was refused with `choose other cubes`, which no command does for a running slice; the refusal says it runs
on around the port and gives the clear that lets it be planned."""

from __future__ import annotations


def test_a_wired_slice_with_a_port_down_is_told_to_clear_it(fleet):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    hit = fleet("inject-fault", "link:c00/x/5/out", "-o", "json").json
    assert hit["slices"][0]["action"] == "reroute"
    r = fleet("plan-xconnect", "s", "--apply")
    assert r.code == 1
    assert "it is wired and runs on around them: `tpufleet clear-fault f1` once repaired, then plan again" in r.err
    assert "choose other cubes" not in r.err and "link:c00/x/5/out is down (faults f1)" in r.err
    assert fleet("clear-fault", "f1").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
