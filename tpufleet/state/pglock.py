"""The lock of a PostgreSQL state (`PostgresBackend`'s): a session advisory lock and its holder row.

The lock is released by the server when the holder's connection ends, even when the holder is killed; the holder
row (`tpufleet_lock`: user, pid, host, command, since) names whose lock it is in the "locked by" message, and the
wait is bounded by `--lock-timeout`. Apart from `pgbackend`, which connects, reads and migrates, because holding
the lock (who, how long, what a killed holder leaves) is a concern of its own that every writing command shares.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from tpufleet.errors import LockTimeout, Refused
from tpufleet.state.lock import WAIT_NOTICE, WAIT_NOTICE_AFTER, login_name, shown_command
from tpufleet.text import bounded, printable, seconds_text
from tpufleet.timeparse import STAMP_FORMAT

if TYPE_CHECKING:
    import psycopg


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


def _storable(conn: psycopg.Connection[tuple[Any, ...]], text: str) -> str:
    """`text` as a text column of this database can hold it. The holder row is the one place tpufleet writes text
    (the journal and the state are bytea): a database in another encoding than UTF-8 (LATIN1, say) refuses a
    character it lacks, so there the row holds ASCII, anything else as its escape (it is only shown)."""
    if conn.info.parameter_status("server_encoding") in ("UTF8", "SQL_ASCII"):
        return text
    return text.encode("ascii", "backslashreplace").decode("ascii")


class PostgresLocking:
    """The advisory lock and its holder row, mixed into `PostgresBackend`: it uses the backend's connection, its
    errors (one line naming the URL) and its schema check."""

    where: str  # the database's URL without its password
    _conn: psycopg.Connection[tuple[Any, ...]] | None

    if TYPE_CHECKING:  # the backend's, which this is mixed into

        def connection(self) -> psycopg.Connection[tuple[Any, ...]]: ...

        def errors(self, doing: str = "use", lost: tuple[str, str] | None = None) -> AbstractContextManager[None]: ...

        def close(self) -> None: ...

        def schema_version(self) -> int | None: ...

        def _usable(self, version: int | None) -> bool: ...

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
        with self.errors("lock"):  # first: it says how to install a missing driver
            import psycopg

            from tpufleet.state import pgwait

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
