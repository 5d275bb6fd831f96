"""Two dimension orders within the hardware's 3 VCs, checked by an independent oracle.

The tables' VC layout (`vc_layout`: each order's first VC, the first wild VC) is re-derived here by walking every
pair's route hop by hop, assigning VCs by the documented rule (a dimension-order hop on its order's first VC plus
the wraparound links crossed since entering the dimension; wild hops on the wild VC), and handing the channel
dependency graph to networkx: no shared code with `tpufleet.routing.cdg` beyond the tables themselves.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from helpers import ocs_failure
from tpufleet.routing.analysis import datelines
from tpufleet.routing.report import evaluate
from tpufleet.shapes import parse_shape
from tpufleet.topology import neighbors


def channel_graph(rt, leg_first_vc, wild_vc, layered=None):
    """networkx DiGraph of (chip, port, vc) -> (next chip, port, vc) over every pair's route, and the VCs used.

    `leg_first_vc[k][d]` / `wild_vc[k][d]`: the first VC of dimension d's hops (wild ones) of the k-th order in
    use; a single number stands for all three dimensions. `layered` (default: the tables' `wild_layers`): the j-th
    wild hop of a chain takes the wild VC plus j."""
    layered = getattr(rt, "wild_layers", False) if layered is None else layered
    n = rt.n
    ports, nbr, date = rt.P.astype(np.int64), rt.nbr.astype(np.int64), datelines(rt.shape)
    wild = rt.wild if rt.wild is not None else np.zeros((n, n), dtype=bool)
    dest_class = rt.dest_class if rt.dest_class is not None else np.zeros(n, dtype=np.int64)
    used = sorted(set(dest_class.tolist()))
    first = np.zeros((int(dest_class.max()) + 1, 3), dtype=np.int64)
    first[used] = _per_dimension(leg_first_vc, len(used))
    wild_first = np.zeros_like(first)
    wild_first[used] = _per_dimension(wild_vc, len(used))
    t, at = np.divmod(np.arange(n * n), n)
    t, at = t[t != at], at[t != at]
    klass = dest_class[t]
    prev = np.full(len(t), -1)
    prev_dim = np.full(len(t), -1)
    crossed = np.zeros(len(t), dtype=np.int64)
    prev_wild = np.zeros(len(t), dtype=bool)
    prev_date = np.zeros(len(t), dtype=np.int64)
    run = np.zeros(len(t), dtype=np.int64)  # wild hops so far in the current chain
    edges: set[tuple[int, int]] = set()
    vcs_used = 0
    while len(t):
        p = ports[t, at]
        go = p >= 0
        t, at, p, klass, prev, prev_dim, crossed, prev_wild, prev_date, run = (
            a[go] for a in (t, at, p, klass, prev, prev_dim, crossed, prev_wild, prev_date, run)
        )
        here_wild = wild[t, at]
        same = (p // 2 == prev_dim) & ~prev_wild & ~here_wild
        crossed = np.where(same, crossed + prev_date, 0)
        run = np.where(here_wild & prev_wild, run + 1, 0)
        vc = np.where(here_wild, wild_first[klass, p // 2] + (run if layered else 0), first[klass, p // 2] + crossed)
        channel = (at * 6 + p) * 64 + vc  # room for any VC a table set could name
        vcs_used = max(vcs_used, int(vc.max(initial=-1)) + 1)
        hop = prev >= 0
        edges.update(zip(prev[hop].tolist(), channel[hop].tolist(), strict=True))
        prev, prev_dim, prev_wild, prev_date = channel, p // 2, here_wild, date[at, p].astype(np.int64)
        at = nbr[at, p]
    graph = nx.DiGraph()
    graph.add_edges_from(edges)
    return graph, vcs_used


def layout_vcs(rt, layout):
    """The layout's per-dimension first VCs (dimension-order hops, wild hops) of the orders the tables use."""
    dest_class = rt.dest_class if rt.dest_class is not None else np.zeros(rt.n, dtype=np.int64)
    used = sorted(set(dest_class.tolist()))
    return [layout["leg_first_vc"][k] for k in used], [layout["wild_vc"][k] for k in used]


def _per_dimension(values, count):
    """[count, 3] VCs from one number, one per order, or one per order and dimension."""
    a = np.asarray(values, dtype=np.int64)
    return np.full((count, 3), a) if a.ndim == 0 else np.repeat(a.reshape(count, 1), 3, axis=1) if a.ndim == 1 else a


@pytest.mark.parametrize("dim, index", [("x", 3), ("y", 5), ("z", 2)])
def test_one_ocs_down_on_8x8x8_keeps_nine_tenths_within_three_vcs(dim, index):
    shape = parse_shape("8x8x8")
    expected, (_, alive) = neighbors(shape), ocs_failure(shape, dim, index)
    report = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3)
    s = report.summary
    assert s["unroutable_pairs"] == 0 and s["deadlock_free"] and s["vcs"] == 3
    assert s["dimension_orders"] == 2 and s["vc_layout"]["orders"] == 2
    # healthy 512 a link; the exact optimum is 8192/15 = 546.13 (benchmarks/routing_quality.py)
    assert s["max_link_load"]["all-to-all"] <= 512 / 0.9
    assert s["throughput_retained"]["all-to-all"] >= 0.90
    layout = s["vc_layout"]
    graph, vcs = channel_graph(report.tables, *layout_vcs(report.tables, layout))
    assert vcs == 3 and nx.is_directed_acyclic_graph(graph)


