"""Defects found in `state pull|push` and the PostgreSQL lock by a third review (each test failed before its fix): a
failed pull that left the directory it made, a lock held by a killed process's row, a commit lost at COMMIT, another
writer's password in the lock's holder.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from pathlib import Path

import pgserver
from conftest import Cli
from pgserver import PgServer, db_name

from helpers import one_line
from tpufleet.state import crashpoints
from tpufleet.state.pgbackend import PostgresBackend

CTX = multiprocessing.get_context("fork")

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url


# ---- 1. a failed pull into a directory it made ------------------------------------------------------------------------


def test_a_pull_that_times_out_on_the_database_lock_leaves_no_directory(pg_url, capsys, tmp_path: Path):
    assert Cli(capsys, pg_url)("init").code == 0
    copy = tmp_path / "new" / "copy"
    with PostgresBackend(pg_url).locked(5, "tpufleet maintenance-window"):
        line = one_line(Cli(capsys, tmp_path)("--lock-timeout", "0.2", "state", "pull", pg_url, copy, state=False), 3)
    assert "tpufleet maintenance-window" in line
    assert not (tmp_path / "new").exists()  # was made, with copy/.lock and copy/.lock.info


def test_a_pull_refused_by_a_read_only_role_leaves_no_directory(pg_server: PgServer, pg_url, capsys, tmp_path: Path):
    assert Cli(capsys, pg_url)("init").code == 0
    db = db_name(pg_url)
    pg_server.sql("DROP ROLE IF EXISTS reader")
    pg_server.sql("CREATE ROLE reader LOGIN")
    pg_server.sql("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader", db)
    copy = tmp_path / "copy"
    reader = pg_url.replace(f"{pgserver.SUPERUSER}@", "reader@")
    line = one_line(Cli(capsys, tmp_path)("state", "pull", reader, copy, state=False), 1)
    assert line.startswith("tpufleet: error: cannot lock the state database")
    assert not copy.exists()


def test_a_failed_pull_into_an_existing_directory_keeps_it(pg_url, capsys, tmp_path: Path):
    assert Cli(capsys, pg_url)("init").code == 0
    copy = tmp_path / "copy"
    copy.mkdir(mode=0o700)
    with PostgresBackend(pg_url).locked(5, "tpufleet maintenance-window"):
        one_line(Cli(capsys, tmp_path)("--lock-timeout", "0.2", "state", "pull", pg_url, copy, state=False), 3)
    assert copy.is_dir()


# ---- 2. a killed holder's row and a holder that writes none -------------------------------------------------------------


def _killed_allocate(url: str) -> None:
    os.environ[crashpoints.ENV] = "journal.before_write"  # holding the lock, its holder row written
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    from tpufleet.cli import main

    main(["--state", url, "allocate", "a", "--shape", "4x4x4"])


def test_the_lock_message_never_names_a_killed_holder(pg_server: PgServer, pg_url, capsys, monkeypatch):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    proc = CTX.Process(target=_killed_allocate, args=(pg_url,))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    assert pg_server.sql("SELECT pid FROM tpufleet_lock", db_name(pg_url)) == [(proc.pid,)]  # its row stays
    lines = []
    migrate = PostgresBackend.migrate

    def waited(self, *args):  # while `state migrate` holds the lock: another command waits for it
        lines.append(one_line(Cli(capsys, pg_url)("--lock-timeout", "0.2", "inject-fault", "host:c01/1"), 3))
        return migrate(self, *args)

    monkeypatch.setattr(PostgresBackend, "migrate", waited)
    monkeypatch.setattr(sys, "argv", ["tpufleet", "--state", pg_url, "state", "migrate"])
    assert cli("state", "migrate").code == 0
    assert f"pid {proc.pid} " not in lines[0]  # was the killed allocate, "since" its start
    assert f"pid {os.getpid()} " in lines[0] and "state migrate" in lines[0]


# ---- 3. a push that loses its connection at COMMIT ----------------------------------------------------------------------

LOSE_AT_COMMIT = (  # a deferred trigger: runs at COMMIT, and ends its own connection there
    "CREATE FUNCTION lose() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NULL; END $$",
    "CREATE CONSTRAINT TRIGGER lose AFTER INSERT OR UPDATE ON tpufleet_state DEFERRABLE INITIALLY DEFERRED "
    "FOR EACH ROW EXECUTE FUNCTION lose()",
)


def test_a_push_that_loses_its_connection_at_commit_says_it_may_have_been_written(
    pg_server: PgServer, pg_url, capsys, tmp_path: Path
):
    folder = Cli(capsys, tmp_path / "d")
    assert folder("init").code == 0
    assert folder("state", "push", folder.state, pg_url, state=False).code == 0
    assert folder("allocate", "a", "--shape", "4x4x4").code == 0
    for statement in LOSE_AT_COMMIT:
        pg_server.sql(statement, db_name(pg_url))
    line = one_line(folder("state", "push", folder.state, pg_url, state=False), 1)
    assert "cannot write" not in line  # was "cannot write the state database ...", as if nothing was
    assert "while pushing serial 2" in line and "may have been written" in line and "again is safe" in line
    pg_server.sql("DROP TRIGGER lose ON tpufleet_state", db_name(pg_url))
    pushed = folder("state", "push", folder.state, pg_url, "-o", "json", state=False)
    assert pushed.code == 0 and pushed.json["changed"] is True and pushed.json["serial"] == 2
    again = folder("state", "push", folder.state, pg_url, "-o", "json", state=False)
    assert again.code == 0 and again.json["changed"] is False  # written: the push again moves nothing


# ---- 4. another writer's password in the lock's holder ------------------------------------------------------------------

UNREDACTED = (
    "tpufleet --state postgresql://bob:s3cret@db/f?password=s3cret inject-fault host:c01/1"  # an older writer's
)


def test_a_database_lock_holders_password_is_never_shown(pg_url, capsys):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    holder = PostgresBackend(pg_url)
    with holder.locked(5, UNREDACTED):  # the row as another writer wrote it
        line = one_line(cli("--lock-timeout", "0.2", "inject-fault", "host:c01/1"), 3)
        shown = holder.holder()
    assert "s3cret" not in line and "s3cret" not in shown  # was the whole URL
    assert "postgresql://bob@db/f" in line and f"pid {os.getpid()} " in line


def test_a_directory_lock_holders_password_is_never_shown(capsys, tmp_path: Path):
    from tpufleet.state.lock import exclusive

    cli = Cli(capsys, tmp_path / "d")
    assert cli("init").code == 0
    with exclusive(tmp_path / "d", 5, UNREDACTED):  # .lock.info as another writer wrote it
        line = one_line(cli("--lock-timeout", "0.2", "inject-fault", "host:c01/1"), 3)
    assert "s3cret" not in line and "postgresql://bob@db/f" in line  # was the whole URL


# ---- 5. a short password in a message ------------------------------------------------------------------------------------


def test_a_short_password_is_not_cut_out_of_the_words_of_a_message(capsys):
    line = one_line(Cli(capsys, "postgresql://bob:p@127.0.0.1:1/f?connect_timeout=1")("status"), 1)  # type: ignore[arg-type]
    assert "***" not in line  # was "***ort 1": every "p" masked, which shows the password
    assert line.startswith("tpufleet: error: cannot connect to the state database postgresql://bob@127.0.0.1:1/f")


def test_a_short_password_standing_alone_is_still_cut_out():
    from tpufleet.state.pgurl import first_line as _first_line

    assert _first_line("no login for bob:pw@db, nor for pw", ["pw"]) == "no login for bob:***@db, nor for ***"
    assert _first_line("a longsecretpassword0 inside", ["secretpassword0"]) == "a long*** inside"
