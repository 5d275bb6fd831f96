"""The routes of `tpufleet serve` (a Starlette application; `tpufleet.cli.serve` runs it under uvicorn).

Every answer is JSON but `/` (HTML) and `/metrics` (Prometheus text); every error is `{"error": ..., "status": N}`
with the documented status: 400 a bad query, a bad Host (`tpufleet.serve.framing.valid_host`) or a body that is not
JSON, 401 a missing or wrong token, 404 no such route (or alert intake off), 405 a method the route does not take, 408 a body sent too slowly (headers too slowly:
`tpufleet.serve.connections`), 413 a body over 16 MiB, 431 a request target and headers over 16 KiB, 422 JSON that is not an Alertmanager payload, 409 a change
the state refuses, 503 the state cannot be read or its lock is busy. A 500 is a bug.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tpufleet.errors import BadInput, BadStateFile, LockTimeout, Refused, TpufleetError, Unavailable
from tpufleet.ops.alerts import Alert
from tpufleet.serve import documents
from tpufleet.serve.alertpayload import BadPayload, NotJson, parse
from tpufleet.serve.framing import KnownHost, OneFraming, OriginForm
from tpufleet.serve.queries import Problem, flag, serial_query, serial_within, taking
from tpufleet.serve.snapshot import Snapshot, Source
from tpufleet.text import seconds_text

MAX_HEADERS = 16 * 1024  # the request target and every header together
MAX_BODY = 16 << 20  # 16 MiB: a notification of 10,000 alerts with long annotations fits
BODY_SECONDS = 10.0  # a body must arrive within this: a slow client cannot hold a write for long
ALERTS_COMMAND = "tpufleet serve: POST /api/v1/alerts"
ALERT_THREADS = 40  # alerts at once in threads of their own (as many as the reads' pool has)
_COMMON = {"X-Content-Type-Options": "nosniff"}
INTAKE_OFF = "alert intake is off: start tpufleet serve with --token-file FILE"
_RETRY = {"Retry-After": "5"}
_PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status, headers={**_COMMON, **(headers or {})})


@dataclass
class Server:
    source: Source
    inputs: documents.MetricsInputs
    token: bytes | None = None  # None: POST /api/v1/alerts is off
    refresh: int = 15
    hosts: frozenset[str] | None = None  # the Host names answered (`framing.allowed_hosts`); None: any
    # One write at a time: the requests' threads share the store (on a database, one connection, whose transactions
    # would nest and whose session lock would let every thread in); other processes wait on the state's own lock.
    # An alert waits for both together at most the store's lock timeout (--lock-timeout), as measured by `clock`.
    _writing: threading.Lock = field(default_factory=threading.Lock)
    clock: Callable[[], float] = time.monotonic
    # Alerts wait for their turn and the state's lock (up to --lock-timeout) in threads apart from the reads': in the
    # pool the reads run in, a burst of them waiting on a lock held by a long command left no thread to answer
    # /healthz, /readyz or a scrape of /metrics until the lock came free.
    _alert_threads: anyio.CapacityLimiter | None = None

    def snapshot(self) -> Snapshot:
        try:
            return self.source.current()
        except TpufleetError as exc:
            raise Problem(503, f"the state cannot be read: {exc}", _RETRY) from None

    # ---- reads -----------------------------------------------------------------------------------------------
    async def healthz(self, request: Request) -> Response:
        """Answered in the event loop itself: reads stuck on a database or file system that stopped answering hold
        every thread of the pool, and the process still runs."""
        return JSONResponse({"status": "ok"}, headers=_COMMON)

    def readyz(self, request: Request) -> Response:
        snap = self.snapshot()
        return JSONResponse({"status": "ready", "serial": snap.serial}, headers=_COMMON)

    def metrics(self, request: Request) -> Response:
        openmetrics = wants_openmetrics(request.headers.get("accept", ""))
        extras = self.source.extras()  # the goodput logs first (read again if they changed), then the freshest state
        body = documents.metrics(self.snapshot(), extras, openmetrics, self.inputs)
        kind = documents.OPENMETRICS_TYPE if openmetrics else documents.PROMETHEUS_TYPE
        return Response(body, headers={**_COMMON, "Content-Type": kind, "Cache-Control": "no-store"})

    def page(self, request: Request) -> Response:
        """The fleet page; while the state cannot be read, the error asks the browser to reload all the same (the
        `Refresh` header): a wall screen that met a database restarting is back once the state reads again, rather
        than left on the error until someone reloads it."""
        again = {"Refresh": str(self.refresh)}
        try:
            body = documents.page(self.snapshot(), self.refresh)
        except Problem as exc:
            raise Problem(exc.status, str(exc), {**exc.headers, **again}) from None
        except TpufleetError as exc:
            raise Problem(503, f"the state cannot be read: {exc}", {**_RETRY, **again}) from None
        headers = {**_COMMON, "Cache-Control": "no-store", "Content-Security-Policy": _PAGE_POLICY}
        return Response(body, media_type="text/html; charset=utf-8", headers=headers)

    def status(self, request: Request) -> Response:
        snap = self.snapshot()
        return tagged(request, documents.etag(snap), lambda: documents.status(snap))

    def slices(self, request: Request) -> Response:
        snap = self.snapshot()
        return tagged(request, documents.etag(snap), lambda: documents.rows(snap, "slices"))

    def jobs(self, request: Request) -> Response:
        snap = self.snapshot()
        return tagged(request, documents.etag(snap), lambda: documents.rows(snap, "jobs"))

    def faults(self, request: Request) -> Response:
        every = flag(request, "all")
        snap = self.snapshot()
        return tagged(request, documents.etag(snap), lambda: documents.faults(snap, every))

    def journal(self, request: Request) -> Response:
        since = serial_query(request, "since")
        snap = self.snapshot()
        serial_within(request, "since", since, snap.serial)
        return tagged(request, documents.etag(snap), lambda: documents.journal(snap, since))

    # ---- the one write ---------------------------------------------------------------------------------------
    async def alerts(self, request: Request) -> Response:
        if self.token is None:
            raise Problem(404, INTAKE_OFF)
        if len(request.headers.getlist("authorization")) > 1:  # which one holds would be a guess (a proxy's may differ)
            raise Problem(400, "Authorization given 2 times or more; send it once")
        if not authorized(request.headers.get("authorization", ""), self.token):
            raise Problem(401, "missing or wrong token", {"WWW-Authenticate": 'Bearer realm="tpufleet"'})
        encoding = request.headers.get("content-encoding", "identity").strip()
        if encoding.lower() not in ("", "identity"):  # read as it came, a gzip body was "not JSON": say what is wrong
            raise Problem(415, f"Content-Encoding {encoding!r} is not taken; send the alerts uncompressed")
        body = await bounded_body(request)
        try:
            alerts = parse(body)
        except NotJson as exc:
            raise Problem(400, str(exc)) from None
        except BadPayload as exc:
            raise Problem(422, str(exc)) from None
        if self._alert_threads is None:  # (made in the server's event loop)
            self._alert_threads = anyio.CapacityLimiter(ALERT_THREADS)
        data = await anyio.to_thread.run_sync(self._receive, alerts, limiter=self._alert_threads)
        return JSONResponse(data, headers=_COMMON)

    def _receive(self, alerts: list[Alert]) -> dict[str, Any]:
        from tpufleet.ops.alerts import receive
        from tpufleet.state.store import utc_now

        store = self.source.store
        waited = self._take_turn(store.lock_timeout)
        left = round(max(0.0, store.lock_timeout - waited), 2)  # (to the hundredth: the message shows it)
        try:
            with store.transaction(ALERTS_COMMAND, timeout=left) as tx:
                try:
                    outcome = receive(tx.state, alerts, utc_now())
                except BadInput as exc:  # the alerts' own: the payload is what is wrong
                    raise Problem(422, str(exc)) from None
                tx.commit(outcome.change)
        except LockTimeout as exc:
            behind = f", having waited {waited:.1f}s behind the alerts received before" if waited >= 0.05 else ""
            raise Problem(503, f"{exc}{behind}", {"Retry-After": "5"}) from None
        except Unavailable as exc:
            raise Problem(503, str(exc), {"Retry-After": "5"}) from None
        except BadStateFile as exc:
            raise Problem(503, f"the state cannot be read: {exc}", _RETRY) from None
        except (BadInput, Refused) as exc:  # the state refuses it (writable by others, say), not the payload
            raise Problem(409, str(exc)) from None
        finally:
            self._writing.release()
        data: dict[str, Any] = outcome.data
        return data

    def _take_turn(self, timeout: float) -> float:
        """Wait for the alerts received before this one (at most `timeout` seconds: 503 to be retried after that);
        how long it waited."""
        started = self.clock()
        if not self._writing.acquire(timeout=timeout):
            raise Problem(
                503,
                f"state {self.source.store.where} is busy with the alerts received before; gave up after "
                f"{seconds_text(timeout)}s (see --lock-timeout)",
                {"Retry-After": "5"},
            )
        return max(0.0, self.clock() - started)


def authorized(header: str, token: bytes) -> bool:
    """`Authorization: Bearer TOKEN`, the token compared in constant time."""
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode("utf-8", "replace"), token)


async def bounded_body(request: Request) -> bytes:
    """The request body: 413 over MAX_BODY (said by Content-Length or found while reading), 408 when it takes longer
    than BODY_SECONDS to arrive."""
    length = request.headers.get("content-length", "")
    if length.isascii() and length.isdigit() and int(length) > MAX_BODY:
        raise Problem(413, f"the body is over {MAX_BODY} bytes")
    chunks: list[bytes] = []
    size = 0

    async def read() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise Problem(413, f"the body is over {MAX_BODY} bytes")
            chunks.append(chunk)

    try:
        await asyncio.wait_for(read(), BODY_SECONDS)
    except TimeoutError:
        raise Problem(408, f"the body did not arrive within {BODY_SECONDS:g} seconds") from None
    return b"".join(chunks)


def wants_openmetrics(accept: str) -> bool:
    """Whether an Accept header prefers OpenMetrics to the Prometheus text format: its weight above 0 and not below
    text/plain's, that of the range naming it most closely (text/*, */*) (Prometheus asks for q=0.5 against 0.3).

    >>> wants_openmetrics("application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3")
    True
    >>> wants_openmetrics("application/openmetrics-text;q=0, text/plain"), wants_openmetrics("*/*")
    (False, False)
    """
    weights: dict[str, float] = {}
    for part in accept.split(","):
        kind, *params = (p.strip().lower() for p in part.split(";"))
        try:
            q = float(next((p[2:] for p in params if p.startswith("q=")), "1"))
        except ValueError:
            q = 0.0
        if 0.0 <= q <= 1.0:
            weights[kind] = max(weights.get(kind, 0.0), q)
    text = next((weights[k] for k in ("text/plain", "text/*", "*/*") if k in weights), 0.0)
    return weights.get("application/openmetrics-text", 0.0) > 0.0 and weights["application/openmetrics-text"] >= text


def tagged(request: Request, etag: str, body: Callable[[], bytes]) -> Response:
    """A JSON document with its snapshot's ETag (`documents.etag`: the serial); 304 (no body) when the client
    already holds it."""
    headers = {**_COMMON, "ETag": etag, "Cache-Control": "no-cache"}
    held = [t.strip().removeprefix("W/") for t in request.headers.get("if-none-match", "").split(",")]
    if etag in held or "*" in held:
        return Response(status_code=304, headers=headers)
    text = body()  # ended by a newline, as the CLI's `-o json` prints it: the same bytes
    return Response(text if text.endswith(b"\n") else text + b"\n", media_type="application/json", headers=headers)


async def _problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    return error(exc.status, str(exc), exc.headers)


async def _unreadable(request: Request, exc: Exception) -> Response:
    """A document made after the snapshot (the journal, say) whose reading failed: the state cannot be read."""
    assert isinstance(exc, TpufleetError)
    return error(503, f"the state cannot be read: {exc}", {"Retry-After": "5"})


async def _http(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 (no route) and 405 (method), as JSON; the Allow header kept."""
    assert isinstance(exc, HTTPException)
    return error(exc.status_code, exc.detail, dict(exc.headers or {}))


