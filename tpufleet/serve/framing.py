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
        await self.app(literal_path(origin_form(scope)) if scope["type"] == "http" else scope, receive, send)


def literal_path(scope: Scope) -> Scope:
    """The scope with its path as the target wrote it: the routes are matched against what was sent, so
    `/api%2Fv1/status` (which uvicorn decodes to `/api/v1/status`) names no route, 404, as the route table says.

    >>> literal_path({"raw_path": b"/api%2Fv1/status", "path": "/api/v1/status"})["path"]
    '/api%2Fv1/status'
    >>> literal_path({"raw_path": b"/metrics", "path": "/metrics"})["path"]
    '/metrics'
    """
    raw = scope.get("raw_path")
    if not raw or b"%" not in raw:
        return scope
    return {**scope, "path": raw.decode("ascii", "replace")}


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
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1, an IPv6 socket's name for 127.0.0.1
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


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
    return frozenset({"localhost", "localhost.", *(_fully(name.strip("[]").lower()) for name in named)})


def _fully(name: str) -> str:
    """A DNS name without its root dot: `fleet.example.com.` and `fleet.example.com` name one host, and a Host
    header may carry either (as typed in the browser)."""
    return name.removesuffix(".") if name != "." else name


# labels as a Host header's may have them (`_HOST_HEADER`, below): `_` too, so a container service name can be named
_HOST_NAME = re.compile(r"(?i)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.?")


def _check_host_name(name: str) -> None:
    """BadInput (exit 2) naming --allow-host unless `name` is `*`, a DNS name or an IP address: a name with its port
    (`fleet.example.com:443`) would never match a Host, whose port is set aside, and no request would be answered.

    >>> _check_host_name("fleet.example.com"), _check_host_name("::1"), _check_host_name("*"), _check_host_name("tpu_fleet")
    (None, None, None, None)
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
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        shown = repr(name)
        raise BadInput(
            f"bad option --allow-host {shown}: give a host name or address without a port or scheme (or * for any)"
        ) from None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:  # `fe80::1%eth0`
        raise BadInput(
            f"bad option --allow-host {name!r}: give the address without its interface (a Host header never carries one)"
        )


def host_name(value: bytes) -> str:
    """The name or address of a Host header, without its port or brackets, lower case.

    >>> host_name(b"[::1]:9478"), host_name(b"Fleet.Example:80"), host_name(b"127.0.0.1")
    ('::1', 'fleet.example', '127.0.0.1')
    """
    text = value.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    return text.rpartition(":")[0] if text.count(":") == 1 else text


# RFC 9110 section 7.2 / RFC 3986 section 3.2.2, kept simple: a host name (labels of letters, digits, `-` and `_`,
# `_` for the service names of container networks), an IPv4 address (which that covers) or a bracketed IPv6 address
# (no zone), then an optional numeric port.
_HOST_HEADER = re.compile(
    r"(?:(?P<name>[A-Za-z0-9_-]{1,63}(?:\.[A-Za-z0-9_-]{1,63})*\.?)|\[(?P<v6>[0-9A-Fa-f:.]{2,45})\])"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
MAX_HOST_NAME = 253  # a DNS name's length, its last dot aside


def valid_host(value: bytes) -> bool:
    """Whether a Host header's value (its surrounding blanks aside) is a host name, an IPv4 address or a bracketed
    IPv6 address, with an optional port of 0 to 65535 (RFC 9112 section 3.2 has a server answer 400 otherwise).

    >>> [valid_host(v) for v in (b"fleet.example.com:9478", b"10.0.0.7", b"[::1]:9478", b"tpu_fleet", b" x ")]
    [True, True, True, True, True]
    >>> [valid_host(v) for v in (b"a b/c", b"host:notaport", b"x\\x01y", b"", b"::1", b"a@b", b"h:65536", b"[::g]")]
    [False, False, False, False, False, False, False, False]
    """
    found = _HOST_HEADER.fullmatch(value.strip(b" \t").decode("latin-1"))
    if found is None:
        return False
    name, v6, port = found.group("name", "v6", "port")
    if port is not None and int(port) > 65535:
        return False
    if name is not None:
        return len(name.removesuffix(".")) <= MAX_HOST_NAME
    import ipaddress

    try:
        ipaddress.IPv6Address(v6)
    except ValueError:
        return False
    return True


def _header_text(value: bytes) -> str:
    """A header's bytes as text to name in a message: UTF-8, else Latin-1 (HTTP's own), so that `repr` escapes each
    byte once (a byte that is not UTF-8 was shown with its backslash escaped again).

    >>> _header_text(b"h\\xe9llo") == _header_text("h\\u00e9llo".encode()) == "h\\u00e9llo"
    True
    """
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


_NOSNIFF = {"X-Content-Type-Options": "nosniff"}  # as every other answer: a browser never sniffs one for a page


class KnownHost:
    """ASGI middleware: a request whose Host is not a host (`valid_host`), or more than one Host, gets 400; one whose
    Host is not one `serve` answers (`allowed_hosts`) gets 421 (Misdirected Request); either, nothing of the fleet.
    `allowed` None: any valid Host."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str] | None) -> None:
        self.app, self.allowed = app, allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = [value for name, value in scope["headers"] if name == b"host"]
        # (no Host at all, HTTP/1.0: no browser sends that, so it is no page's request)
        if sent and (len(sent) > 1 or not valid_host(sent[0])):
            shown = repr(_header_text(b", ".join(sent))[:80])
            message = (
                f"bad Host {shown}: a host name, an IPv4 address or a bracketed IPv6 address, with an optional :PORT"
            )
            await JSONResponse({"error": message, "status": 400}, 400, headers=_NOSNIFF)(scope, receive, send)
            return
        if sent and self.allowed is not None:
            host = host_name(sent[0])
            if not (_fully(host) in self.allowed or _loopback(host)):
                message = f"this server does not answer for the host {host!r}: name it with serve --allow-host"
                await JSONResponse({"error": message, "status": 421}, 421, headers=_NOSNIFF)(scope, receive, send)
                return
        await self.app(scope, receive, send)
