"""`routes` weighs the slice's stored tables beside new ones: clearing one of several faults only gives the slice
links back, so tables made around all of them still route it, and they are kept when they are lighter than the
tables made afresh for the faults left. Never the tables of another shape or of the slice before it was wired again,
never on a whole slice (its healthy tables win), and never outside `auto` with the deadlock check and the VC budget.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tpufleet.ops import routes as route_ops
from tpufleet.routing.reuse import StoredRoutes
from tpufleet.state.routetables import routing_members
from tpufleet.state.store import Store

NOW = "2026-11-25T00:00:00Z"
COMPOUND_LOAD = 137.0  # 4x4x8, ocs z/0 and x/0 down
ALONE_LOAD = 139.0  # 4x4x8, ocs z/0 alone, routed afresh in its canonical form only (pytestmark)


# every test here weighs stored tables made where the canonical form alone is made (see conftest)
pytestmark = pytest.mark.usefixtures("canonical_form_only")


def _routes(fleet, *extra: str) -> dict:
    r = fleet("routes", "s", *extra, "-o", "json")
    assert r.code == 0, r.err
    return r.json


def _a2a(out: dict) -> float:
    return float(out["max_link_load"]["all-to-all"])


def _stored_meta(fleet) -> dict:
    with np.load(fleet.state / "routes" / "s.npz") as tables:
        port = tables["port"]
        assert (port[~np.eye(len(port), dtype=bool)] >= 0).all(), "stored tables with unroutable pairs"
        return json.loads(str(tables["meta"]))


def _faulted(fleet, *ocs: str) -> dict[str, str]:
    """Slice `s` (4x4x8) wired and routed whole, then the OCS failed in order and routed; their fault ids."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert _routes(fleet)["kept_stored_tables"] is False
    ids = {}
    for target in ocs:
        r = fleet("inject-fault", f"ocs:pod0/{target}", "-o", "json")
        assert r.code == 0, r.err
        ids[target] = r.json["fault_id"]
    return ids


@pytest.fixture
def one_cleared(fleet):
    """ocs z/0 and x/0 down and routed (137), then x/0 cleared: the stored tables still route the slice."""
    ids = _faulted(fleet, "z/0", "x/0")
    compound = _routes(fleet)
    assert _a2a(compound) == COMPOUND_LOAD and compound["kept_stored_tables"] is False
    assert fleet("clear-fault", ids["x/0"]).code == 0
    return fleet


def test_clearing_one_of_two_faults_keeps_the_lighter_stored_tables(one_cleared):
    fleet = one_cleared
    out = _routes(fleet)
    assert out["kept_stored_tables"] is True and out["stored"] is True
    assert _a2a(out) <= COMPOUND_LOAD < ALONE_LOAD
    assert out["unroutable_pairs"] == 0 and out["deadlock_free"] is True and out["vcs"] <= 3
    assert out["pairs_broken_by_faults"] > 0 and out["pairs_repaired_wild"] == out["pairs_broken_in_base_orders"]
    meta = _stored_meta(fleet)
    assert meta["vcs"] == out["vcs"] and meta["vc_layout"] == out["vc_layout"]
    assert meta["serial"] == fleet("status", "-o", "json").json["serial"] - 1  # made on the live graph, recorded
    (row,) = fleet("show", "slices", "-o", "json").json
    assert (
        row["state"] == "degraded"
        and row["degraded"]["all_to_all_retained"] == out["throughput_retained"]["all-to-all"]
    )
    assert fleet("status", "-o", "json").json["stale_routes"] == []
    text = fleet("routes", "s")
    assert text.code == 0 and "stored tables kept" in text.out  # and run again, still kept: never the 139 ones
    assert _a2a(_routes(fleet)) == COMPOUND_LOAD


def test_new_tables_lighter_than_the_stored_ones_replace_them(fleet):
    ids = _faulted(fleet, "z/0", "x/0", "y/3")
    three = _routes(fleet)
    assert fleet("clear-fault", ids["y/3"]).code == 0
    out = _routes(fleet)
    assert out["kept_stored_tables"] is False and _a2a(out) == COMPOUND_LOAD < _a2a(three)


def test_a_whole_slice_gets_its_healthy_tables_again(one_cleared):
    fleet = one_cleared
    assert _routes(fleet)["kept_stored_tables"] is True
    assert fleet("clear-fault", "ocs:pod0/z/0").code == 0
    out = _routes(fleet)
    assert out["kept_stored_tables"] is False and out["strategy"] == "dimension-order"
    assert _a2a(out) == out["healthy_max_link_load"]["all-to-all"] and out["entries_relieved"] == 0
    assert _stored_meta(fleet)["wild_layers"] is False
    (row,) = fleet("show", "slices", "-o", "json").json
    assert row["state"] == "connected"


