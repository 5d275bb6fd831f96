"""The connections of `tpufleet serve`: uvicorn's h11 protocol, bounded where uvicorn leaves a client unbounded.

uvicorn waits for a request's headers for as long as the client likes (its keep-alive timer stops at the first
byte, and a new connection has none): a client trickling header bytes over many connections held each for good,
until the process ran out of file descriptors and neither answered nor could open its state. Here the request line
and headers must arrive within `header_seconds` of the connection being made (or of the answer before on a
kept-alive one), else the connection is closed (408 first when some of the request had arrived), and no more than
`max_connections` are open at once (one over is answered 503 and closed, and said on stderr: `OnceAMinute`). An
answer the client stops reading (pipelined requests for the fleet page, say, their answers never read) held its
connection for good too, the answer waiting to be written: a connection whose client has read nothing of it for
`send_seconds` is dropped.
uvicorn wrote a warning on serve's stderr for each request it could not read (garbage, TLS sent to the plain-HTTP
port), as many as a scanner sent: here the first is said, with its client, and the rest counted, one line a minute
(`OnceAMinute`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from tpufleet.serve.app import MAX_HEADERS

HEADER_SECONDS = 10.0  # the request line and headers must arrive within this
SEND_SECONDS = 30.0  # a client reading none of an answer for this long is dropped
MAX_CONNECTIONS = 512  # open at once (half the open-files limit when that is lower: the state needs files too)
WINDOW_SECONDS = 60.0  # what a client can repeat at will is said once, then counted this long (`OnceAMinute`)
UVICORN_REFUSED = "Invalid HTTP request received."  # uvicorn's warning for each request it cannot read
_REASONS = {408: "Request Timeout", 431: "Request Header Fields Too Large", 503: "Service Unavailable"}


def connection_cap(limit: int = MAX_CONNECTIONS) -> int:
    """`limit`, or half the process's open-files limit when that is lower."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return limit if soft == resource.RLIM_INFINITY else max(1, min(limit, soft // 2))


def raw_error(status: int, message: str, headers: dict[str, str] | None = None) -> bytes:
    """A whole HTTP/1.1 answer `{"error": ..., "status": N}` (as the routes' errors) that closes the connection."""
    body = json.dumps({"error": message, "status": status}, ensure_ascii=False, separators=(",", ":")).encode()
    fields = {"Content-Type": "application/json", "Content-Length": str(len(body)), "Connection": "close"}
    fields.update({"X-Content-Type-Options": "nosniff", **(headers or {})})
    head = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return f"HTTP/1.1 {status} {_REASONS[status]}\r\n{head}\r\n".encode("latin-1") + body


Later = Callable[[float, Callable[[], None]], object]  # call this after so many seconds (the event loop's call_later)


def _in_loop(delay: float, callback: Callable[[], None]) -> object:
    return asyncio.get_running_loop().call_later(delay, callback)


class OnceAMinute:
    """Something any client can make happen as often as it likes, said on serve's stderr bounded: the first time in
    full (with its client); the times after it counted and said in one line (`more`, formatted with `count`,
    `window` and `latest`, the last client) at the end of each minute that had any (`window` seconds; `later` runs
    the count's end: the event loop's timer). A minute without any ends the count: the next is said in full again."""

    def __init__(
        self, logger: logging.Logger, more: str, window: float = WINDOW_SECONDS, later: Later = _in_loop
    ) -> None:
        self.logger, self.more, self.window, self.later = logger, more, window, later
        self.counting = False
        self.count, self.latest = 0, ""

    def happened(self, client: str, line: str) -> None:
        if self.counting:
            self.count, self.latest = self.count + 1, client
            return
        self.logger.warning("%s", line)
        self._count_on()

    def window_over(self) -> None:
        if not self.count:
            self.counting = False
            return
        self.logger.warning("%s", self.more.format(count=self.count, window=self.window, latest=self.latest))
        self._count_on()

    def close(self) -> None:
        """The count not yet said (the server stops within its minute), said now."""
        if self.count:
            self.logger.warning("%s", self.more.format(count=self.count, window=self.window, latest=self.latest))
        self.counting, self.count = False, 0

    def _count_on(self) -> None:
        self.counting, self.count = True, 0
        self.later(self.window, self.window_over)


def refused_line(client: str, status: int) -> str:
    """The first request refused as unreadable, said."""
    return (
        f"refused a request from {client} that does not read as HTTP/1.1 (garbage, TLS sent to this plain-HTTP port, "
        f"headers over {MAX_HEADERS} bytes): answered {status} and closed; any more are counted, one line a minute"
    )


REFUSED_MORE = (
    "refused {count} more request(s) that do not read as HTTP/1.1 in the last {window:g} s, the latest from {latest}"
)


def client_text(protocol: H11Protocol) -> str:
    """The connection's client, ADDRESS:PORT ([ADDRESS]:PORT for IPv6)."""
    host, port = protocol.client or ("unknown", 0)
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


def over_cap_line(client: str, cap: int) -> str:
    """The first connection refused over the cap, said: the reason the clients get 503."""
    return (
        f"refused a connection from {client} (503): {cap} are open, the most allowed (clients holding connections "
        "open?); any more are counted, one line a minute"
    )


