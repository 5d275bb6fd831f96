"""`status`, `show slices`, `report` and `metrics` agree with `collective` on which stored routing tables are the
slice's indexed ones, in a state directory and in a database alike: another slice's tables copied into a slice's
file or row, or the slice's own older ones put back (made the same second), are missing, never fresh."""

from __future__ import annotations

from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import db_name

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url


@pytest.fixture(params=["directory", "postgresql"])
def place(request, tmp_path) -> str:
    if request.param == "directory":
        return str(tmp_path / "state")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def on(place, capsys, monkeypatch) -> Cli:
    """Slices `a` and `b` (4x4x4) wired and routed, every command's clock stopped at one second."""
    from tpufleet.state import store

    monkeypatch.setattr(store, "utc_now", lambda: "2026-03-01T00:00:00Z")
    cli = Cli(capsys, place)
    assert cli("init").code == 0
    for name in ("a", "b"):
        for args in (("allocate", name, "--shape", "4x4x4"), ("plan-xconnect", name, "--apply"), ("routes", name)):
            assert cli(*args).code == 0
    return cli


def _put(request, place: str, name: str, data: bytes) -> None:
    """The tables of slice `name` replaced by hand with `data`."""
    if place.startswith("postgresql"):
        request.getfixturevalue("pg_server").sql(
            f"UPDATE tpufleet_tables SET data = decode('{data.hex()}', 'hex') WHERE name = '{name}'", db_name(place)
        )
    else:
        (Path(place) / "routes" / f"{name}.npz").write_bytes(data)


def _missing_everywhere(on: Cli, name: str) -> None:
    r = on("collective", name, "--op", "all-reduce", "--bytes", "1MiB")
    assert r.code == 1 and f"{name}.npz" in r.err and f"tpufleet routes {name}" in r.err
    status = on("status", "-o", "json").json
    assert status["missing_routes"] == [name]
    assert {s["name"]: s["routes"] for s in status["slices"]}[name] == "missing"
    assert {s["name"]: s["routes"] for s in on("show", "slices", "-o", "json").json}[name] == "missing"
    assert on("report", "-o", "json").json["missing_routes"] == [name]
    assert "tpufleet_missing_route_tables 1.0" in on("metrics").out


def test_another_slices_tables_copied_in_are_missing_on_both_stores(on, place, request):
    _put(request, place, "a", _stored(place, "b"))
    _missing_everywhere(on, "a")


def test_older_tables_put_back_the_same_second_are_missing_on_both_stores(on, place, request):
    older = _stored(place, "a")
    assert on("routes", "a", "--algorithm", "dor", "-o", "json").json["changed"] is True
    _put(request, place, "a", older)
    _missing_everywhere(on, "a")


def _stored(place: str, name: str) -> bytes:
    """The bytes of slice `name`'s stored tables."""
    if not place.startswith("postgresql"):
        return (Path(place) / "routes" / f"{name}.npz").read_bytes()
    from tpufleet.state.pgbackend import PostgresBackend

    db = PostgresBackend(place)
    try:
        data = db.table_bytes(name)
    finally:
        db.close()
    assert data is not None
    return data


def test_tables_whose_meta_lies_before_the_read_tail_are_read_whole(on, place, request, monkeypatch):
    """A database reads a row's last bytes for its `meta`; tables where those do not hold it are read whole, with
    the same answer."""
    from tpufleet.state import tablesindex

    monkeypatch.setattr(tablesindex, "TAIL_BYTES", 64)
    assert on("status", "-o", "json").json["missing_routes"] == []
    _put(request, place, "a", _stored(place, "b"))
    assert on("status", "-o", "json").json["missing_routes"] == ["a"]


def test_serve_sees_tables_replaced_in_place_before_the_next_commit(on, place, request):
    """A file copied over a slice's (its name stays in `routes/`) or a row changed in place (the rows' count stays)
    is seen on the next request, as a file or row removed is."""
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    source = Source(Store(place if place.startswith("postgresql") else Path(place)), [], None)
    client = TestClient(build_app(Server(source, metrics_inputs(), None, 5)))
    assert client.get("/api/v1/status").json()["missing_routes"] == []
    _put(request, place, "a", _stored(place, "b"))
    assert client.get("/api/v1/status").json()["missing_routes"] == ["a"]


def _rezipped(data: bytes, drop: str, meta: bytes | None = None) -> bytes:
    """The tables `data` with member `drop` left out of the zip, and `meta` (a .npy's bytes) put in its place."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for member in src.namelist():
            if member != drop:
                dst.writestr(member, src.read(member))
        if meta is not None:
            dst.writestr("meta.npy", meta)
    return out.getvalue()


def _npy_text(text: str) -> bytes:
    import io

    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.array(text))
    return buf.getvalue()


DAMAGES = {
    "cut short": lambda good: good[:100],
    "no zip": lambda good: b"not routing tables\n",
    "meta not JSON": lambda good: _rezipped(good, "meta.npy", _npy_text("{not json")),
    "port absent": lambda good: _rezipped(good, "port.npy"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_tables_are_missing_not_fresh_and_routes_stores_them_again(on, place, request, damage):
    """Tables `collective` cannot read (exit 2) were shown fresh by `status`, `show slices`, `report` and `metrics`,
    `missing_routes` empty: they are missing, and `routes` stores the slice's tables again over them."""
    _put(request, place, "a", DAMAGES[damage](_stored(place, "a")))
    assert on("collective", "a", "--op", "all-reduce", "--bytes", "1MiB").code == 2
    status = on("status", "-o", "json").json
    assert status["missing_routes"] == ["a"]
    assert {s["name"]: s["routes"] for s in status["slices"]} == {"a": "missing", "b": "fresh"}
    assert {s["name"]: s["routes"] for s in on("show", "slices", "-o", "json").json}["a"] == "missing"
    assert on("report", "-o", "json").json["missing_routes"] == ["a"]
    assert "tpufleet_missing_route_tables 1.0" in on("metrics").out
    assert on("routes", "a", "-o", "json").json["changed"] is True
    assert on("status", "-o", "json").json["missing_routes"] == []
    assert on("collective", "a", "--op", "all-to-all", "--bytes", "1MiB").code == 0


def test_serve_shows_damaged_tables_missing(on, place, request):
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    source = Source(Store(place if place.startswith("postgresql") else Path(place)), [], None)
    client = TestClient(build_app(Server(source, metrics_inputs(), None, 5)))
    assert client.get("/api/v1/status").json()["missing_routes"] == []
    _put(request, place, "a", _stored(place, "a")[:100])
    assert client.get("/api/v1/status").json()["missing_routes"] == ["a"]
    assert 'tpufleet_slice_route_tables_missing{slice="a"} 1.0' in client.get("/metrics").text
