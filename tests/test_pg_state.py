"""The fleet state on PostgreSQL (`--state postgresql://...`): the same commands, JSON, exit codes and journal as a
state directory, against a real server (tests/pgserver.py starts one; these tests skip, saying why, without one).

Representative commands run on both backends and must agree; then what only a database has: credentials, the
schema and its version, the serial check, `state push|pull` byte for byte, writers in separate processes, SIGKILL
at each crash point, and the server stopped in the middle of a command.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from pathlib import Path

import pgserver
import pytest
from conftest import Cli
from pgserver import PgServer, db_name

from helpers import one_line
from tpufleet.cli import main
from tpufleet.errors import Refused
from tpufleet.fleetstate import Change
from tpufleet.ids import parse_target
from tpufleet.state import Store, crashpoints

CTX = multiprocessing.get_context("fork")
pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url
VOLATILE = ("time", "pid")  # journal fields that differ between two runs of the same commands


def tpufleet(*args: object) -> int:
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


@pytest.fixture(params=["directory", "postgresql"])
def place(request, tmp_path) -> str:
    """Where a fleet state is kept: a state directory, or a new database on the test server."""
    if request.param == "directory":
        return str(tmp_path / "state")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def on(place, capsys) -> Cli:
    return Cli(capsys, place)  # a URL goes to --state as typed


SESSION = (
    ("init",),
    ("allocate", "a", "--shape", "4x4x8"),
    ("plan-xconnect", "a", "--apply"),
    ("routes", "a"),
    ("inject-fault", "host:c10/1"),
    ("allocate", "b", "--shape", "4x4x4"),
    ("clear-fault", "f1"),
    ("release", "b"),
)


def _journal(cli: Cli) -> list[dict]:
    r = cli("show", "journal", "-o", "json")
    assert r.code == 0, r.err
    return [{k: v for k, v in e.items() if k not in VOLATILE} for e in r.json]


# ---- the same on both backends -----------------------------------------------------------------------------------


def test_a_session_gives_the_same_state_and_journal_on_a_directory_and_a_database(tmp_path, capsys, pg_url):
    folder, database = Cli(capsys, tmp_path / "s"), Cli(capsys, pg_url)
    for command in SESSION:
        for cli in (folder, database):
            assert cli(*command).code == 0, (command, cli(*command).err)
    for view in (("status",), ("show", "slices"), ("show", "ocs")):
        assert folder(*view, "-o", "json").json == database(*view, "-o", "json").json, view
    faults = [folder("faults", "--all", "-o", "json").json, database("faults", "--all", "-o", "json").json]
    for listing in faults:
        for fault in listing:
            fault.pop("opened"), fault.pop("cleared")  # times: the two sessions run seconds apart
    assert faults[0] == faults[1] and len(faults[0]) == 1
    journals = [_journal(folder), _journal(database)]
    for cli, journal in zip((folder, database), journals, strict=True):  # each command names its own --state
        for entry in journal:
            entry["command"] = entry["command"].replace(f"--state {cli.state}", "--state STATE")
    assert journals[0] == journals[1]
    assert [e["serial"] for e in _journal(database)] == list(range(1, len(SESSION) + 1))
    a_to_a = ("collective", "a", "--op", "all-to-all", "--bytes", "64MiB", "-o", "json")
    on_folder, on_database = folder(*a_to_a).json, database(*a_to_a).json
    assert on_folder["time_s"] == on_database["time_s"] and on_database["tables"]["source"] == "stored"


def test_init_refuses_an_existing_fleet_and_force_keeps_counting(on):
    assert on("init").code == 0
    assert on("allocate", "a", "--shape", "4x4x4").code == 0
    assert "already exists" in one_line(on("init"), 1)
    r = on("init", "--force", "-o", "json")
    assert r.code == 0 and r.json["serial"] == 3 and r.json["replaced"]["slices"] == 1
    assert [e["serial"] for e in _journal(on)] == [1, 2, 3]


def test_a_refused_command_changes_nothing(on):
    assert on("init").code == 0
    assert on("inject-fault", "host:c00/1").code == 0
    before = on("status", "-o", "json").json
    one_line(on("allocate", "huge", "--shape", "16x16x16"), 1)  # the whole pod, one cube of it out
    one_line(on("allocate", "../x", "--shape", "4x4x4"), 2)
    assert on("status", "-o", "json").json == before
    assert len(_journal(on)) == 2


def test_the_lock_times_out_with_exit_3_naming_its_holder(on, place):
    assert on("init").code == 0
    holder = Store(place if place.startswith("postgresql") else Path(place))
    with holder.backend.writing(5, "tpufleet maintenance-window"):
        line = one_line(on("--lock-timeout", "0.3", "inject-fault", "host:c01/1"), 3)
    assert f"pid {os.getpid()}" in line and "tpufleet maintenance-window" in line and "0.3s" in line
    assert on("inject-fault", "host:c01/1").code == 0  # released with the holder


@pytest.mark.parametrize(("given", "said"), [("1e-320", "1e-320s"), ("0.1", "0.1s"), ("2.5e-05", "2.5e-05s")])
def test_the_lock_timeout_is_named_as_given(on, place, given, said):
    assert on("init").code == 0
    holder = Store(place if place.startswith("postgresql") else Path(place))
    with holder.backend.writing(5, "tpufleet maintenance-window"):
        line = one_line(on("--lock-timeout", given, "inject-fault", "host:c01/1"), 3)
    assert f"gave up after {said} (see --lock-timeout)" in line


def test_a_change_the_next_load_would_refuse_is_refused_and_nothing_is_written(on, place, monkeypatch):
    from tpufleet.state import inputfiles

    assert on("init").code == 0
    store = Store(place if place.startswith("postgresql") else Path(place))
    before = store.backend.read_state()
    monkeypatch.setattr(inputfiles, "MAX_STATE_BYTES", len(before) + 50)  # loads; a new fault would not fit
    assert "nothing changed" in one_line(on("inject-fault", "host:c01/1"), 2)
    assert store.backend.read_state() == before and len(_journal(on)) == 1


def test_show_journal_tail_reads_the_end_on_both_backends(on, place, request, monkeypatch):
    from tpufleet.state import journal, pgbackend

    for command in SESSION:
        assert on(*command).code == 0
    whole = _journal(on)
    if place.startswith("postgresql"):  # a damaged line after the last committed one: kept, reported
        request.getfixturevalue("pg_server").sql(
            "INSERT INTO tpufleet_journal (serial, line) VALUES (NULL, convert_to('{bad', 'UTF8'))", db_name(place)
        )
    else:
        with open(Path(place) / "journal.jsonl", "ab") as fh:
            fh.write(b"{bad\n")
    monkeypatch.setattr(pgbackend, "TAIL_ROWS", 2)  # read from the end a few lines at a time
    monkeypatch.setattr(journal, "_TAIL", 16)
    for count in (1, 3, len(SESSION), 50):
        r = on("show", "journal", "--tail", count, "-o", "json")
        assert r.code == 0 and [{k: v for k, v in e.items() if k not in VOLATILE} for e in r.json] == whole[-count:]
        assert f"damaged line(s) {len(SESSION) + 1} skipped" in r.err


def test_tables_removed_by_hand_are_missing_not_fresh(on, place, request):
    assert on("init").code == 0
    for args in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        assert on(*args).code == 0
    assert on("status", "-o", "json").json["missing_routes"] == []
    if place.startswith("postgresql"):
        request.getfixturevalue("pg_server").sql("DELETE FROM tpufleet_tables WHERE name = 'a'", db_name(place))
    else:
        (Path(place) / "routes" / "a.npz").unlink()
    status = on("status", "-o", "json").json
    assert status["missing_routes"] == ["a"] and status["slices"][0]["routes"] == "missing"
    assert [r["routes"] for r in on("show", "slices", "-o", "json").json] == ["missing"]
    assert "routing tables missing" in on("status").out
    assert on("routes", "a").code == 0
    assert on("status", "-o", "json").json["slices"][0]["routes"] == "fresh"


# ---- only a database -----------------------------------------------------------------------------------------------


def test_a_wrong_password_is_one_line_that_never_shows_it(pg_server: PgServer, pg_url, capsys):
    pg_server.sql("DROP ROLE IF EXISTS alice")
    pg_server.sql("CREATE ROLE alice LOGIN PASSWORD 's3cret-Pw'")
    db = db_name(pg_url)
    pg_server.sql(f"GRANT ALL ON DATABASE {db} TO alice")
    pg_server.sql("GRANT ALL ON SCHEMA public TO alice", db)
    wrong = Cli(capsys, pg_server.tcp_url(db, "alice", "not-the-Pw"))  # type: ignore[arg-type]
    line = one_line(wrong("init"), 1)
    assert "not-the-Pw" not in line and f"postgresql://alice@127.0.0.1:{pg_server.port}/{db}" in line
    right = Cli(capsys, pg_server.tcp_url(db, "alice", "s3cret-Pw"))  # type: ignore[arg-type]
    r = right("init", "-o", "json")
    assert r.code == 0 and "s3cret-Pw" not in r.out + r.err
    assert r.json["state_dir"] == f"postgresql://alice@127.0.0.1:{pg_server.port}/{db}"
    query = f"postgresql://alice@127.0.0.1:{pg_server.port}/{db}?password=s3cret-Pw"
    in_query = Cli(capsys, query)  # type: ignore[arg-type]
    r = in_query("status", "-o", "json")
    assert r.code == 0 and "s3cret-Pw" not in r.out + r.err


def test_no_server_is_one_line_exit_1(capsys):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens once it is closed
    url = f"postgresql://me:pw@127.0.0.1:{port}/fleet?connect_timeout=2"
    nowhere = Cli(capsys, url)  # type: ignore[arg-type]
    line = one_line(nowhere("status"), 1)
    assert f"postgresql://me@127.0.0.1:{port}/fleet" in line and ":pw@" not in line


def test_a_pull_from_no_server_makes_no_directory(capsys, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://me:pw@127.0.0.1:{port}/fleet?connect_timeout=2"
    line = one_line(Cli(capsys, tmp_path / "unused")("state", "pull", url, tmp_path / "copy"), 1)
    assert ":pw@" not in line and not (tmp_path / "copy").exists()


def test_a_read_of_an_empty_database_is_refused_and_creates_nothing(pg_server: PgServer, pg_url, capsys):
    assert "no fleet state" in one_line(Cli(capsys, pg_url)("status"), 1)
    db = db_name(pg_url)
    assert pg_server.sql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'tpufleet%'", db) == [(0,)]


def test_migrate_creates_then_has_nothing_to_do_and_a_newer_schema_is_refused(pg_server: PgServer, pg_url, capsys):
    cli = Cli(capsys, pg_url)
    r = cli("state", "migrate", "-o", "json")
    assert r.code == 0 and r.json["applied"] == [1, 2] and r.json["from_version"] == 0
    assert cli("state", "migrate", "-o", "json").json["applied"] == []
    assert cli("init").code == 0
    db = db_name(pg_url)
    pg_server.sql("INSERT INTO tpufleet_schema (version, by_user) VALUES (99, 'future')", db)
    assert "newer than this tpufleet" in one_line(cli("status"), 1)
    assert "newer than this tpufleet" in one_line(cli("state", "migrate"), 1)


def test_a_version_1_database_migrates_to_tables_stored_uncompressed(pg_server: PgServer, pg_url, capsys):
    """Version 2 stores routing tables as they come (pglz took ten times longer to write a pod's than to store them)."""
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0 and cli("allocate", "a", "--shape", "4x4x4").code == 0
    db = db_name(pg_url)
    storage = "SELECT attstorage FROM pg_attribute WHERE attrelid = 'tpufleet_tables'::regclass AND attname = 'data'"
    assert pg_server.sql(storage, db) == [("e",)]
    pg_server.sql("ALTER TABLE tpufleet_tables ALTER COLUMN data SET STORAGE EXTENDED", db)  # as version 1 made it
    pg_server.sql("DELETE FROM tpufleet_schema WHERE version = 2", db)
    assert "run `tpufleet state migrate`" in one_line(cli("status"), 1)
    r = cli("state", "migrate", "-o", "json")
    assert r.code == 0 and (r.json["from_version"], r.json["applied"]) == (1, [2])
    assert pg_server.sql(storage, db) == [("e",)]
    assert cli("plan-xconnect", "a", "--apply").code == 0 and cli("routes", "a").code == 0
    stored = "SELECT pg_column_size(data) = octet_length(data) FROM tpufleet_tables WHERE name = 'a'"
    assert pg_server.sql(stored, db) == [(True,)]


def test_the_journal_table_is_append_only(pg_server: PgServer, pg_url, capsys):
    import psycopg

    assert Cli(capsys, pg_url)("init").code == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for statement in (
            "UPDATE tpufleet_journal SET line = 'x'",
            "DELETE FROM tpufleet_journal",
            "TRUNCATE tpufleet_journal",
        ):
            with pytest.raises(psycopg.errors.RaiseException):
                conn.execute(statement.encode())
        assert conn.execute("SELECT count(*) FROM tpufleet_journal").fetchone() == (1,)


def test_the_writer_that_commits_second_is_refused(pg_url, capsys):
    import psycopg

    assert Cli(capsys, pg_url)("init").code == 0
    store = Store(pg_url)
    with pytest.raises(Refused, match="changed while this command ran"), store.transaction("test late") as tx:
        with psycopg.connect(pg_url, autocommit=True) as other:  # one that ignores the lock commits first
            other.execute("UPDATE tpufleet_state SET serial = serial + 1")
        tx.state.open_fault(parse_target("host:c01/1"), False, "late", "2026-01-01T00:00:00Z")
        tx.commit(Change("late"))
    assert [e.summary for e in Store(pg_url).journal(2)] == ["init: 1 pod(s) x 64 cubes"]


def _files(state: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(state)): p.read_bytes()
        for p in sorted(state.rglob("*"))
        if p.is_file() and not p.name.startswith(".lock")
    }


