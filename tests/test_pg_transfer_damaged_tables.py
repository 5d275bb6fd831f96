"""`state push|pull` loses no routing tables to a file or row that cannot be read as tables (cut short, say): those
are of no use to `collective`, and the target's copy of the indexed tables is kept (the move refused, as for tables
missing from the source)."""

from __future__ import annotations

import pgserver
from conftest import Cli
from pgserver import db_name

pg_server = pgserver.pg_server
pg_url = pgserver.pg_url


def _fleet(on: Cli) -> None:
    assert on("init").code == 0
    for args in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        assert on(*args).code == 0


def _collective_runs(on: Cli) -> bool:
    return on("collective", "a", "--op", "all-reduce", "--bytes", "1MiB").code == 0


def test_push_does_not_replace_the_databases_tables_with_damaged_ones(pg_url, tmp_path, capsys):
    d = tmp_path / "state"
    on, db = Cli(capsys, d), Cli(capsys, pg_url)
    _fleet(on)
    assert on("state", "push", d, pg_url, state=False).code == 0
    tables = d / "routes" / "a.npz"
    tables.write_bytes(tables.read_bytes()[:100])
    assert on("inject-fault", "host:c63/1").code == 0  # the directory moves on
    r = on("state", "push", d, pg_url, state=False)
    assert r.code == 1 and "routes/a.npz cannot be read as routing tables" in r.err and "nothing was moved" in r.err
    assert _collective_runs(db)
    assert db("status", "-o", "json").json["missing_routes"] == []


def test_pull_does_not_replace_the_directorys_tables_with_damaged_ones(pg_url, tmp_path, capsys, request):
    d = tmp_path / "state"
    on, db = Cli(capsys, d), Cli(capsys, pg_url)
    _fleet(db)
    assert on("state", "pull", pg_url, d, state=False).code == 0
    request.getfixturevalue("pg_server").sql(
        "UPDATE tpufleet_tables SET data = substring(data FROM 1 FOR 100) WHERE name = 'a'", db_name(pg_url)
    )
    assert db("inject-fault", "host:c63/1").code == 0
    r = on("state", "pull", pg_url, d, state=False)
    assert r.code == 1 and "cannot be read as routing tables" in r.err and "nothing was moved" in r.err
    assert _collective_runs(on)
    assert on("status", "-o", "json").json["missing_routes"] == []
