"""Defects found in the PostgreSQL state backend and `state push|pull` (each test failed before its fix): text in
another client or database encoding, routing tables lost by a push, a pull killed into a new directory, passwords
quoted by libpq or cut at Python's whitespace, bad URL parameters read as a server that is down.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer, db_name

from helpers import one_line
from tpufleet.state import crashpoints
from tpufleet.state.pgbackend import PostgresBackend

CTX = multiprocessing.get_context("fork")
pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url
REASON = "修理 needed"  # outside Latin-1


@pytest.fixture
def latin1_url(pg_server: PgServer) -> Iterator[str]:
    """A new, empty database in the LATIN1 encoding: its URL."""
    name = f"latin{os.getpid()}"
    pg_server.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    pg_server.sql(f"CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    yield pg_server.url(name)
    with contextlib.suppress(Exception):
        pg_server.sql(f"DROP DATABASE {name} WITH (FORCE)")


# ---- 1. a client or database encoding other than UTF-8 ---------------------------------------------------------------


def _inject(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> int:
    """inject-fault with a reason outside Latin-1, as typed (the journal and the lock's holder note sys.argv)."""
    args = ("inject-fault", "ocs:pod0/x/7", "--reason", REASON)
    monkeypatch.setattr(sys, "argv", ["tpufleet", "--state", str(cli.state), *args])
    return cli(*args).code


def test_a_latin1_client_encoding_takes_any_text(pg_url, capsys, monkeypatch):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    monkeypatch.setenv("PGCLIENTENCODING", "LATIN1")  # as libpq reads it: was a UnicodeEncodeError, exit 70
    assert _inject(cli, monkeypatch) == 0
    assert [f["reason"] for f in cli("faults", "-o", "json").json] == [REASON]
    assert cli("show", "journal", "-o", "json").json[-1]["command"].endswith(REASON)
    holder = PostgresBackend(pg_url)
    with holder.locked(5, f"tpufleet --reason {REASON}"):  # a UTF8 database holds it as typed
        assert f"--reason {REASON}" in holder.holder()


def test_a_latin1_database_takes_any_text_and_its_lock_holder_is_escaped(latin1_url, capsys, monkeypatch):
    cli = Cli(capsys, latin1_url)
    assert cli("init").code == 0
    assert _inject(cli, monkeypatch) == 0
    assert [f["reason"] for f in cli("faults", "-o", "json").json] == [REASON]
    holder = PostgresBackend(latin1_url)
    with holder.locked(5, f"tpufleet --reason {REASON}"):  # a text column in LATIN1: escaped, not refused
        assert "--reason \\u4fee\\u7406 needed" in holder.holder()


# ---- 2. `state push|pull` and routing tables ---------------------------------------------------------------------------


def _routed(cli: Cli) -> None:
    for args in (("init",), ("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply")):
        assert cli(*args).code == 0


def _killed_routes(state: Path) -> None:
    os.environ[crashpoints.ENV] = "transaction.before_side_files"  # committed; the tables still under a temp name
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    from tpufleet.cli import main

    main(["--state", str(state), "routes", "a"])


def test_push_installs_the_tables_a_killed_writer_left_waiting(tmp_path, pg_server: PgServer, pg_url, capsys):
    folder = Cli(capsys, tmp_path / "d")
    _routed(folder)
    proc = CTX.Process(target=_killed_routes, args=(tmp_path / "d",))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL and not (tmp_path / "d" / "routes" / "a.npz").exists()
    pushed = folder("state", "push", tmp_path / "d", pg_url, "-o", "json", state=False)
    assert pushed.code == 0 and pushed.json["tables"] == ["a"]  # was []: the tables read as missing
    assert (tmp_path / "d" / "routes" / "a.npz").exists()
    assert pg_server.sql("SELECT name FROM tpufleet_tables", db_name(pg_url)) == [("a",)]
    assert [s["routes"] for s in Cli(capsys, pg_url)("show", "slices", "-o", "json").json] == ["fresh"]


def test_a_push_or_pull_never_deletes_the_targets_copy_of_tables_the_source_lacks(
    tmp_path, pg_server: PgServer, pg_url, capsys
):
    folder, db = Cli(capsys, tmp_path / "d"), db_name(pg_url)
    _routed(folder)
    assert folder("routes", "a").code == 0
    assert folder("state", "push", tmp_path / "d", pg_url, state=False).code == 0
    table = tmp_path / "d" / "routes" / "a.npz"
    kept = table.read_bytes()
    table.unlink()  # the same serial and history; the directory lost its file
    line = one_line(folder("state", "push", tmp_path / "d", pg_url, state=False), 1)
    assert "slice 'a'" in line and str(table) in line and "nothing was moved" in line
    assert pg_server.sql("SELECT data FROM tpufleet_tables", db) == [(kept,)]  # was deleted
    assert folder("state", "pull", pg_url, tmp_path / "d", state=False).code == 0  # copied back
    assert table.read_bytes() == kept
    pg_server.sql("DELETE FROM tpufleet_tables", db)  # now the database lost them: the pull must keep the file
    line = one_line(folder("state", "pull", pg_url, tmp_path / "d", state=False), 1)
    assert "slice 'a'" in line and "row 'a' in tpufleet_tables" in line
    assert table.read_bytes() == kept


# ---- 3. a pull killed into a new directory ------------------------------------------------------------------------------


def _killed_pull(url: str, state: Path, point: str) -> None:
    os.environ[crashpoints.ENV] = point
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    from tpufleet.cli import main

    main(["state", "pull", url, str(state)])


@pytest.mark.parametrize("point", ["atomic_write.before_dir_fsync:1", "atomic_write.before_rename:2"])
def test_a_pull_killed_between_the_journal_and_the_state_of_a_new_directory_is_completed_by_the_next(
    tmp_path, pg_url, capsys, point
):
    db = Cli(capsys, pg_url)
    _routed(db)
    assert db("routes", "a").code == 0
    new = tmp_path / "new"
    proc = CTX.Process(target=_killed_pull, args=(pg_url, new, point))  # the journal renamed in, no state file
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    assert (new / "journal.jsonl").exists() and not (new / "state.json").exists()
    pulled = db("state", "pull", pg_url, new, "-o", "json", state=False)
    assert pulled.code == 0 and pulled.json["changed"] is True and pulled.json["tables"] == ["a"]  # was refused
    folder = Cli(capsys, new)
    assert folder("status", "-o", "json").json["serial"] == 4 and (new / "routes" / "a.npz").exists()
    assert folder("show", "journal", "-o", "json").json == db("show", "journal", "-o", "json").json


def test_a_pull_killed_between_the_journal_and_the_state_of_an_existing_directory_is_completed_by_the_next(
    tmp_path, pg_url, capsys
):
    """The killed pull leaves the database's longer journal under the directory's older state: more entries beyond
    the state's serial than a crash leaves, which any other writer refuses; the next pull replaces them."""
    db = Cli(capsys, pg_url)
    assert db("init").code == 0 and db("allocate", "a", "--shape", "4x4x4").code == 0
    second = tmp_path / "second"
    assert db("state", "pull", pg_url, second, state=False).code == 0
    assert db("allocate", "b", "--shape", "4x4x4").code == 0 and db("allocate", "c", "--shape", "4x4x4").code == 0
    proc = CTX.Process(target=_killed_pull, args=(pg_url, second, "atomic_write.before_dir_fsync:1"))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    folder = Cli(capsys, second)
    assert folder("status", "-o", "json").json["serial"] == 2  # the journal is the database's, the state not yet
    assert folder("allocate", "d", "--shape", "4x4x4").code == 2  # a writer will not cut that history
    pulled = db("state", "pull", pg_url, second, "-o", "json", state=False)
    assert pulled.code == 0 and pulled.json["changed"] is True, pulled.err
    assert folder("status", "-o", "json").json["serial"] == 4
    assert folder("show", "journal", "-o", "json").json == db("show", "journal", "-o", "json").json


def test_a_pull_still_refuses_a_stateless_journal_of_another_history(tmp_path, pg_url, capsys):
    assert Cli(capsys, pg_url)("init").code == 0
    other = Cli(capsys, tmp_path / "d")
    assert other("init").code == 0 and other("allocate", "x", "--shape", "4x4x4").code == 0
    (tmp_path / "d" / "state.json").unlink()  # a lost state: its journal is not the database's
    line = one_line(other("state", "pull", pg_url, tmp_path / "d", state=False), 1)
    assert "holds a journal but no state file" in line and not (tmp_path / "d" / "state.json").exists()


# ---- 4. passwords: pieces quoted by libpq, and characters Python counts as whitespace ------------------------------------

QUOTED_PIECES = (  # (URL, pieces of its password libpq quoted in its message)
    ("postgresql://bob:Tr0ub4dor/3?horse@127.0.0.1:5432/f", ("horse", "Tr0ub4dor")),
    ("postgresql://bob:ab%c/longsecretvalue@db/f", ("ab%c", "longsecret")),
    ("postgresql://bob:x/hun%zzter2@127.0.0.1:5432/f", ("hun%zz", "zzter2")),
    ("postgresql://bob:my secret@db/f", ("my secret",)),
)


@pytest.mark.parametrize(("url", "pieces"), QUOTED_PIECES)
def test_a_bad_url_never_quotes_a_piece_of_its_password(capsys, url, pieces):
    line = one_line(Cli(capsys, url)("status", "-o", "json"), 2)
    assert "bad database URL postgresql://bob@" in line
    assert not [piece for piece in pieces if piece in line]


def test_a_password_libpq_reads_otherwise_is_bad_input_not_a_connection_to_its_pieces(capsys):
    # libpq ends the user part at the '/': host "localhost", port "1", database "s3cr3t@db/f", all shown by its
    # messages (connection refused at port 1)
    line = one_line(Cli(capsys, "postgresql://localhost:1/s3cr3t@db/f")("status"), 2)  # type: ignore[arg-type]
    assert "port 1" not in line and "s3cr3t" not in line and "percent-encode" in line


@pytest.mark.parametrize(
    "query",
    ["application_name=ops@laptop", "user=alice@corp", "sslcert=/home/u@x/c.pem"],
)
def test_an_at_sign_in_the_query_is_no_part_of_the_password(capsys, query):
    """The URL is fine (no server listens there): exit 1, cannot connect; not exit 2, 'reads its password otherwise'."""
    url = f"postgresql://bob:pw@127.0.0.1:1/f?{query}&connect_timeout=1"
    line = one_line(Cli(capsys, url)("status"), 1)  # type: ignore[arg-type]
    assert f"postgresql://bob@127.0.0.1:1/f?{query}" in line and ":pw@" not in line


WHITESPACE_PASSWORD = "ab\x1fcd\x85ef\xa0gh secret"  # all Python's whitespace (\s), none a URL's end in an argument


def test_the_recorded_command_line_hides_a_password_holding_what_python_counts_as_whitespace(monkeypatch):
    from tpufleet.state.lock import command_line

    url = f"postgresql://bob:{WHITESPACE_PASSWORD}@db/f"
    monkeypatch.setattr(sys, "argv", ["tpufleet", "--state", url, "inject-fault", "host:c01/1", "--reason", f"x {url}"])
    line = command_line()
    assert line == "tpufleet --state postgresql://bob@db/f inject-fault host:c01/1 --reason x postgresql://bob@db/f"


def test_a_journal_never_keeps_a_password_holding_what_python_counts_as_whitespace(
    pg_server: PgServer, pg_url, capsys, monkeypatch
):
    password = "ab\x85cd\xa0efsecret"  # (control characters in a URL are refused: test_bad_url_values)
    db = db_name(pg_url)
    pg_server.sql("DROP ROLE IF EXISTS carol")
    pg_server.sql(f"CREATE ROLE carol LOGIN PASSWORD '{password}'")
    pg_server.sql(f"GRANT ALL ON DATABASE {db} TO carol")
    pg_server.sql("GRANT ALL ON SCHEMA public TO carol", db)
    url = pg_server.tcp_url(db, "carol", password)
    monkeypatch.setattr(sys, "argv", ["tpufleet", "--state", url, "init"])
    assert Cli(capsys, url)("init").code == 0  # type: ignore[arg-type]
    ((line,),) = pg_server.sql("SELECT convert_from(line, 'UTF8') FROM tpufleet_journal", db)
    assert "secret" not in str(line) and f"--state postgresql://carol@127.0.0.1:{pg_server.port}/{db} init" in str(line)


# ---- 5. bad parameter values are bad input, before connecting --------------------------------------------------------

BAD_VALUES = (
    ("&port=abc", "port 'abc'"),
    ("&port=99999", "port '99999'"),
    ("&sslmode=bogus", "sslmode 'bogus'"),
    ("&connect_timeout=abc", "connect_timeout 'abc'"),
    ("&target_session_attrs=writable", "target_session_attrs 'writable'"),
    ("&application_name=a\nb", "control character"),
)


@pytest.mark.parametrize(("extra", "named"), BAD_VALUES)
def test_bad_url_values(pg_url, capsys, extra, named):
    line = one_line(Cli(capsys, pg_url + extra)("status"), 2)  # was exit 1: "cannot connect"
    assert line.startswith("tpufleet: error: bad database URL postgresql://") and named in line


def test_a_port_out_of_range_in_the_host_part_is_bad_input(capsys):
    line = one_line(Cli(capsys, "postgresql://bob:pw@127.0.0.1:99999/f")("status"), 2)  # type: ignore[arg-type]
    assert "port '99999' is not a port number" in line and "pw" not in line


# ---- 7. messages ----------------------------------------------------------------------------------------------------


def test_an_upper_case_scheme_is_a_database_url_libpq_takes(pg_url, capsys):
    assert Cli(capsys, pg_url.replace("postgresql://", "POSTGRESQL://"))("init").code == 0
    assert Cli(capsys, pg_url)("status", "-o", "json").json["serial"] == 1


def test_a_lock_wait_ended_by_the_server_says_why(pg_server: PgServer, pg_url, capsys):
    import threading

    from tpufleet.errors import Unavailable

    assert Cli(capsys, pg_url)("init").code == 0
    holder, waiter = PostgresBackend(pg_url), PostgresBackend(pg_url)
    failed: list[BaseException] = []

    def wait() -> None:
        try:
            waiter._acquire(60)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            failed.append(exc)

    waiting = "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    with holder.advisory(5):
        thread = threading.Thread(target=wait)
        thread.start()
        while not pg_server.sql(waiting, db_name(pg_url)):  # until the waiter waits (its own 60 s bound it)
            assert thread.is_alive()
            time.sleep(0.05)
        pg_server.sql("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        thread.join(60)
    assert len(failed) == 1 and isinstance(failed[0], Unavailable)
    assert "terminating connection due to administrator command" in str(failed[0])  # was "the connection is closed"


# ---- 6. migrate and a reader's table lock -----------------------------------------------------------------------------


def _exit_of(*args: str) -> None:
    """Run the command line in this (forked) process and exit with its exit code."""
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    from tpufleet.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        os._exit(exc.code if isinstance(exc.code, int) else 1)
    os._exit(0)


def test_migrate_waits_for_a_readers_table_lock_no_longer_than_the_lock_timeout(pg_server: PgServer, pg_url, capsys):
    import psycopg

    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    pg_server.sql("DELETE FROM tpufleet_schema WHERE version = 2", db_name(pg_url))  # a version-1 database
    with psycopg.connect(pg_url) as reader:  # a backup's open transaction, say: it read the tables
        reader.execute("SELECT count(*) FROM tpufleet_tables")
        proc = CTX.Process(target=_exit_of, args=("--state", pg_url, "--lock-timeout", "0.5", "state", "migrate"))
        proc.start()
        proc.join(60)  # (waited for ever before: its ALTER TABLE had no timeout)
        if proc.exitcode is None:
            proc.kill()
        assert proc.exitcode == 3
    r = cli("state", "migrate", "-o", "json")  # the reader gone: version 2 applied
    assert r.code == 0 and r.json["applied"] == [2]