def test_push_and_pull_round_trip_byte_for_byte_and_never_go_backwards(tmp_path, pg_url, capsys):
    first = Cli(capsys, tmp_path / "first")
    for command in SESSION:
        assert first(*command).code == 0
    pushed = first("state", "push", tmp_path / "first", pg_url, "-o", "json", state=False)
    assert pushed.code == 0 and pushed.json["serial"] == len(SESSION) and pushed.json["tables"] == ["a"]
    assert first("state", "pull", pg_url, tmp_path / "second", state=False).code == 0

    def kept(state: Path) -> dict[str, bytes]:  # the caches are disposable (a pull remembers the tables it wrote)
        return {k: v for k, v in _files(state).items() if not k.startswith("cache/")}

    assert kept(tmp_path / "second") == kept(tmp_path / "first")  # state.json, journal.jsonl, routes/a.npz
    again = first("state", "push", tmp_path / "first", pg_url, "-o", "json", state=False)
    assert again.code == 0 and again.json["changed"] is False

    database = Cli(capsys, pg_url)
    assert database("release", "a").code == 0  # the database moves on
    assert "newer than" in one_line(first("state", "push", tmp_path / "first", pg_url, state=False), 1)
    assert first("state", "pull", pg_url, tmp_path / "first", state=False).code == 0
    assert _journal(first) == _journal(database) and not (tmp_path / "first" / "routes" / "a.npz").exists()
    assert (
        first("allocate", "c", "--shape", "4x4x4").code == 0 and database("allocate", "d", "--shape", "4x4x4").code == 0
    )
    assert "another history" in one_line(first("state", "pull", pg_url, tmp_path / "first", state=False), 1)


