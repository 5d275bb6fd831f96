"""The fast analysis of plain dimension-order tables with repairs (`routing.structured`, from the rings) gives
exactly the pair-by-pair analysis (`analysis.analyze_pairs`, the oracle): arrival, loads, VCs, verdict, cycle."""

import os
import stat

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import ocs_failure
from tpufleet.routing import structured
from tpufleet.routing.analysis import analyze_pairs
from tpufleet.routing.candidates import candidates
from tpufleet.routing.cdg import acyclic
from tpufleet.shapes import parse_shape
from tpufleet.topology import neighbors


def cut(exp, alive, pairs):
    out = alive.copy()
    for s, p in pairs:
        t = exp[s, p]
        out[s, p] = -1
        out[t, p ^ 1] = -1
    return out


def cases():
    out = []
    for text in ("4x4x4", "4x4x8", "8x8x8", "4x8x12"):
        shape = parse_shape(text)
        exp = neighbors(shape)
        out.append((f"{text} healthy", shape, exp, exp))
        for dim, index in (("x", 5), ("y", 2), ("z", 11)):
            _, alive = ocs_failure(shape, dim, index)
            out.append((f"{text} ocs {dim}/{index}", shape, exp, alive))
        both = np.where((ocs_failure(shape, "x", 5)[1] < 0) | (ocs_failure(shape, "z", 3)[1] < 0), -1, exp)
        out.append((f"{text} two ocs", shape, exp, both))
        rng = np.random.default_rng(len(exp))  # fixed seeds: the same links every run
        links = [(int(rng.integers(len(exp))), int(rng.integers(6))) for _ in range(3)]
        out.append((f"{text} links", shape, exp, cut(exp, exp, links)))
        chip = len(exp) // 2  # a chip with every link dead: its pairs are unroutable
        out.append((f"{text} dead chip", shape, exp, cut(exp, exp, [(chip, p) for p in range(6)])))
    return out


CASES = cases()


def same(fast, slow):
    assert np.array_equal(fast.routable, slow.routable)
    assert fast.load.dtype == slow.load.dtype and np.array_equal(fast.load, slow.load)
    assert (fast.vcs, fast.deadlock_free, fast.cycle, fast.vc_blocks) == (
        slow.vcs,
        slow.deadlock_free,
        slow.cycle,
        slow.vc_blocks,
    )


@pytest.mark.parametrize("algorithm", ["auto", "wild-first", "dor"])
@pytest.mark.parametrize("name, shape, exp, alive", CASES, ids=[c[0] for c in CASES])
def test_fast_analysis_equals_the_pair_by_pair_one(name, shape, exp, alive, algorithm):
    seen_cycle = False
    single = [rt for rt, _info in candidates(shape, exp, alive, algorithm, 3) if len(rt.orders) == 1]
    assert single  # per-destination orders (3 VCs when packed) keep the pair-by-pair analysis, tested below
    for rt in single:
        assert structured.applies(rt)
        for layered in (False, True):
            rt.wild_layers = layered
            fast = structured.analyze(rt)
            slow = analyze_pairs(rt)
            if fast is None:  # a wild pair that does not arrive is left to the oracle; never expected here
                pytest.fail("fast analysis declined")
            same(fast, slow)
            seen_cycle |= slow.deadlock_free is False
            loads_only = structured.analyze(rt, deadlock=False)
            assert loads_only is not None and np.array_equal(loads_only.load, slow.load)
    if name.endswith("ocs z/11") and algorithm == "wild-first" and shape.dims[2] >= 12:
        assert seen_cycle  # the cycle report (scipy path) is compared too


def test_twisted_and_mixed_orders_keep_the_pair_by_pair_analysis():
    shape = parse_shape("4x4x8", twisted=True)
    exp = neighbors(shape)
    rt, _ = candidates(shape, exp, exp, "auto")[0]
    assert not structured.applies(rt)
    shape = parse_shape("8x8x8")
    _, alive = ocs_failure(shape, "x", 5)
    mixed = [rt for rt, _ in candidates(shape, neighbors(shape), alive, "auto", None) if len(rt.orders) > 1]
    assert mixed and not any(structured.applies(rt) for rt in mixed)


