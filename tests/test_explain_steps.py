"""`explain`'s `next` steps, run in order as an operator would: each works and the slice ends where they say."""

from __future__ import annotations

import shlex
from typing import Any

import pytest


def _ok(fleet, *args):
    r = fleet(*args)
    assert r.code == 0, (args, r.err)
    return r


def _run_next(fleet, name: str) -> list[str]:
    steps = _ok(fleet, "explain", name, "-o", "json").json["next"]
    for step in steps:
        argv = shlex.split(step)
        assert argv[0] == "tpufleet", step
        _ok(fleet, *argv[1:])
    return steps


def _healthy(fleet, name: str) -> dict:
    row = next(s for s in _ok(fleet, "show", "slices", "-o", "json").json if s["name"] == name)
    assert (row["state"], row["degraded"], row["routes"], row["missing_xconnects"]) == ("connected", None, "fresh", 0)
    return row


@pytest.mark.parametrize(
    "still_open",
    ["link:c00/x/3/out", "ocs:pod0/x/1"],  # a port of the slice, another OCS of the pod
)
def test_a_degraded_slice_with_deferred_cross_connects_is_wired_then_routed_once(fleet, still_open):
    """Its pairs deferred while an OCS was down, that OCS cleared, another fault still under it: `explain` said
    `clear-fault` of it, then `routes` (the slice stays degraded: its pairs are still missing), and only then
    `plan-xconnect --apply`, a second round of routing. Now: the clear, `plan-xconnect --apply`, `routes`; and first
    `routes`, as its tables were made before f2 (they still cross it)."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01")
    _ok(fleet, "inject-fault", "ocs:pod0/z/0")  # f1
    _ok(fleet, "plan-xconnect", "a", "--apply")  # its pairs on z/0 deferred
    _ok(fleet, "routes", "a")
    _ok(fleet, "inject-fault", still_open)  # f2
    _ok(fleet, "clear-fault", "f1")
    assert _ok(fleet, "explain", "a", "-o", "json").json["state"] == "degraded"
    steps = _run_next(fleet, "a")
    assert steps == [
        "tpufleet routes a",
        "tpufleet clear-fault f2",
        "tpufleet plan-xconnect a --apply",
        "tpufleet routes a",
    ]
    _healthy(fleet, "a")
    assert _ok(fleet, "explain", "a", "-o", "json").json["next"] == []


def test_a_slice_without_fault_tolerant_routing_is_rewired_only_after_every_ocs_is_back(fleet):
    """Its plan needs every OCS of the pod up: the rewire of the pairs deferred on a repaired OCS waits for the
    clear of another one, though its own pairs there are in place."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01")
    _ok(fleet, "inject-fault", "ocs:pod0/z/0")  # f1
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "routes", "a")
    _ok(fleet, "inject-fault", "ocs:pod0/x/1")  # f2, rerouted around
    _ok(fleet, "policy", "a", "--no-fault-tolerant-routing")
    _ok(fleet, "clear-fault", "f1")
    steps = _run_next(fleet, "a")  # its tables, made before f2, still cross it: routed around it first
    assert steps == [
        "tpufleet routes a",
        "tpufleet clear-fault f2",
        "tpufleet plan-xconnect a --apply",
        "tpufleet routes a",
    ]
    _healthy(fleet, "a")


def test_the_deferred_count_names_only_the_pairs_on_the_ocs_still_down(fleet):
    """Pairs deferred on two OCS, one of them repaired: `explain` said all 4 were deferred while the other is
    down; 2 are, the 2 on the repaired OCS are simply not in place."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01")
    _ok(fleet, "inject-fault", "ocs:pod0/z/0")
    _ok(fleet, "inject-fault", "ocs:pod0/x/1")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "clear-fault", "f1")
    why = _ok(fleet, "explain", "a", "-o", "json").json["why"]
    assert (
        "2 cross-connects are deferred while ocs:pod0/x/1 is down (fault-tolerant routing bridges them); 2 more, "
        "on ocs:pod0/z/0, are not in place; after the repair, `plan-xconnect a --apply` programs them"
    ) in why


def test_a_degraded_slice_waiting_for_its_ocs_gets_every_step_to_healthy(fleet):
    """Wired and routed while an OCS was down: `explain` gives its clear, then the rewire and one routing."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x8")
    _ok(fleet, "inject-fault", "ocs:pod0/z/0")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "routes", "a")
    steps = _run_next(fleet, "a")
    assert steps == ["tpufleet clear-fault f1", "tpufleet plan-xconnect a --apply", "tpufleet routes a"]
    _healthy(fleet, "a")