# ---- writers in separate processes ----------------------------------------------------------------------------------


def _writer(url: str, worker: int, rounds: int) -> None:
    """Allocate, wire, route, fault and clear a host of a cube of its own, release: `rounds` times, via the CLI."""
    sys.stdout = sys.stderr = open(os.environ.get("TPUFLEET_PG_WRITER_LOG", os.devnull), "a")  # noqa: SIM115
    for k in range(rounds):
        name = f"w{worker}r{k}"
        fault_cube = 40 + worker
        steps = [
            ("allocate", name, "--shape", "4x4x4", "--pod", "pod0"),
            ("plan-xconnect", name, "--apply"),
            ("routes", name),
            ("inject-fault", f"host:c{fault_cube:02d}/1"),
            ("clear-fault", f"host:c{fault_cube:02d}/1"),
        ]
        if k < rounds - 1:
            steps.append(("release", name))
        for step in steps:
            # `routes` computes outside the lock and is refused (exit 1) when the state moved on meanwhile, as on a
            # directory: a writer runs it again, a bounded number of times
            for _attempt in range(40 if step[0] == "routes" else 1):
                code = tpufleet("--state", url, "--lock-timeout", "300", *step)
                if code == 0:
                    break
            if code != 0:
                os._exit(10 + code)
    os._exit(0)