@pytest.mark.parametrize(
    "edges, expected",
    [
        ([], True),
        ([(0, 1), (1, 2)], True),
        ([(0, 1), (1, 2), (2, 0)], False),
        ([(0, 0), (0, 1)], True),  # a self-loop is not a cycle of channels (components of one node)
        ([(0, 1), (0, 1), (1, 2), (3, 2), (2, 4), (4, 3)], False),
    ],
)
def test_the_cycle_check_finds_cycles(edges, expected):
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    assert acyclic(src, dst, 5) is expected


@given(st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=30))
def test_the_cycle_check_agrees_with_networkx(edges):
    """Against networkx's own test, self-loops aside (a channel never depends on itself)."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(12))
    graph.add_edges_from((a, b) for a, b in edges if a != b)
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    assert acyclic(src, dst, 12) is nx.is_directed_acyclic_graph(graph)


REPAIR_CASES = [c for c in CASES if c[0].split()[0] in ("4x4x8", "4x8x12") and "healthy" not in c[0]]


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
@pytest.mark.parametrize("name, shape, exp, alive", REPAIR_CASES, ids=[c[0] for c in REPAIR_CASES])
def test_ring_runs_repair_exactly_as_the_walks_do(name, shape, exp, alive, order):
    """wild-first with routes answered by ring runs (`RingPaths`) makes the very tables, loads and leftovers of
    the hop-by-hop walks; the intact load counted by runs equals the walked one."""
    from tpufleet.routing import dor
    from tpufleet.routing.rings import RingPaths
    from tpufleet.routing.tolerant import base_load, broken_pairs, wild_first

    results = []
    for paths in (None, RingPaths(shape, order)):
        P, L = dor.tables(shape, order)
        broken = broken_pairs(P, exp, alive)
        base = base_load(P, L, alive, broken, shape, exp, paths)
        results.append((P, L, base, *wild_first(P, L, alive, broken, base=base, paths=paths)))
    for walked, counted in zip(*results, strict=True):
        assert walked.dtype == counted.dtype and np.array_equal(walked, counted)


@pytest.mark.parametrize("text", ["4x4x4", "4x4x8", "8x8x8", "4x8x12", "8x8x16"])
def test_healthy_reference_loads_from_rings_equal_the_tables(text):
    from tpufleet.routing import dor, healthy
    from tpufleet.routing.analysis import RouteTables
    from tpufleet.routing.loads import symmetric_load

    shape = parse_shape(text)
    exp = neighbors(shape)
    P, L = dor.tables(shape)
    rt = RouteTables(shape, exp, P, L)
    traffics = ("all-to-all", "all-reduce")
    from_tables = healthy.traffic_loads(rt, exp, traffics, weight_load=symmetric_load(rt))
    assert healthy.ring_healthy_loads(shape, exp, traffics) == from_tables


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (0, 2, 1)])
@pytest.mark.parametrize("name, shape, exp, alive", CASES, ids=[c[0] for c in CASES])
def test_broken_pairs_from_the_dead_links_rings_equal_the_upward_search(name, shape, exp, alive, order):
    from tpufleet.routing import dor
    from tpufleet.routing.rings import broken_by_runs
    from tpufleet.routing.tolerant import broken_pairs

    P, _L = dor.tables(shape, order)
    assert np.array_equal(broken_by_runs(shape, order, exp, alive), broken_pairs(P, exp, alive))


class DictCache:
    """A `memo.ChoiceCache` in memory, counting what it was asked."""

    def __init__(self):
        self.entries, self.hits, self.puts = {}, 0, 0

    def get(self, key):
        found = self.entries.get(key)
        self.hits += found is not None
        return None if found is None else found.copy()

    def put(self, key, choices):
        self.puts += 1
        self.entries[key] = choices.copy()


def _repaired(shape, exp, alive, order=(0, 1, 2)):
    from tpufleet.routing import dor
    from tpufleet.routing.rings import RingPaths
    from tpufleet.routing.tolerant import base_load, broken_pairs, wild_first

    P, L = dor.tables(shape, order)
    broken = broken_pairs(P, exp, alive)
    paths = RingPaths(shape, order)
    wild, left, load = wild_first(
        P, L, alive, broken, base=base_load(P, L, alive, broken, shape, exp, paths), paths=paths
    )
    return P, L, wild, left, load


@pytest.mark.parametrize("text, dim, index", [("4x4x8", "x", 5), ("4x8x12", "y", 11), ("8x8x8", "y", 2)])
def test_choices_replayed_from_a_cache_make_the_very_tables_and_loads(text, dim, index):
    from tpufleet.routing import memo

    shape = parse_shape(text)
    exp, alive = ocs_failure(shape, dim, index)
    searched = _repaired(shape, exp, alive)
    cache = DictCache()
    with memo.using(cache):
        first = _repaired(shape, exp, alive)
        second = _repaired(shape, exp, alive)
    assert (cache.puts, cache.hits) == (1, 1)  # searched once, then replayed
    for a, b, c in zip(searched, first, second, strict=True):
        assert a.dtype == b.dtype == c.dtype and np.array_equal(a, b) and np.array_equal(a, c)
    _, other = ocs_failure(shape, "x" if dim != "x" else "y", index)  # another pattern: its own key
    with memo.using(cache):
        _repaired(shape, exp, other)
    assert (cache.puts, cache.hits) == (2, 1)


def test_repairs_that_need_chains_are_not_kept():
    """An OCS of the last dimension of the order: some pairs need chains of wild hops, which are not kept."""
    from tpufleet.routing import memo

    shape = parse_shape("4x4x8")
    exp, alive = ocs_failure(shape, "z", 5)
    cache = DictCache()
    with memo.using(cache):
        kept = _repaired(shape, exp, alive)
    assert cache.puts == 0
    for a, b in zip(_repaired(shape, exp, alive), kept, strict=True):
        assert np.array_equal(a, b)


def test_choices_that_fail_the_check_are_not_used():
    """A kept hop onto a dead link, or to a neighbour whose own route is broken, or the wrong length or dtype:
    the search runs again and the tables are the searched ones."""
    from tpufleet.routing import memo

    shape = parse_shape("4x4x8")
    exp, alive = ocs_failure(shape, "x", 5)
    searched = _repaired(shape, exp, alive)
    cache = DictCache()
    with memo.using(cache):
        _repaired(shape, exp, alive)
    ((key, good),) = cache.entries.items()
    from tpufleet.routing import dor
    from tpufleet.routing.tolerant import broken_pairs

    P, _ = dor.tables(shape)
    broken = broken_pairs(P, exp, alive)
    s = broken % len(exp)
    dead_port = np.argmax(alive[s] < 0, axis=1)  # some pairs' sources have a dead link: a hop onto it
    has_dead = (alive[s] < 0).any(axis=1)
    onto_dead = good.copy()
    onto_dead[np.flatnonzero(has_dead)[0]] = dead_port[has_dead][0]
    # a hop to the neighbour the broken route itself takes: that neighbour's route crosses the dead link too
    along = good.copy()
    i = int(np.flatnonzero(P.ravel()[broken] >= 0)[0])
    along[i] = P.ravel()[broken[i]]
    for bad_entry in (onto_dead, along, good[:-1], good.astype(np.int16), np.full_like(good, 6)):
        cache.entries = {key: bad_entry}
        with memo.using(cache):
            again = _repaired(shape, exp, alive)
        for a, b in zip(searched, again, strict=True):
            assert np.array_equal(a, b)


def test_the_state_directory_cache_keeps_reads_back_and_bounds_its_entries(tmp_path):
    from tpufleet.state import tablecache
    from tpufleet.state.tablecache import TableCache

    cache = TableCache(tmp_path)
    keys = [f"{i:040x}" for i in range(tablecache.MAX_ENTRIES + 3)]
    cache.put(keys[0], np.zeros(3, dtype=np.int8))
    assert not (tmp_path / "cache").exists()  # held until the command commits
    for i, key in enumerate(keys):
        cache.put(key, np.full(10 + i, i % 6, dtype=np.int8))
        cache.flush()
        os.utime(tmp_path / "cache" / f"{key}.npy", (1000 + i, 1000 + i))  # a clear order of use
    cache.put(keys[-1], np.full(10, 1, dtype=np.int8))
    cache.flush()
    kept = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert kept == sorted(f"{k}.npy" for k in keys[-tablecache.MAX_ENTRIES :])
    latest = cache.get(keys[-1])
    assert latest is not None and np.array_equal(latest, np.full(10, 1, dtype=np.int8))
    assert cache.get(keys[0]) is None  # evicted
    (tmp_path / "cache" / f"{keys[-2]}.npy").write_bytes(b"not an array")
    assert cache.get(keys[-2]) is None
    np.save(tmp_path / "cache" / f"{keys[-3]}.npy", np.zeros(4, dtype=np.int64))
    assert cache.get(keys[-3]) is None  # not int8 choices
    assert stat.S_IMODE(os.stat(tmp_path / "cache").st_mode) == 0o700
    # A flipped byte, an entry copied under another key, or a bare array without our digest: each a miss.
    good = tmp_path / "cache" / f"{keys[-1]}.npy"
    data = bytearray(good.read_bytes())
    data[-1] ^= 1
    (tmp_path / "cache" / f"{keys[-4]}.npy").write_bytes(bytes(data))
    assert cache.get(keys[-4]) is None
    (tmp_path / "cache" / f"{keys[-5]}.npy").write_bytes(good.read_bytes())
    assert cache.get(keys[-5]) is None and cache.get(keys[-1]) is not None
    np.save(tmp_path / "cache" / f"{keys[-6]}.npy", np.zeros(4, dtype=np.int8))
    assert cache.get(keys[-6]) is None


def test_a_cache_directory_that_is_a_symlink_is_neither_read_nor_written(tmp_path):
    from tpufleet.state.tablecache import TableCache

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    outside = TableCache(elsewhere)
    outside.put("1" * 40, np.ones(3, dtype=np.int8))
    outside.flush()
    assert outside.get("1" * 40) is not None
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "cache").symlink_to(elsewhere / "cache")
    cache = TableCache(state)
    assert cache.get("1" * 40) is None
    cache.put("2" * 40, np.ones(3, dtype=np.int8))
    cache.flush()
    assert sorted(p.name for p in (elsewhere / "cache").iterdir()) == ["1" * 40 + ".npy"]


def test_a_cache_that_cannot_be_written_is_ignored(tmp_path):
    from tpufleet.state.tablecache import TableCache

    (tmp_path / "cache").write_text("a file where the directory goes")
    cache = TableCache(tmp_path)
    cache.put("0" * 40, np.zeros(3, dtype=np.int8))
    cache.flush()  # no error
    assert cache.get("0" * 40) is None


def test_large_tables_are_a_zip_that_numpy_zipfile_and_the_collectives_read(tmp_path):
    """Above COMPRESS_LIMIT chips the npz is written member by member (the largest in a second thread)."""
    import zipfile

    from tpufleet.routing import export
    from tpufleet.routing.report import evaluate
    from tpufleet.state import routetables

    shape = parse_shape("8x16x16")
    assert shape.chips > export.COMPRESS_LIMIT
    exp, alive = ocs_failure(shape, "y", 2)
    rt = evaluate(shape, exp, alive, "auto", ("all-to-all",), max_vcs=3).tables
    path = tmp_path / "big.npz"
    path.write_bytes(export.npz_bytes(rt, {"shape": shape.text, "twisted": False}))
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        assert [i.filename for i in zf.infolist()][:3] == ["port.npy", "hops.npy", "wild.npy"]
    stored = np.load(path)
    assert np.array_equal(stored["port"], rt.P.T) and stored["port"].dtype == np.int8
    assert np.array_equal(stored["hops"], rt.L.T) and stored["hops"].dtype == np.int16
    assert rt.wild is not None and np.array_equal(stored["wild"], rt.wild.T) and stored["wild"].any()
    assert np.array_equal(stored["neighbors"], alive)
    loaded = routetables.load(path)
    assert np.array_equal(loaded.port, rt.P.T) and loaded.meta["shape"] == "8x16x16"
