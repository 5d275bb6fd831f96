"""`tpufleet state migrate|push|pull`: a PostgreSQL state's schema, and a fleet moved between a state directory and
a database, byte for byte (the state document, every journal line, the indexed routing tables; the repair cache is
disposable and stays behind).

Both sides are locked while the fleet moves. A move never goes backwards: it is refused when the target holds a
newer serial, or the same serial with other contents, or a journal that is not the start of the source's (two
histories); a target already equal to the source is left alone. Nor does it lose routing tables: the source's
waiting tables (a killed writer's) are installed first, and a move that would delete the target's copy of tables the
source indexes but lacks is refused. Into a database, the move is one transaction; into a directory, the state file
is renamed into place last (its commit point), the tables swapped in after it: a pull killed before that leaves a
journal without a state file, which the next pull completes (it is the start of the database's journal).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

from tpufleet.errors import BadInput, BadStateFile, Refused
from tpufleet.state import committed, journal, journalfile
from tpufleet.state.backend import not_a_state_dir
from tpufleet.state.filebackend import DirectoryBackend, DirectoryWriter
from tpufleet.state.files import (
    atomic_write,
    install,
    io_error,
    open_state_file,
    read_state_file,
    sync_parent,
    write_temp,
)
from tpufleet.state.journalrepair import keep_beside, repairable
from tpufleet.state.lock import LOCK
from tpufleet.state.pgbackend import PostgresBackend
from tpufleet.state.pgschema import SCHEMA_VERSION
from tpufleet.state.pgwriter import rows_beyond, state_row_mismatch
from tpufleet.state.schema import checked_state
from tpufleet.state.tablesindex import IndexedAs


@dataclass(frozen=True)
class Fleet:
    """A fleet as stored: the state document, the journal's lines (without newlines), the indexed tables; the index
    (slice: when and at which serial its tables were made) and where the indexed tables it lacks should be."""

    state: bytes
    serial: int
    lines: list[bytes]
    tables: dict[str, bytes]
    index: dict[str, IndexedAs]
    missing: dict[str, str]


def migrate(url: str, timeout: float, command: str) -> dict[str, Any]:
    """Create or upgrade the database's tpufleet schema, under the state lock (and its holder row, when the schema
    has the table: a killed command's row is not left to name the holder)."""
    db = PostgresBackend(url)
    with db.advisory(timeout):
        before = db.schema_version()
        if before is not None and before > SCHEMA_VERSION:
            db._usable(before)  # newer than this tpufleet: refused, saying so
        with db.noted(command) if db.has_lock_table() else contextlib.nullcontext():
            applied = db.migrate(db.connection(), before, timeout)
    return {"database": db.where, "from_version": before or 0, "to_version": SCHEMA_VERSION, "applied": applied}


def _lines(raw: bytes) -> list[bytes]:
    return raw.split(b"\n")[:-1] if raw else []


def _judge(source: Fleet, target: Fleet | None, source_name: str, target_name: str) -> bool:
    """Whether the target must change (False: it already holds the source's fleet); Refused when it may not."""
    if target is None:
        return True
    if target.serial > source.serial and target.lines[: len(source.lines)] != source.lines:
        _another_history(source, target, source_name, target_name)  # (not "move it the other way": refused too)
    if target.serial > source.serial:
        raise Refused(
            f"{target_name} holds serial {target.serial}, newer than {source_name}'s {source.serial}; nothing was "
            f"moved (move the newer fleet the other way: `{_other_way(source_name, target_name)}`)"
        )
    same_start = source.lines[: len(target.lines)] == target.lines
    if target.serial == source.serial and target.state == source.state and same_start:
        return len(source.lines) != len(target.lines) or source.tables != target.tables
    if not target.lines and target.serial > 0:  # its journal moved aside: nothing says it is the source's history
        raise Refused(
            f"{target_name} holds serial {target.serial} but no journal: whether it is the start of {source_name}'s "
            "history cannot be told; nothing was moved (replace it only on purpose: a directory by moving its "
            "state aside, a database by emptying it)"
        )
    if target.serial == source.serial or not same_start:
        _another_history(source, target, source_name, target_name)
    return True


def _other_way(source_name: str, target_name: str) -> str:
    """The command that moves the target's fleet onto the source: a pull from a database, else a push to it."""
    verb = "pull" if target_name.startswith(("postgresql:", "postgres:")) else "push"
    return f"tpufleet state {verb} {shlex.quote(target_name)} {shlex.quote(source_name)}"


