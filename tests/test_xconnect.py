import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import add_fault, expected_neighbour, one_line, snapshot
from tpufleet import xconnect
from tpufleet.allocation import grid_coords
from tpufleet.fleetstate import Slice
from tpufleet.health import Health
from tpufleet.ids import OcsId
from tpufleet.model import default_fleet, link_at_port
from tpufleet.shapes import parse_shape, twistable
from tpufleet.topology import coordinates
from tpufleet.wiring import build

FLEET = default_fleet()


def wire(shape, cubes, ocs=None):
    """Plan and apply; the OCS state comes back as "pod0/x/5" -> sorted [[north, south]] for easy reading."""
    coords = grid_coords(shape, cubes)
    p = xconnect.plan(shape, FLEET, coords, ocs or {}, Health())
    applied = xconnect.apply(ocs or {}, p.changes)
    return coords, p, {k.key: sorted(map(list, v)) for k, v in applied.items()}


def test_single_cube_is_a_torus_through_its_own_ocs_ports():
    _coords, p, ocs = wire(parse_shape("4x4x4"), ["c09"])
    assert len(ocs) == 48 and all(pairs == [[9, 9]] for pairs in ocs.values())
    assert p.summary == {"add": 48, "remove": 0, "keep": 0}


def test_eight_cubes_need_eight_pairs_on_every_ocs():
    _, p, ocs = wire(parse_shape("8x8x8"), [f"c{i:02d}" for i in range(8)])
    assert len(ocs) == 48 and {len(v) for v in ocs.values()} == {8}
    assert p.summary["add"] == 384


def test_whole_pod_uses_every_port_of_every_ocs():
    _, p, ocs = wire(parse_shape("16x16x16"), FLEET.cubes)
    assert p.summary["add"] == 3072
    for pairs in ocs.values():
        assert sorted(n for n, _ in pairs) == list(range(64)) and sorted(s for _, s in pairs) == list(range(64))


def test_twisted_4x4x8_joins_a_to_b_and_b_to_a_in_every_dimension():
    _, _, ocs = wire(parse_shape("4x4x8", True), ["c20", "c31"])
    assert len(ocs) == 48
    for key, pairs in ocs.items():
        assert pairs == [[20, 31], [31, 20]], key
    # untwisted, the x and y rings of one cube wide close on the cube itself
    _, _, plain = wire(parse_shape("4x4x8"), ["c20", "c31"])
    assert plain["pod0/x/0"] == [[20, 20], [31, 31]] and plain["pod0/z/0"] == [[20, 31], [31, 20]]