@pytest.mark.parametrize(
    ("shape", "dead"),
    [
        ("4x4x4", [("x", 1)]),
        ("4x4x8", [("z", 0)]),
        ("4x8x8", [("y", 5), ("z", 2)]),
        ("8x8x8", [("x", 3)]),
    ],
)
def test_the_cut_bound_never_promises_less_than_the_tables_keep(shape, dead):
    """`kept_at_most` (what `explain` judges a pod-scale landing on) is an upper bound of what the fault path's
    own tables keep: a move it calls refused, `reschedule` refuses too."""
    import numpy as np

    from helpers import ocs_failure
    from tpufleet.constants import HARDWARE_VCS
    from tpufleet.faults import kept_exactly
    from tpufleet.routing.healthy import healthy_loads
    from tpufleet.routing.optimum import kept_at_most
    from tpufleet.routing.report import verdict_summary
    from tpufleet.shapes import parse_shape

    s = parse_shape(shape)
    expected, alive = ocs_failure(s, *dead[0])
    for dim, index in dead[1:]:
        alive = np.where(ocs_failure(s, dim, index)[1] < 0, -1, alive)
    summary = verdict_summary(s, expected, alive, ("all-to-all",), HARDWARE_VCS)
    bound = kept_at_most(s, alive, healthy_loads(s, expected, ("all-to-all",))["all-to-all"])
    assert bound is not None and kept_exactly(summary) <= bound + 1e-9 < 1.0


def test_explain_foresees_a_pod_scale_move_below_the_floor(fleet, monkeypatch):
    """An evicted 8x16x16 (2,048 chips) whose reserved move lands where an OCS is down, below its floor of 0.99:
    `explain` sent `reschedule j-0`, which refuses (exit 1). The live links across a cut of its rings there show,
    without routing it, that no routing keeps its floor: `explain` now sends that OCS's clear first, and its steps,
    run in order, move it."""
    import tpufleet.faults

    _ok(fleet, "allocate", "j", "--shape", "8x16x16", "--slices", "1", "--min-throughput", "0.99")
    _ok(fleet, "plan-xconnect", "j", "--apply")
    _ok(fleet, "inject-fault", "host:c00/1")  # f1: j-0 evicted, its move reserved on other cubes of pod0
    _ok(fleet, "inject-fault", "ocs:pod0/y/5")  # f2: the move lands around it, one of its 16-chip rings
    routed: list[object] = []
    figures = tpufleet.faults.reroute_figures

    def counted(*a: Any, **k: Any) -> dict[str, Any]:
        routed.append(a)
        return figures(*a, **k)

    monkeypatch.setattr(tpufleet.faults, "reroute_figures", counted)
    r = _ok(fleet, "explain", "j-0", "-o", "json").json
    assert r["next"] == ["tpufleet clear-fault f2", "tpufleet reschedule j-0", "tpufleet routes j-0"]
    assert (
        "reschedule cannot move it yet: rerouted, it would keep at most 0.9375 of its all-to-all throughput (the "
        "links left across a cut of its rings), below its floor of 0.99" in r["why"]
    )
    assert _ok(fleet, "explain", "j", "-o", "json").json["next"] == r["next"]
    assert routed == []  # foreseen without routing the landing
    refused = fleet("reschedule", "j-0")
    assert refused.code == 1 and "below its floor of 0.99" in refused.err
    _run_next(fleet, "j-0")
    assert _ok(fleet, "show", "slices", "-o", "json").json[0]["state"] == "connected"


