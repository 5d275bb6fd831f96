"""`routes` computes outside the lock and records under it: its tables stay valid through commits that leave the
slice's live chip graph as it was (a slice allocated elsewhere, a fault on another pod's OCS), and are refused when
the slice, its wiring or the health of its links changed meanwhile (a fault on its OCS, its release)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpufleet.errors import Refused
from tpufleet.ops import routes as route_ops
from tpufleet.state.store import Store

NOW = "2026-11-25T00:00:00Z"


@pytest.fixture
def computed(cli):
    for step in (("init", "--pods", "2"), ("allocate", "a", "--shape", "4x4x8", "--pod", "pod0"),
                 ("plan-xconnect", "a", "--apply")):  # fmt: skip
        assert cli(*step).code == 0, step
    store = Store(cli.state)
    return cli, store, route_ops.compute(store.load(), "a", "auto", ("all-to-all",), True, NOW)


def _record(store: Store, routed: route_ops.RoutedSlice) -> None:
    with store.transaction() as tx:
        tx.commit(route_ops.record(tx.state, routed, "routes/a.npz").change)


@pytest.mark.parametrize(
    "meanwhile",
    [
        ("allocate", "b", "--shape", "4x4x4", "--pod", "pod1"),
        ("inject-fault", "ocs:pod1/x/0"),
        ("inject-fault", "cube:c70"),
    ],
)
def test_a_commit_elsewhere_leaves_the_tables_valid(computed, meanwhile):
    cli, store, routed = computed
    assert cli(*meanwhile).code == 0
    serial = store.load().serial
    _record(store, routed)
    state = store.load()
    assert state.serial == serial + 1 and state.routes["a"].vcs == routed.report.summary["vcs"]


@pytest.mark.parametrize(
    "meanwhile", [("inject-fault", "ocs:pod0/x/0"), ("release", "a"), ("inject-fault", "link:c00/x/0/out")]
)
def test_a_change_to_the_slice_or_its_links_refuses_them(computed, meanwhile):
    cli, store, routed = computed
    assert cli(*meanwhile).code == 0
    before = (cli.state / "state.json").read_bytes()
    with pytest.raises(Refused, match="state changed while routes for 'a' were computed"):
        _record(store, routed)
    assert (cli.state / "state.json").read_bytes() == before


def _serial_and_journal(fleet) -> tuple[int, bytes]:
    return fleet("status", "-o", "json").json["serial"], (fleet.state / "journal.jsonl").read_bytes()


def test_routes_run_again_with_nothing_changed_commits_nothing(fleet):
    """The very tables stored, the slice's record and index entry as they are: no new serial, no journal line,
    the stored file untouched; a healthy slice and one degraded around a fault alike."""
    for step in (("allocate", "s", "--shape", "4x4x8"), ("plan-xconnect", "s", "--apply"), ("routes", "s")):
        assert fleet(*step).code == 0, step
    for fault in ("ocs:pod0/x/0", "ocs:pod0/y/3"):
        before, tables = _serial_and_journal(fleet), (fleet.state / "routes" / "s.npz").read_bytes()
        r = fleet("routes", "s", "-o", "json")
        assert r.code == 0, r.err
        assert r.json["stored"] is True and r.json["changed"] is False and r.json["tables"].endswith("s.npz")
        assert _serial_and_journal(fleet) == before
        assert (fleet.state / "routes" / "s.npz").read_bytes() == tables
        assert "nothing changed" in fleet("routes", "s").out
        assert fleet("inject-fault", fault).code == 0  # its tables go stale: the next run stores them
        assert fleet("status", "-o", "json").json["stale_routes"] == ["s"]
        r = fleet("routes", "s", "-o", "json")
        assert r.code == 0 and r.json["changed"] is True
        assert fleet("status", "-o", "json").json["stale_routes"] == []


def test_routes_run_again_stores_tables_removed_or_damaged_by_hand(fleet):
    for step in (("allocate", "s", "--shape", "4x4x8"), ("plan-xconnect", "s", "--apply"), ("routes", "s")):
        assert fleet(*step).code == 0, step
    path = fleet.state / "routes" / "s.npz"
    for spoil in (path.unlink, lambda: path.write_bytes(b"not tables")):
        spoil()
        serial = fleet("status", "-o", "json").json["serial"]
        r = fleet("routes", "s", "-o", "json")
        assert r.code == 0 and r.json["changed"] is True
        assert fleet("status", "-o", "json").json["serial"] == serial + 1
        assert fleet("routes", "s", "-o", "json").json["changed"] is False


def test_study_tables_say_where_they_went_or_how_to_keep_them(fleet, tmp_path):
    """Sparse tables exported with --out were still told to "export them with --out"."""
    for step in (("allocate", "s", "--shape", "4x4x4"), ("plan-xconnect", "s", "--apply")):
        assert fleet(*step).code == 0, step
    study = tmp_path / "study.npz"
    r = fleet("routes", "s", "--table-capacity", "64", "--out", study)
    assert r.code == 0 and study.exists(), r.err
    assert r.err == (
        f"tpufleet: tables for 's' not stored (sparse tables (--table-capacity) are for study): written to {study}\n"
    )
    r = fleet("routes", "s", "--table-capacity", "64")
    assert r.code == 1
    assert r.err.splitlines()[-1] == (
        "tpufleet: error: tables for 's' not stored: sparse tables (--table-capacity) are for study; "
        "export them with --out"
    )


def test_routes_out_names_the_export_beside_the_stored_tables(fleet, tmp_path):
    """`--out FILE` with the tables also stored: the output named the stored file only, not the one written."""
    for step in (("allocate", "s", "--shape", "4x4x8"), ("plan-xconnect", "s", "--apply")):
        assert fleet(*step).code == 0, step
    out = tmp_path / "s.json"
    r = fleet("routes", "s", "--out", str(out), "--format", "json", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["stored"] is True and r.json["exported"] == str(out) and out.stat().st_size > 0
    table = fleet("routes", "s", "--out", str(tmp_path / "t.npz")).out.splitlines()
    assert f"  tables exported to {tmp_path / 't.npz'}" in table and (tmp_path / "t.npz").exists()
    assert "exported" not in fleet("routes", "s", "-o", "json").json


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full to fail a write")
def test_an_export_that_fails_after_the_commit_says_the_tables_were_stored(fleet):
    """The tables are committed before `--out` is written: a failed export said only `cannot write FILE` (exit 1),
    read as a refusal; it says the tables were stored, and a run again stores nothing and only exports."""
    for step in (("allocate", "s", "--shape", "4x4x8"), ("plan-xconnect", "s", "--apply")):
        assert fleet(*step).code == 0, step
    r = fleet("routes", "s", "--out", "/dev/full")
    assert (
        r.code == 1
        and r.err.count("\n") == 1
        and "/dev/full" in r.err
        and "the tables of 's' were stored all the same" in r.err
    )
    assert fleet("status", "-o", "json").json["stale_routes"] == [] and (fleet.state / "routes" / "s.npz").exists()
    again = fleet("routes", "s", "--out", "/dev/null", "-o", "json")
    assert again.code == 0 and again.json["changed"] is False and again.json["exported"] == "/dev/null"


@pytest.mark.parametrize(
    ("name", "given", "opens_as"),
    [
        ("s.json", None, "json"),
        ("s.ibroute", None, "ibroute"),
        ("s.npz", None, "npz"),
        ("s.tables", None, "npz"),
        ("s.json", "npz", "npz"),
    ],
)
def test_routes_out_without_format_writes_what_the_suffix_names(fleet, tmp_path, name, given, opens_as):
    """`--out s.json` without `--format` wrote an npz under the .json name; the suffix now names the format."""
    import json
    import zipfile

    for step in (("allocate", "s", "--shape", "4x4x8"), ("plan-xconnect", "s", "--apply")):
        assert fleet(*step).code == 0, step
    out = tmp_path / name
    assert fleet("routes", "s", "--out", str(out), *(("--format", given) if given else ())).code == 0
    data = out.read_bytes()
    if opens_as == "json":
        assert json.loads(data)["shape"] == "4x4x8"
    elif opens_as == "npz":
        assert zipfile.is_zipfile(out)
    else:
        assert data.startswith(b"Unicast lids [0x0-0x7f] of switch chip 0 ")