class BoundedHeaders:
    """ASGI middleware: a request whose target and headers exceed MAX_HEADERS bytes in all gets 431 before any
    route runs (uvicorn's parser bounds only what arrives in pieces)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
            size += sum(len(name) + len(value) + 4 for name, value in scope["headers"])
            if size > MAX_HEADERS:
                await error(431, f"the request's target and headers are over {MAX_HEADERS} bytes")(scope, receive, send)
                return
        await self.app(scope, receive, send)


class AnsweredWhenStopping:
    """ASGI middleware: a request still running when the stop's grace period runs out (uvicorn then cancels it) is
    answered 503, to be sent again, rather than the 500 and traceback of an application error: an alert waiting on
    the state's lock, a read on a database that stopped answering. An alert so cut short may have been applied or
    not, as its thread is left to end; a repeat is recognised by its mark, so sending it again is safe."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except asyncio.CancelledError:
            if started:
                raise
            answer = error(503, "tpufleet serve is stopping: the request was cut short; send it again", _RETRY)
            await answer(scope, receive, send)


def build_app(server: Server) -> Starlette:
    routes = [
        Route(path, taking(endpoint, query), methods=["GET"])
        for path, endpoint, query in (
            ("/", server.page, None),
            ("/metrics", server.metrics, None),
            ("/healthz", server.healthz, None),
            ("/readyz", server.readyz, None),
            ("/api/v1/status", server.status, ()),
            ("/api/v1/slices", server.slices, ()),
            ("/api/v1/jobs", server.jobs, ()),
            ("/api/v1/faults", server.faults, ("all",)),
            ("/api/v1/journal", server.journal, ("since",)),
        )
    ]
    alerts: Callable[[Request], Awaitable[Response]] = server.alerts
    # without a token the intake is off whatever the method: 404 saying so (an ASGI app takes every method), not
    # 405 for a GET or a PUT, whose Allow would name methods no more allowed
    intake = Route("/api/v1/alerts", taking(alerts, None), methods=["POST"]) if server.token else None
    routes.append(intake or Route("/api/v1/alerts", error(404, INTAKE_OFF)))
    handlers = {Problem: _problem, HTTPException: _http, TpufleetError: _unreadable}
    application = Starlette(routes=routes, exception_handlers=handlers)
    application.router.redirect_slashes = False  # /api/v1/status/ is no route: 404, not a redirect
    application.add_middleware(BoundedHeaders)
    application.add_middleware(OneFraming)
    application.add_middleware(KnownHost, allowed=server.hosts)  # (inside OriginForm: an absolute target's host)
    application.add_middleware(OriginForm)  # (outside the rest: the routes and the bounds see the target's path)
    application.add_middleware(AnsweredWhenStopping)
    return application