multi_cube_shapes = st.sampled_from(
    [
        (a, b, c)
        for a in (4, 8, 12, 16)
        for b in (4, 8, 12, 16)
        for c in (4, 8, 12, 16)
        if a <= b <= c and (a // 4) * (b // 4) * (c // 4) <= 64
    ]
)


@st.composite
def slice_requests(draw):
    dims = draw(multi_cube_shapes)
    twisted = draw(st.booleans()) and twistable(dims)
    shape = parse_shape("x".join(map(str, dims)), twisted)
    cubes = draw(st.permutations(FLEET.cubes))[: shape.cubes]
    return shape, list(cubes)


@settings(max_examples=40, deadline=None)
@given(slice_requests())
def test_planned_wiring_is_exactly_the_requested_torus(request):
    shape, cubes = request
    coords, _p, ocs = wire(shape, cubes)
    used_north, used_south = set(), set()
    for key, pairs in ocs.items():
        switch = OcsId.from_key(key)
        for north, south in pairs:
            out_link, in_link = link_at_port(FLEET, switch, "north", north), link_at_port(FLEET, switch, "south", south)
            assert out_link is not None and out_link.polarity == "out"
            assert in_link is not None and in_link.polarity == "in"
            assert (key, north) not in used_north and (key, south) not in used_south
            used_north.add((key, north))
            used_south.add((key, south))
        assert len(pairs) == shape.cubes  # one pair per cube on every OCS
    assert len(ocs) == 48
    applied = {OcsId.from_key(k): frozenset(map(tuple, v)) for k, v in ocs.items()}
    graph = build(Slice("s", shape, "pod0", tuple(cubes), coords), FLEET, applied, Health())
    assert not graph.missing and not graph.miswired and graph.reachable == shape.chips
    xyz = [tuple(map(int, c)) for c in coordinates(shape.dims)]
    index = {c: i for i, c in enumerate(xyz)}
    for i in random.Random(0).sample(range(shape.chips), min(300, shape.chips)):
        for port in range(6):
            assert graph.nbr[i, port] == index[expected_neighbour(xyz[i], port, shape.dims, shape.twisted)]
    # planning again against the applied state changes nothing
    again = xconnect.plan(shape, FLEET, coords, applied, Health())
    assert not again.has_changes and again.summary["keep"] == 48 * shape.cubes


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from(["4x4x4", "4x4x8", "4x4x8t", "8x8x8", "4x8x8t", "4x8x8"]), min_size=2, max_size=5),
    st.randoms(),
)
def test_slices_never_share_a_port_and_reallocation_reuses_wiring(fleet, shapes, rnd):
    assert fleet("init", "--force").code == 0  # hypothesis reuses the fixture: start each example afresh
    made = []
    for n, text in enumerate(shapes):
        args = ["allocate", f"s{n}", "--shape", text.rstrip("t")] + (["--twisted"] if text.endswith("t") else [])
        r = fleet(*args)
        if r.code == 1:
            break
        assert r.code == 0, r.err
        assert fleet("plan-xconnect", f"s{n}", "--apply").code == 0
        made.append((f"s{n}", args))
    doc = json.loads((fleet.state / "state.json").read_text())
    owners: dict[tuple[str, str, int], str] = {}
    for name, sl in doc["slices"].items():
        coords = {c: tuple(v) for c, v in sl["coords"].items()}
        for ocs, pairs in xconnect.wanted_pairs(parse_shape(sl["shape"], sl["twisted"]), FLEET, coords).items():
            key = ocs.key
            assert {tuple(p) for p in pairs} <= {tuple(p) for p in doc["ocs"][key]}
            for north, south in pairs:
                for port in (("n", key, north), ("s", key, south)):
                    assert owners.setdefault(port, name) == name
    name, args = rnd.choice(made)
    assert fleet("release", name).code == 0
    assert fleet(*args).code == 0
    plan = fleet("plan-xconnect", name, "-o", "json").json
    assert plan["summary"]["add"] == 0 and plan["summary"]["remove"] == 0
    for other, _ in made:  # the other slices are still wired as before; the one allocated again is not wired yet
        assert fleet("plan-xconnect", other, "--detailed-exitcode").code == (4 if other == name else 0)


def test_rewiring_a_released_cube_set_removes_the_conflicting_pairs(fleet):
    cubes = ",".join(f"c{i:02d}" for i in range(8))
    assert fleet("allocate", "a", "--shape", "8x8x8", "--cubes", cubes).code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("release", "a").code == 0
    assert fleet("allocate", "b", "--shape", "4x8x8", "--twisted", "--cubes", "c00,c01,c02,c03").code == 0
    plan = fleet("plan-xconnect", "b", "-o", "json").json
    s = plan["summary"]
    assert s["add"] + s["keep"] == 48 * 4 and s["remove"] > 0
    fleet("plan-xconnect", "b", "--apply")
    ocs = {o["id"]: o["xconnects"] for o in fleet("show", "ocs", "-o", "json").json}
    for pairs in ocs.values():
        souths = [s for _, s in pairs]
        assert len(souths) == len(set(souths))


def test_allocation_refuses_without_enough_healthy_cubes(fleet):
    add_fault(fleet.state, "host:c00/3")
    assert fleet("allocate", "big", "--shape", "16x16x16").code == 1
    r = fleet("allocate", "big", "--shape", "16x16x16")
    assert "need 64" in r.err and "63 healthy free, 1 out of the pool" in r.err  # as `status` counts them
    assert fleet("allocate", "ok", "--shape", "16x16x16", "--cubes", ",".join(f"c{i:02d}" for i in range(64))).code == 1


@pytest.mark.parametrize(
    "fault, expect",
    [
        ("ocs:pod0/y/7", "ocs:pod0/y/7 is down"),
        ("link:c03/z/5/in", "link:c03/z/5/in is down"),
    ],
)
def test_plan_refuses_failed_ocs_or_port_and_names_it(fleet, fault, expect):
    cubes = ",".join(f"c{i:02d}" for i in range(8))
    assert fleet("allocate", "s", "--shape", "8x8x8", "--cubes", cubes, "--no-fault-tolerant-routing").code == 0
    add_fault(fleet.state, fault, planned=fault.startswith("link"))
    before = snapshot(fleet.state)
    r = fleet("plan-xconnect", "s", "--apply")
    assert r.code == 1 and expect in r.err
    assert snapshot(fleet.state) == before


