"""Defects found in `state push|pull` and the PostgreSQL backend by a review (each test failed before its fix): a
move that dropped a directory's committed history, a password shown in a message, a state row put back
under a newer journal, a refused pull that made its directory, a
lock wait cut short by a statement timeout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer, db_name

from helpers import one_line
from tpufleet.state.pgbackend import PostgresBackend

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url


# ---- 1. a directory whose state file is older than its journal ----------------------------------------------------


def _restored(cli: Cli) -> bytes:
    """A fleet at serial 5 whose state file is put back to serial 2's (a backup): the journal alone holds 3 to 5.
    The journal's bytes."""
    assert cli("init").code == 0 and cli("allocate", "a", "--shape", "4x4x4").code == 0
    backup = (cli.state / "state.json").read_bytes()
    for name in ("b", "c", "d"):
        assert cli("allocate", name, "--shape", "4x4x4").code == 0
    (cli.state / "state.json").write_bytes(backup)
    assert "3 entries are beyond the state's serial 2" in one_line(cli("allocate", "e", "--shape", "4x4x4"))
    return (cli.state / "journal.jsonl").read_bytes()


def test_a_push_keeps_the_history_only_the_directorys_journal_holds(tmp_path: Path, pg_url, capsys):
    folder = Cli(capsys, tmp_path / "d")
    journal = _restored(folder)
    line = one_line(folder("state", "push", str(folder.state), pg_url, state=False))  # was exit 0, serials 3-5 dropped
    assert "3 entries are beyond the state's serial 2" in line
    assert (folder.state / "journal.jsonl").read_bytes() == journal
    assert one_line(Cli(capsys, pg_url)("status"), 1).startswith("tpufleet: error: no fleet state in")


def test_a_refused_pull_keeps_the_history_only_the_directorys_journal_holds(tmp_path: Path, pg_url, capsys):
    assert Cli(capsys, pg_url)("init").code == 0  # another history, at serial 1
    folder = Cli(capsys, tmp_path / "d")
    journal = _restored(folder)
    line = one_line(folder("state", "pull", pg_url, str(folder.state), state=False))  # was refused, serials 3-5 dropped
    assert "3 entries are beyond the state's serial 2" in line
    assert (folder.state / "journal.jsonl").read_bytes() == journal


def test_a_pull_keeps_the_history_only_the_directorys_journal_holds(tmp_path: Path, pg_url, capsys):
    folder = Cli(capsys, tmp_path / "d")
    assert folder("init").code == 0 and folder("allocate", "a", "--shape", "4x4x4").code == 0
    assert folder("state", "push", str(folder.state), pg_url, state=False).code == 0  # the database: serials 1-2
    backup = (folder.state / "state.json").read_bytes()
    for name in ("b", "c", "d"):
        assert folder("allocate", name, "--shape", "4x4x4").code == 0
    (folder.state / "state.json").write_bytes(backup)
    journal = (folder.state / "journal.jsonl").read_bytes()
    r = folder("state", "pull", pg_url, str(folder.state), state=False)  # was "already holds serial 2", 3-5 dropped
    assert "3 entries are beyond the state's serial 2" in one_line(r)
    assert (folder.state / "journal.jsonl").read_bytes() == journal


# ---- 2. a password in a message ---------------------------------------------------------------------------------------


def test_a_url_given_as_push_or_pull_dir_or_a_mistyped_url_is_refused_without_its_password(tmp_path, capsys):
    cli = Cli(capsys, tmp_path / "d")
    for args in (
        ("push", "postgresql://bob:s3cret@db/f", "postgresql://bob:s3cret@db/f"),
        ("pull", "postgres://bob:s3cret@db/f", "POSTGRESQL://bob:s3cret@db/x"),
        ("push", tmp_path, "postgresq://bob:s3cret@db/f?password=s3cret"),
    ):
        line = one_line(cli("state", *args, state=False))
        assert "s3cret" not in line and "bob@db" in line  # was the whole URL, password and all


@pytest.mark.parametrize(
    "query", ["password=Zq9&Tr0ub4dor", "user=bob&password=Zq9&Tr0ub&4dor&sslmode=disable", "PASSWORD=&Tr0ub4dor"]
)
def test_a_password_parameter_holding_an_ampersand_is_never_shown_in_pieces(capsys, query):
    """libpq splits the password at its '&' and refuses the rest as a parameter without a value: the message showed
    that rest of the password."""
    r = Cli(capsys, f"postgresql://127.0.0.1:1/f?{query}")("status", "-o", "json")  # type: ignore[arg-type]
    line = one_line(r, 2)
    assert "bad database URL postgresql://127.0.0.1:1/f" in line and "Tr0ub" not in line and "4dor" not in line


