"""`collective --topology 128x32 --wrap y --profile tpu-v3`: the TPU-v3 multipod of "Exploring the limits of
concurrency in ML training on Google TPUs" (MLSys 2021), a mesh in X and a torus in Y, with no fleet."""

import json

import pytest

from tpufleet.collectives.algorithms import Context, best_of, estimate
from tpufleet.collectives.tables import walk
from tpufleet.collectives.whatif import parse_topology, parse_wrap, what_if_tables
from tpufleet.errors import BadInput
from tpufleet.state.profiles import read_profile

GIB = 1 << 30


def test_the_mesh_has_no_x_wraparound_and_the_tables_route_every_pair_on_it():
    t = what_if_tables((8, 4, 1), (False, True, False))
    assert (t.nbr[:, 0] >= 0).sum() == 7 * 4 and (t.nbr[:, 2] >= 0).sum() == 32  # x: a line; y: a ring
    src, dst = [s for s in range(32) for _ in range(32)], [d for _ in range(32) for d in range(32)]
    _msg, _links, hops, ok = walk(t, src, dst)
    assert ok.all()
    x, y = [s // 4 for s in src], [s % 4 for s in src]
    xt, yt = [d // 4 for d in dst], [d % 4 for d in dst]
    expect = [abs(a - b) + min((c - e) % 4, (e - c) % 4) for a, b, c, e in zip(x, xt, y, yt, strict=True)]
    assert hops.tolist() == expect


def test_paper_001_y_first_on_the_mesh_carries_32x_less_over_x():
    """MLSys 2021, section 3.3: reduce-scatter along the Y torus first (bidirectional rings), then along X, so X
    carries 32 times less. The model: y first 14.07 ms, x first 26.65 ms (1.895x) for 1 GiB on TPU v3."""
    profile = read_profile("tpu-v3")
    ctx = Context(what_if_tables((128, 32, 1), (False, True, False)), profile)
    ests = estimate(ctx, "all-reduce", GIB, "auto", None)
    best = best_of(ests)
    assert best is not None and (best.algorithm, best.order) == ("dim-by-dim", (1, 0))
    x_first = next(e for e in ests if e.algorithm == "dim-by-dim" and e.order == (0, 1))
    assert best.phases[1].payload == pytest.approx(best.phases[0].payload / 32)
    B, h, n = profile.link_bandwidth, profile.hop_latency, float(GIB)
    # Y: 2 passes of 31 steps, half a chunk each way round the torus ring, one hop
    y = 2 * 31 * ((n / 32 / 2) / B + h)
    # X: a folded ring on the 128-chip line, two hops a step and two messages on each link
    x = 2 * 127 * (2 * (n / 32 / 128 / 2) / B + 2 * h)
    assert best.seconds == pytest.approx(x + y, rel=1e-12)
    assert x_first.seconds / best.seconds == pytest.approx(1.895, abs=0.001)
    assert best.seconds == pytest.approx(14.07e-3, abs=0.01e-3)


def test_the_cli_needs_no_fleet(cli):
    r = cli(
        "collective",
        "--topology",
        "128x32",
        "--wrap",
        "y",
        "--profile",
        "tpu-v3",
        "--op",
        "all-reduce",
        "--bytes",
        "1GiB",
        "-o",
        "json",
    )
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert (d["algorithm"], d["dims"], d["chips"], d["wrap"]) == ("dim-by-dim", "yx", 4096, "y")
    assert d["tables"]["source"] == "what-if" and d["profile"]["name"] == "tpu-v3"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--topology", "128"], "--topology"),
        (["--topology", "128x32x2x2"], "--topology"),
        (["--topology", "128x0"], "--topology"),
        (["--topology", "128x64"], "--topology"),
        (["--topology", "16x16", "--wrap", "w"], "--wrap"),
        (["--topology", "16x16", "--wrap", "yy"], "--wrap"),
        (["--topology", "16x16", "--table-capacity", "4"], "--table-capacity"),
        (["--wrap", "y"], "--topology"),
        (["s", "--topology", "16x16"], "'s'"),
        (["s", "--wrap", "y"], "bad option --wrap"),  # no --topology: the option given is named
    ],
)
def test_bad_what_if_options_exit_2_naming_the_option(cli, args, flag):
    r = cli("collective", *args, "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 2 and flag in r.err, r.err


def test_parsers():
    assert parse_topology("4x4x4") == (4, 4, 4) and parse_wrap("x,z") == (True, False, True)
    with pytest.raises(BadInput):
        parse_topology("4x٤")


@pytest.mark.parametrize("shape", ["2x2x4", "2x4x4"])
@pytest.mark.parametrize("algorithm", ["auto", "dim-by-dim", "multi-dim"])
def test_a_sub_cube_slice_and_the_what_if_of_its_mesh_give_the_same_time(fleet, shape, algorithm):
    """A sub-cube slice is a mesh in every dimension; the what-if of the same mesh folded its rings (two hops at
    most from one member to the next) and the slice did not (the ring closed over three hops): the same network
    took 18 us longer at 16 MiB on the slice."""
    assert fleet("allocate", "s", "--shape", shape).code == 0
    assert fleet("routes", "s").code == 0
    ask = ("--op", "all-reduce", "--bytes", "16MiB", "--algorithm", algorithm, "-o", "json")
    on_slice, what_if = fleet("collective", "s", *ask), fleet("collective", "--topology", shape, *ask)
    assert on_slice.code == what_if.code == 0, on_slice.err + what_if.err
    assert on_slice.json["time_s"] == what_if.json["time_s"]
    assert [p["hops"] for p in on_slice.json["phases"]] == [p["hops"] for p in what_if.json["phases"]]


@pytest.mark.parametrize("generation", ["tpu-v5p", "tpu7x"])
def test_a_what_if_takes_a_shipped_generations_figures_by_its_name(cli, generation):
    """Ring all-reduce on a 4x4x8 torus: 2(n-1)/n x bytes / the generation's 100 GB/s link, as on its pods."""
    r = cli("collective", "--topology", "4x4x8", "--wrap", "xyz", "--profile", generation, "--op", "all-reduce",
            "--bytes", "1GiB", "--algorithm", "ring", "-o", "json")  # fmt: skip
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["profile"]["name"] == generation and d["profile"]["link_bandwidth_Bps"] == 100e9
    assert d["bandwidth_s"] == pytest.approx(2 * 127 / 128 * (1 << 30) / 100e9)


def test_an_unknown_profile_name_lists_the_shipped_ones(cli):
    r = cli("collective", "--topology", "4x4", "--profile", "tpu-v9", "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 2
    assert "tpu-v9" in r.err and "tpu-v3, tpu-v4, tpu-v5p, tpu7x" in r.err


@pytest.mark.parametrize("generation", ["tpu-v5p", "tpu7x"])
def test_a_generation_profile_file_given_as_profile_says_to_give_its_name(cli, generation):
    """The generation's own file given to --profile was refused as "field title: unknown key", which said neither
    what the file is nor what to give instead; it is refused (exit 2) naming the file and the --profile to use."""
    from tpufleet.state.generations import SHIPPED_DIR

    path = SHIPPED_DIR / f"{generation}.yaml"
    r = cli("collective", "--topology", "4x4", "--profile", str(path), "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 2 and str(path) in r.err, r.err
    assert "is a generation profile, not a hardware profile" in r.err and f"--profile {generation})" in r.err


def test_a_ring_what_if_takes_its_one_dimension_as_the_order(cli):
    """`--dims` may leave out the dimensions one chip deep (README: `yx` on a 128x32); on a ring, 128x1, `--dims x`
    left out two and was refused as "not an order of x, y and z", though `xy` ran the same thing. It now runs;
    leaving out a longer dimension is still refused, naming it."""
    args = ("--op", "all-reduce", "--bytes", "1GiB", "-o", "json")
    r = cli("collective", "--topology", "128x1", "--wrap", "x", "--dims", "x", *args)
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert (d["algorithm"], d["dims"]) == ("dim-by-dim", "x")
    assert d["bandwidth_s"] == pytest.approx(2 * 127 * (1 << 30) / 256 / 50e9)  # bidirectional: n / 2p a step
    r = cli("collective", "--topology", "4x4", "--dims", "x", *args)
    assert r.code == 2 and "bad option --dims: 'x' leaves out y, a dimension of 4 chips" in r.err


@pytest.mark.parametrize(
    ("dims", "wraps"),
    [
        ((2, 2, 4), (False, False, False)),  # a sub-cube slice's mesh
        ((2, 4, 4), (False, False, False)),
        ((8, 8, 1), (False, False, False)),
        ((8, 8, 1), (True, False, False)),  # the snake closes over y, which does not wrap
        ((16, 16, 16), (False, False, False)),
        ((3, 4, 5), (False, True, False)),
    ],
)
def test_a_ring_through_every_chip_of_a_mesh_takes_mesh_links_only(dims, wraps):
    """The snake closed over a wraparound the mesh has not: a route of up to 15 hops whose links the ring's steps
    the other way round also take, so a bidirectional ring was no faster than a ring (2x2x4: 40.36 ms each) and
    `auto` chose a slower algorithm. A ring of neighbours exists wherever the chips are even in number and
    not one line: every step is one link, each link carries one message, and bidir-ring is the closed form."""
    import networkx as nx

    t = what_if_tables(dims, wraps)
    ctx = Context(t, read_profile("tpu-v4"))
    ring = ctx.snake()[0].tolist()
    graph = nx.Graph((s, int(d)) for s in range(t.n) for d in t.nbr[s] if d >= 0)
    assert sorted(ring) == list(range(t.n))
    assert all(graph.has_edge(a, b) for a, b in zip(ring, ring[1:] + ring[:1], strict=True))
    (bidir,) = estimate(ctx, "all-reduce", GIB, "bidir-ring", None)
    p, n, B = t.n, float(GIB), ctx.profile.link_bandwidth
    assert bidir.bandwidth == pytest.approx((p - 1) / p * n / B, rel=1e-12)
    assert [(ph.pattern.max_messages, ph.pattern.hops) for ph in bidir.phases] == [(1, 1)]
