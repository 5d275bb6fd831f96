"""Relieving the busiest links (`tpufleet.routing.relieve`), checked by independent means.

Every relieved table set is walked pair by pair here (own walker: arrival without revisiting a chip, no dead
link, hop counts, per-link load), and its channel dependency graph is rebuilt by the oracle of
`test_vc_packing` and handed to networkx. Reference: the exact LP optimum of the all-to-all max link load,
73.78 on twisted 4x4x8 with one x OCS down (benchmarks/routing_quality.py).
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest
from test_vc_packing import channel_graph, layout_vcs

from helpers import ocs_failure
from tpufleet.routing.candidates import candidates
from tpufleet.routing.relieve import relieve
from tpufleet.routing.report import evaluate
from tpufleet.shapes import parse_shape
from tpufleet.topology import neighbors

LP_TWISTED_448_ONE_OCS = 73.78


def walked(P, nbr, expected_alive):
    """(per-link load [N, 6], hop counts [t, s]) from walking every route; asserts each arrives on live links
    without visiting a chip twice."""
    n = len(nbr)
    load = np.zeros((n, 6), dtype=np.int64)
    hops = np.zeros((n, n), dtype=np.int64)
    for t in range(n):
        for s in range(n):
            at, seen = s, {s}
            while at != t:
                p = int(P[t, at])
                assert p >= 0, f"pair {s}->{t} stops at {at}"
                assert expected_alive[at, p] >= 0, f"pair {s}->{t} uses a dead link at {at}"
                load[at, p] += 1
                at = int(nbr[at, p])
                assert at not in seen, f"pair {s}->{t} loops"
                seen.add(at)
                hops[t, s] += 1
    return load, hops


def test_twisted_448_one_ocs_within_three_vcs_reaches_nine_tenths_of_the_optimum():
    shape = parse_shape("4x4x8", twisted=True)
    expected, alive = ocs_failure(shape, "x", 3)
    report = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3)
    s, rt = report.summary, report.tables
    assert s["deadlock_free"] and s["vcs"] <= 3 and s["unroutable_pairs"] == 0
    assert "relieved" in s["strategy"] and s["entries_relieved"] > 0
    assert LP_TWISTED_448_ONE_OCS / s["max_link_load"]["all-to-all"] >= 0.90  # was 82 (0.8998) before relieving
    load, hops = walked(rt.P, rt.nbr, alive)
    assert load.max() == s["max_link_load"]["all-to-all"]
    assert (hops == np.maximum(rt.L, 0)).all()
    layout = s["vc_layout"]
    graph, vcs = channel_graph(rt, *layout_vcs(rt, layout))
    assert vcs == s["vcs"] and nx.is_directed_acyclic_graph(graph)


@pytest.mark.parametrize("leaves", [False, True])
def test_relieving_lowers_the_busiest_link_and_its_books_are_exact(leaves):
    shape = parse_shape("4x4x8")
    expected, alive = ocs_failure(shape, "x", 3)
    rt, info = candidates(shape, expected, alive, "wild-first")[0]
    done = relieve(rt, alive, expected, leaves)
    assert done is not None and done.moved > 0
    assert done.max_load < info["max_load"]
    load, hops = walked(done.tables.P, done.tables.nbr, alive)
    assert load.max() == done.max_load  # the load it kept as it moved subtrees is the walked one
    assert (hops == np.maximum(done.tables.L, 0)).all()
    changed = done.tables.P != rt.P
    wild = done.tables.wild
    assert wild is not None and changed.sum() == done.moved and wild[changed].all()  # every repointed entry is wild
    load_before, _ = walked(rt.P, rt.nbr, alive)
    assert load.sum() > load_before.sum()  # detours cost hops: total work grows while the peak falls


def test_a_healthy_slice_keeps_its_minimal_tables():
    shape = parse_shape("4x4x8", twisted=True)
    expected = neighbors(shape)
    s = evaluate(shape, expected, expected, "auto", ("all-to-all",), max_vcs=3)
    assert s.summary["entries_relieved"] == 0 and s.summary["max_link_load"]["all-to-all"] == 78
    graph = nx.Graph((a, int(b)) for a, row in enumerate(expected) for b in row if b >= 0)
    distance = dict(nx.all_pairs_shortest_path_length(graph))
    assert all(s.tables.L[t, a] == distance[a][t] for t in graph for a in graph)  # every route minimal


def _link_and_its_ocs(text: str, dim: str, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The summaries of the twisted slice's tables with the first dead link of OCS dim/index down, and the OCS."""
    shape = parse_shape(text, twisted=True)
    expected, ocs_down = ocs_failure(shape, dim, index)
    one_link = expected.copy()
    s, p = np.argwhere((ocs_down < 0) & (expected >= 0))[0]
    one_link[s, p] = -1
    one_link[expected[s, p], p ^ 1] = -1
    link = evaluate(shape, expected, one_link, "auto", ("all-to-all",), max_vcs=3).summary
    return link, evaluate(shape, expected, ocs_down, "auto", ("all-to-all",), max_vcs=3).summary


