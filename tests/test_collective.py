"""The collective cost model: closed forms, dimension orders, twisted rings, sparse tables, profile and sizes."""

import dataclasses

import numpy as np
import pytest

from tpufleet.collectives import tables
from tpufleet.collectives.algorithms import Context, best_of, estimate, parse_order
from tpufleet.collectives.cost import ideal_step_time, reroute_slowdown
from tpufleet.collectives.profile import default_profile, parse_size, profile_from_doc
from tpufleet.collectives.schedules import dim_phases
from tpufleet.collectives.sparse import sparse
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.shapes import Shape, parse_shape

GIB = 1 << 30


def ctx_of(shape, profile=None):
    return Context(tables.healthy(shape), profile or default_profile())


def one(ctx, op, algorithm, order=None, nbytes=GIB):
    (e,) = estimate(ctx, op, nbytes, algorithm, order)
    assert e.runs
    return e


@pytest.mark.parametrize("text", ["4x4x4", "8x8x8"])
def test_ring_all_reduce_is_the_closed_form_exactly(text):
    ctx = ctx_of(parse_shape(text))
    pr = ctx.profile
    p, n, B, a = ctx.tables.n, float(GIB), pr.link_bandwidth, pr.hop_latency
    ring = one(ctx, "all-reduce", "ring")
    assert ring.bandwidth == pytest.approx(2 * (p - 1) / p * n / B, rel=1e-12)
    assert ring.latency == pytest.approx(2 * (p - 1) * a, rel=1e-12)
    bidir = one(ctx, "all-reduce", "bidir-ring")
    assert bidir.bandwidth == pytest.approx((p - 1) / p * n / B, rel=1e-12)
    assert bidir.latency == pytest.approx(ring.latency, rel=1e-12)
    for op in ("reduce-scatter", "all-gather"):
        assert one(ctx, op, "ring").seconds == pytest.approx(ring.seconds / 2, rel=1e-12)


@pytest.mark.parametrize("text, twisted", [("8x8x8", False), ("4x4x8", False), ("4x4x8", True), ("4x8x8", True)])
def test_dim_by_dim_is_the_sum_over_dimensions_of_the_ring_closed_form(text, twisted):
    shape = parse_shape(text, twisted)
    ctx = ctx_of(shape)
    pr = ctx.profile
    B, a, n = pr.link_bandwidth, pr.hop_latency, float(GIB)
    for order in [(0, 1, 2), (2, 0, 1)]:
        e = one(ctx, "all-reduce", "dim-by-dim", order)
        expect_bw = expect_lat = 0.0
        payload = n
        for ph in dim_phases(shape, order, ctx.tables.healthy_nbr):
            m, hops = ph.size, sum(abs(k) for _, k in ph.generator)
            expect_bw += (m - 1) / m * payload / B  # bidirectional ring all-reduce: half of 2(m-1)/m * payload/B
            expect_lat += 2 * (m - 1) * hops * a
            payload /= m
        assert e.bandwidth == pytest.approx(expect_bw, rel=1e-12)
        assert e.latency == pytest.approx(expect_lat, rel=1e-12)
        # with equal links the bandwidth terms telescope: (1 - 1/p) n/B whatever the order
        assert e.bandwidth == pytest.approx((1 - 1 / shape.chips) * n / B, rel=1e-12)


@pytest.mark.parametrize("text", ["4x4x4", "8x8x8"])
def test_multi_dim_on_a_cubic_torus_is_a_third_of_dim_by_dim(text):
    shape = parse_shape(text)
    ctx = ctx_of(shape)
    multi = one(ctx, "all-reduce", "multi-dim", (0, 1, 2))
    B, n = ctx.profile.link_bandwidth, float(GIB)
    assert multi.bandwidth == pytest.approx((1 - 1 / shape.chips) * n / (3 * B), rel=1e-12)
    assert multi.latency == one(ctx, "all-reduce", "dim-by-dim", (0, 1, 2)).latency


def test_multi_dim_at_45_gbps_matches_the_cloud_all_reduce_bandwidth_per_pod():
    """Cloud TPU v4 documentation: all-reduce bandwidth 1.1 PB/s per 4,096-chip pod (links at about 45 GB/s)."""
    pr = dataclasses.replace(default_profile(), link_bandwidth=45e9)
    best = best_of(estimate(ctx_of(parse_shape("16x16x16"), pr), "all-reduce", GIB, "auto", None))
    assert best is not None and best.algorithm == "multi-dim"
    assert best.bus_bandwidth() * 4096 == pytest.approx(1.1e15, rel=0.05)