def test_explain_job_gives_its_running_slices_own_steps(fleet):
    """A running job whose slice waits for its deferred cross-connects and new tables: `explain JOB` gave no step
    (the job's own steps only bring evicted slices back) while `explain` of the slice gave the rewire and the
    routing. The job's now holds its slices' steps, and run in order they leave the slice healthy."""
    _ok(fleet, "allocate", "j", "--shape", "4x4x8", "--slices", "1")
    _ok(fleet, "inject-fault", "ocs:pod0/z/0")  # f1
    _ok(fleet, "plan-xconnect", "j", "--apply")  # its pairs on z/0 deferred
    _ok(fleet, "routes", "j")
    _ok(fleet, "clear-fault", "f1")
    slice_steps = _ok(fleet, "explain", "j-0", "-o", "json").json["next"]
    assert slice_steps == ["tpufleet plan-xconnect j-0 --apply", "tpufleet routes j-0"]
    assert _run_next(fleet, "j") == slice_steps
    _healthy(fleet, "j-0")
    assert _ok(fleet, "explain", "j", "-o", "json").json["next"] == []


def test_one_deferred_cross_connect_is_said_in_the_singular(fleet):
    """One cube's wraparound on a down OCS: one pair deferred, said as one (it read '1 cross-connects are')."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x4", "--cubes", "c00")
    _ok(fleet, "inject-fault", "ocs:pod0/x/1")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    why = _ok(fleet, "explain", "a", "-o", "json").json["why"]
    assert any(w.startswith("1 cross-connect is deferred while ocs:pod0/x/1 is down") for w in why), why


def test_an_evicted_slice_waiting_for_an_ocs_is_told_to_clear_only_that(cli):
    """Evicted by a host fault while an OCS of its pod was down, then opted out of rerouting: `explain` said it
    moves once the host fault and the OCS fault were repaired, and `clear-fault` of the host fault first, though
    clearing the OCS fault alone lets the reserved move go."""
    _ok(cli, "init", "--cubes-per-pod", "4")
    _ok(cli, "allocate", "k", "--shape", "4x4x4")
    _ok(cli, "plan-xconnect", "k", "--apply")
    _ok(cli, "inject-fault", "ocs:pod0/x/1")  # f1
    _ok(cli, "inject-fault", "host:c00/0")  # f2, evicts k
    _ok(cli, "policy", "k", "--no-fault-tolerant-routing")
    r = _ok(cli, "explain", "k", "-o", "json").json
    assert r["next"] == ["tpufleet clear-fault f1", "tpufleet reschedule k", "tpufleet routes k"]
    assert "it moves once f1 is repaired and cleared" in r["why"]
    _run_next(cli, "k")
    row = next(s for s in _ok(cli, "show", "slices", "-o", "json").json if s["name"] == "k")
    assert row["state"] == "connected" and row["cubes"] != ["c00"]
    assert [f["id"] for f in _ok(cli, "faults", "-o", "json").json] == ["f2"]


def _stopped_by_maintenance(reserved, tmp_path):
    """Slices train and filler-0 (job filler) stopped by the reservation's drains of c05 and c130, no cube free."""
    import json
    from pathlib import Path

    fixture = Path(__file__).parent.parent / "fixtures/gke/tpu7x-reservation-subblocks.json"
    doc = json.loads(fixture.read_text())
    for sub_block in (5, 130):  # a cube of slice train, and one of job filler's only slice
        doc[sub_block]["reservationSubBlockMaintenance"] = {
            "upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "ONGOING"}
        }
    ongoing = tmp_path / "sb.json"
    ongoing.write_text(json.dumps(doc))
    for name, shape in (("train", "12x12x24"), ("eval", "16x16x16")):
        _ok(reserved, "allocate", name, "--shape", shape)
    _ok(reserved, "allocate", "filler", "--shape", "8x12x16", "--slices", "1")  # no cube left free
    _ok(reserved, "import", "reservation", ongoing, "--apply")  # c05 drained: train stops, nowhere to go


def test_a_reservation_drain_is_closed_by_import_reservation_not_clear_fault(reserved, tmp_path):
    """Cleared by hand while its maintenance is announced, a reservation's drain is opened again by the next import
    (the cube back in the pool meanwhile): explain names the import, never `clear-fault`, for it."""
    _stopped_by_maintenance(reserved, tmp_path)
    drain = next(f for f in reserved("faults", "-o", "json").json if f["target"] == "cube:c05")
    slice_ = reserved("explain", "train", "-o", "json").json
    assert slice_["state"] == "evicted"
    assert slice_["next"] == [
        "tpufleet import reservation SUB-BLOCKS.json --apply",
        "tpufleet reschedule train",
        "tpufleet routes train",
    ]
    assert any(w.startswith(f"{drain['id']} is the reservation's drain") for w in slice_["why"])
    job = reserved("explain", "filler", "-o", "json").json
    assert job["next"] == [
        "tpufleet import reservation SUB-BLOCKS.json --apply",
        "tpufleet reschedule filler-0",
        "tpufleet routes filler-0",
    ]
    for target in ("cube:c05", "host:c05/3", "cube:c40"):
        row = reserved("explain", target, "-o", "json").json
        assert row["next"] == ["tpufleet import reservation SUB-BLOCKS.json --apply"], (target, row["next"])
    _ok(reserved, "inject-fault", "host:c06/1")  # any other fault is still cleared by hand
    assert reserved("explain", "host:c06/1", "-o", "json").json["next"][0].startswith("tpufleet clear-fault f")