def test_an_optical_link_never_routes_worse_than_its_relieved_ocs():
    link, whole = _link_and_its_ocs("4x4x8", "x", 3)
    assert whole["entries_relieved"] > 0 and link["vcs"] <= 3
    assert link["max_link_load"]["all-to-all"] <= whole["max_link_load"]["all-to-all"]


def test_each_graphs_relieving_runs_its_passes_whatever_the_lightest_so_far():
    """Twisted 4x8x8, one optical link of x/4 (the first dead link of the OCS): the live graph's tables relieved to
    192 came first, and the OCS pattern's, whose first pass (193) did not beat them, were left there; their next
    pass reaches 191, as the whole OCS is relieved. A link routed worse than its OCS."""
    link, whole = _link_and_its_ocs("4x8x8", "x", 4)
    assert whole["max_link_load"]["all-to-all"] == 191 and link["vcs"] <= 3 and link["deadlock_free"]
    assert link["max_link_load"]["all-to-all"] <= 191  # (190 since its OCS's canonical forms are made too)


def test_routes_stores_relieved_tables_whose_file_alone_proves_them(fleet):
    """Through the CLI: the relieved tables are stored; from the file alone (ports, wild flags, orders, neighbours,
    meta) every route arrives, the busiest link carries what `routes` reported, and the channel graph is acyclic in
    the stored VCs."""
    import json
    from types import SimpleNamespace

    assert fleet("allocate", "t", "--shape", "4x4x8", "--twisted").code == 0
    assert fleet("plan-xconnect", "t", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    text = fleet("routes", "t")
    assert text.code == 0, text.err
    shown = fleet("routes", "t", "-o", "json").json
    assert shown["stored"] and shown["vcs"] <= 3 and shown["entries_relieved"] > 0
    assert f"{shown['entries_relieved']} table entries moved off the busiest links" in text.out
    with np.load(fleet.state / "routes" / "t.npz") as f:
        meta = json.loads(str(f["meta"]))
        stored = SimpleNamespace(
            shape=parse_shape(meta["shape"], meta["twisted"]),
            n=len(f["neighbors"]),
            P=f["port"].T.copy(),
            nbr=f["neighbors"],
            wild=f["wild"].T.copy(),
            dest_class=f["dest_order"].astype(np.int64),
        )
    load, _ = walked(stored.P, stored.nbr, stored.nbr)
    assert load.max() == shown["max_link_load"]["all-to-all"] < 82  # 82 before relieving
    layout = meta["vc_layout"]
    legs, wild = layout_vcs(stored, layout)
    graph, vcs = channel_graph(stored, legs, wild, layered=meta["wild_layers"])
    assert vcs == meta["vcs"] == shown["vcs"] and nx.is_directed_acyclic_graph(graph)


@pytest.mark.parametrize(
    ("shape_text", "twisted", "faults", "one_way"),
    [
        ("4x4x8", True, (("x", 3),), ()),
        ("4x4x4", False, (("x", 1), ("y", 2)), ()),
        ("4x4x4", False, (("z", 0),), ((0, 0), (5, 3), (21, 4))),  # links dead one way only
    ],
)
def test_the_pairs_behind_the_busiest_links_are_those_a_walk_of_every_route_finds(shape_text, twisted, faults, one_way):
    # the rounds find the pairs to move downwards from the busy links; every route walked in full is the oracle
    from tpufleet.routing.analysis import Levels, flow, link_load
    from tpufleet.routing.relieve import Tree, _ring_routes

    shape = parse_shape(shape_text, twisted)
    expected = neighbors(shape)
    alive = expected.copy()
    for dim, index in faults:
        alive[ocs_failure(shape, dim, index)[1] < 0] = -1
    for chip, port in one_way:
        alive[chip, port] = -1
    rt, _ = candidates(shape, expected, alive, "wild-first")[0]
    weight, _ = flow(rt, np.ones((rt.n, rt.n), dtype=bool), Levels(rt.L), masks=False)
    load = link_load(rt, weight).ravel().astype(np.int64)
    tree = Tree(
        rt.P.copy(),
        np.zeros(rt.P.shape, dtype=bool) if rt.wild is None else rt.wild.copy(),
        alive,
        load,
        weight.astype(np.int64),
        _ring_routes(rt, expected),
    )
    n = rt.n
    load_walked, _ = walked(rt.P, alive, alive)
    assert (load_walked.ravel() == load).all()
    t, s = np.divmod(np.arange(n * n, dtype=np.int64), n)
    routed = rt.P.ravel() >= 0
    for top in sorted({int(load.max()), int(np.percentile(load[load > 0], 90)), 1}):
        on_route = np.flatnonzero(routed)[tree.walk_max(t[routed], s[routed]) >= top]
        behind = tree.behind(top)
        assert len(behind) > 0 and np.array_equal(behind, on_route)
        own = np.flatnonzero(routed)[load[s[routed] * 6 + rt.P.ravel()[routed]] >= top]
        assert np.array_equal(np.unique(tree.entering(top)), own)
