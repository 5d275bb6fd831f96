"""A fleet state in a PostgreSQL database (``--state postgresql://USER@HOST/DB?...``), with the guarantees of a state
directory: one locked, serial-checked database transaction per command.

The lock is a session advisory lock (released by the server when the holder's connection ends, even when the
holder is killed), with a holder row (`tpufleet_lock`: user, pid, host, command, since) for the "whose lock"
message and `--lock-timeout`. Under it, a command reads the state row, and its commit is one database transaction:
the journal line inserted, the state row updated only if its serial is still the one read (the writer that
commits second is refused, never merged), the staged routing tables written or deleted. The server commits all
of it or none of it: a killed writer or a server stopped mid-command leaves the old serial or the new one.

Tables (created by `init` on an empty database, or by `tpufleet state migrate`; versioned in `tpufleet_schema`):
`tpufleet_state` (one row: serial, the state document's bytes), `tpufleet_journal` (one row per journal line, in
order; append-only, a trigger refuses UPDATE, DELETE and TRUNCATE), `tpufleet_tables` (routing tables, bytea),
`tpufleet_cache` (the repair cache, bytea), `tpufleet_lock` (the lock's holder); their definitions are `pgschema`'s.

Credentials come from the URL, ``PGPASSFILE`` (``~/.pgpass``) or the environment (``PGPASSWORD``, ``PGUSER``...,
as libpq reads them); messages name the URL without its password. A connection that fails or is lost, or a
request left unanswered past its bound (pgwait.py), is one line (exit 1); a lost commit says that its outcome is
unknown and how to see it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from tpufleet.errors import BadInput, LockTimeout, Refused, Unavailable
from tpufleet.state import dburl, journal
from tpufleet.state.files import check_name
from tpufleet.state.lock import WAIT_NOTICE, WAIT_NOTICE_AFTER, login_name, shown_command
from tpufleet.state.pgschema import _VERSION_TABLE, MIGRATIONS, SCHEMA_VERSION
from tpufleet.state.pgurl import (
    CONNECTION_DEFAULTS,
    CONTROL_CHARACTERS,
    bad_parameter,
    connection_options,
    first_line,
    redacted,
    unquoted,
)
from tpufleet.state.pgwriter import DatabaseCache, DatabaseTables, DatabaseWriter
from tpufleet.text import bounded, printable, seconds_text
from tpufleet.timeparse import STAMP_FORMAT

if TYPE_CHECKING:
    import psycopg

    from tpufleet.fleetstate import RouteRecord

# ---- the journal's rows and the lock -----------------------------------------------------------------------------

TAIL_ROWS = 64  # journal lines read first for its last entries (then 4x more at a time)
# A journal row longer than a journal line may be is read as this damaged line (a NUL byte is never JSON), so its
# bytes never leave the database, and `state pull` writes a line `state push` takes back.
OVERSIZE_LINE = b"\x00"
_BOUNDED_LINE = "CASE WHEN octet_length(line) > %s THEN '\\x00'::bytea ELSE line END"

LOCK_KEY = int.from_bytes(b"tpufleet", "big")  # the advisory lock's key (one fleet per database and schema)
# A second session lock, (HOLDER_MARK, the client's pid), taken by a holder as it writes its row: the row is the
# lock holder's only while the session holding LOCK_KEY holds that one too (pg_locks, readable by every role). A
# killed holder leaves its row, and a session that holds the lock without writing one (psql, the first `init` of an
# empty database) must not be named by it.
HOLDER_MARK = int.from_bytes(b"tpfh", "big")
_HOLDER_ROW = (
    "SELECT l.username, l.pid, l.host, l.command, l.since FROM tpufleet_lock l WHERE l.id = 1 AND EXISTS ("
    "SELECT 1 FROM pg_locks held JOIN pg_locks mark ON mark.pid = held.pid AND mark.database = held.database "
    "WHERE held.locktype = 'advisory' AND held.granted AND held.objsubid = 1 "
    "AND held.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND held.classid::bigint = %s AND held.objid::bigint = %s "
    "AND mark.locktype = 'advisory' AND mark.granted AND mark.objsubid = 2 "
    "AND mark.classid::bigint = %s AND mark.objid::bigint = l.pid)"
)


# ---- the URL -----------------------------------------------------------------------------------------------------


def _storable(conn: psycopg.Connection[tuple[Any, ...]], text: str) -> str:
    """`text` as a text column of this database can hold it. The holder row is the one place tpufleet writes text
    (the journal and the state are bytea): a database in another encoding than UTF-8 (LATIN1, say) refuses a
    character it lacks, so there the row holds ASCII, anything else as its escape (it is only shown)."""
    if conn.info.parameter_status("server_encoding") in ("UTF8", "SQL_ASCII"):
        return text
    return text.encode("ascii", "backslashreplace").decode("ascii")


# ---- the backend -------------------------------------------------------------------------------------------------


class PostgresBackend:
    """One database connection per process, opened at first use (autocommit: each write is an explicit
    transaction)."""

    def __init__(self, url: str) -> None:
        # libpq knows its schemes in lower case only ("POSTGRESQL://" was 'missing "=" after "POSTGRESQL://..." in
        # connection info string'); a URL's scheme is any case
        scheme, sep, rest = url.partition("://")
        url = scheme.lower() + sep + rest
        self.url = url
        self.where = redacted(url)
        self._secrets = dburl.secrets(url)
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None

    @property
    def state_label(self) -> str:
        return self.where

    @property
    def journal_label(self) -> str:
        return f"{self.where} (journal)"

    # -- connection and errors --

    @contextmanager
    def errors(self, doing: str = "use", lost: tuple[str, str] | None = None) -> Iterator[None]:
        """A database error as one line naming the URL (never its password): exit 1. `lost`: what was being done and
        what to do, said of a lost connection instead (around a transaction: it may have committed)."""
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            self.close()
            reason = first_line(exc, self._secrets)
            if lost is not None and isinstance(exc, psycopg.OperationalError):
                raise Unavailable(
                    f"lost the state database {self.where} while {lost[0]} ({reason}); {lost[1]}"
                ) from None
            kind = Unavailable if isinstance(exc, psycopg.OperationalError) else Refused
            raise kind(f"cannot {doing} the state database {self.where}: {reason}") from None

    def connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        try:
            import psycopg
        except ImportError:
            raise Refused(
                f"the state {self.where} is a PostgreSQL database: install the driver with "
                "pip install 'tpufleet[postgres]'"
            ) from None
        from tpufleet.state import pgwait

        params = self._checked()
        options = connection_options(params, os.environ, psycopg.pq.version())
        with self.errors("connect to"):
            conn = pgwait.BoundedConnection.connect(self.url, **options)
        conn.bound, conn.bound_text = pgwait.bound_seconds(params, CONNECTION_DEFAULTS["tcp_user_timeout"])
        self._conn = conn
        return conn

    def _checked(self) -> dict[str, str]:
        """The URL's parameters as libpq reads them; BadInput (exit 2) for what libpq would only refuse once it
        connects (exit 1, as if the server were down): a control character, a password libpq reads otherwise than
        it is written, a port, number or choice that is not one. Messages never quote a piece of a password."""
        import psycopg

        if CONTROL_CHARACTERS.search(self.url):
            raise BadInput(
                f"bad database URL {self.where}: it holds a control character (a newline, say); percent-encode it (%0A)"
            )
        try:
            params = psycopg.conninfo.conninfo_to_dict(self.url)
        except (ValueError, psycopg.ProgrammingError) as exc:  # (UnicodeError is a ValueError)
            # libpq quotes the piece of the URL it stopped at, which may be a piece of a password
            text = unquoted(str(exc)) if self._secrets else str(exc)
            raise BadInput(f"bad database URL {self.where}: {first_line(text, self._secrets)}") from None
        password = params.get("password")
        if dburl.misread_password(self.url, None if password is None else str(password)):
            raise BadInput(
                f"bad database URL {self.where}: libpq reads its password otherwise than it is written; "
                "percent-encode any '/' or '@' in it, or in the database's name (%2F, %40)"
            )
        if password:  # as libpq reads it too: cut out of any message
            self._secrets = sorted({*self._secrets, str(password)}, key=len, reverse=True)
        query = {str(k): str(v) for k, v in params.items() if v is not None}
        bad = bad_parameter(query)
        if bad:
            raise BadInput(f"bad database URL {self.where}: {bad}")
        return query

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def schema_version(self) -> int | None:
        """The schema's version in the database; None when it has none (no tpufleet table)."""
        conn = self.connection()
        with self.errors("read"):
            found = conn.execute("SELECT to_regclass('tpufleet_schema') IS NOT NULL").fetchone()
            if not found or not found[0]:
                return None
            row = conn.execute("SELECT max(version) FROM tpufleet_schema").fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def has_lock_table(self) -> bool:
        """Whether the database has the lock's holder table (`tpufleet_lock`, from schema version 1 on)."""
        conn = self.connection()
        with self.errors("read"):
            found = conn.execute("SELECT to_regclass('tpufleet_lock') IS NOT NULL").fetchone()
        return bool(found and found[0])

    def _usable(self, version: int | None) -> bool:
        """False when there is no schema yet; Refused when it is not this tpufleet's version."""
        if version is None:
            return False
        if version > SCHEMA_VERSION:
            raise Refused(
                f"the state database {self.where} has schema version {version}, newer than this tpufleet's "
                f"({SCHEMA_VERSION}): upgrade tpufleet"
            )
        if version < SCHEMA_VERSION:
            raise Refused(
                f"the state database {self.where} has schema version {version}; run `tpufleet state migrate` "
                f"to bring it to {SCHEMA_VERSION}"
            )
        return True

    def migrate(self, conn: psycopg.Connection[tuple[Any, ...]], version: int | None, timeout: float) -> list[int]:
        """Bring the schema to SCHEMA_VERSION, one transaction per step; the versions applied. A step waits at most
        `timeout` seconds for its tables (an ALTER waits for every open transaction that read one, a backup's say,
        which the advisory lock does not stop): LockTimeout past that, that step rolled back."""
        import psycopg

        from tpufleet.state import pgwait

        done = []
        with self.errors("migrate"):
            for target in range((version or 0) + 1, SCHEMA_VERSION + 1):
                try:
                    with conn.transaction(), pgwait.waiting_longer(conn, timeout):
                        conn.execute(f"SET LOCAL lock_timeout = {max(1, round(timeout * 1000))}")
                        conn.execute("SET LOCAL statement_timeout = 0")  # (the wait is the lock's: see _try_lock)
                        conn.execute(_VERSION_TABLE)
                        for statement in MIGRATIONS[target - 1]:
                            conn.execute(statement.encode())
                        conn.execute(
                            "INSERT INTO tpufleet_schema (version, by_user) VALUES (%s, %s)", (target, login_name())
                        )
                except psycopg.errors.LockNotAvailable:
                    raise LockTimeout(
                        f"the tables of {self.where} are in use by another session (a backup, say); gave up after "
                        f"{seconds_text(timeout)}s (see --lock-timeout); schema version {target} not applied"
                    ) from None
                done.append(target)
        return done

    def migrate_in(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Create the schema inside the caller's transaction (the first `init` or `state push` on an empty database:
        the schema and the state commit together). One made meanwhile by another command is checked instead."""
        conn.execute(_VERSION_TABLE)
        row = conn.execute("SELECT max(version) FROM tpufleet_schema").fetchone()
        if row is not None and row[0] is not None:
            self._usable(int(row[0]))
            return
        for target, statements in enumerate(MIGRATIONS, 1):
            for statement in statements:
                conn.execute(statement.encode())
            conn.execute("INSERT INTO tpufleet_schema (version, by_user) VALUES (%s, %s)", (target, login_name()))

    # -- reading --

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]] | None:
        """The rows of a read of tpufleet's tables; None when the database has no such table (no schema yet, or
        one of another version: then Refused saying so)."""
        import psycopg

        conn = self.connection()
        with self.errors("read"):
            try:
                return conn.execute(sql, params, binary=True).fetchall()  # bytea as bytes, not hex
            except psycopg.errors.UndefinedTable:
                pass
        self._usable(self.schema_version())
        return None

    def _state_row(self) -> tuple[int, bytes] | None:
        """(serial, document) of the state row; None when there is none (or no schema). One round trip."""
        rows = self._query(
            "SELECT v.version, s.serial, s.doc FROM (SELECT max(version) AS version FROM tpufleet_schema) v "
            "LEFT JOIN tpufleet_state s ON s.id = 1"
        )
        if not rows or not self._usable(rows[0][0]):
            return None
        _version, serial, doc = rows[0]
        return None if serial is None else (int(serial), bytes(doc))

    def exists(self) -> bool:
        return self._state_row() is not None

    def change_key(self) -> tuple[int, str, int, str] | None:
        """The state row's serial and time written (a commit changes both), the tables' count (a row deleted by
        hand) and a digest of their names and row versions (`xmin`: a row changed in place by hand, another slice's
        tables copied into it): one small query, which reads no table's data."""
        rows = self._query(
            "SELECT serial, written, (SELECT count(*) FROM tpufleet_tables), (SELECT coalesce(md5(string_agg("
            "name || ':' || xmin::text, ',' ORDER BY name)), '') FROM tpufleet_tables) FROM tpufleet_state WHERE id = 1"
        )
        return (int(rows[0][0]), str(rows[0][1]), int(rows[0][2]), str(rows[0][3])) if rows else None

    def reopened(self) -> PostgresBackend:
        """A backend on the same database with a connection of its own (a server's reads beside its writes: a
        read on the writer's connection would see its transaction before the commit)."""
        return PostgresBackend(self.url)

    def read_state(self) -> bytes:
        row = self._state_row()
        if row is None:
            raise Refused(f"no fleet state in {self.where} (run `tpufleet init` or pass --state DIR|URL)")
        return row[1]

    def journal_bytes(self) -> bytes:
        """The journal as a state directory's journal.jsonl holds it: every line, in order, each ended by a newline.
        A row longer than a journal line may be (one put in by hand: tpufleet refuses to write one) comes as the
        damaged line `OVERSIZE_LINE`: never read into memory, as a state directory never reads such a line."""
        rows = self._query(f"SELECT {_BOUNDED_LINE} FROM tpufleet_journal ORDER BY seq", (journal.MAX_LINE_BYTES,))
        return b"".join(bytes(r[0]) + b"\n" for r in rows or [])

    def read_journal(self, serial: int) -> journal.Scan:
        return journal.scan(self.journal_bytes(), serial)

    def read_journal_back(self, serial: int, enough: journal.Enough) -> journal.Scan:
        limit = TAIL_ROWS
        while True:  # each row carries the journal's line count, from the same snapshot, to number damaged lines
            rows = self._query(
                f"SELECT {_BOUNDED_LINE}, (SELECT count(*) FROM tpufleet_journal) FROM tpufleet_journal "
                "ORDER BY seq DESC LIMIT %s",
                (journal.MAX_LINE_BYTES, limit),
            )
            rows = rows or []
            whole = len(rows) < limit
            found = journal.scan_back(b"".join(bytes(r[0]) + b"\n" for r in reversed(rows)), serial, enough, whole)
            if found is not None:
                break
            limit *= 4
        if rows and not whole:
            found.damaged = [n + int(rows[0][1]) - len(rows) for n in found.damaged]
        return found

    def table_place(self, name: str) -> PurePosixPath:
        check_name(name)
        return PurePosixPath("routes") / f"{name}.npz"

    def tables_waiting(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        return set()  # committed with the state, in one transaction

    def stored_tables(self, name: str) -> DatabaseTables:
        return DatabaseTables(self, name, Path(self.table_place(name)))

    def tables_present(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        """Rows are written with the state, in one transaction, but may be changed by hand (another slice's tables
        copied into a row, a row put back from a backup): each indexed row's `meta` is read, from its last bytes
        (`routetables.TAIL_BYTES`), not the tables, in one round trip."""
        from tpufleet.state.routetables import TAIL_BYTES, tail_holds_indexed

        if not indexed:
            return set()
        rows = self._query(
            "SELECT name, substring(data FROM greatest(octet_length(data) - %s, 0) + 1), octet_length(data) "
            "FROM tpufleet_tables WHERE name = ANY(%s)",
            (TAIL_BYTES, sorted(indexed)),
        )
        present = set()
        for row_name, tail, size in rows or []:
            name = str(row_name)
            whole = functools.partial(self.table_bytes, name)
            where = f"{self.where} {self.table_place(name)}"
            if name in indexed and tail_holds_indexed(bytes(tail), int(size), whole, where, name, indexed[name]):
                present.add(name)
        return present

    def table_bytes(self, name: str) -> bytes | None:
        rows = self._query("SELECT data FROM tpufleet_tables WHERE name = %s", (name,))
        return bytes(rows[0][0]) if rows else None

    def table_cache(self) -> DatabaseCache:
        return DatabaseCache(self)

    # -- the lock --

    def holder(self) -> str:
        """Who holds the lock, from its holder row: "an unknown process" when it cannot be read, or when the session
        holding the lock did not write it (a killed holder's row, left behind: see HOLDER_MARK)."""
        import psycopg

        try:
            conn = self.connection()
            row = conn.execute(_HOLDER_ROW, (LOCK_KEY >> 32, LOCK_KEY & 0xFFFFFFFF, HOLDER_MARK)).fetchone()
        except (psycopg.Error, Refused):
            return "an unknown process"
        if row is None:
            return "an unknown process"
        user, pid, host, command, since = row  # another writer's text: its passwords hidden as this tpufleet's are
        command = bounded(shown_command(str(command)), 200)
        return printable(f"{user}'s pid {pid} on {host} ({command}, since {since})")

    def _try_lock(self, seconds: float) -> bool:
        """Wait up to `seconds` for the advisory lock; whether it was taken. The wait is bounded by its own
        `lock_timeout` alone, set for its transaction: a `statement_timeout` of the role or the database (a DBA's
        ALTER ROLE ... SET) must not end it early as an error (exit 1) instead of the lock's timeout (exit 3), and
        the session's own settings come back after it. (A session lock taken in a transaction outlives it.)"""
        import psycopg

        from tpufleet.state import pgwait

        with self.errors("lock"):
            conn, free = self._lock_now()
            if free or seconds <= 0:  # free (the usual case: one round trip), or no wait asked
                return free
            try:
                with conn.transaction(), pgwait.waiting_longer(conn, seconds):
                    conn.execute(f"SET LOCAL lock_timeout = {max(1, round(seconds * 1000))}")
                    conn.execute("SET LOCAL statement_timeout = 0")
                    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
                return True
            except psycopg.errors.LockNotAvailable:
                return False

    def _lock_now(self) -> tuple[psycopg.Connection[tuple[Any, ...]], bool]:
        """The connection and whether the lock was free (`pg_try_advisory_lock`). A connection kept from an earlier
        command of this process (`serve`'s alert intake) that the server dropped since (a restart, a failover) is
        found lost only here, by the first statement of this command: nothing was done on it, so it is opened again
        once rather than refusing a change to a database that is back."""
        import psycopg

        kept = self._conn is not None and not self._conn.closed
        conn = self.connection()
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
        except psycopg.OperationalError:
            if not kept:
                raise
            self.close()
            conn = self.connection()
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
        return conn, bool(row and row[0])

    def _acquire(self, timeout: float) -> None:
        say = WAIT_NOTICE.say
        first = WAIT_NOTICE_AFTER if say is not None and timeout > WAIT_NOTICE_AFTER else timeout
        if self._try_lock(first):
            return
        if first < timeout:
            if say is not None:
                say(f"waiting for the state lock held by {self.holder()}")
            if self._try_lock(timeout - first):
                return
        raise LockTimeout(
            f"state {self.where} is locked by {self.holder()}; gave up after {seconds_text(timeout)}s (see --lock-timeout)"
        )

    def _note_holder(self, command: str) -> None:
        since = time.strftime(STAMP_FORMAT, time.gmtime())
        conn = self.connection()
        with self.errors("lock"):
            user, host, command = (_storable(conn, text) for text in (login_name(), socket.gethostname(), command))
            conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (HOLDER_MARK, os.getpid()))
            conn.execute(
                "INSERT INTO tpufleet_lock (id, username, pid, host, command, since) VALUES (1, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET username = excluded.username, pid = excluded.pid, "
                "host = excluded.host, command = excluded.command, since = excluded.since",
                (user, os.getpid(), host, command, since),
            )

    @contextmanager
    def advisory(self, timeout: float) -> Iterator[None]:
        """Hold the advisory lock (LockTimeout after `timeout` seconds, naming the holder)."""
        self._acquire(timeout)
        try:
            yield
        finally:
            if self._conn is not None and not self._conn.closed:
                with contextlib.suppress(Exception):
                    self._conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))

    @contextmanager
    def locked(self, timeout: float, command: str) -> Iterator[bool]:
        """Hold the lock and its holder row (once the schema exists); whether the schema is there."""
        with self.advisory(timeout):
            ready = self._usable(self.schema_version())
            with self.noted(command) if ready else contextlib.nullcontext():
                yield ready

    @contextmanager
    def noted(self, command: str) -> Iterator[None]:
        """The holder row written for as long as the advisory lock, held, is (the table `tpufleet_lock` exists)."""
        self._note_holder(command)
        try:
            yield
        finally:
            self._forget_holder()

    def _forget_holder(self) -> None:
        """The holder row deleted as the lock is let go, so a later holder that writes none (an empty database, a
        session of psql) is "an unknown process", not the last command that wrote one. A killed holder leaves its
        row until the next holder's: every tpufleet command holding the lock writes one (`state migrate` too, once
        the table exists), else a killed holder was named as the holder of the lock it no longer held."""
        if self._conn is not None and not self._conn.closed:
            with contextlib.suppress(Exception):
                self._conn.execute("DELETE FROM tpufleet_lock WHERE id = 1 AND pid = %s", (os.getpid(),))
            with contextlib.suppress(Exception):
                self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", (HOLDER_MARK, os.getpid()))

    @contextmanager
    def writing(self, timeout: float, command: str, create: bool = True) -> Iterator[DatabaseWriter]:
        with self.locked(timeout, command) as ready:  # (a database is made by its administrator, never here)
            yield DatabaseWriter(self, ready)