def over_cap_more(cap: int) -> str:
    """The count of connections refused over the cap since, said (`OnceAMinute.more`)."""
    return (
        f"refused {{count}} more connection(s) over the {cap} allowed in the last {{window:g}} s, "
        "the latest from {latest}"
    )


class _RefusalsCounted:
    """uvicorn's logger for one connection, its warning for a request it cannot read said by `refusals` (an
    `OnceAMinute`) instead; anything else logged as it is."""

    def __init__(self, logger: logging.Logger, refusals: OnceAMinute, protocol: H11Protocol) -> None:
        self._logger, self._refusals, self._protocol = logger, refusals, protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)

    def warning(self, msg: object, *args: Any, **kwargs: Any) -> None:
        if msg != UVICORN_REFUSED:
            self._logger.warning(msg, *args, **kwargs)
            return
        client = client_text(self._protocol)
        self._refusals.happened(client, refused_line(client, getattr(self._protocol.conn, "refused_with", 400)))


class _Hinted(h11.Connection):
    """h11's connection, keeping the status h11 suggests for the client's bytes it last refused (uvicorn answers
    400 whatever it is)."""

    refused_with = 400

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.refused_with = exc.error_status_hint
            raise


class BoundedConnection(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers and for a client to read on, and a cap on
    the connections open."""

    header_seconds: float = HEADER_SECONDS
    send_seconds: float = SEND_SECONDS
    max_connections: int = MAX_CONNECTIONS
    refusals: OnceAMinute | None = None  # (the server's, shared by its connections: `bounded_protocol`)
    over_cap: OnceAMinute | None = None  # (likewise)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.refusals is not None:
            self.logger = _RefusalsCounted(self.logger, self.refusals, self)  # type: ignore[assignment]
        self.conn = _Hinted(h11.SERVER, max_incomplete_event_size=MAX_HEADERS)
        self._header_timer: asyncio.TimerHandle | None = None
        self._before: object = None  # the request answered before the one awaited (None: the first)
        self._send_timer: asyncio.TimerHandle | None = None

    @classmethod
    def say_counts(cls) -> None:
        """What the server's `OnceAMinute`s counted and have not said yet, said: once the server has stopped."""
        for counted in (cls.refusals, cls.over_cap):
            if counted is not None:
                counted.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            if self.over_cap is not None:  # (else the operator sees clients answered 503 and nothing saying why)
                client = client_text(self)
                self.over_cap.happened(client, over_cap_line(client, self.max_connections))
            message = f"tpufleet serve has {self.max_connections} connections open; try again"
            transport.write(raw_error(503, message, {"Retry-After": "5"}))
            transport.close()
            return
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._header_timer, self._send_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._send_timer = None
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The answers written wait on the client (the buffers full): it has `send_seconds` to read on."""
        super().pause_writing()
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(self.send_seconds, self.transport.abort)  # (close would wait)

    def resume_writing(self) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None
        super().resume_writing()

    def handle_events(self) -> None:
        super().handle_events()
        if self._header_timer is not None and self.cycle is not self._before:  # a request's headers came whole
            self._stop_waiting()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():  # (before uvicorn's: a pipelined request it then takes stops the wait)
            self._await_headers()
        super().on_response_complete()

    def _unsupported_upgrade_warning(self) -> None:
        """A request asking to upgrade (to WebSocket, h2c) is answered as HTTP/1.1, which it allows, and nothing is
        said: uvicorn wrote two warnings on serve's stderr for each, one advising to install a WebSocket library
        that no route needs, as many as a client liked to send."""

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes h11 refuses; 431, as the routes answer it, when what was refused is a request
        line and headers over MAX_HEADERS arriving in pieces (the routes see only those that arrive whole)."""
        if getattr(self.conn, "refused_with", 400) != 431:
            super().send_400_response(msg)
            return
        self.transport.write(raw_error(431, f"the request's target and headers are over {MAX_HEADERS} bytes"))
        self.transport.close()

    def _await_headers(self) -> None:
        self._stop_waiting()
        self._before = self.cycle
        self._header_timer = self.loop.call_later(self.header_seconds, self._headers_too_slow)

    def _stop_waiting(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        # a request begun, not finished (not the rest of a body already answered): say why it is cut; an idle
        # connection is just closed
        if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            message = f"the request's headers did not arrive within {self.header_seconds:g} seconds"
            self.transport.write(raw_error(408, message))
        self.transport.close()


def bounded_protocol(
    header_seconds: float = HEADER_SECONDS, max_connections: int | None = None, send_seconds: float = SEND_SECONDS
) -> type[H11Protocol]:
    """The protocol class for uvicorn's `http`: headers within `header_seconds`, at most `max_connections` open
    (by default `connection_cap()`), a client reading nothing for `send_seconds` dropped, the requests refused as
    unreadable and the connections over the cap said once a minute (`OnceAMinute`)."""
    cap = connection_cap() if max_connections is None else max_connections

    class Bounded(BoundedConnection):
        pass

    Bounded.header_seconds, Bounded.max_connections, Bounded.send_seconds = header_seconds, cap, send_seconds
    logger = logging.getLogger("uvicorn.error")  # (the logger uvicorn's protocol uses)
    Bounded.refusals, Bounded.over_cap = OnceAMinute(logger, REFUSED_MORE), OnceAMinute(logger, over_cap_more(cap))
    return Bounded
