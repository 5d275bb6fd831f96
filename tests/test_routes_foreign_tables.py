"""A slice's stored routing tables are only its own indexed ones: a file copied in by hand from another slice of
the same shape, or the slice's own older tables put back, is refused by `collective` (exit 1, naming the file) and
shown as missing by `status`, `show slices` and `explain`; `routes` stores the slice's tables again."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture
def two(fleet):
    for name in ("a", "b"):
        assert fleet("allocate", name, "--shape", "4x4x8").code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
        assert fleet("routes", name).code == 0
    return fleet


def _routes_shown(fleet, name: str) -> set[str]:
    shown = {row["routes"] for row in fleet("show", "slices", "-o", "json").json if row["name"] == name}
    shown |= {row["routes"] for row in fleet("status", "-o", "json").json["slices"] if row["name"] == name}
    shown.add(fleet("explain", name, "-o", "json").json["routes"])
    return shown


def test_another_slices_tables_copied_in_are_refused_and_shown_missing(two):
    routes = two.state / "routes"
    shutil.copyfile(routes / "b.npz", routes / "a.npz")
    r = two("collective", "a", "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 1 and "a.npz" in r.err and "slice 'b'" in r.err and "tpufleet routes a" in r.err
    assert _routes_shown(two, "a") == {"missing"} and _routes_shown(two, "b") == {"fresh"}
    again = two("routes", "a", "-o", "json")
    assert again.code == 0 and again.json["changed"] is True
    assert two("collective", "a", "--op", "all-reduce", "--bytes", "1MiB").code == 0
    assert _routes_shown(two, "a") == {"fresh"}


def test_the_slices_own_older_tables_put_back_are_not_the_indexed_ones(two, monkeypatch):
    from tpufleet.state import store

    table = two.state / "routes" / "a.npz"
    older = table.read_bytes()
    monkeypatch.setattr(store, "utc_now", lambda: "2099-01-01T00:00:00Z")  # made a second later at least
    assert two("inject-fault", "ocs:pod0/x/0").code == 0
    assert two("routes", "a").code == 0
    table.write_bytes(older)
    r = two("collective", "a", "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 1 and "a.npz" in r.err and "not the ones indexed" in r.err
    assert _routes_shown(two, "a") == {"missing"}