def test_refusals_leave_state_unchanged(fleet, tmp_path):
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    assert fleet("allocate", "t", "--shape", "4x4x4").code == 0  # the serial moves on
    add_fault(fleet.state, "chip:c00/1,1,1")
    before = snapshot(fleet.state)
    cases = [
        (["apply-xconnect", plan], 1, "stale plan"),
        (["plan-xconnect", "nope"], 1, "unknown slice or job 'nope'"),
        (["plan-xconnect", "s"], 1, "out of the pool"),
        (["allocate", "u", "--shape", "4x4x4", "--cubes", "c00"], 1, "c00 is out of the pool"),
        (["allocate", "u", "--shape", "4x4x4", "--cubes", "c99"], 2, "unknown cube 'c99'"),
        (["allocate", "../x", "--shape", "4x4x4"], 2, "bad name"),
        (["allocate", "s", "--shape", "4x4x4"], 1, "already exists"),
        (["allocate", "u", "--shape", "3x3x3"], 2, "smaller than a cube"),
        (["release", "nope"], 1, "unknown slice"),
    ]
    for args, code, text in cases:
        r = fleet(*args)
        assert (r.code, text in r.err) == (code, True), (args, r.err)
        assert snapshot(fleet.state) == before
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                **json.loads(plan.read_text()),
                "ocs": [{"id": "ocs:pod0/x/1", "add": [[1, "a"]], "remove": [], "keep": 0}],
            }
        )
    )
    r = fleet("apply-xconnect", bad)
    assert r.code == 2 and "ocs.0.add.0.1" in r.err and str(bad) in r.err
    assert snapshot(fleet.state) == before


@pytest.fixture
def saved_plan(fleet, tmp_path):
    """A fleet (one 64-cube TPU v4 pod) with slice s (4x4x8) planned, not applied: the plan's file and document."""
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    return fleet, json.loads(plan.read_text())


@pytest.mark.parametrize(
    ("edit", "field", "value"),
    [
        (lambda d: d["ocs"][0].update(id="ocs:pod0/x/99"), "field ocs.0.id", "'ocs:pod0/x/99'"),  # 16 a dimension
        (lambda d: d["ocs"][0].update(id="ocs:pod7/x/0"), "field ocs.0.id", "'ocs:pod7/x/0'"),  # no such pod
        (lambda d: d["ocs"][0].update(add=[[0, 99999]]), "field ocs.0.add.0", "[0, 99999]"),
        (lambda d: d["ocs"][0].update(remove=[[64, 0]]), "field ocs.0.remove.0", "[64, 0]"),  # 64 cabled: 0-63
        (lambda d: d.update(cubes={"c99": [0, 0, 0]}), "field cubes.c99", "'c99'"),  # a 64-cube fleet
        (lambda d: d["cubes"].update(c00=[0, 0]), "field cubes.c00", "[0, 0]"),
        (lambda d: d.update(blocked=5), "field blocked", "5"),
        (lambda d: d.update(deferred=None), "field deferred", "None"),
    ],
)
def test_a_malformed_saved_plan_is_bad_input_not_a_stale_plan(saved_plan, tmp_path, edit, field, value):
    fleet, doc = saved_plan
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    before = snapshot(fleet.state)
    line = one_line(fleet("apply-xconnect", bad))
    assert f"{bad}: {field}:" in line and f"(value {value})" in line
    assert snapshot(fleet.state) == before


def test_a_saved_plan_of_an_unknown_slice_says_it_is_unknown(saved_plan, tmp_path):
    fleet, doc = saved_plan
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**doc, "slice": "zzz"}))
    before = snapshot(fleet.state)
    line = one_line(fleet("apply-xconnect", bad), 1)
    assert "unknown slice 'zzz' (slices: s)" in line and str(bad) in line and "released" not in line
    assert snapshot(fleet.state) == before


def test_a_malformed_part_of_a_job_plan_is_named_by_its_place(fleet, tmp_path):
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "j", "--out", plan).code == 0
    doc = json.loads(plan.read_text())
    doc["plans"][1]["ocs"][0]["add"] = [[0, 99999]]
    plan.write_text(json.dumps(doc))
    before = snapshot(fleet.state)
    assert f"{plan}: field plans.1.ocs.0.add.0:" in one_line(fleet("apply-xconnect", plan))
    assert snapshot(fleet.state) == before


