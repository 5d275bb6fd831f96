"""The request as the routes see it: ASGI middleware between uvicorn and `tpufleet.serve.app`'s routes."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

_SCHEMES = (b"http", b"https")


def origin_form(scope: Scope) -> Scope:
    """The scope of a request whose target is in absolute form (`http://host:9478/metrics?x=1`, RFC 9112 section
    3.2.2: what a client talking to a proxy sends, and what a server must take) as that of its origin form
    (`/metrics`), the Host header replaced by the target's authority (the section has the server ignore the Host
    sent). uvicorn splits the query off the target before this; any other scope is returned as it is.

    >>> s = origin_form({"raw_path": b"HTTP://h:1/a%20b", "path": "HTTP://h:1/a b", "headers": [(b"host", b"x")]})
    >>> s["raw_path"], s["path"], s["headers"]
    (b'/a%20b', '/a b', [(b'host', b'h:1')])
    >>> origin_form({"raw_path": b"http://h", "path": "http://h", "headers": []})["path"]
    '/'
    """
    scheme, sep, rest = (scope.get("raw_path") or b"").partition(b"://")
    if not sep or scheme.lower() not in _SCHEMES:
        return scope
    authority, slash, path = rest.partition(b"/")
    raw_path = slash + path or b"/"
    headers: list[tuple[bytes, bytes]] = [(n, v) for n, v in scope["headers"] if n != b"host"]
    changed: dict[str, Any] = {"raw_path": raw_path, "path": unquote(raw_path.decode("ascii"))}
    return {**scope, **changed, "headers": [(b"host", authority), *headers]}


class OriginForm:
    """ASGI middleware: a request target in absolute form is served as its path (`origin_form`); without it,
    `GET http://host:9478/metrics` was 404."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(origin_form(scope) if scope["type"] == "http" else scope, receive, send)


class OneFraming:
    """ASGI middleware: a request saying both Content-Length and Transfer-Encoding is answered 400 and its connection
    closed. uvicorn took the body by Transfer-Encoding alone and kept the connection open for the next request, so
    a proxy in front that went by Content-Length read a different request boundary than the server's: the bytes of
    one client's body served as another request (smuggling). RFC 9112 section 6.3 has the server close the
    connection after such a request whatever it answers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        names = {name for name, _ in scope["headers"]} if scope["type"] == "http" else set()
        if {b"content-length", b"transfer-encoding"} <= names:
            message = "a request with both Content-Length and Transfer-Encoding is refused"
            headers = {"Connection": "close", "X-Content-Type-Options": "nosniff"}
            await JSONResponse({"error": message, "status": 400}, 400, headers=headers)(scope, receive, send)
            return
        await self.app(scope, receive, send)


LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "::1"})  # and every 127.x.y.z (`_loopback`)


def _loopback(host: str) -> bool:
    """An address or name that is this machine's own loopback."""
    import ipaddress

    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(listen_host: str, named: list[str]) -> frozenset[str] | None:
    """The Host names `serve` answers (None: any). Listening on a loopback address, only loopback names and the
    `named` ones: a web page the operator opens could otherwise point a name of its own at 127.0.0.1 and read the
    fleet (DNS rebinding). Listening elsewhere, any Host unless names are given (a reverse proxy in front passes
    the name clients used). `*` among them: any.

    >>> sorted(allowed_hosts("127.0.0.1", ["Fleet.Example"]) or [])
    ['fleet.example', 'localhost', 'localhost.']
    >>> allowed_hosts("0.0.0.0", []) is None, allowed_hosts("127.0.0.1", ["*"]) is None
    (True, True)
    """
    for name in named:
        _check_host_name(name)
    if "*" in named:
        return None
    if not named and not _loopback(listen_host):
        return None
    return frozenset({"localhost", "localhost.", *(name.strip("[]").lower() for name in named)})


_HOST_NAME = re.compile(r"(?i)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.?")


def _check_host_name(name: str) -> None:
    """BadInput (exit 2) naming --allow-host unless `name` is `*`, a DNS name or an IP address: a name with its port
    (`fleet.example.com:443`) would never match a Host, whose port is set aside, and no request would be answered.

    >>> _check_host_name("fleet.example.com"), _check_host_name("::1"), _check_host_name("*")
    (None, None, None)
    >>> _check_host_name("fleet.example.com:443")
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad option --allow-host 'fleet.example.com:443': give a host name or address without a port or scheme (or * for any)
    """
    import ipaddress

    from tpufleet.errors import BadInput

    if name == "*" or (_HOST_NAME.fullmatch(name) and len(name) <= 253):
        return
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        shown = repr(name)
        raise BadInput(
            f"bad option --allow-host {shown}: give a host name or address without a port or scheme (or * for any)"
        ) from None


def host_name(value: bytes) -> str:
    """The name or address of a Host header, without its port or brackets, lower case.

    >>> host_name(b"[::1]:9478"), host_name(b"Fleet.Example:80"), host_name(b"127.0.0.1")
    ('::1', 'fleet.example', '127.0.0.1')
    """
    text = value.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    return text.rpartition(":")[0] if text.count(":") == 1 else text


class KnownHost:
    """ASGI middleware: a request whose Host is not one `serve` answers (`allowed_hosts`) gets 421 (Misdirected
    Request) and nothing of the fleet. `allowed` None: any."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str] | None) -> None:
        self.app, self.allowed = app, allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.allowed is not None:
            sent = [value for name, value in scope["headers"] if name == b"host"]
            host = host_name(sent[0]) if len(sent) == 1 else ""
            # (no Host at all, HTTP/1.0: no browser sends that, so it is no page's request)
            if sent and not (host in self.allowed or _loopback(host)):
                shown = host or "(none)"
                message = f"this server does not answer for the host {shown!r}: name it with serve --allow-host"
                await JSONResponse({"error": message, "status": 421}, 421)(scope, receive, send)
                return
        await self.app(scope, receive, send)