def test_the_oracle_sees_the_cycle_of_two_orders_sharing_one_block():
    shape = parse_shape("8x8x8")
    expected, (_, alive) = neighbors(shape), ocs_failure(shape, "x", 3)
    rt = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3).tables
    graph, vcs = channel_graph(rt, [0, 0], 2)  # both orders on VCs 0-1: turns of one feed turns of the other
    assert vcs == 3 and not nx.is_directed_acyclic_graph(graph)


def test_stored_tables_carry_their_vc_layout(fleet):
    """The layout is chosen per table set, so the stored file must say it: rebuilt from the file alone (ports,
    wild flags, orders per destination, neighbours, meta), the channel graph is acyclic in the stored VCs."""
    import json
    from types import SimpleNamespace

    assert fleet("allocate", "s", "--shape", "8x8x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/y/5").code == 0
    shown = fleet("routes", "s", "-o", "json").json
    assert shown["stored"] and shown["vcs"] == 3 and shown["dimension_orders"] == 2
    with np.load(fleet.state / "routes" / "s.npz") as f:
        meta = json.loads(str(f["meta"]))
        stored = SimpleNamespace(
            shape=parse_shape(meta["shape"]),
            n=len(f["neighbors"]),
            P=f["port"].T.copy(),
            nbr=f["neighbors"],
            wild=f["wild"].T.copy(),
            dest_class=f["dest_order"].astype(np.int64),
        )
        orders = f["orders"].tolist()
    assert meta["format_version"] == 3 and meta["vc_layout"] == shown["vc_layout"] and meta["wild_layers"] is False
    layout = meta["vc_layout"]
    assert len(layout["order_first_vc"]) == len(orders)
    legs, wild = layout_vcs(stored, layout)
    graph, vcs = channel_graph(stored, legs, wild, layered=meta["wild_layers"])
    assert vcs == meta["vcs"] == 3 and nx.is_directed_acyclic_graph(graph)


def test_x_and_y_ocs_down_on_8x8x8_keep_092_of_the_optimum_within_three_vcs():
    """Two broken dimensions: four dimension orders (z first for most destinations) keep every route whole but
    the ones between broken rings; their legs placed one VC pair each fit 3 VCs, which the oracle confirms from
    the reported per-dimension VCs alone."""
    shape = parse_shape("8x8x8")
    expected = neighbors(shape)
    alive = np.minimum(ocs_failure(shape, "x", 3)[1], ocs_failure(shape, "y", 5)[1])  # -1 where either is dead
    report = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3)
    s = report.summary
    assert s["unroutable_pairs"] == 0 and s["deadlock_free"] and s["vcs"] == 3
    assert s["dimension_orders"] == 4 and s["vc_layout"]["orders"] == 4
    # the exact optimum is the cut bound of either broken dimension, 8192/15 = 546.13 (routing_quality.py)
    assert s["max_link_load"]["all-to-all"] <= 0.92**-1 * 8192 / 15
    layout = s["vc_layout"]
    assert len({vc for legs in layout["leg_first_vc"] for vc in legs if vc >= 0}) > 1  # not one block per order
    graph, vcs = channel_graph(report.tables, *layout_vcs(report.tables, layout))
    assert vcs == 3 and nx.is_directed_acyclic_graph(graph)
    single = [[min(legs)] * 3 for legs in layout_vcs(report.tables, layout)[0]]
    graph, _ = channel_graph(report.tables, single, layout_vcs(report.tables, layout)[1])
    assert not nx.is_directed_acyclic_graph(graph)  # the same orders with each on one VC pair would deadlock


def _random_dead_links(shape, count, seed):
    expected = neighbors(shape)
    alive, rng = expected.copy(), np.random.default_rng(seed)
    for _ in range(count):
        chip, port = int(rng.integers(len(expected))), int(rng.integers(6))
        alive[chip, port] = alive[expected[chip, port], port ^ 1] = -1
    return expected, alive


@pytest.mark.parametrize("faults", ["ocs y/5 z/2", "34 random links"])
def test_placed_legs_are_what_the_oracle_walks(faults):
    """Whatever the verdict placed (orders overlapping, legs one by one, wild hops on any VC), walking every route
    under the reported per-dimension VCs gives an acyclic channel graph on exactly the VCs reported."""
    shape = parse_shape("8x8x8")
    if faults.startswith("ocs"):
        expected = neighbors(shape)
        alive = np.minimum(ocs_failure(shape, "y", 5)[1], ocs_failure(shape, "z", 2)[1])
    else:
        expected, alive = _random_dead_links(shape, 34, seed=1)  # legs placed, wild hops on all 3 VCs
    report = evaluate(shape, expected, alive, "auto", ("all-to-all",), max_vcs=3)
    s, layout = report.summary, report.summary["vc_layout"]
    assert s["deadlock_free"] and s["vcs"] == 3 and s["dimension_orders"] > 1
    graph, vcs = channel_graph(report.tables, *layout_vcs(report.tables, layout))
    assert vcs == s["vcs"] and nx.is_directed_acyclic_graph(graph)