def test_twist_balances_multi_dim_on_4x4x8():
    twisted, plain = (
        best_of(estimate(ctx_of(parse_shape("4x4x8", tw)), "all-reduce", GIB, "auto", None)) for tw in (True, False)
    )
    assert twisted is not None and plain is not None
    assert twisted.algorithm == plain.algorithm == "multi-dim"
    assert plain.seconds / twisted.seconds > 1.4  # every part's first ring has 8 chips on the twisted slice


def test_twist_turns_the_x_ring_into_a_helix_and_corrects_later_rings():
    shape = parse_shape("4x4x8", twisted=True)
    phases = dim_phases(shape, (0, 1, 2), tables.healthy(shape).healthy_nbr)
    assert [(ph.size, ph.step_text) for ph in phases] == [(8, "+x"), (4, "+y-x"), (4, "+z-x")]
    plain = dim_phases(parse_shape("4x4x8"), (0, 1, 2), tables.healthy(parse_shape("4x4x8")).healthy_nbr)
    assert [(ph.size, ph.step_text) for ph in plain] == [(4, "+x"), (4, "+y"), (8, "+z")]
    helix = phases[0].rings[0]
    xyz = np.array([(c // 32, c // 8 % 4, c % 8) for c in helix])
    assert sorted(set(xyz[:, 0].tolist())) == [0, 1, 2, 3] and len(set(xyz[:, 2].tolist())) == 2


def paper_profile(x_share):
    pr = default_profile()
    return dataclasses.replace(pr, dimension_bandwidth={"x": pr.link_bandwidth * x_share})


@pytest.mark.parametrize("x_share", [0.5, 0.25])
def test_paper_001_slow_x_links_large_payload_on_y_wins(x_share):
    """A 2D-like torus slice (X long) whose X links are slower: dim-by-dim with the large payload on Y beats a 1D
    ring and the other order, as in the TPU-v3 multipod of "Exploring the limits of concurrency in ML training on
    Google TPUs" (whose X is a mesh: tests/test_collective_whatif.py and tests/test_paper_figures.py)."""
    ctx = ctx_of(Shape((128, 32, 1)), paper_profile(x_share))
    y_first = one(ctx, "all-reduce", "dim-by-dim", (1, 0))
    x_first = one(ctx, "all-reduce", "dim-by-dim", (0, 1))
    ring, bidir = one(ctx, "all-reduce", "ring"), one(ctx, "all-reduce", "bidir-ring")
    assert y_first.seconds < bidir.seconds < ring.seconds and y_first.seconds < x_first.seconds
    assert y_first.phases[1].payload == pytest.approx(y_first.phases[0].payload / 32)  # X carries 32x less
    B, n = ctx.profile.link_bandwidth, float(GIB)
    Bx = B * x_share
    expect = (31 / 32) * n / B + (127 / 128) * (n / 32) / Bx
    assert y_first.bandwidth == pytest.approx(expect, rel=1e-12)
    best = best_of(estimate(ctx, "all-reduce", GIB, "auto", None))
    assert best is not None and (best.algorithm, best.order) == ("dim-by-dim", (1, 0))


def test_auto_picks_the_order_with_the_broken_dimension_last():
    from test_collective_faults import ocs_down

    shape = parse_shape("8x8x8")
    t = ocs_down(shape, "x", 5)
    ctx = Context(t, default_profile())
    best = best_of(estimate(ctx, "all-reduce", GIB, "dim-by-dim", None))
    assert best is not None and best.order is not None and best.order[-1] == 0
    worst = max(estimate(ctx, "all-reduce", GIB, "dim-by-dim", None), key=lambda e: e.seconds)
    assert worst.order is not None and worst.order[0] == 0 and worst.seconds > 1.3 * best.seconds
    # With every dimension busy, some part starts on the broken dimension and the detours load the other
    # dimensions' links too: the TPUv4 "Resiliency at Scale" paper reports nearest-neighbour all-reduce losing
    # about 50% under one OCS failure; splitting the data unevenly keeps a little more than half here.
    multi = best_of(estimate(ctx, "all-reduce", GIB, "multi-dim", None))
    healthy = best_of(estimate(ctx_of(shape), "all-reduce", GIB, "multi-dim", None))
    assert multi is not None and healthy is not None
    assert 1.6 < multi.seconds / healthy.seconds < 2.0 and multi.seconds < best.seconds


def test_ideal_step_time_and_reroute_slowdown():
    from helpers import ocs_failure

    shape = parse_shape("4x4x8")
    pr = default_profile()
    compute = 1e15 / (128 * pr.peak_flops)
    fastest = best_of(estimate(ctx_of(shape), "all-reduce", GIB, "auto", None))
    assert fastest is not None and fastest.algorithm == "multi-dim"
    healthy = fastest.seconds
    assert ideal_step_time(shape, 1e15, GIB) == pytest.approx(compute + healthy, rel=1e-12)
    assert ideal_step_time(shape, 1e15, 0) == pytest.approx(compute, rel=1e-12)
    _exp, alive = ocs_failure(shape, "z", 5)
    slow = reroute_slowdown(shape, alive, GIB)
    assert 1.0 < slow < 2.5
    assert 1.0 < reroute_slowdown(shape, alive, GIB, model_flops_per_step=1e16) < slow  # compute dilutes it


def test_sparse_tables_keep_the_rings_so_dim_by_dim_runs_and_all_to_all_does_not():
    shape = parse_shape("8x8x8")
    full = tables.healthy(shape)
    t, missing = sparse(full, 21)  # 7 + 7 + 7 ring members
    assert missing == 0 and (t.port >= 0).sum(axis=1).max() == 21
    ctx = Context(t, default_profile())
    assert all(e.runs for e in estimate(ctx, "all-reduce", GIB, "dim-by-dim", None))
    assert one(ctx, "all-reduce", "ring").runs
    direct, *dims = estimate(ctx, "all-to-all", GIB, "auto", None)
    assert direct.algorithm == "direct" and not direct.runs
    assert all(e.runs for e in dims)
    ref = one(Context(full, default_profile()), "all-reduce", "dim-by-dim", (0, 1, 2))
    assert one(ctx, "all-reduce", "dim-by-dim", (0, 1, 2)).seconds == ref.seconds
    small, missing = sparse(full, 10)
    assert missing == 11
    assert not any(e.runs for e in estimate(Context(small, default_profile()), "all-reduce", GIB, "dim-by-dim", None))


def test_all_to_all_direct_matches_the_routing_layers_optimal_load():
    ctx = ctx_of(parse_shape("8x8x8"))
    e = one(ctx, "all-to-all", "direct", nbytes=512 * 1000)
    assert e.phases[0].pattern.max_messages == 512  # the optimum on 8x8x8, one unit per ordered pair
    assert e.bandwidth == pytest.approx(512 * 1000 / ctx.profile.link_bandwidth, rel=1e-12)


@pytest.mark.parametrize(
    "text, value",
    [("1GiB", GIB), ("512MiB", 512 << 20), ("4096", 4096), ("1.5GB", 1_500_000_000), (" 2 KiB ", 2048), ("1e9", 10**9)],
)
def test_sizes_accept_units(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize(
    "text, message",
    [
        ("-1", "bad option --bytes: '-1' must be at least 1 byte"),
        ("1e99", "bad option --bytes: '1e99' is over the limit of 1125899906842624 bytes (1 PiB)"),
        ("12 parsecs", "bad option --bytes: '12 parsecs' is not a size (e.g. 1GiB, 512MiB, 4096)"),
        ("nan", "bad option --bytes: 'nan' is not a size (e.g. 1GiB, 512MiB, 4096)"),
    ],
)
def test_bad_sizes_name_the_value(text, message):
    with pytest.raises(BadInput) as exc:
        parse_size(text)
    assert str(exc.value) == message


def test_bad_orders_are_refused():
    assert parse_order("y,x,z") == (1, 0, 2)
    for bad in ("xx", "xyw", "xyzx", ""):
        with pytest.raises(BadInput, match="bad option --dims"):
            parse_order(bad)


def doc(**ici):
    return {
        "schema_version": 1,
        "name": "t",
        "ici": {"link_bandwidth": 50e9, "hop_latency": 1e-6, **ici},
        "chip": {"peak_flops": 1e12, "hbm_bytes": 1e9, "hbm_bandwidth": 1e9},
    }


@pytest.mark.parametrize(
    "ici, message",
    [
        ({"link_bandwidth": -5e9}, "p.yaml: field ici.link_bandwidth: must be a positive number (value -5000000000.0)"),
        ({"hop_latency": "soon"}, "p.yaml: field ici.hop_latency: must be a number (value 'soon')"),
        # float() takes digit groups and other scripts' digits; a YAML number has neither
        ({"link_bandwidth": "5_0e9"}, "p.yaml: field ici.link_bandwidth: must be a number (value '5_0e9')"),
        (
            {"link_bandwidth": "\u0665\u0660e9"},
            "p.yaml: field ici.link_bandwidth: must be a number (value '\u0665\u0660e9')",
        ),
        ({"link_bandwidth": " 50e9"}, "p.yaml: field ici.link_bandwidth: must be a number (value ' 50e9')"),
        (
            {"dimension_bandwidth": {"w": 1e9}},
            "p.yaml: field ici.dimension_bandwidth.w: unknown dimension; expected x, y, z (value 1000000000.0)",
        ),
        (
            {"dimension_bandwidth": {"x": 0}},
            "p.yaml: field ici.dimension_bandwidth.x: must be a positive number (value 0)",
        ),
        (
            {"speed": 1},
            "p.yaml: field ici.speed: unknown key; expected dimension_bandwidth, hop_latency, link_bandwidth (value 1)",
        ),
    ],
)
def test_bad_profiles_name_file_field_and_value(ici, message):
    with pytest.raises(BadStateFile) as exc:
        profile_from_doc(doc(**ici), "p.yaml")
    assert str(exc.value) == message


def test_shipped_profile_is_the_shipped_file():
    """The core's copy of the shipped document (it reads no file) decodes to what the shipped YAML does."""
    from tpufleet.collectives.profile import SHIPPED
    from tpufleet.state.profiles import read_profile

    assert read_profile(SHIPPED) == default_profile() == read_profile(None)


def test_shipped_profile_cites_its_sources():
    pr = default_profile()
    assert (pr.link_bandwidth, pr.peak_flops, pr.hbm_bytes) == (50e9, 275e12, 32 * GIB)
    assert any("cloud.google.com/tpu/docs/v4" in s for s in pr.sources)
    assert any("Resiliency at Scale" in s for s in pr.sources)


def test_sparse_route_tables_export_only_the_kept_entries():
    from tpufleet.collectives.sparse import sparse_route_tables
    from tpufleet.routing.export import ibroute_text
    from tpufleet.routing.report import evaluate
    from tpufleet.topology import neighbors

    shape = parse_shape("4x4x4")
    exp = neighbors(shape)
    rt = evaluate(shape, exp, exp, traffics=()).tables
    kept, missing = sparse_route_tables(rt, exp, 9)  # 3 + 3 + 3 ring members
    assert missing == 0 and ((kept.P >= 0).sum(axis=0) == 9).all() and ((kept.P == -2).sum(axis=0) == 54).all()
    text = ibroute_text(kept, [f"c{i}" for i in range(64)], "s")
    assert text.count("10 valid lids dumped") == 64  # itself and its 9 ring members


def test_ocs_down_graph_is_the_periodic_pattern_of_the_failure():
    from helpers import ocs_failure
    from tpufleet.collectives.cost import ocs_down_graph

    for text, twisted in [("8x8x8", False), ("4x4x8", True)]:
        shape = parse_shape(text, twisted)
        for dim, index in [("x", 5), ("z", 0)]:
            assert (ocs_down_graph(shape, [(dim, index)]) == ocs_failure(shape, dim, index)[1]).all()
    both = ocs_down_graph(parse_shape("8x8x8"), [("x", 5), ("y", 3)])
    # per OCS: 4 rings of its face position x 2 cube boundaries each x 2 directions
    assert int((both < 0).sum()) == 2 * 4 * 2 * 2


@pytest.mark.parametrize(("text", "meant"), [("100Mb", "100MB"), ("1Gb", "1GB"), ("2 Kib", "2KiB")])
def test_a_size_written_in_bits_is_refused_not_read_as_bytes(fleet, text, meant):
    """`--bytes 100Mb` (megabits, as link speeds are written: Gb/s) was read as 100 MB, eight times the size meant;
    small-letter units (100mb) stay bytes."""
    assert parse_size("100mb") == parse_size("100MB") == 100 * 10**6
    assert fleet("allocate", "s", "--shape", "2x2x1").code == 0
    r = fleet("collective", "s", "--assume-healthy", "--op", "all-reduce", "--bytes", text)
    assert r.code == 2 and f"'{text}' is in bits" in r.err and f"e.g. {meant}" in r.err
