"""A bound on every round trip to the state database, kept by the client (imported only once psycopg is).

TCP keepalives and `tcp_user_timeout` end a connection whose host or network went away, but not one to a server
whose process stopped answering while its host still runs (the backend stopped by SIGSTOP or a debugger, a server
wedged on its disk): the host's kernel acknowledges the request and answers the probes, and a read waited for the
reply forever. A server-side `statement_timeout` cannot help there either: the process that would enforce it is the
one that stopped. So each wait for the server (psycopg's `Connection.wait`, through which every statement, commit
and fetch goes) gives up once the socket stays silent for the bound, and the connection is closed.

The bound is libpq's `tcp_user_timeout` as the URL sets it (milliseconds; tpufleet's default otherwise): the time
that sent data may go unacknowledged is also the time a request may go unanswered. 0 takes the bound off, as it
leaves unacknowledged data to the operating system. A wait that is meant to be long (the advisory lock, bounded by
its own `lock_timeout`) is given its length on top of the bound (`waiting_longer`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Iterator
from typing import Any, TypeVar

import psycopg
from psycopg.abc import PQGen

RV = TypeVar("RV")

# How often a silent wait looks at the clock (psycopg's own wait ticks at this interval too, for Ctrl-C).
_TICK = 0.1


class NoAnswer(psycopg.OperationalError):
    """The server took a request and did not answer it within the bound: the connection is closed (its outcome, for a
    commit, unknown), as when it is lost."""


class BoundedConnection(psycopg.Connection[tuple[Any, ...]]):
    """A connection whose every wait for the server ends after `bound` seconds of silence (None: never)."""

    bound: float | None = None
    bound_text = ""  # the setting that gave it, for the message
    _extra = 0.0  # seconds a wait may take beyond the bound (see waiting_longer)

    def wait(self, gen: PQGen[RV], interval: float = _TICK, *rest: Any, **more: Any) -> RV:
        if self.bound is None:
            return super().wait(gen, interval, *rest, **more)
        tick = min(interval, _TICK) if interval else _TICK  # (None, in psycopg 3.2: never wake up)
        try:
            return super().wait(self._answered(gen, self.bound + self._extra), tick, *rest, **more)
        except NoAnswer:
            self.close()  # mid-request: nothing more can be said on it (a rollback would wait as long again)
            raise

    def _answered(self, gen: PQGen[RV], seconds: float) -> Generator[Any, Any, RV]:
        """`gen`, given up (NoAnswer) once the socket stays neither readable nor writable for `seconds`."""
        last = time.monotonic()
        try:
            wait = next(gen)
            while True:
                ready = yield wait
                now = time.monotonic()
                if ready:  # data came, or the request could be sent on: the server is alive
                    last = now
                elif now - last >= seconds:
                    raise NoAnswer(f"the server did not answer within {self.bound_text}")
                wait = gen.send(ready)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def bound_seconds(params: dict[str, str], default_ms: int) -> tuple[float | None, str]:
    """The bound, in seconds (None: none), and how a message names it, from the URL's `tcp_user_timeout` (checked
    to be a whole number before) or tpufleet's default."""
    own = params.get("tcp_user_timeout")
    ms = default_ms if own is None else int(own)
    if ms <= 0:
        return None, ""
    seconds = ms / 1000
    return seconds, f"{seconds:g}s (tcp_user_timeout={ms})"


@contextlib.contextmanager
def waiting_longer(conn: psycopg.Connection[Any], seconds: float) -> Iterator[None]:
    """Each wait inside may take `seconds` more than the bound (a lock wait the server itself ends after them)."""
    if not isinstance(conn, BoundedConnection):
        yield
        return
    before = conn._extra
    conn._extra = before + max(0.0, seconds)
    try:
        yield
    finally:
        conn._extra = before
