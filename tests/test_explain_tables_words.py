"""What `explain` says of a slice's routing tables."""

from __future__ import annotations


def test_a_slice_without_tables_is_said_to_have_none_once_in_words(fleet):
    """`explain` said "its routing tables are none" of a wired slice without tables, and of a degraded one said it
    twice, once as "no routing tables are stored for it" with its step."""
    none = "no routing tables are stored for it"
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    why = fleet("explain", "s", "-o", "json").json["why"]
    assert none in why and not any("are none" in w for w in why)
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    r = fleet("explain", "s", "-o", "json").json
    assert r["state"] == "degraded" and r["routes"] == "none"
    assert [w for w in r["why"] if w.startswith(none)] == [
        f"{none}: `tpufleet routes s` makes the ones around f1"
    ] and not any("are none" in w for w in r["why"])
