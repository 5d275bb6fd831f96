"""`explain SLICE|JOB` reads the stored tables of the slices it tells of, no other's: each file checked is read
through (its members' CRC-32), so reading every slice's made one slice's explain as slow as `status` (16 routed
superpods: 3 s). What it says is what it said when it read them all."""

import pytest

from tpufleet.ops.explain import explain, slices_told
from tpufleet.ops.views import tables_as_stored
from tpufleet.state import tablesindex
from tpufleet.state.store import Store


@pytest.fixture
def routed_fleet(fleet):
    for args in (("a", "--shape", "4x4x4"), ("b", "--shape", "4x4x4"), ("j", "--shape", "4x4x4", "--slices", "2")):
        assert fleet("allocate", *args).code == 0
    for name in ("a", "b", "j"):
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0
    routes = fleet.state / "routes"
    (routes / "b.npz").write_bytes((routes / "a.npz").read_bytes())  # b's tables are missing: a's stand there
    return fleet


@pytest.fixture
def reads(monkeypatch):
    seen: list[str] = []
    real = tablesindex.holds_indexed

    def spy(path, name, entry, *whole):
        seen.append(name)
        return real(path, name, entry, *whole)

    monkeypatch.setattr(tablesindex, "holds_indexed", spy)
    return seen


@pytest.mark.parametrize(
    ("what", "read"), [("a", ["a"]), ("b", ["b"]), ("j", ["j-0", "j-1"]), ("j-1", ["j-1"]), ("cube:c00", [])]
)
def test_explain_reads_only_the_tables_it_tells_of(routed_fleet, reads, what, read):
    r = routed_fleet("explain", what, "-o", "json")
    assert r.code == 0, r.err
    assert sorted(reads) == read


@pytest.mark.parametrize("what", ["a", "b", "j", "j-0", "cube:c00", "cube:c01"])
def test_explain_says_what_it_said_reading_every_slices_tables(routed_fleet, what):
    store = Store(routed_fleet.state)
    loaded = store.load()
    linked = store.linked_tables(loaded.slices)
    now = "2026-12-01T00:00:00Z"
    full_state, full_missing = tables_as_stored(store, loaded)
    assert full_missing == {"b"}
    state, missing = tables_as_stored(store, loaded, slices_told(loaded, what))
    assert explain(state, what, now, missing, linked).data == explain(full_state, what, now, full_missing, linked).data
    shown = routed_fleet("explain", what, "-o", "json").json
    if what in ("b", "j-0", "a"):
        assert shown["routes"] == ("missing" if what == "b" else "fresh")