def test_a_slice_stopped_by_a_reservation_drain_waits_for_the_maintenance_not_a_repair(reserved, tmp_path):
    """Its step is the import that closes the drain, so its words say the maintenance, as for the cube."""
    _stopped_by_maintenance(reserved, tmp_path)
    drains = {f["target"]: f["id"] for f in reserved("faults", "-o", "json").json}
    job = reserved("explain", "filler", "-o", "json").json
    line = next(w for w in job["why"] if w.startswith("slice filler-0"))
    assert f"it waits for the end of the maintenance behind drain {drains['cube:c130']}" in line, line
    assert "repair" not in line
    slice_ = reserved("explain", "train", "-o", "json").json
    assert f"it moves once the maintenance behind drain {drains['cube:c05']} is over" in " ".join(slice_["why"])
    assert not any("repaired" in w for w in slice_["why"])


def test_a_sub_cube_slice_moved_with_stored_tables_is_told_to_route_again(fleet):
    """A sub-cube slice's tables, stored and then made stale by its move, were shown stale by `status`, while
    `explain` called it wired and healthy with no step; one never routed still gets none (it needs no tables)."""
    _ok(fleet, "allocate", "d", "--shape", "2x2x4", "--cubes", "c11")
    _ok(fleet, "allocate", "e", "--shape", "2x2x4", "--cubes", "c12")
    _ok(fleet, "routes", "d")
    for cube in ("c11", "c12"):
        _ok(fleet, "inject-fault", f"host:{cube}/0")
    for name in "de":
        _ok(fleet, "reschedule", name)
    assert _ok(fleet, "status", "-o", "json").json["stale_routes"] == ["d"]
    row = _ok(fleet, "explain", "d", "-o", "json").json
    assert row["routes"] == "stale" and "its routing tables are stale (rescheduled: made before the move)" in row["why"]
    assert _run_next(fleet, "d") == ["tpufleet routes d"]
    assert _ok(fleet, "explain", "d", "-o", "json").json["next"] == []
    assert _ok(fleet, "explain", "e", "-o", "json").json["next"] == []


def test_a_rewire_names_the_stale_tables_of_its_slice_even_if_a_clear_made_them_so(fleet, tmp_path):
    """Rewired after the OCS repair whose clear had made its tables stale already, the slice was not in
    `routes_stale` (only the tables the wiring itself made stale were), and the table said nothing."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01")
    _ok(fleet, "inject-fault", "ocs:pod0/z/0")
    _ok(fleet, "plan-xconnect", "a", "--apply")  # its pairs on z/0 deferred
    _ok(fleet, "routes", "a")
    _ok(fleet, "clear-fault", "f1")
    plan = tmp_path / "a.plan"
    _ok(fleet, "plan-xconnect", "a", "--out", plan)
    applied = _ok(fleet, "apply-xconnect", plan)
    assert applied.out.endswith("\n  next: tpufleet routes a  (its stored tables predate this wiring)\n")
    assert _ok(fleet, "routes", "a").code == 0
    _ok(fleet, "inject-fault", "ocs:pod0/z/0")
    _ok(fleet, "clear-fault", "f2")
    assert _ok(fleet, "plan-xconnect", "a", "--apply", "-o", "json").json["routes_stale"] == ["a"]  # stale by the clear


def test_explain_job_routes_each_degraded_slice_before_the_clear_they_share(fleet):
    """Two slices of a job rerouted around one OCS: the clear both wait for was given once, at the first slice's
    place, so the second slice's tables around the fault came after the clear (too late) and its `routes` twice in
    a row. Each slice's order is now kept: both routed around the fault, the clear, both routed again."""
    _ok(fleet, "allocate", "j", "--shape", "4x4x4", "--slices", "2")
    _ok(fleet, "plan-xconnect", "j", "--apply")
    _ok(fleet, "routes", "j")
    _ok(fleet, "inject-fault", "ocs:pod0/x/5")  # f1
    assert _run_next(fleet, "j") == [
        "tpufleet routes j-0",
        "tpufleet routes j-1",
        "tpufleet clear-fault f1",
        "tpufleet routes j-0",
        "tpufleet routes j-1",
    ]
    for name in ("j-0", "j-1"):
        _healthy(fleet, name)