def _another_history(source: Fleet, target: Fleet, source_name: str, target_name: str) -> NoReturn:
    # a push of a directory whose journal lines are damaged where the database holds them whole: a pull mends it
    mend = (
        f" ({source_name}'s journal has damaged lines that {target_name} holds whole: `tpufleet state pull` from "
        "it repairs them)"
        if repairable(source.lines, target.lines)
        else ""
    )
    raise Refused(
        f"{target_name} (serial {target.serial}) holds another history than {source_name} (serial "
        f"{source.serial}): its journal is not the start of the source's; nothing was moved{mend}"
    )


def _index(doc: dict[str, Any]) -> dict[str, IndexedAs]:
    return {name: (e["made"], e["serial"], e.get("tables_id")) for name, e in doc.get("routes", {}).items()}


def _directory_fleet(writer: DirectoryWriter, replacing_with: list[bytes] | None = None) -> Fleet | None:
    """The directory's fleet, checked as a load checks it (None: there is none); under its lock, as every writer:
    the journal recovered and the tables a killed writer committed but left under a temporary name installed (else
    they were read as missing, and lost with the directory). Entries beyond the state's serial are dropped as a
    pull's only when the journal is the start of the one replacing it (`replacing_with`: an earlier pull killed
    between its journal and its state); otherwise recovery refuses them as every writer does (a state file older
    than its journal: history that journal alone holds)."""
    backend = writer.backend
    if not backend.exists():
        return None
    raw = writer.read_state()
    doc = checked_state(raw, backend.state_label)
    held = _journal_lines(backend) if replacing_with is not None else []
    writer.recover(doc["serial"], replacing=replacing_with is not None and replacing_with[: len(held)] == held)
    writer.install_interrupted_tables(_index(doc))
    read = _journal_lines(backend)
    lines = [line for line in read if line is not None]
    if len(lines) < len(read):  # (a hole or a run of NULs gigabytes long: no line a commit writes, nothing to move)
        raise BadInput(
            f"{backend.journal_path}: line {read.index(None) + 1} is longer than the "
            f"{journal.MAX_LINE_BYTES}-byte limit of a journal line (damaged); nothing was moved"
        )
    tables, missing = _indexed_tables(doc, lambda name: _tables_file(backend.table_place(name)), backend.table_place)
    return Fleet(raw, doc["serial"], lines, tables, _index(doc), missing)


def _indexed_tables(
    doc: dict[str, Any], read: Callable[[str], bytes | None], where: Callable[[str], object]
) -> tuple[dict[str, bytes], dict[str, str]]:
    """The bytes of the tables `doc` indexes (`read`: None when there are none), and why each of the others is not
    there: missing, holding other tables than indexed (another slice's copied in, older ones put back) or that
    cannot be read as tables (cut short, say), which are not the fleet's tables and are not moved (`_keeps_tables`
    then keeps the target's copy of the indexed ones)."""
    from tpufleet.fleetstate import RouteRecord
    from tpufleet.state.tablesindex import not_held

    tables, missing = {}, {}
    for name, entry in doc.get("routes", {}).items():
        data = read(name)
        if data is None:  # nothing to move, nothing to delete (_keeps_tables)
            missing[name] = f"has no {where(name)}"
        elif (why := not_held(data, str(where(name)), name, RouteRecord(**entry))) is not None:
            missing[name] = f"its {where(name)} {why}"
        else:
            tables[name] = data
    return tables, missing


def _tables_file(path: Path) -> bytes | None:
    """A tables file's bytes (None: there is none), refused (BadStateFile) when larger than any tables file can be:
    a huge or sparse file planted there is not read into memory."""
    from tpufleet.state.routetables import max_file_bytes

    limit = max_file_bytes()
    try:
        size = path.lstat().st_size
        data = read_state_file(path, limit) if size <= limit else b""
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise io_error("read", path, exc) from None
    if size > limit or len(data) > limit:
        raise BadStateFile(str(path), "", max(size, len(data)), f"larger than any tables file ({limit:,} bytes)")
    return data


def _database_fleet(db: PostgresBackend, source: bool = False) -> Fleet | None:
    """The database's fleet; as a `source` (a pull), refused when journal rows lie beyond its state row's serial:
    the pull would drop them and hand their serials out again (a push onto it puts the state of its last serial
    back, as the refusal of every writer there advises)."""
    row = db._state_row()
    if row is None:
        return None
    serial, raw = row
    doc = checked_state(raw, db.state_label)
    if doc["serial"] != serial:
        raise state_row_mismatch(db.state_label, serial, doc["serial"])
    tables, missing = _indexed_tables(doc, db.table_bytes, lambda name: f"row {name!r} in tpufleet_tables")
    lines = _lines(db.journal_bytes())
    beyond = [e.serial for line in lines if (e := journal.entry_of(line)) and e.serial > serial] if source else []
    if beyond:
        raise rows_beyond(db.journal_label, len(beyond), max(beyond), serial)
    return Fleet(raw, serial, lines, tables, _index(doc), missing)


