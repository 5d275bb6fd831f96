"""`routes` run again on a slice whose stored tables are the very tables it makes stores nothing and commits
nothing (no serial, no journal entry, the same files); any difference (other tables, another algorithm, tables
gone or stale) stores as before."""

from __future__ import annotations

from helpers import snapshot


def _wired(fleet, shape: str = "4x4x8") -> None:
    assert fleet("allocate", "s", "--shape", shape).code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0


def _routes(fleet, *extra: str) -> dict:
    r = fleet("routes", "s", *extra, "-o", "json")
    assert r.code == 0, r.err
    return r.json


def _serial(fleet) -> int:
    return fleet("status", "-o", "json").json["serial"]


def test_the_same_tables_again_commit_nothing(fleet):
    _wired(fleet)
    first = _routes(fleet)
    assert first["stored"] and not first["already_stored"]
    before, serial = snapshot(fleet.state), _serial(fleet)
    again = _routes(fleet)
    assert again["stored"] and again["already_stored"] and again["tables"] == first["tables"]
    assert snapshot(fleet.state) == before and _serial(fleet) == serial  # journal and tables files included
    assert {k: v for k, v in again.items() if k != "already_stored"} == {
        k: v for k, v in first.items() if k != "already_stored"
    }
    text = fleet("routes", "s")
    assert text.code == 0 and "tables unchanged: the same ones are stored in" in text.out
    assert snapshot(fleet.state) == before


def test_rerouted_tables_again_commit_nothing_and_another_algorithm_stores(fleet):
    _wired(fleet)
    _routes(fleet)
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    rerouted = _routes(fleet)
    assert rerouted["stored"] and not rerouted["already_stored"] and rerouted["pairs_repaired_wild"] > 0
    serial = _serial(fleet)
    assert _routes(fleet)["already_stored"] and _serial(fleet) == serial
    other = _routes(fleet, "--algorithm", "wild-first")
    assert other["stored"] and not other["already_stored"] and _serial(fleet) == serial + 1
    assert _routes(fleet, "--algorithm", "wild-first")["already_stored"] and _serial(fleet) == serial + 1


def test_stale_or_missing_tables_are_stored_again(fleet):
    _wired(fleet)
    _routes(fleet)
    assert fleet("inject-fault", "ocs:pod0/y/2").code == 0  # the stored tables go stale
    assert fleet("clear-fault", "f1").code == 0
    serial = _serial(fleet)
    out = _routes(fleet)  # the same healthy tables as stored, but the index says stale: stored again
    assert out["stored"] and not out["already_stored"] and _serial(fleet) == serial + 1
    (fleet.state / "routes" / "s.npz").unlink()
    out = _routes(fleet)
    assert out["stored"] and not out["already_stored"] and _serial(fleet) == serial + 2
    assert (fleet.state / "routes" / "s.npz").exists()
