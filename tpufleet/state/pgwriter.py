"""What a command holding a PostgreSQL state's lock writes (`PostgresBackend.writing`): the state row, the journal
line and the staged routing tables in one database transaction (`DatabaseWriter`), and the rows beside the state
read and written as files beside a state directory are (`DatabaseTables`, `DatabaseCache`)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from tpufleet.errors import BadStateFile, Refused, Unavailable
from tpufleet.state import journal
from tpufleet.state.backend import no_fleet_state
from tpufleet.state.committed import SERIALS
from tpufleet.state.crashpoints import reached
from tpufleet.state.pgurl import first_line

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import psycopg

    from tpufleet.collectives.tables import Tables
    from tpufleet.fleetstate import RouteRecord
    from tpufleet.journalentry import JournalEntry
    from tpufleet.state.pgbackend import PostgresBackend
    from tpufleet.state.tablesindex import IndexedAs

_KEY = re.compile(r"[0-9a-f]{40}")


def state_row_mismatch(where: str, row_serial: int, doc_serial: int) -> BadStateFile:
    return BadStateFile(
        where, "serial", doc_serial, f"the state row's serial column says {row_serial}; the two must agree"
    )


def rows_beyond(label: str, count: int, high: int, serial: int) -> BadStateFile:
    """A database's journal with `count` rows beyond its state row's `serial` (up to `high`): refused by every writer
    and by `state pull`, lest those serials be handed out again."""
    return BadStateFile(
        label,
        "serial",
        high,
        f"{count} entries are beyond the state's serial {serial}, where a commit leaves none: the state row is "
        "older than its journal (put back from a backup of that table alone?); nothing was changed. Put back the "
        "state of the journal's last serial (restore the whole database)",
    )


class DatabaseWriter:
    """One locked write: the state row read, the tables staged, then one database transaction."""

    def __init__(self, backend: PostgresBackend, ready: bool) -> None:
        self.backend = backend
        self.ready = ready  # False: no schema yet (`init` on an empty database creates it in its commit)
        self.read_serial: int | None = None  # the serial of the state row read (None: no row)
        self.staged: dict[str, bytes | None] = {}
        self.committed = False

    def _row(self) -> tuple[int, bytes] | None:
        row = self.backend._state_row() if self.ready else None
        self.read_serial = None if row is None else row[0]
        return row

    def exists(self) -> bool:
        return self._row() is not None

    def read_state(self) -> bytes:
        row = self._row()
        if row is None:
            raise no_fleet_state(self.backend.where)
        return row[1]

    def recover(self, serial: int, replacing: bool = False) -> None:
        """Nothing to recover (a journal line is committed with its state or not at all); but the state row's serial
        must be its document's, which every commit checks against, and no journal entry may lie beyond it (a state
        row put back from a backup: its serials would be handed out again): BadStateFile when either is not so."""
        if self.read_serial is not None and self.read_serial != serial:
            raise state_row_mismatch(self.backend.state_label, self.read_serial, serial)
        rows = self.backend._query("SELECT count(*), max(serial) FROM tpufleet_journal WHERE serial > %s", (serial,))
        if rows and rows[0][0]:
            raise rows_beyond(self.backend.journal_label, int(rows[0][0]), int(rows[0][1]), serial)

    def install_interrupted_tables(self, made: Mapping[str, IndexedAs]) -> list[str]:
        return []  # tables are committed in the state's own transaction: nothing waits

    def journal_serial(self) -> int:
        entries = self.backend.read_journal(1 << 62).entries
        return max((e.serial for e in entries), default=0)

    def last_serial(self) -> int:
        row = self._row()
        if row is None:
            return self.journal_serial()
        self.recover(row[0])
        return row[0]

    def save_tables(self, name: str, data: bytes) -> PurePosixPath:
        place = self.backend.table_place(name)
        self.staged[name] = data
        return place

    def delete_tables(self, name: str) -> None:
        self.backend.table_place(name)
        self.staged[name] = None

    def stored_table_names(self) -> list[str]:
        rows = self.backend._query("SELECT name FROM tpufleet_tables ORDER BY name") if self.ready else None
        return [str(row[0]) for row in rows or ()]

    def commit(self, entry: JournalEntry, data: bytes) -> None:
        """One database transaction: schema (on an empty database), journal line, state row (serial checked),
        staged tables. A connection lost during it: the server keeps all of it or none of it."""
        import psycopg

        conn = self.backend.connection()
        try:
            with conn.transaction():
                if not self.ready:
                    self.backend.migrate_in(conn)
                self._write(conn, entry, data)
        except psycopg.OperationalError as exc:
            self.backend.close()
            raise Unavailable(
                f"lost the state database {self.backend.where} while committing serial {entry.serial} "
                f"({first_line(exc, self.backend._secrets)}); the change is either wholly made or not at all: "
                "`tpufleet status` shows which"
            ) from None
        except psycopg.Error as exc:
            self.backend.close()
            raise Refused(
                f"cannot write the state database {self.backend.where}: {first_line(exc, self.backend._secrets)}; "
                "nothing was written"
            ) from None
        self.committed = True
        SERIALS.append(entry.serial)  # said so should an interrupt come from here on
        reached("atomic_write.before_dir_fsync")
        reached("transaction.before_side_files")

    def _write(self, conn: psycopg.Connection[tuple[Any, ...]], entry: JournalEntry, data: bytes) -> None:
        reached("journal.before_write")
        conn.execute(
            "INSERT INTO tpufleet_journal (serial, line) VALUES (%s, %s)", (entry.serial, journal.encode(entry))
        )
        reached("journal.before_fsync")
        reached("journal.after_fsync")
        if self.read_serial is None:
            cur = conn.execute(
                "INSERT INTO tpufleet_state (id, serial, doc) VALUES (1, %s, %s) ON CONFLICT (id) DO NOTHING",
                (entry.serial, data),
            )
        else:
            cur = conn.execute(
                "UPDATE tpufleet_state SET serial = %s, doc = %s, written = now() WHERE id = 1 AND serial = %s",
                (entry.serial, data, self.read_serial),
            )
        if cur.rowcount != 1:
            raise Refused(
                f"the state in {self.backend.where} changed while this command ran (another writer committed "
                f"serial {entry.serial} or later first); nothing was written: run the command again"
            )
        for name, tables in self.staged.items():
            if tables is None:
                conn.execute("DELETE FROM tpufleet_tables WHERE name = %s", (name,))
            else:
                conn.execute(
                    "INSERT INTO tpufleet_tables (name, data) VALUES (%s, %s) "
                    "ON CONFLICT (name) DO UPDATE SET data = excluded.data",
                    (name, tables),
                )
        reached("atomic_write.before_fsync")
        reached("atomic_write.before_rename")


class DatabaseTables:
    """A slice's routing tables in `tpufleet_tables`, read when asked."""

    def __init__(self, backend: PostgresBackend, name: str, path: Path) -> None:
        self.backend, self._name, self._path = backend, name, path

    @property
    def name(self) -> str:
        return self._name

    @property
    def path(self) -> Path:
        return self._path

    def waiting(self, entry: RouteRecord) -> bool:
        return False  # committed with the state, in one transaction

    def read(self) -> Tables | None:
        from tpufleet.state.routetables import load_bytes

        data = self.backend.table_bytes(self._name)
        return None if data is None else load_bytes(data, f"{self.backend.where} {self._path}")