def test_a_plan_applied_twice_is_already_applied_until_the_wiring_it_made_is_not_enough(fleet, tmp_path):
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0  # x/3's pairs deferred
    assert fleet("apply-xconnect", plan).code == 0
    before = snapshot(fleet.state)
    again = fleet("apply-xconnect", plan)
    assert again.code == 0 and "already applied" in again.out
    doc = json.loads(fleet("apply-xconnect", plan, "-o", "json").out)
    assert doc["already_applied"] is True and doc["summary"]["add"] == 0 and doc["routes_stale"] == []
    assert snapshot(fleet.state) == before  # nothing committed
    assert fleet("clear-fault", "ocs:pod0/x/3").code == 0  # the deferred pairs are wanted now
    before = snapshot(fleet.state)
    r = fleet("apply-xconnect", plan)
    assert r.code == 1 and "stale plan" in r.err and "ocs:pod0/x/3" in r.err
    assert snapshot(fleet.state) == before


def test_subcube_slices_pack_best_fit_into_one_cube(fleet):
    for n, shape in enumerate(["2x2x4", "2x2x4", "2x4x4"]):
        assert fleet("allocate", f"m{n}", "--shape", shape).code == 0
    slices = {s["name"]: s for s in fleet("show", "slices", "-o", "json").json}
    assert {tuple(s["cubes"]) for s in slices.values()} == {("c00",)}
    machines = [m for s in slices.values() for m in s["machines"]]
    assert sorted(machines) == list(range(16))
    assert fleet("allocate", "m3", "--shape", "2x2x1", "-o", "json").json["cubes"] == ["c01"]


def test_a_down_ocs_is_deferred_for_slices_with_fault_tolerant_routing(fleet):
    add_fault(fleet.state, "ocs:pod0/y/7")
    assert fleet("allocate", "s", "--shape", "8x8x8").code == 0
    r = fleet("plan-xconnect", "s", "--apply", "-o", "json")
    assert r.code == 0 and r.json["deferred"] == ["ocs:pod0/y/7"]
    assert r.json["summary"]["add"] == 47 * 8
    status = fleet("status", "-o", "json").json
    assert status["incomplete_wiring"] == ["s"] and status["slices"][0]["missing_xconnects"] == 8
    routes = fleet("routes", "s", "-o", "json").json
    assert routes["unroutable_pairs"] == 0 and routes["deadlock_free"]
    assert fleet("clear-fault", "ocs:pod0/y/7", "-o", "json").json["rewire"] == ["s"]
    assert fleet("plan-xconnect", "s", "--apply", "-o", "json").json["summary"]["add"] == 8
    assert fleet("status", "-o", "json").json["incomplete_wiring"] == []


def test_second_pod_has_its_own_ocs_and_cube_ids(cli):
    assert cli("init", "--pods", "2").code == 0
    r = cli("allocate", "p1", "--shape", "8x8x8", "--pod", "pod1", "-o", "json")
    assert r.code == 0 and r.json["pod"] == "pod1" and r.json["cubes"][0] == "c64"
    plan = cli("plan-xconnect", "p1", "--apply", "-o", "json").json
    assert {o["id"].split("/")[0] for o in plan["ocs"]} == {"ocs:pod1"}
    # ports are positions inside pod1: c64 is port 0 there
    assert all(0 <= n < 8 and 0 <= s < 8 for o in plan["ocs"] for n, s in o["add"])
    assert cli("routes", "p1").code == 0
    r = cli("inject-fault", "ocs:pod0/x/1", "-o", "json").json
    assert r["slices"] == []  # pod0's OCS is not pod1's
    r = cli("inject-fault", "ocs:pod1/x/1", "-o", "json").json
    assert [s["action"] for s in r["slices"]] == ["reroute"]
    r = cli("allocate", "x", "--shape", "4x4x8", "--cubes", "c01,c64")
    assert r.code == 2 and "one pod" in r.err


