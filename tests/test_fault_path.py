"""The fault path an operator bets on, through the CLI: each test is a defect once found by trying it."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from helpers import snapshot, wired


def test_a_second_ocs_failure_is_recorded_and_answered(fleet):
    """Two OCS failures in different dimensions once crashed the deadlock check (exit 70) and lost the fault."""
    wired(fleet, "s", "8x8x16")
    first = fleet("inject-fault", "ocs:pod0/y/9", "-o", "json")
    assert first.code == 0, first.err
    second = fleet("inject-fault", "ocs:pod0/z/11", "-o", "json")
    assert second.code == 0, second.err
    assert [f["target"] for f in fleet("faults", "-o", "json").json] == ["ocs:pod0/y/9", "ocs:pod0/z/11"]
    (impact,) = second.json["slices"]
    if impact["action"] == "reroute":  # whatever the router manages, a rerouted slice fits the hardware
        assert impact["reroute"]["vcs"] <= 3 and impact["reroute"]["deadlock_free"]
    else:
        assert impact["action"] == "reschedule" and impact["replacement"]["status"] == "pending"  # one pod only


def test_the_fault_is_recorded_even_when_analysing_it_fails(fleet, monkeypatch):
    wired(fleet, "s", "8x8x8")
    from tpufleet import faults

    def broken(*args, **kwargs):
        raise ValueError("router bug")

    monkeypatch.setattr(faults, "reroute_figures", broken)
    r = fleet("inject-fault", "ocs:pod0/x/3", "-o", "json")
    assert "router bug" in r.err and r.err.count("\n") == 1
    assert [f["target"] for f in fleet("faults", "-o", "json").json] == ["ocs:pod0/x/3"]
    assert fleet("show", "slices", "-o", "json").json[0]["state"] == "evicted"  # moved to be safe


def test_proposals_in_one_blast_radius_are_reserved_and_reschedule_follows_them(fleet, tmp_path):
    for name, cubes in (("a", "c00,c01,c02,c03,c04,c05,c06,c07"), ("b", "c08,c09,c10,c11,c12,c13,c14,c15")):
        assert fleet("allocate", name, "--shape", "8x8x8", "--cubes", cubes).code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
    scenario = tmp_path / "two.yaml"
    scenario.write_text("- host:c03/1\n- host:c12/7\n")
    r = fleet("inject-fault", "--from", scenario, "-o", "json")
    assert r.code == 0, r.err
    proposals = {s["slice"]: s["replacement"] for radius in r.json for s in radius["slices"]}
    new_a = set(proposals["a"]["cubes"]) - {f"c{i:02d}" for i in range(8)}
    new_b = set(proposals["b"]["cubes"]) - {f"c{i:02d}" for i in range(8, 16)}
    assert len(new_a) == len(new_b) == 1 and not new_a & new_b  # never the same spare cube twice
    for name in "ba":  # in the other order than proposed: each still gets exactly its proposal
        done = fleet("reschedule", name, "-o", "json")
        assert done.code == 0, done.err
        assert done.json["cubes"] == proposals[name]["cubes"]


def _proposal(fleet, name):
    return next(r["proposal"] for r in fleet("show", "slices", "-o", "json").json if r["name"] == name)


def test_a_fault_on_a_reserved_move_moves_the_reservation_and_says_so(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x8", "--cubes", "c00,c01").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    first = fleet("inject-fault", "cube:c00", "-o", "json").json["slices"][0]["replacement"]
    spare = (set(first["cubes"]) - {"c01"}).pop()
    hit = fleet("inject-fault", f"cube:{spare}", "-o", "json")
    assert hit.code == 0
    [impact] = hit.json["slices"]
    assert impact["slice"] == "a" and impact["action"] == "reschedule" and "is hit" in impact["reason"]
    now = impact["replacement"]["cubes"]
    assert spare not in now and "c01" in now and _proposal(fleet, "a")["cubes"] == now
    taken = fleet("allocate", "b", "--shape", "4x4x4", "--cubes", (set(now) - {"c01"}).pop())
    assert taken.code == 1  # the new reservation holds
    assert fleet("reschedule", "a", "-o", "json").json["cubes"] == now


def test_a_move_without_fault_tolerant_routing_goes_to_a_pod_with_every_ocs_up(cli):
    assert cli("init", "--pods", "2").code == 0
    assert cli("allocate", "a", "--shape", "4x4x8", "--no-fault-tolerant-routing").code == 0
    assert cli("plan-xconnect", "a", "--apply").code == 0
    assert fleet_pod(cli("inject-fault", "cube:c00", "-o", "json")) == "pod0"
    r = cli("inject-fault", "ocs:pod0/x/1", "-o", "json")  # pod0 can no longer wire it
    assert fleet_pod(r) == "pod1" and "is hit" in r.json["slices"][0]["reason"]
    assert cli("reschedule", "a", "-o", "json").json["pod"] == "pod1"


def test_a_fault_tolerant_slice_goes_to_a_pod_with_every_ocs_up_too(cli):
    """It went to the first pod with room, OCS down or not: a slice with a floor of 0.99 was placed on pod0 with
    ocs:pod0/y/6 down (pod1 wholly free), wired with 8 pairs deferred and routed at 0.928 of its throughput, below
    its floor, where `reschedule` refuses to land it. A pod with an OCS down comes after the healthy ones, for a
    move too; it still takes the slice when it alone has room."""
    assert cli("init", "--pods", "2").code == 0
    assert cli("inject-fault", "ocs:pod0/y/6").code == 0
    r = cli("allocate", "a", "--shape", "8x8x8", "--min-throughput", "0.99", "-o", "json")
    assert r.code == 0 and r.json["pod"] == "pod1", r.json
    assert cli("allocate", "b", "--shape", "8x8x8", "-o", "json").json["pod"] == "pod1"
    assert cli("plan-xconnect", "a", "--apply").code == 0
    assert cli("inject-fault", "cube:" + cli("show", "slices", "-o", "json").json[0]["cubes"][0]).code == 0
    assert cli("reschedule", "a", "-o", "json").json["pod"] == "pod1"  # pod1 still has room: not onto the OCS
    full = cli("allocate", "c", "--shape", "16x16x16", "-o", "json")  # only pod0 has 64 free cubes
    assert full.code == 0 and full.json["pod"] == "pod0"


def fleet_pod(r):
    return r.json["slices"][0]["replacement"]["pod"]


def test_a_what_if_never_replaces_working_tables(fleet):
    wired(fleet, "s", "8x8x8")
    assert fleet("inject-fault", "ocs:pod0/y/3").code == 0
    good = fleet("routes", "s", "-o", "json")
    assert good.code == 0 and good.json["stored"]
    before = snapshot(fleet.state)
    r = fleet("routes", "s", "--algorithm", "dor", "-o", "json")
    assert r.code == 1 and "not stored" in r.err and "unroutable" in r.err and r.err.count("\n") == 1
    assert r.json["stored"] is False and r.json["unroutable_pairs"] > 0
    # the pairs that are lost count against the throughput kept
    lost = r.json["unroutable_pairs"] / (r.json["unroutable_pairs"] + r.json["routable_pairs"])
    assert r.json["throughput_retained"]["all-to-all"] <= round(1 - lost, 4)
    assert snapshot(fleet.state) == before
    assert fleet("status", "-o", "json").json["stale_routes"] == []


@pytest.mark.slow
def test_tables_beyond_the_hardware_vcs_are_studied_not_stored(fleet, tmp_path):
    wired(fleet, "s", "8x8x8")
    assert fleet("inject-fault", "ocs:pod0/y/5").code == 0
    assert fleet("inject-fault", "ocs:pod0/z/2").code == 0  # 554 within 3 VCs; relieved, the same orders need 8
    within = fleet("routes", "s", "-o", "json").json
    assert within["vcs"] <= 3 and within["deadlock_free"] and within["stored"]
    before = snapshot(fleet.state)
    study = fleet("routes", "s", "--max-vcs", "9", "--out", tmp_path / "nine.npz", "-o", "json")
    assert study.code == 1 and "virtual channels" in study.err
    assert 3 < study.json["vcs"] <= 9 and study.json["deadlock_free"]
    assert study.json["throughput_retained"]["all-to-all"] > within["throughput_retained"]["all-to-all"]
    assert (tmp_path / "nine.npz").exists() and snapshot(fleet.state) == before


def test_a_slice_below_its_throughput_floor_is_rescheduled(fleet):
    wired(fleet, "strict", "8x8x8", "--min-throughput", "0.95")
    r = fleet("inject-fault", "ocs:pod0/x/3", "--dry-run", "-o", "json")
    (impact,) = r.json["slices"]
    assert impact["action"] == "reschedule" and "below its floor of 0.95" in impact["reason"]
    assert fleet("policy", "strict", "--min-throughput", "0.5").code == 0
    (impact,) = fleet("inject-fault", "ocs:pod0/x/3", "--dry-run", "-o", "json").json["slices"]
    assert impact["action"] == "reroute" and impact["reroute"]["all_to_all_retained"] >= 0.5


@pytest.mark.parametrize("link", ["link:c01/x/3/out", "link:c04/z/10/in"])
def test_a_failed_link_never_routes_worse_than_its_whole_ocs(fleet, link):
    wired(fleet, "s", "8x8x8")
    ocs = "ocs:pod0/{}/{}".format(*link.split("/")[1:3])
    by_link = fleet("inject-fault", link, "--dry-run", "-o", "json").json["slices"][0]["reroute"]
    by_ocs = fleet("inject-fault", ocs, "--dry-run", "-o", "json").json["slices"][0]["reroute"]
    assert by_link["all_to_all_retained"] >= by_ocs["all_to_all_retained"]
    study_link = fleet("routes", "s", "-o", "json").json  # healthy still: nothing injected
    assert study_link["throughput_retained"]["all-to-all"] == 1.0


def test_graph_and_route_lengths_are_reported_apart(fleet):
    wired(fleet, "s", "4x4x8", "--twisted")
    assert fleet("inject-fault", "ocs:pod0/z/5").code == 0
    r = fleet("routes", "s", "-o", "json").json
    from tpufleet import wiring
    from tpufleet.state import Store

    state = Store(fleet.state).load()
    graph = wiring.build(state.slices["s"], state.fleet, state.ocs, state.health()).nbr
    g = nx.DiGraph((a, int(b)) for a, row in enumerate(graph.tolist()) for b in row if b >= 0)
    lengths = [d for _, dist in nx.all_pairs_shortest_path_length(g) for d in dist.values() if d]
    assert r["graph_diameter"] == max(lengths)
    assert r["graph_mean_hops"] == pytest.approx(sum(lengths) / len(lengths), abs=1e-6)
    assert r["diameter"] >= r["graph_diameter"] and r["mean_hops"] >= r["graph_mean_hops"]
    json.dumps(r, allow_nan=False)  # strict JSON


def test_a_recorded_fault_leaves_its_repair_for_routes_which_makes_the_same_tables(fleet, tmp_path):
    """`inject-fault` keeps the wild-first choices it searched in the state's cache/ (a dry run does not);
    `routes` replays them, and its tables are exactly those searched afresh."""
    import os
    import shutil

    import numpy as np

    wired(fleet, "s", "8x8x8")
    before = snapshot(fleet.state)
    assert fleet("inject-fault", "ocs:pod0/x/3", "--dry-run").code == 0
    assert snapshot(fleet.state) == before
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    entries = list((fleet.state / "cache").glob("*.npy"))  # one per dimension order repaired from ring runs
    assert entries
    for entry in entries:
        os.utime(entry, (1, 1))
    assert fleet("routes", "s", "--out", tmp_path / "replayed.npz").code == 0
    assert all(entry.stat().st_mtime > 1 for entry in entries)  # read back (a hit marks the entry used)
    shutil.rmtree(fleet.state / "cache")
    assert fleet("routes", "s", "--out", tmp_path / "searched.npz").code == 0
    replayed, searched = np.load(tmp_path / "replayed.npz"), np.load(tmp_path / "searched.npz")
    assert replayed["wild"].any()
    for name in ("port", "hops", "wild", "dest_order", "orders", "neighbors"):
        assert np.array_equal(replayed[name], searched[name])


def test_a_budget_no_table_set_fits_shows_the_leanest_but_keeps_the_working_tables(fleet):
    """`--max-vcs 1` on a torus with a fault: nothing fits, so the leanest tables (3 VCs, worse) are shown; they once
    replaced the slice's better working tables with exit 0."""
    wired(fleet, "s", "8x8x8")
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    good = fleet("routes", "s", "-o", "json").json
    assert good["stored"] and good["throughput_retained"]["all-to-all"] >= 0.9
    before = snapshot(fleet.state)
    r = fleet("routes", "s", "--max-vcs", "1", "-o", "json")
    assert r.code == 1 and "more than --max-vcs 1 allows" in r.err
    assert r.json["stored"] is False and r.json["vcs"] == 3
    assert snapshot(fleet.state) == before


def test_slices_of_one_shape_hit_by_one_ocs_share_one_routing_analysis(fleet, monkeypatch):
    """Their live graphs are the same (chips are numbered within the slice), so the tables are made once."""
    from tpufleet.routing import report

    for name in "ab":
        wired(fleet, name, "4x4x8")
    made = []
    real = report.evaluate

    def counted(*args, **kwargs):
        made.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(report, "evaluate", counted)
    r = fleet("inject-fault", "ocs:pod0/x/3", "--dry-run", "-o", "json")
    assert r.code == 0, r.err
    impacts = {s["slice"]: s for s in r.json["slices"]}
    assert sorted(impacts) == ["a", "b"] and len(made) == 1
    assert impacts["a"]["action"] == impacts["b"]["action"] == "reroute"
    assert impacts["a"]["reroute"] == impacts["b"]["reroute"]