class DatabaseCache:
    """The repair cache in `tpufleet_cache` (see tablecache.py: never needed, never trusted, every failure a miss;
    new entries held until the command commits)."""

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self.pending: dict[str, npt.NDArray[np.int8]] = {}

    def get(self, key: str) -> npt.NDArray[np.int8] | None:
        from tpufleet.state import tablecache

        if not _KEY.fullmatch(key):
            return None
        try:
            conn = self.backend.connection()
            row = conn.execute(
                "UPDATE tpufleet_cache SET used = clock_timestamp() WHERE key = %s RETURNING data", (key,), binary=True
            )
            found = row.fetchone()
        except Exception:  # noqa: BLE001 - a cache that cannot be read is a miss
            return None
        body = None if found is None else tablecache._checked(key, bytes(found[0]))
        return None if body is None else tablecache._int8_vector(body)

    def put(self, key: str, choices: npt.NDArray[np.int8]) -> None:
        self.pending[key] = choices

    def flush(self) -> None:
        """Write the held entries and keep the most recently used within the cache's limits; errors are ignored."""
        from tpufleet.state import tablecache

        rows = [(k, tablecache.entry_bytes(k, c)) for k, c in self.pending.items() if _KEY.fullmatch(k)]
        self.pending.clear()
        with contextlib.suppress(Exception):
            conn = self.backend.connection()
            with conn.transaction():
                for key, data in rows:
                    if data is not None:
                        conn.execute(
                            "INSERT INTO tpufleet_cache (key, data) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                            "SET data = excluded.data, used = clock_timestamp()",
                            (key, data),
                        )
                conn.execute(
                    "DELETE FROM tpufleet_cache WHERE key IN (SELECT key FROM (SELECT key, "
                    "row_number() OVER w AS n, sum(length(data)) OVER w AS total FROM tpufleet_cache "
                    "WINDOW w AS (ORDER BY used DESC)) ranked WHERE n > %s OR total > %s)",
                    (tablecache.MAX_ENTRIES, tablecache.MAX_BYTES),
                )
