"""The state protocol under another writer and odd sequences: what a command checked before the lock is checked
again under it, and no command leaves a state the next one refuses."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import crash_at, one_line, snapshot
from tpufleet.cli import main
from tpufleet.state import store as store_module


@pytest.fixture
def writer_first(fleet, monkeypatch):
    """Runs the given command as another writer just before the command under test takes the lock."""
    pending: list[tuple[str, ...]] = []
    original = store_module.Store.transaction

    @contextlib.contextmanager
    def transaction(self, *args, **kwargs) -> Iterator[store_module.Transaction]:
        while pending:
            assert fleet(*pending.pop()).code == 0
        with original(self, *args, **kwargs) as tx:
            yield tx

    monkeypatch.setattr(store_module.Store, "transaction", transaction)
    return pending


def test_inject_fault_on_a_cube_gone_since_it_was_checked_names_the_cube(fleet, writer_first):
    writer_first.append(("init", "--force", "--cubes-per-pod", "8"))
    line = one_line(fleet("inject-fault", "cube:c40"))
    assert "c40" in line and "would not load again" not in line
    assert fleet("-o", "json", "faults").json == []
    assert fleet("-o", "json", "status").json["serial"] == 2  # init, then init --force: nothing committed since


def test_a_journal_left_world_readable_is_closed_to_others_by_the_next_write(fleet):
    """A journal copied back from a backup under umask 022 (0644) was appended to as it was, world-readable for
    good while state.json was 0600 again after the same commit; the files written in place now take the state's
    mode when written, as state.json does."""
    journal, note = fleet.state / "journal.jsonl", fleet.state / ".lock.info"
    for path in (journal, note):
        path.chmod(0o644)
    assert fleet("status").code == 0  # a reader changes nothing
    assert stat.S_IMODE(journal.stat().st_mode) == 0o644
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in (journal, note, fleet.state / "state.json")} == {
        "journal.jsonl": 0o600,
        ".lock.info": 0o600,
        "state.json": 0o600,
    }


def test_a_key_given_twice_in_the_state_file_is_refused_naming_it(routed):
    """A slice added to state.json by hand under a name already used was read as the last of the two (Python's
    decoder keeps the last, other readers the first), the other dropped without a word, and the next commit wrote it
    away for good. The state file is refused as every input file is, naming the key; nothing is written."""
    path = routed.state / "state.json"
    text = path.read_text()
    path.write_text(text.replace('\n "slices": {', '\n "slices": {"s": {"cubes": ["c05"]},', 1))
    before = snapshot(routed.state)
    for command in (("status",), ("allocate", "b", "--shape", "4x4x4")):
        line = one_line(routed(*command))
        assert str(path) in line and "'s'" in line and "given twice" in line
    assert snapshot(routed.state) == before


def test_tables_left_waiting_with_a_directory_in_their_place_stop_no_writer(routed):
    """Committed tables a killed `routes` left under their temporary name, and a directory put where they belong:
    every later writer, `inject-fault` included, exited 70 (IsADirectoryError renaming them in). They now wait,
    shown missing, the command goes on, and the first writer after the directory is gone renames them in."""
    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    crash_at(routed.state, "transaction.before_side_files", "routes", "s")
    place = routed.state / "routes" / "s.npz"
    place.unlink()
    place.mkdir()
    assert routed("inject-fault", "cube:c40").code == 0
    assert routed("status", "-o", "json").json["missing_routes"] == ["s"]
    place.rmdir()
    assert routed("inject-fault", "cube:c41").code == 0
    status = routed("status", "-o", "json").json
    assert status["missing_routes"] == status["stale_routes"] == []


def test_a_state_of_a_newer_schema_is_refused_as_such_not_by_one_of_its_fields(fleet):
    """A state written by a later tpufleet (schema 2, a field this one does not know) was refused for that field
    (`field faults.0: it must not contain {'severity'} properties`), or in the validator's words
    (`it must be same as const definition: 1`): nothing said the state is newer than the tool reading it."""
    assert fleet("inject-fault", "cube:c05").code == 0
    path = fleet.state / "state.json"
    doc = json.loads(path.read_text())
    doc["schema_version"], doc["faults"][0]["severity"] = 2, "high"
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))
    line = one_line(fleet("status"))
    assert f"{path}: field schema_version: written by a newer tpufleet" in line and "(value 2)" in line
    from tpufleet import __version__
    from tpufleet.state.schema import SCHEMA_VERSION

    assert f"(this one, {__version__}, reads state schema {SCHEMA_VERSION})" in line


def test_a_lock_file_removed_while_held_lets_no_two_writers_commit_one_serial(fleet, monkeypatch):
    """`rm .lock` while a command held it (as one clears a lock file thought stale) let the next command take a new
    lock and commit beside the first: both committed serial 2 under one fault id, the journal held serial 2 twice and
    the second state file replaced the first's change. The command whose lock is gone is refused now (exit 1, naming
    `.lock`, nothing written); the other commits, and the refused one run again commits after it."""
    original = store_module.Store.transaction
    other: list[int] = []

    @contextlib.contextmanager
    def transaction(self, *args, **kwargs) -> Iterator[store_module.Transaction]:
        with original(self, *args, **kwargs) as tx:
            if not other:
                other.append(-1)
                (fleet.state / ".lock").unlink()
                other[0] = fleet("inject-fault", "host:c07/1").code
            yield tx

    monkeypatch.setattr(store_module.Store, "transaction", transaction)
    line = one_line(fleet("inject-fault", "host:c06/1"), code=1)
    monkeypatch.setattr(store_module.Store, "transaction", original)
    assert other == [0] and str(fleet.state / ".lock") in line
    assert [f["target"] for f in fleet("-o", "json", "faults").json] == ["host:c07/1"]
    assert fleet("inject-fault", "host:c06/1").code == 0
    serials = [json.loads(x)["serial"] for x in (fleet.state / "journal.jsonl").read_text().splitlines()]
    assert serials == [1, 2, 3]


def _routes_with_a_directory_put_in_the_way(state: Path, err: Path) -> None:
    """`routes s` in a process of its own (its temp file then a dead writer's), a directory put where the tables
    go between the state's commit and their rename; its stderr into `err`."""
    from tpufleet.state import filebackend

    def reached(name: str) -> None:
        if name == "transaction.before_side_files":
            (state / "routes" / "s.npz").unlink()
            (state / "routes" / "s.npz" / "in-the-way").mkdir(parents=True)

    filebackend.reached = reached  # type: ignore[attr-defined]  # its import of crashpoints.reached, this process only
    sys.stderr = open(err, "w")  # noqa: SIM115  (the process exits through main: multiprocessing flushes it)
    main(["--state", str(state), "routes", "s"])  # exits itself


def test_tables_that_cannot_be_swapped_in_after_the_commit_say_the_change_is_committed(routed, tmp_path):
    """Tables that could not be renamed in after the state's commit (an immutable file or a directory put in their
    place meanwhile) gave `cannot write routes/s.npz: ...` alone, as a refusal of the command: run again, it made a
    second commit. The message says the change is committed, as which serial, and that the next command that
    changes the state renames the tables in; it does."""
    place, err = routed.state / "routes" / "s.npz", tmp_path / "err"
    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    proc = multiprocessing.get_context("fork").Process(
        target=_routes_with_a_directory_put_in_the_way, args=(routed.state, err)
    )
    proc.start()
    proc.join(300)
    lines = err.read_text().splitlines()
    assert proc.exitcode == 1 and len(lines) == 1
    assert str(place) in lines[0] and "committed as serial 6" in lines[0]
    assert routed("-o", "json", "history").json[-1]["serial"] == 6
    (place / "in-the-way").rmdir()
    place.rmdir()
    assert routed("inject-fault", "host:c40/1").code == 0
    status = routed("-o", "json", "status").json
    assert status["stale_routes"] == status["missing_routes"] == []


def test_the_lock_message_never_names_a_killed_holder_of_a_directory(fleet):
    """A holder killed with the lock leaves its `.lock.info`; the lock taken since by another program (`flock .lock
    tar ...`, a backup) was said to be held by that dead pid, which an operator may then `kill`, another process by
    now. As on a database, a note whose pid has exited names no holder: "an unknown process"."""
    import fcntl

    gone = multiprocessing.get_context("fork").Process(target=os.getpid)
    gone.start()
    gone.join(60)
    note = {"pid": gone.pid, "command": "tpufleet routes s", "started": "2026-01-01T00:00:00Z"}
    (fleet.state / ".lock.info").write_text(json.dumps(note))
    with open(fleet.state / ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another open of the file: it holds the lock against the command
        line = one_line(fleet("--lock-timeout", "0", "inject-fault", "host:c01/1"), code=3)
    assert "locked by an unknown process" in line and "tpufleet routes s" not in line