def test_a_slice_moved_among_faults_is_routed_first_though_its_old_tables_postdate_them(fleet):
    """Routed around an OCS fault, then evicted by a cube fault and moved: its stored tables, made after the OCS
    fault, were taken as avoiding it, so `explain` gave the clear first while the slice ran on the tables of the
    cubes it left. A moved slice's tables now count as none: `routes` first."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x4")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "inject-fault", "ocs:pod0/x/5")  # f1
    _ok(fleet, "routes", "a")  # around f1
    _ok(fleet, "inject-fault", "cube:c00")  # f2: evicts it
    _ok(fleet, "reschedule", "a")  # lands rerouted around f1
    r = _ok(fleet, "explain", "a", "-o", "json").json
    assert (r["state"], r["routes"]) == ("degraded", "stale")
    assert r["next"][:2] == ["tpufleet routes a", "tpufleet clear-fault f1"]
    assert (
        "its stored routing tables were made on the cubes it left: `tpufleet routes a` makes the ones around f1"
        in r["why"]
    )


def test_a_rerouted_slice_with_a_link_for_tables_has_it_removed_and_is_routed_before_the_clear(fleet, cli, tmp_path):
    """A symbolic link where a rerouted slice's tables belong: `explain` gave the clear first and the link's removal
    and `routes` only after it, so the slice ran around the fault with no tables of its own until the repair, as a
    slice with none stored is not left. Now: the removal, `routes`, the clear, `routes` again."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x4")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "routes", "a")
    _ok(fleet, "inject-fault", "ocs:pod0/x/5")  # f1
    tables = cli.state / "routes" / "a.npz"
    tables.rename(tmp_path / "elsewhere.npz")
    tables.symlink_to(tmp_path / "elsewhere.npz")
    steps = _ok(fleet, "explain", "a", "-o", "json").json["next"]
    assert steps == [f"rm -- {tables}", "tpufleet routes a", "tpufleet clear-fault f1", "tpufleet routes a"]
    tables.unlink()
    for step in steps[1:]:
        _ok(fleet, *shlex.split(step)[1:])
    _healthy(fleet, "a")


def test_an_allocated_sub_cube_slice_is_told_to_be_wired(fleet):
    """A sub-cube slice needs no cross-connects, yet it stays `allocated` (its job `pending`) until `plan-xconnect
    --apply` marks it wired: `explain` gave it no step at all, while `explain JOB` gave the job's wiring."""
    _ok(fleet, "allocate", "d", "--shape", "2x2x4")
    _ok(fleet, "allocate", "j", "--shape", "2x2x4", "--slices", "2")
    assert _run_next(fleet, "d") == ["tpufleet plan-xconnect d --apply"]
    assert _run_next(fleet, "j-0") == ["tpufleet plan-xconnect j-0 --apply"]
    rows = _ok(fleet, "show", "slices", "-o", "json").json
    assert [(r["name"], r["state"]) for r in rows] == [("d", "connected"), ("j-0", "connected"), ("j-1", "allocated")]
    assert _run_next(fleet, "j") == ["tpufleet plan-xconnect j --apply"]
    assert _ok(fleet, "explain", "j", "-o", "json").json["state"] == "running"
    assert [_ok(fleet, "explain", name, "-o", "json").json["next"] for name in ("d", "j")] == [[], []]


