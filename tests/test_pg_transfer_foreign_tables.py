"""`state push|pull` loses no routing tables to a file or row that holds other tables than the ones indexed
(another slice's copied in by hand) or cannot be read as tables (cut short): those are of no use to `collective`,
and the target's copy of the indexed tables is kept (the move refused, as for tables missing from the source)."""

from __future__ import annotations

from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import db_name

pg_server = pgserver.pg_server
pg_url = pgserver.pg_url


def _copied_in(routes: Path) -> None:
    (routes / "a.npz").write_bytes((routes / "b.npz").read_bytes())


def _cut_short(routes: Path) -> None:
    (routes / "a.npz").write_bytes((routes / "a.npz").read_bytes()[:100])


# (what happens to a's tables in a directory, the same to its row, the refusal's words)
BAD_TABLES = {
    "another slice's": (
        _copied_in,
        "UPDATE tpufleet_tables SET data = (SELECT data FROM tpufleet_tables WHERE name = 'b') WHERE name = 'a'",
        "holds the tables of slice 'b'",
    ),
    "cut short": (
        _cut_short,
        "UPDATE tpufleet_tables SET data = substring(data FROM 1 FOR 100) WHERE name = 'a'",
        "cannot be read as routing tables",
    ),
}


def _fleet(on: Cli) -> None:
    assert on("init").code == 0
    for name in ("a", "b"):
        for args in (("allocate", name, "--shape", "4x4x4"), ("plan-xconnect", name, "--apply"), ("routes", name)):
            assert on(*args).code == 0


def _collective_runs(on: Cli) -> bool:
    return on("collective", "a", "--op", "all-reduce", "--bytes", "1MiB").code == 0


@pytest.mark.parametrize("bad", sorted(BAD_TABLES))
def test_push_does_not_replace_the_databases_tables_with_bad_ones(pg_url, tmp_path, capsys, bad):
    spoil, _sql, words = BAD_TABLES[bad]
    d = tmp_path / "state"
    on, db = Cli(capsys, d), Cli(capsys, pg_url)
    _fleet(on)
    assert on("state", "push", d, pg_url, state=False).code == 0
    spoil(d / "routes")
    assert on("inject-fault", "host:c63/1").code == 0  # the directory moves on
    r = on("state", "push", d, pg_url, state=False)
    assert r.code == 1 and f"routes/a.npz {words}" in r.err and "nothing was moved" in r.err
    assert _collective_runs(db)
    assert db("status", "-o", "json").json["missing_routes"] == []


@pytest.mark.parametrize("bad", sorted(BAD_TABLES))
def test_pull_does_not_replace_the_directorys_tables_with_bad_ones(pg_url, tmp_path, capsys, request, bad):
    _spoil, sql, words = BAD_TABLES[bad]
    d = tmp_path / "state"
    on, db = Cli(capsys, d), Cli(capsys, pg_url)
    _fleet(db)
    assert on("state", "pull", pg_url, d, state=False).code == 0
    request.getfixturevalue("pg_server").sql(sql, db_name(pg_url))
    assert db("inject-fault", "host:c63/1").code == 0
    r = on("state", "pull", pg_url, d, state=False)
    assert r.code == 1 and words in r.err and "nothing was moved" in r.err
    assert _collective_runs(on)
    assert on("status", "-o", "json").json["missing_routes"] == []
