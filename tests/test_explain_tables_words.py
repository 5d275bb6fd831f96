"""What `explain` says of a slice, and when other commands send an operator to it."""

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


def test_a_command_refused_for_an_evicted_slice_points_to_explain_when_reschedule_cannot_move_it(fleet):
    """`routes`, `plan-xconnect` and `collective` of an evicted slice said only "run `tpufleet reschedule S`
    first", which is refused while it has nowhere to go (one pod, an OCS down under a slice without fault-tolerant
    routing); `explain` gives the steps that work: the clear first."""
    assert fleet("allocate", "s", "--shape", "4x4x8", "--no-fault-tolerant-routing").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    assert fleet("reschedule", "s").code == 1  # no other pod
    for args in (["routes", "s"], ["plan-xconnect", "s"], ["collective", "s", "--op", "all-reduce", "--bytes", "1MiB"]):
        r = fleet(*args)
        assert r.code == 1 and "`tpufleet explain s`" in r.err, args
    assert fleet("explain", "s", "-o", "json").json["next"][0] == "tpufleet clear-fault f1"


def test_explain_of_a_bare_cube_name_points_to_its_target_id(fleet):
    """`explain c07` (a cube as `status` and `show map` write it) said only "unknown slice or job"."""
    r = fleet("explain", "c07")
    assert r.code == 1 and "`tpufleet explain cube:c07`" in r.err
    assert fleet("explain", "cube:c07").code == 0
    assert fleet("allocate", "c07", "--shape", "4x4x4").code == 0  # a slice of that name is the slice
    assert fleet("explain", "c07", "-o", "json").json["kind"] == "slice"


def test_explain_of_a_pods_name_points_to_its_map(fleet):
    """`explain pod0` (a pod as `status` and `show map` write it) said only "unknown slice or job", listing slices."""
    r = fleet("explain", "pod0")
    assert r.code == 1 and "'pod0' is a pod" in r.err and "`tpufleet show map --pod pod0`" in r.err, r.err
    assert fleet("show", "map", "--pod", "pod0").code == 0
    assert fleet("allocate", "pod0", "--shape", "4x4x4").code == 0  # a slice of that name is the slice
    assert fleet("explain", "pod0", "-o", "json").json["kind"] == "slice"


def test_explain_of_a_fault_id_in_capitals_or_zero_padded_points_to_its_component(fleet):
    """`explain f1` was told the component to explain, but `explain F1` (as `clear-fault` takes it) was refused as an
    unknown slice or job, listing slices."""
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    for typed in ("F1", "f01"):
        r = fleet("explain", typed)
        assert r.code == 1 and f"'{typed}' is fault f1" in r.err and "`tpufleet explain ocs:pod0/x/3`" in r.err, r.err
    r = fleet("explain", "F2")  # no such fault: the unknown name, as before
    assert r.code == 1 and "unknown slice or job 'F2'" in r.err


def test_a_slice_rerouted_around_a_drain_returns_when_the_maintenance_is_done(fleet):
    """Rerouted around a planned drain, `explain` said it returns to healthy tables when the drain is "repaired"."""
    for args in (("allocate", "a", "--shape", "4x4x8"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        assert fleet(*args).code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1", "--planned").code == 0
    why = fleet("explain", "a", "-o", "json").json["why"]
    assert "it returns to healthy tables when f1 is cleared, once the maintenance is done" in why, why
    assert fleet("inject-fault", "ocs:pod0/y/1").code == 0  # a failure too: that one is repaired
    why = fleet("explain", "a", "-o", "json").json["why"]
    assert "it returns to healthy tables when f1, f2 are repaired and cleared" in why, why