def test_writers_in_separate_processes_lose_nothing_and_never_share_a_cube(pg_url, capsys):
    writers, rounds = int(os.environ.get("TPUFLEET_PG_WRITERS", "6")), 2
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    procs = [CTX.Process(target=_writer, args=(pg_url, w, rounds)) for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
    assert [p.exitcode for p in procs] == [0] * writers
    commits = writers * (rounds * 6 - 1)
    status = cli("status", "-o", "json").json
    assert status["serial"] == 1 + commits
    entries = _journal(cli)
    assert [e["serial"] for e in entries] == list(range(1, commits + 2))
    for w in range(writers):
        assert sum(e["summary"].startswith(f"allocate w{w}r") for e in entries) == rounds
    slices = cli("show", "slices", "-o", "json").json
    cubes = [c for s in slices for c in s["cubes"]]
    assert len(slices) == writers and len(cubes) == len(set(cubes)) == writers
    state = Store(pg_url).load()
    assert sorted(state.routes) == sorted(s["name"] for s in slices)  # each kept slice's tables indexed...
    assert all(Store(pg_url).stored_tables(name).read() is not None for name in state.routes)  # ...and stored


# ---- crashes and a server that goes away -----------------------------------------------------------------------------

# Where a SIGKILL lands in a database commit: before the COMMIT (the server rolls back: serial unchanged), or after it.
MOVED = {
    point: int(point in ("atomic_write.before_dir_fsync", "transaction.before_side_files"))
    for point in crashpoints.POINTS
}


def _crashing(url: str, point: str) -> None:
    os.environ[crashpoints.ENV] = point
    sys.exit(tpufleet("--state", url, "inject-fault", "host:c01/1", "--reason", "crash test"))


@pytest.mark.parametrize("point", list(crashpoints.POINTS))
def test_sigkill_at_each_crash_point_leaves_the_old_or_the_new_serial(pg_url, capsys, point):
    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    proc = CTX.Process(target=_crashing, args=(pg_url, point))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    serial = 1 + MOVED[point]
    assert cli("status", "-o", "json").json["serial"] == serial
    assert [e["serial"] for e in _journal(cli)] == list(range(1, serial + 1))
    opened = cli("faults", "-o", "json").json
    assert len(opened) == MOVED[point]
    assert cli("--lock-timeout", "60", "inject-fault", "host:c02/2").code == 0  # the lock died with the writer
    assert [e["serial"] for e in _journal(cli)] == list(range(1, serial + 2))


def test_the_server_stopped_mid_commit_leaves_the_old_serial_and_one_line(
    pg_server: PgServer, pg_url, capsys, monkeypatch
):
    from tpufleet.state import pgwriter

    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0

    def stop_here(name: str) -> None:
        if name == "atomic_write.before_rename":  # journal line and state row written, not committed
            pg_server.stop("fast")

    monkeypatch.setattr(pgwriter, "reached", stop_here)
    line = one_line(cli("inject-fault", "host:c01/1"), 1)
    assert "state database" in line and pg_url.split("?")[0] in line
    assert "state database" in one_line(cli("status"), 1)  # still down: one line, exit 1
    pg_server.start()
    monkeypatch.undo()
    assert cli("status", "-o", "json").json["serial"] == 1
    assert cli("inject-fault", "host:c01/1").code == 0
    assert [e["serial"] for e in _journal(cli)] == [1, 2]


def test_routes_run_again_with_nothing_changed_commits_nothing_on_either_backend(on):
    assert on("init").code == 0
    for args in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        assert on(*args).code == 0
    serial = on("status", "-o", "json").json["serial"]
    again = on("routes", "a", "-o", "json")
    assert again.code == 0 and again.json["stored"] is True and again.json["changed"] is False
    assert on("status", "-o", "json").json["serial"] == serial
    assert len(on("show", "journal", "-o", "json").json) == serial


def test_init_force_over_a_damaged_state_deletes_its_tables(on, place, request):
    """A damaged state's index of tables cannot be read: `init --force` over it left every slice's tables kept,
    named by no slice of the new fleet (a later slice of the same name found another fleet's tables beside it)."""
    assert on("init").code == 0
    for args in (("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        assert on(*args).code == 0
    if place.startswith("postgresql"):
        server, db = request.getfixturevalue("pg_server"), db_name(place)
        server.sql("UPDATE tpufleet_state SET doc = substring(doc from 1 for 200)", db)
        kept = lambda: [row[0] for row in server.sql("SELECT name FROM tpufleet_tables", db)]  # noqa: E731
    else:
        (Path(place) / "state.json").write_bytes((Path(place) / "state.json").read_bytes()[:200])
        kept = lambda: sorted(p.name for p in (Path(place) / "routes").iterdir())  # noqa: E731
    assert kept() != []
    r = on("init", "--force", "-o", "json")
    assert r.code == 0 and r.json["replaced"] == {"damaged": True}
    assert kept() == []


def test_a_damaged_state_names_ways_out_that_work_where_it_is_kept(on, place, request):
    """A damaged row in a database was told to "put back a copy, pull it from a database it was pushed to": the
    pull reads this same damaged row, and `state push` of a copy over it is refused. A database names its own ways
    out (a backup, or `init --force`, which keeps the journal and goes on counting), and the one it names works."""
    assert on("init").code == 0
    assert on("allocate", "a", "--shape", "4x4x4").code == 0
    if place.startswith("postgresql"):
        request.getfixturevalue("pg_server").sql(
            "UPDATE tpufleet_state SET doc = substring(doc from 1 for 100)", db_name(place)
        )
    else:
        (Path(place) / "state.json").write_bytes((Path(place) / "state.json").read_bytes()[:100])
    r = on("status")
    assert r.code == 2
    if place.startswith("postgresql"):
        assert "the state row is damaged: restore the database from a backup" in r.err and "state pull" not in r.err
    else:
        assert "put back a copy" in r.err and "state pull URL DIR" in r.err
    assert "init --force" in r.err
    assert on("init", "--force").code == 0
    assert on("status", "-o", "json").json["serial"] == 3  # the journal's two commits, then this one
