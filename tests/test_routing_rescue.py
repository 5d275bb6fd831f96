"""Order pairs for a slice above their size limit that no default candidate can serve (`routing.rescue`).

A TPU v5p 16x16x16 with an OCS down in each of x, y and z: every single dimension order's wild-first repair leaves
pairs unroutable, while the order pairs (withheld by default above 2,048 chips) route them all within the
hardware's 3 VCs. The slice stays on rerouted tables instead of being evicted with nowhere to go. The oracle for
the stored tables is a walk of every pair over the live links, independent of the router's own analysis.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import ocs_failure, wired

FAULTS = (("x", 0), ("y", 5), ("z", 10))


def _three_ocs_down(text: str):
    from tpufleet.shapes import parse_shape

    shape = parse_shape(text)
    exp = alive = None
    for dim, index in FAULTS:
        exp, down = ocs_failure(shape, dim, index)
        alive = down if alive is None else np.where(down < 0, -1, alive)
    return shape, exp, alive


def test_order_pairs_are_withheld_only_above_their_size_limit_with_dimensions_broken() -> None:
    from tpufleet.routing.patterns import ocs_patterns
    from tpufleet.routing.rescue import withheld

    shape, exp, alive = _three_ocs_down("16x16x16")
    assert [v.orders for v in withheld(shape, exp, alive, 3)] == [
        [(0, 1, 2), (1, 2, 0)],
        [(1, 0, 2), (0, 2, 1)],
        [(2, 0, 1), (0, 1, 2)],
    ]
    assert withheld(shape, exp, alive, 2) == []  # two VCs hold one order's datelines, no wild hop beside them
    assert withheld(shape, exp, exp, 3) == []  # healthy
    small, small_exp, small_alive = _three_ocs_down("8x16x16")  # 2,048 chips: the default makes them
    assert withheld(small, small_exp, small_alive, 3) == []
    links = alive.copy()  # one x link back: the rest of x/0's links are down alone, not the whole OCS
    a = int(np.flatnonzero(alive[:, 0] < 0)[0])
    links[a, 0], links[exp[a, 0], 1] = exp[a, 0], a
    assert ocs_patterns(shape, exp, links)  # `candidates` makes the whole OCS's failure too: left to --thorough
    assert withheld(shape, exp, links, 3) == []


def test_only_tables_made_by_the_rescue_are_said_to_be() -> None:
    from tpufleet.routing.rescue import NOTE, rescued

    assert rescued({"strategy": "per-destination dimension orders + wild-first" + NOTE})
    assert rescued({"strategy": "per-destination dimension orders + wild-first" + NOTE + ", relieved"})
    assert not rescued({"strategy": "per-destination dimension orders + wild-first"})
    assert not rescued({"unroutable_pairs": 16, "verdict_only": True})


def _walk_every_pair(port: np.ndarray, nbr: np.ndarray) -> int:
    """Follow `port[s, t]` from every chip towards every destination over live links only; the longest route."""
    n = len(port)
    dest = np.repeat(np.arange(n, dtype=np.int32), n)  # pairs grouped by destination
    pos = np.tile(np.arange(n, dtype=np.int32), n)
    for hops in range(4 * n.bit_length() * 8):
        going = pos != dest
        if not going.any():
            return hops
        p = port[pos[going], dest[going]].astype(np.int64)
        assert (p >= 0).all(), "a route ends before its destination"
        nxt = nbr[pos[going], p]
        assert (nxt >= 0).all(), "a route takes a dead link"
        pos[going] = nxt
    raise AssertionError("a route loops")


@pytest.mark.slow
def test_a_v5p_cube_of_4096_chips_with_an_ocs_down_in_each_dimension_stays_on_rerouted_tables(fleet) -> None:
    from tpufleet import wiring
    from tpufleet.routing.reach import defaults_left, fewest_left
    from tpufleet.state import Store

    assert fleet("init", "--generation", "tpu-v5p", "--force").code == 0
    wired(fleet, "big", "16x16x16")
    faults = fleet.state.parent / "faults.yaml"
    faults.write_text("".join(f"- target: ocs:pod0/{dim}/{index}\n" for dim, index in FAULTS))
    r = fleet("inject-fault", "--from", str(faults), "-o", "json")
    assert r.code == 0, r.err
    last = r.json[-1]["slices"][0]
    assert (last["slice"], last["action"]) == ("big", "reroute")
    assert last["reroute"]["fully_routable"] and last["reroute"]["vcs"] == 3
    kept = last["reroute"]["all_to_all_retained"]
    assert 0.7 < kept < 0.75  # above the slice's floor of 0.5; 0.93 with the x OCS alone

    state = Store(fleet.state).load()
    graph = wiring.build(state.slices["big"], state.fleet, state.ocs, state.health())
    assert defaults_left(state.slices["big"].shape, graph.expected, graph.nbr, 3) == 16  # the default alone: evicted
    assert fewest_left(state.slices["big"].shape, graph.expected, graph.nbr, 3) is None

    r = fleet("routes", "big", "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["unroutable_pairs"], r.json["vcs"], r.json["deadlock_free"]) == (0, 3, True)
    assert r.json["strategy"].endswith("order pairs (no single order serves every pair)")
    assert r.json["throughput_retained"]["all-to-all"] == kept  # the figure the blast radius judged the floor on
    stored = np.load(fleet.state / "routes" / "big.npz")
    assert (stored["neighbors"] == graph.nbr).all()
    assert _walk_every_pair(stored["port"], graph.nbr) == r.json["diameter"]