def _keeps_tables(source: Fleet, target: Fleet | None, source_name: str, target_name: str) -> None:
    """Refused when the move would delete the target's copy of tables the source indexes but lacks (a file removed
    by hand, say): the very tables both states name (made at the same time and serial), lost for good once the
    source is gone. Refused rather than kept: the target then stays byte for byte the source, and the source's loss
    is said before it is deleted, not hidden in a success."""
    for name, why in sorted(source.missing.items()):
        if target is not None and name in target.tables and target.index.get(name) == source.index[name]:
            raise Refused(
                f"{source_name} indexes the routing tables of slice {name!r} but {why}, and "
                f"{target_name} holds them: nothing was moved (move the fleet the other way to copy them back, or "
                f"run `tpufleet routes {name}` on {source_name} to make them again)"
            )


def _result(source: str, target: str, fleet: Fleet, changed: bool) -> dict[str, Any]:
    return {
        "from": source,
        "to": target,
        "serial": fleet.serial,
        "journal_lines": len(fleet.lines),
        "tables": sorted(fleet.tables),
        "changed": changed,
    }


def push(state_dir: Path, url: str, timeout: float, command: str) -> dict[str, Any]:
    """Copy the directory's fleet into the database (one transaction), unless the database's is newer."""
    directory, db = DirectoryBackend(state_dir), PostgresBackend(url)
    # (taking its lock would make it; in an empty one, leave its lock files): one where a lock is held waits for it
    if state_dir.is_file():  # bad input, as `--state FILE` is everywhere (a dangling link: no fleet, below)
        raise not_a_state_dir(state_dir)
    if not state_dir.is_dir() or not (directory.exists() or os.path.lexists(state_dir / LOCK)):
        raise Refused(f"no fleet state in {directory.where} to push")
    with directory.writing(timeout, command, create=False) as writer:
        source = _directory_fleet(writer)
        if source is None:
            raise Refused(f"no fleet state in {directory.where} to push")
        with db.locked(timeout, command) as ready:
            target = _database_fleet(db) if ready else None
            if target is None and ready and db.journal_bytes():
                raise Refused(
                    f"{db.where} holds a journal but no state row: another fleet's history, or one whose state was "
                    "lost; nothing was moved (push into an empty database)"
                )
            changed = _judge(source, target, directory.where, db.where)
            if changed:
                _keeps_tables(source, target, directory.where, db.where)
                _write_database(db, ready, source, target)
                committed.SERIALS.append(source.serial)
    return _result(directory.where, db.where, source, changed)


def _write_database(db: PostgresBackend, ready: bool, source: Fleet, target: Fleet | None) -> None:
    """One transaction. A connection lost during it (at its COMMIT, say) may have committed it: the push again is
    then nothing to move (the same serial, journal and tables: `_judge`), or the move again."""
    conn = db.connection()
    lost = (
        f"pushing serial {source.serial}",
        "it may have been written or not: running the push again is safe (it moves nothing if it was)",
    )
    with db.errors("write", lost), conn.transaction():
        if not ready:
            db.migrate_in(conn)
        for line in source.lines[len(target.lines) if target else 0 :]:
            entry = journal.entry_of(line)
            conn.execute(
                "INSERT INTO tpufleet_journal (serial, line) VALUES (%s, %s)",
                (None if entry is None else entry.serial, line),
            )
        if target is None:
            cur = conn.execute(
                "INSERT INTO tpufleet_state (id, serial, doc) VALUES (1, %s, %s) ON CONFLICT (id) DO NOTHING",
                (source.serial, source.state),
            )
        else:
            cur = conn.execute(
                "UPDATE tpufleet_state SET serial = %s, doc = %s, written = now() WHERE id = 1 AND serial = %s",
                (source.serial, source.state, target.serial),
            )
        if cur.rowcount != 1:
            raise Refused(f"the state in {db.where} changed during the push; nothing was written")
        conn.execute("DELETE FROM tpufleet_tables")
        for name, data in source.tables.items():
            conn.execute("INSERT INTO tpufleet_tables (name, data) VALUES (%s, %s)", (name, data))


