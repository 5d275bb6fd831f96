"""An OCS down in each dimension of 8x8x8 within the hardware's 3 VCs: one dimension order whose routes may start
with a wild pre-leg, by load-aware trees, relieved (`routing.preleg`). The kept tables are checked by the
independent channel-graph oracle of test_vc_packing (routes walked pair by pair, VCs by the documented rule,
cycles by networkx) and their all-to-all load is counted by walking every route."""

from __future__ import annotations

import networkx as nx
import numpy as np
from test_routing_split import walked_load
from test_vc_packing import channel_graph, layout_vcs

from helpers import ocs_failure
from tpufleet.routing.report import evaluate
from tpufleet.shapes import parse_shape

PRELEG = "one dimension order, wild pre-legs by trees"


def _three_ocs_down():
    shape = parse_shape("8x8x8")
    expected, alive = ocs_failure(shape, "x", 3)
    for dim, index in (("y", 5), ("z", 2)):
        alive[ocs_failure(shape, dim, index)[1] < 0] = -1
    return shape, expected, alive


def test_three_ocs_on_8x8x8_within_three_vcs_by_pre_leg_trees():
    shape, expected, alive = _three_ocs_down()
    report = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3)
    s = report.summary
    assert s["strategy"].startswith(PRELEG) and s["dimension_orders"] == 1
    assert s["unroutable_pairs"] == 0 and s["deadlock_free"] and s["vcs"] == 3
    # one order with wild first hops, relieved, the best before: 638 (the LP optimum 546.13)
    assert s["max_link_load"]["all-to-all"] == 604
    assert int(walked_load(report.tables).max()) == 604
    graph, vcs = channel_graph(report.tables, *layout_vcs(report.tables, s["vc_layout"]))
    assert vcs == 3 and nx.is_directed_acyclic_graph(graph)


def test_wild_hops_of_the_trees_never_follow_a_hop_in_order():
    """What makes the trees deadlock-free before relieving: a wild hop is the route's first or follows another
    wild hop, so nothing enters the wild VC from the dateline pairs; the oracle finds no cycle with the legs on
    VCs 0-1 and the wild hops on VC 2."""
    from tpufleet.routing.preleg import preleg_tables

    shape, _, alive = _three_ocs_down()
    rt, load = preleg_tables(shape, alive, alive)
    assert rt.wild is not None and rt.wild.any() and int(np.count_nonzero(rt.P == -2)) == 0
    t, c = np.nonzero(rt.P >= 0)
    port = rt.P[t, c].astype(np.int64)
    nxt = rt.nbr[c, port]
    assert not (~rt.wild[t, c] & rt.wild[t, nxt]).any()
    assert int(walked_load(rt).max()) == int(load.max())
    graph, vcs = channel_graph(rt, 0, 2)
    assert vcs == 3 and nx.is_directed_acyclic_graph(graph)