def test_a_stale_plan_names_what_changed_not_the_pairs_it_put_in_place_itself(fleet, tmp_path):
    """Applied while ocs x/3 was down, then x/3 repaired: the plan is stale because x/3's pairs are wanted now. Its
    other 47 OCS hold the very pairs it added; they were listed as "changed" too, burying the one that did."""
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    assert fleet("apply-xconnect", plan).code == 0
    assert fleet("clear-fault", "ocs:pod0/x/3").code == 0
    r = fleet("apply-xconnect", plan, "-o", "json")
    err = json.loads(r.err)
    assert r.code == 1 and "stale plan" in err["error"]
    changed = [item for item in err["items"] if item.endswith("changed")]
    assert changed == ["ocs:pod0/x/3 changed"], changed


def test_a_plan_whose_shape_was_edited_is_called_edited_not_a_slice_that_changed(fleet, tmp_path):
    """The slice was 4x4x4 all along; the plan's shape was changed by hand. Once the serial had moved on (another
    slice allocated), the refusal said the slice "is now 4x4x4", as if it had been allocated again since."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    plan = tmp_path / "plan.json"
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    assert fleet("allocate", "other", "--shape", "4x4x4").code == 0
    made_later = "2099-01-01T00:00:00Z"  # made after the allocation (a plan is made a second or more later)
    plan.write_text(json.dumps({**json.loads(plan.read_text()), "shape": "4x4x8", "made": made_later}))
    before = snapshot(fleet.state)
    r = fleet("apply-xconnect", plan)
    assert r.code == 1 and "shape 4x4x8 (the slice is 4x4x4)" in r.err and "edited" in r.err
    assert "is now" not in r.err
    assert snapshot(fleet.state) == before


def test_a_wiring_with_nothing_to_change_still_names_its_slices_stale_tables(fleet, tmp_path):
    """`plan-xconnect --apply` (and `apply-xconnect`) with nothing to add or remove gave `routes_stale: []` though
    the slice's stored tables were stale (a repair made them so), unlike every other wiring; now the slice is listed
    and the table gives its `next: tpufleet routes SLICE`, and nothing is committed."""
    for args in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        assert fleet(*args).code == 0
    assert fleet("inject-fault", "ocs:pod0/x/5").code == 0
    assert fleet("clear-fault", "f1").code == 0  # a's tables are stale, its cross-connects all in place
    plan = tmp_path / "a.plan"
    assert fleet("plan-xconnect", "a", "--out", plan).code == 0
    before = snapshot(fleet.state)
    doc = fleet("plan-xconnect", "a", "--apply", "-o", "json").json
    assert (doc["summary"]["add"], doc["summary"]["remove"], doc["routes_stale"]) == (0, 0, ["a"])
    assert fleet("apply-xconnect", plan, "-o", "json").json["routes_stale"] == ["a"]
    text = fleet("plan-xconnect", "a", "--apply").out
    assert text.endswith("applied.\n  next: tpufleet routes a  (its stored tables are stale)\n")
    assert snapshot(fleet.state) == before  # nothing committed
    assert fleet("routes", "a").code == 0
    assert fleet("plan-xconnect", "a", "--apply", "-o", "json").json["routes_stale"] == []


def test_a_wiring_names_the_wired_slices_with_no_tables_and_gives_their_routes_step(fleet, tmp_path):
    """After `allocate`'s `next: plan-xconnect --apply`, the wiring said only `applied.`, though the slice runs on no
    tables until `routes` stores some (`explain` gives that step): it lists them (`routes_none`) and the table gives
    each its `routes` step; a sub-cube slice (no optical links) needs none, and routed tables end it."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("allocate", "small", "--shape", "2x2x4").code == 0
    assert fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2").code == 0
    r = fleet("plan-xconnect", "a", "--apply", "-o", "json")
    assert (r.json["routes_stale"], r.json["routes_none"]) == ([], ["a"])
    assert "next: tpufleet routes a  (no tables stored for it)" in fleet("plan-xconnect", "a", "--apply").out
    assert fleet("plan-xconnect", "small", "--apply", "-o", "json").json["routes_none"] == []
    plan = tmp_path / "j.plan"
    assert fleet("plan-xconnect", "j", "--out", plan).code == 0
    r = fleet("apply-xconnect", plan)
    assert r.code == 0 and [line.strip() for line in r.out.splitlines() if "next:" in line] == [
        "next: tpufleet routes j-0  (no tables stored for it)",
        "next: tpufleet routes j-1  (no tables stored for it)",
    ]
    assert fleet("routes", "a").code == 0
    assert fleet("plan-xconnect", "a", "--apply", "-o", "json").json["routes_none"] == []