def test_a_slice_wired_around_a_down_ocs_but_not_routed_gets_every_step_to_healthy(fleet):
    """Wired while an OCS was down (a pair deferred), never routed: `explain` gave only `routes`, its clear and the
    rewire in words alone, so run in order its steps left the slice degraded. Now: `routes` (around the fault),
    the clear, the rewire and `routes` again, as for the slice routed before."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x4")
    _ok(fleet, "inject-fault", "ocs:pod0/y/2")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    steps = _run_next(fleet, "a")
    assert steps == [
        "tpufleet routes a",
        "tpufleet clear-fault f1",
        "tpufleet plan-xconnect a --apply",
        "tpufleet routes a",
    ]
    _healthy(fleet, "a")
    assert _ok(fleet, "explain", "a", "-o", "json").json["next"] == []


def test_a_job_stopped_before_it_was_wired_gets_its_wiring_after_the_move(fleet):
    """A job allocated, not wired, one slice evicted by a drain: `explain JOB` (and the fault's `jobs[].next`) gave
    only that slice's `reschedule`, then stopped there with its other slice never wired (the wiring step was only
    for a pending job). Now the job's `plan-xconnect JOB --apply` follows the move, and the job runs."""
    _ok(fleet, "allocate", "j", "--shape", "4x4x4", "--slices", "2")
    cube = _ok(fleet, "show", "slices", "-o", "json").json[1]["cubes"][0]
    hit = _ok(fleet, "inject-fault", f"host:{cube}/1", "--planned", "-o", "json").json
    # the job's own wiring refuses while j-1 sits on the drained machine: j-0 is wired alone
    expected = [
        "tpufleet reschedule j-1",
        "tpufleet routes j-1",
        "tpufleet plan-xconnect j-0 --apply",
        "tpufleet routes j-0",
    ]
    assert hit["jobs"][0]["next"] == expected
    assert _run_next(fleet, "j")[:4] == expected
    assert _ok(fleet, "explain", "j", "-o", "json").json["state"] == "running"


def test_a_degraded_slice_on_fresh_tables_is_routed_again_after_its_clear(fleet):
    """Rerouted around an OCS and routed since: `explain` gave the clear alone, though the clear makes its tables
    stale (`clear-fault` says `routes` next); with tables made before the fault it gave `routes` after the clear."""
    _ok(fleet, "allocate", "b", "--shape", "4x4x8")
    _ok(fleet, "plan-xconnect", "b", "--apply")
    _ok(fleet, "inject-fault", "ocs:pod0/z/3")
    _ok(fleet, "routes", "b")
    assert _run_next(fleet, "b") == ["tpufleet clear-fault f1", "tpufleet routes b"]
    _healthy(fleet, "b")
    assert _ok(fleet, "explain", "b", "-o", "json").json["next"] == []


def test_an_optical_link_down_on_its_cube_is_not_under_a_sub_cube_slice(fleet):
    """A sub-cube slice is a mesh inside its cube and uses none of its optical links (`inject-fault` hits no slice):
    `explain` of one allocated there named the link's fault as under it and gave `release`, a step that ends the
    slice, though `plan-xconnect --apply` wires it."""
    _ok(fleet, "allocate", "b", "--shape", "2x2x4", "--cubes", "c00")
    assert _ok(fleet, "inject-fault", "link:c00/y/7/out", "-o", "json").json["slices"] == []
    row = _ok(fleet, "explain", "b", "-o", "json").json
    assert row["faults"] == []
    assert _run_next(fleet, "b") == ["tpufleet plan-xconnect b --apply"]
    assert _ok(fleet, "explain", "b", "-o", "json").json["next"] == []
    assert _ok(fleet, "show", "slices", "-o", "json").json[0]["state"] == "connected"


def test_a_slice_its_plan_refuses_for_a_down_ocs_is_wired_after_the_clear(fleet):
    """Allocated without fault-tolerant routing while an OCS is down: `explain` gave the policy and the clear, and
    stopped there, the slice still not wired. Its wiring now follows the clear; the policy, which would wire it
    before the repair, is said in `why`, not run as a step (in order, its steps would undo the operator's policy and
    then clear a fault not repaired)."""
    _ok(fleet, "inject-fault", "ocs:pod0/y/2")
    _ok(fleet, "allocate", "b", "--shape", "4x4x8", "--no-fault-tolerant-routing")
    steps = _run_next(fleet, "b")
    assert steps == [
        "tpufleet clear-fault f1",
        "tpufleet plan-xconnect b --apply",
        "tpufleet routes b",
    ]
    assert _ok(fleet, "show", "slices", "-o", "json").json[0]["state"] == "connected"