@pytest.mark.parametrize(
    "options",
    [("--algorithm", "wild-first"), ("--no-deadlock-check",), ("--max-vcs", "2")],
    ids=["not-auto", "no-deadlock-check", "over-the-vc-budget"],
)
def test_the_stored_tables_are_weighed_only_for_auto_tables_within_the_budget(one_cleared, options):
    r = one_cleared("routes", "s", *options, "-o", "json")
    assert r.json["kept_stored_tables"] is False


def test_sparse_tables_never_keep_the_stored_ones(one_cleared, tmp_path):
    r = one_cleared("routes", "s", "--table-capacity", "64", "--out", tmp_path / "sparse.npz", "-o", "json")
    assert r.code == 0 and r.json["kept_stored_tables"] is False and r.json["stored"] is False


def test_damaged_stored_tables_are_no_candidate(one_cleared):
    (one_cleared.state / "routes" / "s.npz").write_bytes(b"not a zip")
    out = _routes(one_cleared)
    assert out["kept_stored_tables"] is False and _a2a(out) == ALONE_LOAD and out["stored"]


def test_the_tables_of_the_slice_before_it_was_allocated_again_are_never_used(fleet, tmp_path):
    ids = _faulted(fleet, "z/0", "x/0")
    assert _a2a(_routes(fleet)) == COMPOUND_LOAD
    compound = (fleet.state / "routes" / "s.npz").read_bytes()
    assert fleet("release", "s").code == 0
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0  # the same cubes again, so the same chip graph
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("clear-fault", ids["x/0"]).code == 0
    assert _a2a(_routes(fleet)) == ALONE_LOAD
    (fleet.state / "routes" / "s.npz").write_bytes(compound)  # the old slice's tables, under the new one's index
    out = _routes(fleet)
    assert out["kept_stored_tables"] is False and _a2a(out) == ALONE_LOAD


def _route_with(store: Store, stored: StoredRoutes) -> dict:
    request = route_ops.RouteRequest("auto", ["all-to-all"], True)
    done = route_ops.route_slice(
        store.load(), "s", request, NOW, lambda routed, npz: ("kept", True), read_stored=lambda: stored
    )
    return done.data


@pytest.mark.parametrize(
    "meta",
    [{"slice": "t"}, {"shape": "4x8x4"}, {"twisted": True}, {"serial": 0}, {"serial": None}],
    ids=["another-slice", "another-shape", "twisted", "before-wiring", "no-serial"],
)
def test_tables_made_for_another_slice_shape_or_wiring_are_never_used(one_cleared, meta):
    store = Store(one_cleared.state)
    stored = routing_members(store.stored_tables("s"))
    assert stored is not None
    assert _route_with(store, stored)["kept_stored_tables"] is True  # as stored: kept
    other = _route_with(store, dataclasses.replace(stored, meta={**stored.meta, **meta}))
    assert other["kept_stored_tables"] is False and other["max_link_load"]["all-to-all"] == ALONE_LOAD


def test_tables_of_another_chip_count_are_never_used(one_cleared):
    store = Store(one_cleared.state)
    stored = routing_members(store.stored_tables("s"))
    assert stored is not None
    smaller = dataclasses.replace(stored, port=stored.port[:64, :64], hops=stored.hops[:64, :64])
    assert _route_with(store, smaller)["kept_stored_tables"] is False


@pytest.mark.parametrize("member", ["port", "dest_order"])
def test_stored_tables_with_values_out_of_range_are_damage_not_a_crash(one_cleared, member):
    """A port beyond the six (or a dimension-order index given as a fraction) is damage: `routes` makes new tables
    (exit 0), `collective` on the damaged file names it (exit 2); neither is an internal error."""
    import io

    path = one_cleared.state / "routes" / "s.npz"
    with np.load(path) as tables:
        members = {k: tables[k] for k in tables.files}
    if member == "port":
        members["port"] = np.where(members["port"] >= 0, 9, members["port"]).astype(np.int8)
    else:
        members["dest_order"] = members["dest_order"].astype(np.float64) + 0.5
    buf = io.BytesIO()
    np.savez_compressed(buf, **members)
    path.write_bytes(buf.getvalue())
    out = _routes(one_cleared)
    assert out["kept_stored_tables"] is False and _a2a(out) == ALONE_LOAD
    if member == "port":
        path.write_bytes(buf.getvalue())  # damaged again: `routes` just stored its new tables
        r = one_cleared("collective", "s", "--op", "all-reduce", "--bytes", "1GiB")
        assert (
            r.code == 2 and r.err.strip() == f"tpufleet: error: {path}: field port: is not a port (-2 to 5) (value 9)"
        )
