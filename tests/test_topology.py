import networkx as nx
import pytest

from tpufleet.errors import BadInput
from tpufleet.shapes import parse_shape
from tpufleet.topology import metrics


def independent_graph(dims, twisted, wraps):
    """The chip graph written out from the papers' words, one edge at a time."""
    X, Y, Z = dims
    if twisted and Y == X:
        tx, ty = (0, 0, X), (0, 0, X)
    elif twisted:
        tx, ty = (0, X, X), (0, 0, 0)
    else:
        tx = ty = (0, 0, 0)
    g = nx.Graph()
    for x in range(X):
        for y in range(Y):
            for z in range(Z):
                g.add_node((x, y, z))
                if x + 1 < X:
                    g.add_edge((x, y, z), (x + 1, y, z))
                elif wraps and X > 1:
                    g.add_edge((x, y, z), (0, (y + tx[1]) % Y, (z + tx[2]) % Z))
                if y + 1 < Y:
                    g.add_edge((x, y, z), (x, y + 1, z))
                elif wraps and Y > 1:
                    g.add_edge((x, y, z), (x, 0, (z + ty[2]) % Z))
                if z + 1 < Z:
                    g.add_edge((x, y, z), (x, y, z + 1))
                elif wraps and Z > 1:
                    g.add_edge((x, y, z), (x, y, 0))
    return g


CASES = [
    ("4x4x8", True),
    ("4x4x8", False),
    ("4x8x8", True),
    ("4x8x8", False),
    ("8x8x8", False),
    ("4x4x4", False),
    ("2x2x1", False),
    ("2x4x4", False),
    ("2x2x4", False),
    ("1x2x3", False),
    ("8x8x16", True),
]


@pytest.mark.parametrize("shape, twisted", CASES)
def test_metrics_match_networkx_all_pairs(shape, twisted):
    s = parse_shape(shape, twisted)
    m = metrics(s)
    g = independent_graph(s.dims, twisted, s.wraps)
    lengths = dict(nx.all_pairs_shortest_path_length(g))
    n = s.chips
    values = [d for src in lengths.values() for d in src.values()]
    assert len(values) == n * n
    assert m["diameter"] == max(values)
    assert m["mean_hops"] == pytest.approx(sum(values) / (n * (n - 1)), abs=1e-6)
    assert m["links"] == g.number_of_edges() == expected_links(s.dims, s.wraps)


def expected_links(dims, wraps):
    """Bidirectional links, counted per axis: n - 1 per line of n chips, n with a wraparound (n > 2)."""
    chips = dims[0] * dims[1] * dims[2]
    return sum(chips // n * (n if wraps and n > 2 else n - 1) for n in dims)


def test_a_single_cube_torus_has_three_links_per_chip():
    m = metrics(parse_shape("4x4x4"))
    assert (m["topology"], m["chips"], m["links"]) == ("torus", 64, 192)


def test_reference_figures_from_the_papers():
    t = metrics(parse_shape("4x4x8", True))
    r = metrics(parse_shape("4x4x8"))
    assert (t["diameter"], round(t["mean_hops"], 4)) == (6, 3.4646)
    assert (r["diameter"], round(r["mean_hops"], 4)) == (8, 4.0315)
    assert metrics(parse_shape("4x8x8", True))["diameter"] == 6


@pytest.mark.parametrize("shape, twisted", [("4x4x8", True), ("8x8x8", False), ("2x4x4", False)])
def test_bisection_is_the_smallest_axis_cut_counted_by_brute_force(shape, twisted):
    s = parse_shape(shape, twisted)
    g = independent_graph(s.dims, twisted, s.wraps)
    best = min(
        sum(1 for a, b in g.edges if (a[d] < s.dims[d] // 2) != (b[d] < s.dims[d] // 2))
        for d in range(3)
        if s.dims[d] > 1
    )
    assert metrics(s)["bisection_links"] == best


@pytest.mark.parametrize(
    "text, twisted, why",
    [
        ("4x4x9", False, "multiples of 4"),
        ("4x4x4", True, "twisted"),
        ("8x8x8", True, "twisted"),
        ("4by4", False, "AxBxC"),
        ("0x4x4", False, "at least 1"),
    ],
)
def test_bad_shapes(text, twisted, why):
    with pytest.raises(BadInput) as err:
        parse_shape(text, twisted)
    assert why in str(err.value)


@pytest.mark.parametrize(
    "text, twisted, canonical",
    [
        ("8x4x4", False, (4, 4, 8)),
        ("8x4x8", True, (4, 8, 8)),
        ("16x8x4", False, (4, 8, 16)),
        ("1x2x2", False, (2, 2, 1)),
    ],
)
def test_shapes_in_any_order_are_canonical(text, twisted, canonical):
    """GKE and xpk accept the sides of a v4 topology in any order; tpufleet reports them A <= B <= C."""
    shape = parse_shape(text, twisted)
    assert shape.dims == canonical and shape.twisted == twisted


@pytest.mark.parametrize("dims", [(4, 4, 8), (4, 8, 8), (8, 8, 16), (8, 16, 16)])
def test_twisted_shapes_are_shorter_than_regular(dims):
    text = "x".join(map(str, dims))
    t, r = metrics(parse_shape(text, True)), metrics(parse_shape(text))
    assert t["diameter"] < r["diameter"] and t["mean_hops"] < r["mean_hops"]
    assert t["bisection_links"] > r["bisection_links"]
    assert t["links"] == r["links"] == 3 * t["chips"]  # the twist moves wraparound links, it adds none
