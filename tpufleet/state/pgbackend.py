"""A fleet state in a PostgreSQL database (``--state postgresql://USER@HOST/DB?...``), with the guarantees of a state
directory: one locked, serial-checked database transaction per command.

The lock is a session advisory lock (released by the server when the holder's connection ends, even when the
holder is killed), with a holder row (`tpufleet_lock`: user, pid, host, command, since) for the "whose lock"
message and `--lock-timeout` (`pglock`, mixed into the backend). Under it, a command reads the state row, and its commit is one database transaction:
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
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from tpufleet.errors import BadInput, LockTimeout, Refused, Unavailable
from tpufleet.state import dburl, journal
from tpufleet.state.backend import no_fleet_state
from tpufleet.state.files import check_name
from tpufleet.state.lock import login_name
from tpufleet.state.pglock import PostgresLocking
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
from tpufleet.text import seconds_text

if TYPE_CHECKING:
    import psycopg

    from tpufleet.fleetstate import RouteRecord

# ---- the journal's rows ------------------------------------------------------------------------------------------

TAIL_ROWS = 64  # journal lines read first for its last entries (then 4x more at a time)
# A journal row longer than a journal line may be is read as this damaged line (a NUL byte is never JSON), so its
# bytes never leave the database, and `state pull` writes a line `state push` takes back.
OVERSIZE_LINE = b"\x00"
_BOUNDED_LINE = "CASE WHEN octet_length(line) > %s THEN '\\x00'::bytea ELSE line END"


def one_line(row: bytes) -> bytes:
    """A journal row as the one line a state directory's journal holds of it (a journal line is one JSON object): a
    row put in by hand may hold newline bytes, which would end the line there. In a row that is JSON they are
    whitespace between its tokens and become spaces (the document unchanged); in one that is not (a newline inside
    a string, where JSON allows no raw control character, or no JSON at all) they are written as JSON's escape
    ``\\n``: a string keeps its newline, and a row that is no entry stays one damaged line."""
    if b"\n" not in row:
        return row
    try:
        json.loads(row)
    except (ValueError, RecursionError):
        return row.replace(b"\n", b"\\n")
    return row.replace(b"\n", b" ")


# ---- the backend -------------------------------------------------------------------------------------------------


_INSTALL = "pip install 'tpufleet[postgres]'"


class PostgresBackend(PostgresLocking):
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
    def damaged_hint(self) -> str:
        # `state push` takes no copy over a damaged row: it cannot tell whose history the row was
        return (
            "; the state row is damaged: restore the database from a backup, or start over (`tpufleet --state URL "
            "init --force`; the journal stays, and the serials go on)"
        )

    @property
    def journal_label(self) -> str:
        return f"{self.where} (journal)"

    # -- connection and errors --

    def _driver(self) -> None:
        """Refused, saying how to install it, where the PostgreSQL driver (the `postgres` extra) is missing or cannot
        load (installed without its binary wheel, and no libpq)."""
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            why = "" if exc.name == "psycopg" else f" (the one installed cannot load: {str(exc).splitlines()[0]})"
            said = f"the state {self.where} is a PostgreSQL database: install the driver with {_INSTALL}{why}"
            raise Refused(said) from None

    @contextmanager
    def errors(self, doing: str = "use", lost: tuple[str, str] | None = None) -> Iterator[None]:
        """A database error as one line naming the URL (never its password): exit 1. `lost`: what was being done and
        what to do, said of a lost connection instead (around a transaction: it may have committed)."""
        self._driver()
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
        self._driver()
        import psycopg

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
        self._driver()
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
        self._driver()
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
            raise no_fleet_state(self.where)
        return row[1]

    def journal_bytes(self) -> bytes:
        """The journal as a state directory's journal.jsonl holds it: every line, in order, each ended by a newline.
        A row longer than a journal line may be (one put in by hand: tpufleet refuses to write one) comes as the
        damaged line `OVERSIZE_LINE`: never read into memory, as a state directory never reads such a line. A row
        holding a newline comes as one line (`one_line`)."""
        rows = self._query(f"SELECT {_BOUNDED_LINE} FROM tpufleet_journal ORDER BY seq", (journal.MAX_LINE_BYTES,))
        return b"".join(one_line(bytes(r[0])) + b"\n" for r in rows or [])

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
            lines = b"".join(one_line(bytes(r[0])) + b"\n" for r in reversed(rows))
            found = journal.scan_back(lines, serial, enough, whole)
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
        (`tablesindex.TAIL_BYTES`), not the tables, in one round trip."""
        from tpufleet.state.tablesindex import TAIL_BYTES, tail_holds_indexed

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

    @contextmanager
    def writing(self, timeout: float, command: str, create: bool = True) -> Iterator[DatabaseWriter]:
        with self.locked(timeout, command) as ready:  # (a database is made by its administrator, never here)
            yield DatabaseWriter(self, ready)
