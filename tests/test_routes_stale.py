"""`routes --stale` makes again every slice's stale or missing routing tables, as `status` lists them, each in its
own transaction, and says which it cannot make now and why (an evicted slice waits for its move)."""

from __future__ import annotations

import pytest

from helpers import one_line, snapshot


@pytest.fixture
def three(fleet):
    """Slices a, b, c (one cube each: c00, c01, c02) wired and routed."""
    for name in "abc":
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0
    return fleet


def _to_do(fleet) -> tuple[list[str], list[str]]:
    status = fleet("status", "-o", "json").json
    return status["stale_routes"], status["missing_routes"]


def test_stale_and_missing_tables_made_again_in_one_command(three):
    assert three("inject-fault", "link:c00/x/3/out").code == 0
    assert three("inject-fault", "link:c01/y/3/out").code == 0
    (three.state / "routes" / "c.npz").unlink()
    assert _to_do(three) == (["a", "b"], ["c"])
    serial = three("status", "-o", "json").json["serial"]
    r = three("routes", "--stale", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["stale"] == ["a", "b", "c"] and r.json["skipped"] == [] and r.json["stored"] is True
    assert [d["tables"] for d in r.json["slices"]] == [str(three.state / "routes" / f"{n}.npz") for n in "abc"]
    assert _to_do(three) == ([], [])
    assert three("status", "-o", "json").json["serial"] == serial + 3  # one transaction per slice
    again = three("routes", "--stale")
    assert (again.code, again.out.strip()) == (0, "no stale or missing routing tables")


def test_status_names_the_command(three):
    assert three("inject-fault", "link:c00/x/3/out").code == 0
    assert "stale routing tables (regenerate with `tpufleet routes SLICE`, all: `tpufleet routes --stale`): a" in (
        three("status").out
    )


def test_an_evicted_slice_is_skipped_saying_why(three):
    assert three("inject-fault", "host:c00/1").code == 0  # a is evicted, its tables stale
    assert three("inject-fault", "link:c01/y/3/out").code == 0
    r = three("routes", "--stale", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["stale"] == ["b"]
    assert r.json["skipped"] == [{"slice": "a", "reason": "evicted: `tpufleet reschedule a` moves it first"}]
    assert _to_do(three) == (["a"], [])
    text = three("routes", "--stale").out
    assert "slice a: skipped (evicted: `tpufleet reschedule a` moves it first)" in text


def test_a_job_is_still_routed_by_name(fleet):
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    assert fleet("plan-xconnect", "j", "--apply").code == 0
    r = fleet("routes", "j", "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["job"], len(r.json["slices"]), r.json["stored"]) == ("j", 2, True)
    assert "stale" not in r.json


@pytest.mark.parametrize(
    "args",
    [
        ("routes",),
        ("routes", "a", "--stale"),
        ("routes", "--stale", "--out", "t.npz"),
        ("routes", "--stale", "--table-capacity", "16"),
    ],
)
def test_slice_or_stale_exactly_one_and_nothing_changes(three, args):
    assert three("inject-fault", "link:c00/x/3/out").code == 0
    before = snapshot(three.state)
    r = three(*args)
    assert r.code == 2
    said = one_line(r).removeprefix("tpufleet: error: ")
    assert "--stale" in said
    if args == ("routes",):  # nothing given: the argument is missing (it blamed an option never typed)
        assert said.startswith("missing argument SLICE|JOB: "), said
    else:
        assert said.startswith(("bad option --stale: ", "bad option --out/--table-capacity: ")), said
    assert snapshot(three.state) == before


def test_a_slice_whose_wiring_can_be_finished_now_is_skipped_until_it_is(fleet):
    """Wired while an OCS was down, its pairs there deferred; the OCS repaired, tables made now would go stale
    again at `plan-xconnect --apply`: that step is named first, and after it `routes --stale` routes it."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("routes", "a").code == 0
    assert fleet("clear-fault", "f1").code == 0
    r = fleet("routes", "--stale", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["stale"] == [] and r.json["skipped"] == [
        {"slice": "a", "reason": "cross-connects missing: `tpufleet plan-xconnect a --apply` first"}
    ]
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("routes", "--stale", "-o", "json").json["stale"] == ["a"]
    assert _to_do(fleet) == ([], [])


def test_fault_and_clear_name_it_when_several_slices_need_tables(three):
    hit = three("inject-fault", "ocs:pod0/x/1").out
    assert hit.count("(its stored tables predate this fault)") == 3
    assert hit.rstrip().endswith("all of them at once: `tpufleet routes --stale`")
    cleared = three("clear-fault", "f1").out
    assert "all of them at once: `tpufleet routes --stale`" in cleared
    assert three("routes", "--stale").code == 0
    assert _to_do(three) == ([], [])


def test_one_slice_needing_tables_gets_no_line_for_all(three):
    assert "all of them at once" not in three("inject-fault", "link:c00/x/3/out").out
    assert "all of them at once" not in three("clear-fault", "f1").out
