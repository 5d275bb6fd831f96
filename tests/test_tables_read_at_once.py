"""`status`, `show slices`, `report`, `metrics` and `serve` read every stored tables file through (the members'
CRC-32): 0.15-0.2 s of CPU for a TPU7x superpod's, most of it in zlib, which lets go of the interpreter, so the
files are read on a few threads at once. Which tables count as kept is what reading them one by one gives."""

import os
import threading
from pathlib import Path

import pytest

from tpufleet.state import tablesindex
from tpufleet.state.store import Store

NAMES = ("a", "b", "c", "d", "e")


@pytest.fixture
def five_routed(fleet):
    for name in NAMES:
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0
    return fleet


def test_two_tables_files_are_read_at_once(five_routed, monkeypatch):
    """Two readers meet at a barrier inside the check: read one after the other, the first would wait alone."""
    met = threading.Barrier(2, timeout=10)
    real = tablesindex.holds_indexed

    def meeting(path, name, entry, *whole):
        if name in ("a", "b"):
            met.wait()
        return real(path, name, entry, *whole)

    monkeypatch.setattr(tablesindex, "holds_indexed", meeting)
    r = five_routed("status", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["missing_routes"] == []


def _one_by_one(store: Store, indexed) -> set[str]:
    return {
        name
        for name, entry in indexed.items()
        if os.path.isfile(path := Path(store.backend.table_place(name)))
        and tablesindex.holds_indexed(path, name, entry)
    }


@pytest.mark.parametrize("seed", range(6))
def test_the_tables_kept_are_those_read_one_by_one(five_routed, seed):
    import random

    rng = random.Random(seed)
    routes = five_routed.state / "routes"
    for name in rng.sample(NAMES, rng.randrange(len(NAMES) + 1)):
        how = rng.choice(["gone", "other", "cut", "flipped"])
        tables = routes / f"{name}.npz"
        data = bytearray(tables.read_bytes())
        if how == "gone":
            tables.unlink()
        elif how == "other":  # another slice's tables
            tables.write_bytes((routes / f"{NAMES[(NAMES.index(name) + 1) % len(NAMES)]}.npz").read_bytes())
        elif how == "cut":
            tables.write_bytes(bytes(data[: len(data) // 2]))
        else:
            data[len(data) // 3] ^= 0xFF
            tables.write_bytes(bytes(data))
    store = Store(five_routed.state)
    state = store.load()
    for size in range(len(NAMES) + 1):
        indexed = dict(list(state.routes.items())[:size])
        assert store.tables_present(indexed) == _one_by_one(store, indexed)
    kept = _one_by_one(store, state.routes)
    assert sorted(five_routed("status", "-o", "json").json["missing_routes"]) == sorted(set(NAMES) - kept)