def test_an_evicted_slices_steps_end_with_its_tables(fleet, cli, tmp_path):
    """`explain` of an evicted slice ended at `reschedule`, the slice wired on its new cubes but running on no
    tables made for them, and only the next `explain` asked for `routes`. Now its steps end with the slice running:
    the move, then its tables (a symbolic link standing where they belong removed first, as `routes` refuses it)."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x4")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "routes", "a")
    tables = cli.state / "routes" / "a.npz"
    tables.rename(tmp_path / "elsewhere.npz")
    tables.symlink_to(tmp_path / "elsewhere.npz")
    cube = _ok(fleet, "show", "slices", "-o", "json").json[0]["cubes"][0]
    _ok(fleet, "inject-fault", f"cube:{cube}")
    r = _ok(fleet, "explain", "a", "-o", "json").json
    assert r["next"] == ["tpufleet reschedule a", f"rm -- {tables}", "tpufleet routes a"]
    assert f"a symbolic link stands where its routing tables belong: {tables} (never followed: remove it)" in r["why"]
    _ok(fleet, "reschedule", "a")
    tables.unlink()
    _ok(fleet, "routes", "a")
    _healthy(fleet, "a")
    assert _ok(fleet, "explain", "a", "-o", "json").json["next"] == []


def test_an_allocated_slices_steps_end_with_its_tables_a_sub_cube_ones_without(fleet):
    """Allocated: its wiring, then its tables; a sub-cube slice (no optical links) needs none, so its wiring alone."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x8")
    _ok(fleet, "allocate", "small", "--shape", "2x2x4")
    assert _run_next(fleet, "a") == ["tpufleet plan-xconnect a --apply", "tpufleet routes a"]
    _healthy(fleet, "a")
    assert _run_next(fleet, "small") == ["tpufleet plan-xconnect small --apply"]
    assert _ok(fleet, "explain", "small", "-o", "json").json["next"] == []


def test_an_allocated_jobs_deferred_cross_connects_are_wired_after_the_clear(fleet):
    """`explain JOB` of a job not wired yet, its cross-connects on a down OCS deferred, ended at `routes` of each
    slice, and the next `explain` asked for their wiring again: the clear, then each slice's wiring and `routes`
    follow now, as `explain SLICE` gives them."""
    _ok(fleet, "allocate", "j", "--shape", "4x4x4", "--slices", "2")
    _ok(fleet, "inject-fault", "ocs:pod0/x/0")  # f1
    assert _run_next(fleet, "j") == [
        "tpufleet plan-xconnect j --apply",
        "tpufleet routes j-0",
        "tpufleet routes j-1",
        "tpufleet clear-fault f1",
        "tpufleet plan-xconnect j-0 --apply",
        "tpufleet routes j-0",
        "tpufleet plan-xconnect j-1 --apply",
        "tpufleet routes j-1",
    ]
    row = _ok(fleet, "explain", "j", "-o", "json").json
    assert (row["state"], row["next"]) == ("running", [])
    for name in ("j-0", "j-1"):
        _healthy(fleet, name)


def test_a_jobs_steps_remove_a_symbolic_link_before_its_slices_routes(fleet, cli, tmp_path):
    """`explain JOB` and `inject-fault`'s `jobs[].next` gave an evicted slice's `routes` after its move without the
    `rm` of a symbolic link standing where its tables belong, which `routes` refuses (exit 2); they give it first,
    as `explain SLICE` does."""
    _ok(fleet, "allocate", "j", "--shape", "4x4x4", "--slices", "2")
    _ok(fleet, "plan-xconnect", "j", "--apply")
    _ok(fleet, "routes", "j")
    tables = cli.state / "routes" / "j-0.npz"
    tables.rename(tmp_path / "elsewhere.npz")
    tables.symlink_to(tmp_path / "elsewhere.npz")
    cube = _ok(fleet, "show", "slices", "-o", "json").json[0]["cubes"][0]
    expected = ["tpufleet reschedule j-0", f"rm -- {tables}", "tpufleet routes j-0"]
    assert _ok(fleet, "inject-fault", f"cube:{cube}", "-o", "json").json["jobs"][0]["next"] == expected
    row = _ok(fleet, "explain", "j", "-o", "json").json
    assert row["next"] == expected
    assert (
        f"slice j-0: a symbolic link stands where its routing tables belong: {tables} (never followed: remove it)"
        in row["why"]
    )
    _ok(fleet, "reschedule", "j-0")
    tables.unlink()
    _ok(fleet, "routes", "j-0")
    assert _ok(fleet, "explain", "j", "-o", "json").json["state"] == "running"
    _healthy(fleet, "j-0")