def test_a_config_files_state_url_with_a_nul_is_refused_without_its_password(tmp_path, capsys, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text('state = "postgresql://bob:s3cret@db/f\\u0000"\n')
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    line = one_line(Cli(capsys, tmp_path)("status", state=False))
    assert "holds a NUL character" in line and "s3cret" not in line and "bob@db" in line


# ---- 3. a state row older than its journal ----------------------------------------------------------------------------


def test_a_state_row_put_back_under_a_newer_journal_is_refused_not_given_its_serials_again(
    pg_server: PgServer, pg_url, capsys
):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0 and cli("allocate", "a", "--shape", "4x4x4").code == 0
    pg_server.sql("CREATE TABLE backup AS SELECT * FROM tpufleet_state", db_name(pg_url))
    for name in ("b", "c", "d"):
        assert cli("allocate", name, "--shape", "4x4x4").code == 0
    pg_server.sql("UPDATE tpufleet_state s SET serial = b.serial, doc = b.doc FROM backup b", db_name(pg_url))
    journal = pg_server.sql("SELECT seq, serial, line FROM tpufleet_journal ORDER BY seq", db_name(pg_url))
    for args in (("allocate", "e", "--shape", "4x4x4"), ("init", "--force")):  # each gave serial 3 again
        line = one_line(cli(*args))
        assert "(journal): field serial: 3 entries are beyond the state's serial 2" in line
    assert pg_server.sql("SELECT seq, serial, line FROM tpufleet_journal ORDER BY seq", db_name(pg_url)) == journal
    err = cli("history").err  # lines 4 and 5 were "damaged" under a second serial 3
    assert "damaged" not in err and "3 entries are beyond the state's serial 2 (up to serial 5)" in err


# ---- 4. a refused pull --------------------------------------------------------------------------------------------------


def test_a_pull_from_a_database_without_a_fleet_makes_no_directory(pg_server: PgServer, pg_url, capsys, tmp_path):
    copy = tmp_path / "new" / "copy"
    line = one_line(Cli(capsys, tmp_path)("state", "pull", pg_url, copy, state=False), 1)
    assert line.startswith("tpufleet: error: no fleet state in ") and line.endswith(" to pull")
    assert not (tmp_path / "new").exists()  # was made, with copy/.lock and copy/.lock.info
    pg_server.sql("CREATE TABLE tpufleet_schema (version integer)", db_name(pg_url))
    pg_server.sql("INSERT INTO tpufleet_schema VALUES (1)", db_name(pg_url))
    line = one_line(Cli(capsys, tmp_path)("state", "pull", pg_url, copy, state=False), 1)
    assert "has schema version 1; run `tpufleet state migrate`" in line and not (tmp_path / "new").exists()


# ---- 5. a statement timeout and the lock's ----------------------------------------------------------------------------


def test_a_statement_timeout_does_not_cut_a_lock_wait_short(pg_server: PgServer, pg_url, capsys):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    pg_server.sql(f"ALTER DATABASE {db_name(pg_url)} SET statement_timeout = 100")  # a DBA's, say
    holder = PostgresBackend(pg_url)
    with holder.locked(5, "tpufleet maintenance-window"):  # was exit 1, "canceling statement due to statement timeout"
        line = one_line(cli("--lock-timeout", "0.5", "inject-fault", "host:c01/1"), 3)
    assert f"pid {os.getpid()}" in line and "tpufleet maintenance-window" in line and "0.5s" in line
    assert cli("inject-fault", "host:c01/1").code == 0


def test_a_statement_timeout_does_not_cut_migrates_wait_for_its_tables_short(pg_server: PgServer, pg_url, capsys):
    import psycopg

    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    pg_server.sql("DELETE FROM tpufleet_schema WHERE version = 2", db_name(pg_url))  # a version-1 database
    pg_server.sql(f"ALTER DATABASE {db_name(pg_url)} SET statement_timeout = 100")
    with psycopg.connect(pg_url) as reader:  # a backup's open transaction, say: it read the tables
        reader.execute("SELECT count(*) FROM tpufleet_tables")
        line = one_line(cli("--lock-timeout", "0.5", "state", "migrate"), 3)  # was exit 1, the statement timeout
    assert "are in use by another session" in line and "schema version 2 not applied" in line
    assert cli("state", "migrate", "-o", "json").json["applied"] == [2]


# ---- a directory whose journal was moved aside ----------------------------------------------------------------------


def test_a_pull_over_a_fleet_without_its_journal_is_refused_not_replaced(tmp_path: Path, pg_url, capsys):
    """An empty journal is the start of every history: a directory holding another fleet (serial 2) whose journal
    was moved aside was replaced by the database's (serial 4) without a word."""
    db = Cli(capsys, pg_url)
    assert db("init").code == 0
    for name in ("x", "y", "z"):
        assert db("allocate", name, "--shape", "4x4x4").code == 0
    folder = Cli(capsys, tmp_path / "d")
    assert folder("init").code == 0 and folder("allocate", "mine", "--shape", "4x4x4").code == 0
    (folder.state / "journal.jsonl").rename(tmp_path / "journal.aside")
    state = (folder.state / "state.json").read_bytes()
    line = one_line(folder("state", "pull", pg_url, str(folder.state), state=False), 1)
    assert "holds serial 2 but no journal" in line and "nothing was moved" in line
    assert (folder.state / "state.json").read_bytes() == state


def test_a_moves_line_shows_a_directory_name_with_a_newline_escaped(tmp_path: Path, pg_url, capsys):
    folder = Cli(capsys, tmp_path / "two\nlines")
    assert folder("init").code == 0
    r = folder("state", "push", str(folder.state), pg_url, state=False)
    assert r.code == 0, r.err
    assert len(r.out.strip().splitlines()) == 1 and "two\\nlines" in r.out


def test_a_fleet_without_its_journal_moved_again_unchanged_is_left_alone(tmp_path: Path, pg_url, capsys):
    """The refusal above is for another history: the same state moved again is nothing to move, not refused."""
    folder = Cli(capsys, tmp_path / "d")
    assert folder("init").code == 0 and folder("allocate", "a", "--shape", "4x4x4").code == 0
    (folder.state / "journal.jsonl").write_bytes(b"")  # emptied by hand
    for _ in range(2):
        r = folder("state", "push", str(folder.state), pg_url, "-o", "json", state=False)
        assert r.code == 0, r.err
    assert r.json["changed"] is False


def test_one_journal_row_beyond_the_state_row_is_told_by_readers_and_refused_by_pull(
    pg_server: PgServer, pg_url, capsys, tmp_path
):
    """A database's commit writes its journal row and its state row together, so one row beyond the state's serial
    is already a state put back under its journal: every writer refused it, but `history` said nothing (the
    directory's threshold, where a crash leaves one line), and `state pull` copied the fleet, dropping the row and
    handing its serial out again."""
    import json as jsonlib

    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0 and cli("allocate", "a", "--shape", "4x4x4").code == 0
    ((line,),) = pg_server.sql("SELECT line FROM tpufleet_journal ORDER BY seq DESC LIMIT 1", db_name(pg_url))
    assert isinstance(line, (str, bytes))
    later = jsonlib.loads(line)
    later.update(serial=3, summary="from a backup")
    row = jsonlib.dumps(later).replace("'", "''")
    pg_server.sql(f"INSERT INTO tpufleet_journal (serial, line) VALUES (3, '{row}')", db_name(pg_url))
    assert "1 entries are beyond the state's serial 2 (up to serial 3), where a crash leaves none" in cli("history").err
    copy = tmp_path / "copy"
    line = one_line(Cli(capsys, tmp_path)("state", "pull", pg_url, copy, state=False), 2)
    assert "field serial: 1 entries are beyond the state's serial 2, where a commit leaves none" in line
    assert not (copy / "state.json").exists()


def test_a_push_of_the_whole_history_repairs_a_state_row_put_back(pg_server: PgServer, pg_url, capsys, tmp_path):
    """The refusal of a state row older than its journal advises putting back the state of the journal's last
    serial: a push of a directory holding that history does so (the check that refuses a pull from such a database
    refused this push too)."""
    folder = Cli(capsys, tmp_path / "d")
    assert folder("init").code == 0 and folder("allocate", "a", "--shape", "4x4x4").code == 0
    assert folder("state", "push", str(folder.state), pg_url, state=False).code == 0
    pg_server.sql("CREATE TABLE backup AS SELECT * FROM tpufleet_state", db_name(pg_url))
    db = Cli(capsys, pg_url)
    assert db("inject-fault", "host:c40/1").code == 0  # serial 3
    copy = tmp_path / "e"
    assert folder("state", "pull", pg_url, str(copy), state=False).code == 0
    pg_server.sql("UPDATE tpufleet_state s SET serial = b.serial, doc = b.doc FROM backup b", db_name(pg_url))
    assert "1 entries are beyond the state's serial 2" in one_line(db("inject-fault", "host:c41/1"))
    r = folder("state", "push", str(copy), pg_url, state=False)
    assert r.code == 0, r.err
    assert db("status", "-o", "json").json["serial"] == 3 and db("inject-fault", "host:c41/1").code == 0
