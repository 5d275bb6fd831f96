"""Slices named as the fleet counts them (s9 before s10) in a fault's blast radius and in what depends on a
component, as every other list of slices is."""

from __future__ import annotations


def _two_slices(fleet):
    for name in ("s10", "s9"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0


def test_a_blast_radius_and_explain_list_slices_as_counted(fleet):
    _two_slices(fleet)
    radius = fleet("inject-fault", "ocs:pod0/x/1", "--dry-run", "-o", "json").json
    assert [s["slice"] for s in radius["slices"]] == ["s9", "s10"]
    assert fleet("explain", "ocs:pod0/x/1", "-o", "json").json["slices"] == ["s9", "s10"]


def test_clear_fault_lists_the_slices_to_wire_as_counted(fleet):
    """Slices wired while an OCS was down (its cross-connects deferred) are named to wire once it is cleared."""
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    for name in ("s10", "s9"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
    cleared = fleet("clear-fault", "ocs:pod0/x/1", "-o", "json")
    assert cleared.code == 0, cleared.err
    assert cleared.json["rewire"] == ["s9", "s10"]


def test_clear_fault_lists_the_tables_it_makes_stale_as_counted(fleet):
    """`routes_stale` of `clear-fault` was in the text order of the names (s10 before s9), though `status` lists
    the same stale tables as the fleet counts them."""
    _two_slices(fleet)
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    for name in ("s10", "s9"):
        assert fleet("routes", name).code == 0
    cleared = fleet("clear-fault", "ocs:pod0/x/1", "-o", "json")
    assert cleared.code == 0, cleared.err
    assert cleared.json["routes_stale"] == ["s9", "s10"]
    assert fleet("status", "-o", "json").json["stale_routes"] == ["s9", "s10"]