def test_a_symbolic_link_a_released_slice_left_is_removed_before_the_new_slices_routes(fleet, cli, tmp_path):
    """`release` leaves a symbolic link standing where the slice's tables were (`linked_routes`); `explain` of a
    slice allocated again under that name looked for links only where tables are indexed, so its steps gave
    `routes`, which refuses the link (exit 2). They remove it first, before the first `routes` when its
    cross-connects on a down OCS are deferred (routed around it, then again after the clear)."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x4")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "routes", "a")
    tables = cli.state / "routes" / "a.npz"
    tables.rename(tmp_path / "elsewhere.npz")
    tables.symlink_to(tmp_path / "elsewhere.npz")
    assert _ok(fleet, "release", "a", "-o", "json").json["linked_routes"] == {"a": str(tables)}
    _ok(fleet, "allocate", "a", "--shape", "4x4x4", "--cubes", "c01")  # not c00, whose x/0 pairs stand already
    _ok(fleet, "inject-fault", "ocs:pod0/x/0")  # f1
    r = _ok(fleet, "explain", "a", "-o", "json").json
    assert r["next"] == [
        "tpufleet plan-xconnect a --apply",
        f"rm -- {tables}",
        "tpufleet routes a",
        "tpufleet clear-fault f1",
        "tpufleet plan-xconnect a --apply",
        "tpufleet routes a",
    ]
    assert f"a symbolic link stands where its routing tables belong: {tables} (never followed: remove it)" in r["why"]
    _ok(fleet, "plan-xconnect", "a", "--apply")
    tables.unlink()
    for step in r["next"][2:]:
        _ok(fleet, *shlex.split(step)[1:])
    _healthy(fleet, "a")
    assert _ok(fleet, "explain", "a", "-o", "json").json["next"] == []


def test_a_move_whose_cross_connects_are_deferred_is_wired_again_after_the_clear(fleet):
    """An evicted slice whose move lands with cross-connects on a down OCS deferred: `explain` ended at its
    `reschedule` and `routes`, and the next `explain` asked for its wiring again. Its steps, in `explain SLICE`,
    `explain JOB` and `inject-fault`'s `jobs[].next`, go on with the clear, its `plan-xconnect --apply` and `routes`."""
    _ok(fleet, "allocate", "a", "--shape", "4x4x4")
    _ok(fleet, "allocate", "j", "--shape", "4x4x4", "--slices", "2")
    _ok(fleet, "plan-xconnect", "a", "--apply")
    _ok(fleet, "plan-xconnect", "j", "--apply")
    _ok(fleet, "routes", "a")
    _ok(fleet, "routes", "j")
    _ok(fleet, "inject-fault", "ocs:pod0/x/2")  # f1: every slice routed around it, its cross-connects in place
    cubes = {s["name"]: s["cubes"][0] for s in _ok(fleet, "show", "slices", "-o", "json").json}
    _ok(fleet, "inject-fault", f"cube:{cubes['a']}")
    moved = ["tpufleet clear-fault f1", "tpufleet plan-xconnect {0} --apply", "tpufleet routes {0}"]
    a_steps = ["tpufleet reschedule a", "tpufleet routes a", *(s.format("a") for s in moved)]
    assert _ok(fleet, "explain", "a", "-o", "json").json["next"] == a_steps
    hit = _ok(fleet, "inject-fault", f"cube:{cubes['j-0']}", "-o", "json").json
    j_steps = ["tpufleet reschedule j-0", "tpufleet routes j-0", *(s.format("j-0") for s in moved)]
    assert hit["jobs"][0]["next"] == j_steps
    for name in ("a", "j"):
        _run_next(fleet, name)
        assert _ok(fleet, "explain", name, "-o", "json").json["next"] == []
    for name in ("a", "j-0", "j-1"):
        _healthy(fleet, name)
