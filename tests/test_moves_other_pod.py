"""A slice a cube fault evicts, in a pod with no free cube left to swap in: its move takes the whole slice to
another pod of its generation that has room (as an OCS fault's does), instead of waiting for the repair."""

from __future__ import annotations


def _ok(cli, *args):
    r = cli(*args)
    assert r.code == 0, (args, r.err)
    return r


def _slice(cli, name: str) -> dict:
    return next(s for s in _ok(cli, "show", "slices", "-o", "json").json if s["name"] == name)


def _full_pod0(cli, pods: int) -> None:
    """pod0 (64 cubes) held whole by eight 8x8x8 slices s0..s7, each wired."""
    _ok(cli, "init", "--pods", str(pods))
    for i in range(8):
        _ok(cli, "allocate", f"s{i}", "--shape", "8x8x8", "--pod", "pod0")
        _ok(cli, "plan-xconnect", f"s{i}", "--apply")


def test_a_cube_fault_in_a_full_pod_moves_the_slice_to_another_pod(cli):
    _full_pod0(cli, 2)
    before = _slice(cli, "s3")["cubes"]
    _ok(cli, "inject-fault", "cube:c25")
    evicted = _slice(cli, "s3")
    assert evicted["state"] == "evicted" and "c25" in before
    assert evicted["proposal"]["pod"] == "pod1" and len(evicted["proposal"]["cubes"]) == 8
    assert _ok(cli, "explain", "s3", "-o", "json").json["next"][0] == "tpufleet reschedule s3"
    moved = _ok(cli, "reschedule", "s3", "-o", "json").json
    assert (moved["status"], moved["pod"]) == ("moved", "pod1")
    row = _slice(cli, "s3")
    assert (row["state"], row["pod"], row["missing_xconnects"]) == ("connected", "pod1", 0)
    assert not set(row["cubes"]) & set(before)
    assert all(_slice(cli, f"s{i}")["state"] == "connected" for i in range(8) if i != 3)


def test_one_pod_full_still_waits_for_the_repair_and_says_so(cli):
    _full_pod0(cli, 1)
    why = _ok(cli, "inject-fault", "cube:c25", "-o", "json").json["slices"][0]["replacement"]["why"]
    assert why == "need 1 healthy free cube(s) in pod0, 0 available"


def test_every_pod_full_names_both_refusals(cli):
    _full_pod0(cli, 2)
    _ok(cli, "allocate", "other", "--shape", "16x16x16", "--pod", "pod1")
    hit = _ok(cli, "inject-fault", "cube:c25", "-o", "json").json["slices"][0]
    assert (hit["slice"], hit["replacement"]["status"]) == ("s3", "pending")
    assert hit["replacement"]["why"].startswith(
        "need 1 healthy free cube(s) in pod0, 0 available, nor in another pod ("
    )
    assert _slice(cli, "s3")["state"] == "evicted"
    assert _ok(cli, "explain", "s3", "-o", "json").json["next"][0] == "tpufleet clear-fault f1"
    assert cli("reschedule", "s3").code == 1


def test_a_move_onto_an_avoided_cube_goes_to_another_pods_clean_room(cli):
    """`reschedule --avoid` (a maintenance plan's later drains): with only an avoided cube left in its own pod, the
    slice goes to another pod with clean room, moved once, not onto the cube a later wave would move it off."""
    _ok(cli, "init", "--pods", "2")
    for name, shape in [*((f"s{i}", "8x8x8") for i in range(7)), ("a", "4x4x8"), ("b", "4x4x8"), ("c", "4x4x8")]:
        _ok(cli, "allocate", name, "--shape", shape, "--pod", "pod0")
    _ok(cli, "allocate", "d", "--shape", "4x4x4", "--pod", "pod0")  # pod0 holds 63 cubes: c63 alone is free
    _ok(cli, "inject-fault", "cube:c25")
    assert _slice(cli, "s3")["proposal"]["cubes"].count("c63") == 1  # the swap in its own pod, as before
    moved = _ok(cli, "reschedule", "s3", "--avoid", "c63", "-o", "json").json
    assert moved["pod"] == "pod1" and "c63" not in moved["cubes"]


def test_an_avoided_cube_is_still_taken_when_no_other_pod_has_room(cli):
    _ok(cli, "init", "--pods", "2")
    for name, shape in [*((f"s{i}", "8x8x8") for i in range(7)), ("a", "4x4x8"), ("b", "4x4x8"), ("c", "4x4x8")]:
        _ok(cli, "allocate", name, "--shape", shape, "--pod", "pod0")
    _ok(cli, "allocate", "d", "--shape", "4x4x4", "--pod", "pod0")
    _ok(cli, "allocate", "other", "--shape", "16x16x16", "--pod", "pod1")
    _ok(cli, "inject-fault", "cube:c25")
    moved = _ok(cli, "reschedule", "s3", "--avoid", "c63", "-o", "json").json
    assert moved["pod"] == "pod0" and "c63" in moved["cubes"]
