"""`reschedule` of a slice with no routing tables stored (wired, never routed) wired it where it landed and said
nothing of its tables, where `plan-xconnect --apply` lists such a slice in `routes_none` with `next: tpufleet
routes SLICE`; `reschedule` does the same now."""

from __future__ import annotations


def test_a_moved_slice_without_tables_is_given_its_routes(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0  # c00,c01
    assert fleet("plan-xconnect", "a", "--apply").code == 0  # not routed
    assert fleet("inject-fault", "host:c00/1").code == 0
    r = fleet("reschedule", "a", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["routes_none"] == ["a"] and r.json["routes_stale"] == []
    assert fleet("release", "a").code == 0
    assert fleet("allocate", "b", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "b", "--apply").code == 0
    assert fleet("inject-fault", f"host:{fleet('explain', 'b', '-o', 'json').json['cubes'][0]}/1").code == 0
    r = fleet("reschedule", "b")
    assert r.code == 0, r.err
    assert "next: tpufleet routes b" in r.out
