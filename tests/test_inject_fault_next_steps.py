"""`inject-fault` gives the step an evicted slice needs, as it gives a rerouted slice's (`tpufleet routes`) and a
job's: `tpufleet reschedule SLICE` when cubes are reserved for it, `tpufleet explain SLICE` when none are (it
waits); a slice of a multislice job gets the job's steps instead."""

from __future__ import annotations

from helpers import wired


def test_an_evicted_slice_with_cubes_reserved_is_told_to_reschedule(fleet):
    wired(fleet, "train", "8x8x8")
    r = fleet("inject-fault", "host:c00/0", "-o", "json")
    assert r.code == 0, r.err
    [row] = r.json["slices"]
    assert (row["action"], row["replacement"]["status"], row["next"]) == (
        "reschedule",
        "proposed",
        ["tpufleet reschedule train"],
    )


def test_the_table_gives_the_step_and_it_runs(fleet):
    wired(fleet, "train", "8x8x8")
    out = fleet("inject-fault", "host:c00/0").out
    assert out.splitlines()[-1] == "    next: tpufleet reschedule train"
    moved = fleet("reschedule", "train", "-o", "json")
    assert moved.code == 0 and moved.json["status"] == "moved", moved.err


def test_an_evicted_slice_nowhere_to_go_is_told_to_explain(fleet):
    wired(fleet, "big", "16x16x16")  # the whole pod: no cube is free to reserve
    r = fleet("inject-fault", "host:c00/0", "-o", "json")
    [row] = r.json["slices"]
    assert (row["action"], row["replacement"]["status"], row["next"]) == (
        "reschedule",
        "pending",
        ["tpufleet explain big"],
    )
    assert fleet("explain", "big").code == 0


def test_a_jobs_slice_gets_the_jobs_steps_not_its_own(fleet):
    wired(fleet, "llm", "4x4x8", "--slices", "2")
    r = fleet("inject-fault", "host:c00/0", "-o", "json")
    assert r.code == 0, r.err
    [row] = r.json["slices"]
    assert row["action"] == "reschedule" and "next" not in row
    assert r.json["jobs"][0]["next"]
