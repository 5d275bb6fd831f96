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


def test_another_slices_tables_of_another_shape_are_named_as_theirs_with_the_file(two):
    """Of another shape, they were refused as tables "for a 8x8x8" naming neither the file nor whose they are."""
    assert two("allocate", "c", "--shape", "8x8x8").code == 0
    assert two("plan-xconnect", "c", "--apply").code == 0 and two("routes", "c").code == 0
    routes = two.state / "routes"
    shutil.copyfile(routes / "c.npz", routes / "a.npz")
    r = two("collective", "a", "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 1 and f"{routes / 'a.npz'} holds the tables of slice 'c', not of 'a'" in r.err, r.err


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


@pytest.fixture
def small(fleet, monkeypatch):
    """Slice `a` (4x4x4) wired, every command's clock stopped at one second."""
    from tpufleet.state import store

    monkeypatch.setattr(store, "utc_now", lambda: "2026-03-01T00:00:00Z")
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    return fleet


def test_older_tables_put_back_within_the_same_second_are_not_the_indexed_ones(small):
    table = small.state / "routes" / "a.npz"
    assert small("routes", "a").code == 0
    older = table.read_bytes()
    again = small("routes", "a", "--algorithm", "dor", "-o", "json")
    assert again.code == 0 and again.json["changed"] is True  # other tables, made the same second
    table.write_bytes(older)
    r = small("collective", "a", "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 1 and "a.npz" in r.err and "not the ones indexed" in r.err
    assert _routes_shown(small, "a") == {"missing"}
    assert small("status", "-o", "json").json["missing_routes"] == ["a"]
    assert small("routes", "a", "--algorithm", "dor", "-o", "json").json["changed"] is True
    assert _routes_shown(small, "a") == {"fresh"}


def test_an_index_entry_written_before_tables_ids_is_compared_as_before(small):
    """A state whose index entries record no tables' id (written by an earlier version) loads, and its tables are
    fresh while their time made matches; `routes` run again with nothing changed commits nothing."""
    import json

    assert small("routes", "a").code == 0
    state_file = small.state / "state.json"
    doc = json.loads(state_file.read_text())
    del doc["routes"]["a"]["tables_id"]
    state_file.write_text(json.dumps(doc))
    assert _routes_shown(small, "a") == {"fresh"}
    assert small("collective", "a", "--op", "all-reduce", "--bytes", "1MiB").code == 0
    assert small("routes", "a", "-o", "json").json["changed"] is False


def test_status_lists_the_tables_directory_only_for_tables_not_indexed(two, monkeypatch):
    """Each slice's fresh tables are told from their `meta` alone: `status` listed `routes/` for every slice (to
    find a dead writer's tables), so it grew with the square of the slices. Another slice's copy still gets the
    look for a dead writer's tables, and is missing."""
    import tpufleet.state.temps as files

    listed: list[object] = []
    real = files.dead_temps

    def counted(path):
        listed.append(path)
        return real(path)

    monkeypatch.setattr(files, "dead_temps", counted)
    assert {row["routes"] for row in two("status", "-o", "json").json["slices"]} == {"fresh"}
    assert listed == []
    shutil.copyfile(two.state / "routes" / "b.npz", two.state / "routes" / "a.npz")
    assert _routes_shown(two, "a") == {"missing"} and len(listed) >= 1