def pull(url: str, state_dir: Path, timeout: float, command: str) -> dict[str, Any]:
    """Copy the database's fleet into the directory, unless the directory's is newer."""
    directory, db = DirectoryBackend(state_dir), PostgresBackend(url)
    if not db.exists():  # (or out of reach, or of another schema version) said before the directory is made
        raise Refused(f"no fleet state in {db.where} to pull")
    # The directory's lock first, as `push` takes them: two moves in opposite directions never wait on each other.
    with directory.writing(timeout, command) as writer, db.locked(timeout, command) as ready:
        source = _database_fleet(db, source=True) if ready else None
        if source is None:
            raise Refused(f"no fleet state in {db.where} to pull")
        damaged = _damaged_state(writer)
        target = None if damaged else _directory_fleet(writer, source.lines)
        # A journal without a state file that is the start of the source's is this history (a pull into a new
        # directory killed between its journal and its state leaves one): the pull completes it, losing nothing.
        # So does one beside a state file that cannot be read as JSON (damaged): its serial is unknown, its journal
        # says what it held.
        stateless = _journal_lines(directory) if target is None else []
        repaired = _stateless_repaired(stateless, source, damaged, directory.where, db.where)
        if target is not None and repairable(target.lines, source.lines):
            repaired, target = target.serial, replace(target, lines=source.lines[: len(target.lines)])
        changed = _judge(source, target, db.where, directory.where) or repaired is not None
        kept = journal_kept = None
        if changed:
            _keeps_tables(source, target, db.where, directory.where)
            if repaired is not None:
                journal_kept = keep_beside(directory.journal_path, repaired, directory.where)
            kept = _keep_damaged(directory, stateless) if damaged else None
            _write_directory(writer, source, target)
            committed.SERIALS.append(source.serial)
    return {**_result(db.where, directory.where, source, changed), "damaged_kept": kept, "journal_kept": journal_kept}


def _stateless_repaired(
    stateless: list[bytes | None], source: Fleet, damaged: bool, where: str, source_name: str
) -> int | None:
    """Whether a journal beside no state file, or a damaged one, is the start of the source's (None), or is but for
    damaged lines the pull repairs (its last serial, naming the damaged journal kept); Refused when it is not."""
    if stateless == source.lines[: len(stateless)]:
        return None
    if repairable(stateless, source.lines):
        entries = [journal.entry_of(line) for line in stateless if line is not None]
        return max((e.serial for e in entries if e is not None), default=0)
    held = "a damaged state file (not JSON)" if damaged else "no state file"
    raise Refused(
        f"{where} holds a journal but {held}, and its journal is not the start of {source_name}'s: another "
        "fleet's history, or one whose state was lost; nothing was moved (move the journal aside to pull into it)"
    )


def _damaged_state(writer: DirectoryWriter) -> bool:
    """Whether the directory's state file is there but cannot be read as JSON holding a serial (cut short, zeroed,
    overwritten): a pull may replace it (`_keep_damaged`). One that is JSON but refused by a load's checks (a
    later tpufleet's, say) is not damaged: the pull reads it as every command does, and is refused so."""
    if not writer.exists():
        return False
    try:
        doc = json.loads(writer.read_state())
    except (ValueError, RecursionError):
        return True
    return not isinstance(doc, dict) or type(doc.get("serial")) is not int


def _keep_damaged(directory: DirectoryBackend, lines: list[bytes | None]) -> str:
    """Keep the damaged state file beside it, under a name of its own (`state.json.damaged-SERIAL`, SERIAL the
    journal's last: what it held), before the pull replaces it: a second name for the same file, nothing copied (and
    none more when a pull killed before its state file kept it already)."""
    entries = [journal.entry_of(line) for line in lines if line is not None]
    serial = max((e.serial for e in entries if e is not None), default=0)
    return keep_beside(directory.state_path, serial, directory.where)


def _journal_lines(backend: DirectoryBackend) -> list[bytes | None]:
    """The journal's lines (a torn last line left out), read in bounded pieces: None for a line longer than any
    commit writes (never read into memory)."""
    path = backend.journal_path
    try:
        fd = open_state_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise io_error("read", path, exc) from None
    try:
        return [line.text for line in journalfile.lines(fd, os.fstat(fd).st_size) if line.newline]
    except OSError as exc:
        raise io_error("read", path, exc) from None
    finally:
        os.close(fd)


def _write_directory(writer: DirectoryWriter, source: Fleet, target: Fleet | None) -> None:
    """Tables staged, the journal replaced, then the state file renamed into place (the commit point); the tables
    swapped in (and those the new state does not index deleted) after it."""
    backend = writer.backend
    for name, data in source.tables.items():
        writer.save_tables(name, data)
    for name in set(target.tables if target else ()) - set(source.tables):
        writer.delete_tables(name)
    atomic_write(backend.journal_path, b"".join(line + b"\n" for line in source.lines))
    install(write_temp(backend.state_path, source.state), backend.state_path)
    writer.committed = True
    sync_parent(backend.state_path)
