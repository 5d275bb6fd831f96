"""`tpufleet serve`: the fleet live over HTTP (metrics, the fleet page, the JSON documents, Alertmanager's alerts).

The routes are `tpufleet.serve.app`'s; this command checks its options, loads the state once (so a missing or
damaged state is refused before listening), binds the socket itself (a clear error for a port in use; port 0 picks
a free one, printed) and runs uvicorn until SIGTERM or Ctrl-C, after which it finishes the requests in flight and
exits 0. A request still running after the grace period (a read stuck on a file that never answers) is left
behind: the process exits all the same, rather than wait on the thread for good.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import GoodputFormatOpt, GoodputLogsOpt, app, examples
from tpufleet.text import printable

if TYPE_CHECKING:
    import ipaddress
    import socket
    import threading

    from tpufleet.serve.documents import MetricsInputs

MAX_TOKEN_BYTES = 4096
MIN_TOKEN_CHARS = 16
DEFAULT_LISTEN = "127.0.0.1:9478"
SPARES_CONFIDENCE, SPARES_HORIZON_DAYS = 0.95, 7.0  # plan-spares' defaults: the spare target the alerts watch
GRACEFUL_SECONDS = 10  # after SIGTERM, how long the requests in flight have to finish (uvicorn's)
THREADS_GRACE_SECONDS = 2.0  # then how long their threads have to end before the process exits without them


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT ([::1]:PORT for IPv6) -> (host, port); BadInput naming --listen otherwise.

    >>> parse_listen("127.0.0.1:9478"), parse_listen("[::1]:0")
    (('127.0.0.1', 9478), ('::1', 0))
    >>> parse_listen("::1:9478")
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad option --listen '::1:9478': an IPv6 address is written in brackets, e.g. [::1]:9478
    >>> parse_listen("[::1:9478")
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad option --listen '[::1:9478': HOST:PORT, e.g. 127.0.0.1:9478 or [::1]:9478
    >>> parse_listen("127.0.0.1:65536")
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad option --listen '127.0.0.1:65536': port 65536 is out of range (0-65535)
    """
    from tpufleet.errors import BadInput

    host, sep, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if ":" in host and not (
        "[" in host or "]" in host
    ):  # `::1:80`: which colon ends the address? (`::1:80` is an address too)
        raise BadInput(f"bad option --listen {text!r}: an IPv6 address is written in brackets, e.g. [::1]:9478")
    host = host[1:-1] if bracketed else host
    stray_bracket = "[" in host or "]" in host  # `[::1:9478`, `[::1]]`: no name has one, the resolver would be asked
    if (
        stray_bracket
        or not sep
        or not host
        or not (port.isascii() and port.isdigit() and len(port) <= 5 and int(port) <= 65535)
    ):
        if sep and host and not stray_bracket and port.isascii() and port.isdigit():  # the form right, the number not
            raise BadInput(f"bad option --listen {text!r}: port {int(port)} is out of range (0-65535)")
        raise BadInput(f"bad option --listen {text!r}: HOST:PORT, e.g. {DEFAULT_LISTEN} or [::1]:9478")
    _check_address(text, host)
    return host, int(port)


def _check_address(text: str, host: str) -> None:
    """A HOST written as an address must be one: digits and dots an IPv4 address (four numbers 0-255: the C
    library would read `127.1` as 127.0.0.1 and `010.0.0.1` as 8.0.0.1, and `256.0.0.1` failed as a name not
    found, exit 1), one with a colon an IPv6 address. BadInput naming --listen and the value otherwise.

    >>> _check_address("256.0.0.1:8080", "256.0.0.1")
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad option --listen '256.0.0.1:8080': 256.0.0.1 is not an IPv4 address (four numbers 0-255, as 127.0.0.1)
    """
    import ipaddress

    from tpufleet.errors import BadInput

    if ":" in host:
        kind, example = "IPv6", "as ::1, written [::1]:PORT"
    elif host.isascii() and all(c.isdigit() or c == "." for c in host):
        kind, example = "IPv4", "four numbers 0-255, as 127.0.0.1"
    else:
        return  # a name: the resolver says whether it is one
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise BadInput(f"bad option --listen {text!r}: {host} is not an {kind} address ({example})") from None
    if isinstance(address, ipaddress.IPv6Address):
        _check_interface(text, address)


def _check_interface(text: str, address: ipaddress.IPv6Address) -> None:
    """An IPv6 address has its interface (`%eth0`) when it is link-local, and only then: every interface has a
    link-local address (which is meant?), and the C library reads an interface with no other (`[::1%lo]` failed as
    a name not found, exit 1). BadInput naming --listen and the value otherwise.

    >>> import ipaddress
    >>> _check_interface("[::1%lo]:9478", ipaddress.IPv6Address("::1%lo"))
    Traceback (most recent call last):
    ...
    tpufleet.errors.BadInput: bad option --listen '[::1%lo]:9478': only a link-local address (fe80::/10) is written with an interface (%lo)
    """
    from tpufleet.errors import BadInput

    if address.is_link_local and address.scope_id is None:
        raise BadInput(  # (the bind failed, exit 1, "Invalid argument")
            f"bad option --listen {text!r}: a link-local address is written with its interface, e.g. [fe80::1%eth0]:9478"
        )
    if not address.is_link_local and address.scope_id is not None:
        raise BadInput(
            f"bad option --listen {text!r}: only a link-local address (fe80::/10) is written with an interface "
            f"(%{address.scope_id})"
        )


def read_token(path: Path) -> bytes:
    """The bearer token Alertmanager sends (its `credentials_file`): one line, at least 16 characters."""
    from tpufleet.errors import BadInput, BadStateFile
    from tpufleet.state.inputfiles import open_input

    try:  # bounded: /dev/zero must not fill the memory, a FIFO nothing writes to not hang the start
        with open_input(path) as fh:
            raw = fh.read(MAX_TOKEN_BYTES + 1)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and str(path) == "-":  # "no such file" misled, as for other inputs
            raise BadInput(
                "bad option --token-file '-': '-' is not standard input here; give the token file's name"
            ) from None
        raise BadInput(f"bad option --token-file {str(path)!r}: cannot be read: {exc.strerror or exc}") from None
    except BadStateFile as exc:
        raise BadInput(f"bad option --token-file {str(path)!r}: {exc.problem}") from None
    token = raw.strip()
    if not token:  # (a secret not yet rendered into the file, say: the rule below would not say so)
        raise BadInput(f"bad option --token-file {str(path)!r}: the file is empty")
    if len(raw) > MAX_TOKEN_BYTES or len(token) < MIN_TOKEN_CHARS or not all(33 <= b < 127 for b in token):
        raise BadInput(
            f"bad option --token-file {str(path)!r}: one line of {MIN_TOKEN_CHARS} to {MAX_TOKEN_BYTES} printable "
            "ASCII characters without spaces (e.g. `openssl rand -hex 32`)"
        )
    if path.stat().st_mode & 0o077:
        typer.echo(f"tpufleet: warning: {printable(str(path))} can be read by others; chmod 600 it", err=True)
    return token


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one clear line (and port 0 a free port)."""
    import socket

    from tpufleet.errors import Refused

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(_socket_address(host, port))
        sock.listen(2048)  # connections wait in the queue until uvicorn takes them
    except OSError as exc:
        sock.close()
        where = (
            f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        )  # as --listen writes it: `::1:80` reads two ways
        raise Refused(f"cannot listen on {where}: {exc.strerror or exc}") from None
    return sock


def _socket_address(host: str, port: int) -> tuple[Any, ...]:
    """What `bind` takes: an IPv6 address as the C library reads it, its interface (`fe80::1%eth0`) made the scope
    id a link-local address needs (bound as (host, port), the interface was dropped: "Invalid argument")."""
    import socket

    if ":" not in host:
        return host, port
    flags = socket.AI_NUMERICHOST  # an address, never a name looked up
    return tuple(socket.getaddrinfo(host, port, socket.AF_INET6, socket.SOCK_STREAM, 0, flags)[0][4])


def metrics_inputs() -> MetricsInputs:
    """plan-spares' spare target per pod (the pods' rates, 95% over 7 days, at the time of the scrape) and the
    shipped repair times."""
    from tpufleet.ops import spares
    from tpufleet.serve.documents import MetricsInputs
    from tpufleet.state import store
    from tpufleet.state.siminputs import load_rates

    shipped = load_rates(None)
    choice = spares.RatesChoice(shipped)

    def rows(state: Any) -> list[dict[str, Any]]:
        now = store.utc_now()  # at each making of the metrics, not when serve started
        return list(spares.plan(state, choice, SPARES_CONFIDENCE, SPARES_HORIZON_DAYS, now=now).data["pods"])

    def moment(state: Any) -> frozenset[str]:  # what of the clock the rows depend on: a cube entering the horizon
        return spares.maintenance_within(state, store.utc_now(), SPARES_HORIZON_DAYS)

    return MetricsInputs(rows, dict(shipped.repair_hours), moment)


def goodput_extras(paths: Sequence[str | Path], fmt: str) -> Any:
    """The goodput report of the logs, made again whenever one of them changes, and whether they read (None
    without logs): a log that does not read (said on stderr) leaves the goodput families out until it does, and
    `goodput_read` 0 says so.
    A last line a writer has not finished is left for the next read, as are the lines after it. A log that is not
    a regular file (a FIFO put in its place, standard input) does not read, and is never opened to be read."""
    from tpufleet.cli.metrics import goodput_report
    from tpufleet.errors import TpufleetError

    # a bad log or format (--goodput-format without --goodput too) is refused before listening; no logs, no extras
    if goodput_report(paths, fmt, whole_lines=True, files_only=True) is None:
        return None

    def make() -> dict[str, Any]:
        try:
            return {"goodput": goodput_report(paths, fmt, whole_lines=True, files_only=True), "goodput_read": True}
        except TpufleetError as exc:
            typer.echo(f"tpufleet: goodput left out until the logs read again: {exc}", err=True)
            return {"goodput_read": False}

    return make


def server_config(application: Any, **limits: Any) -> Any:
    """uvicorn's configuration: h11 bounded (`tpufleet.serve.connections.bounded_protocol`: the headers' time, the
    connections open, a client not reading; their defaults unless told), no access log, no lifespan."""
    import uvicorn

    from tpufleet.serve.connections import bounded_protocol

    return uvicorn.Config(
        application,
        http=bounded_protocol(**limits),
        ws="none",  # no route takes a WebSocket (one installed would be offered to the routes otherwise)
        lifespan="off",
        access_log=False,
        log_level="warning",
        server_header=False,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )


def run(application: Any, sock: socket.socket) -> str | None:
    """uvicorn on the socket until SIGTERM or SIGINT (requests in flight finished); the signal's name, if any."""
    import signal

    import uvicorn

    from tpufleet.serve.connections import BoundedConnection

    server = uvicorn.Server(server_config(application))
    got: list[int] = []
    # uvicorn handles the signals while it runs, then raises them again once it has stopped: these catch that.
    kept = {s: signal.signal(s, lambda n, _f: got.append(n)) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run(sockets=[sock])
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)
    if isinstance(server.config.http, type) and issubclass(server.config.http, BoundedConnection):
        server.config.http.say_counts()  # (the requests refused in the last minute: counted, not yet said)
    return signal.Signals(got[0]).name if got else None


def left_running(grace: float = THREADS_GRACE_SECONDS) -> list[threading.Thread]:
    """The threads but this one still running once the server has stopped, given `grace` seconds to end: requests
    stuck (in a read that never returns, say), which the interpreter would otherwise wait for at exit, for good."""
    import threading

    deadline = time.monotonic() + grace
    running = []
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            running.append(thread)
    return running


def exit_without(running: list[threading.Thread]) -> None:
    """End the process now (exit 0: the stop was asked for), leaving `running` threads behind unfinished."""
    typer.echo(f"tpufleet: {len(running)} request(s) still running after the stop left unfinished", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@app.command(
    "serve",
    epilog=examples(
        "tpufleet serve                                   # http://127.0.0.1:9478/ : the fleet page, /metrics, /api/v1/...",
        "tpufleet --state /var/lib/tpufleet serve --listen 0.0.0.0:9478 --token-file /etc/tpufleet/alert-token",
        "curl -s localhost:9478/api/v1/status | jq .open_faults",
    ),
)
def serve_cmd(
    ctx: typer.Context,
    listen: Annotated[
        str, typer.Option("--listen", metavar="HOST:PORT", help="Address to listen on (loopback unless told)")
    ] = DEFAULT_LISTEN,
    token_file: Annotated[
        Path | None,
        typer.Option("--token-file", help="Bearer token for POST /api/v1/alerts (Alertmanager); without it, off"),
    ] = None,
    refresh: Annotated[
        int, typer.Option("--refresh", min=2, max=3600, help="Seconds between reloads of the fleet page")
    ] = 15,
    goodput: GoodputLogsOpt = None,
    goodput_format: GoodputFormatOpt = "native",
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            metavar="NAME",
            help="A Host name to answer besides localhost (repeat; * for any). Listening on loopback, other names "
            "get 421 (a web page cannot read the fleet through a name of its own); elsewhere, any unless named",
        ),
    ] = None,
) -> None:
    """Serve the fleet over HTTP: GET / (the fleet page, reloading itself), /metrics (as `tpufleet metrics`, with
    the monitoring mixin's families), /api/v1/status|slices|jobs|faults|journal (the -o json documents, the serial
    as ETag), /healthz, /readyz; with --token-file, POST /api/v1/alerts takes Alertmanager's webhook."""
    try:
        from tpufleet.serve.app import Server, build_app
        from tpufleet.serve.framing import allowed_hosts
        from tpufleet.serve.snapshot import Source
    except ImportError as exc:
        from tpufleet.errors import Refused

        raise Refused(
            f"tpufleet serve needs the serve extra ({exc.name} is missing): pip install 'tpufleet[serve]'"
        ) from None
    host, port = parse_listen(listen)
    allowed_hosts(host, list(allow_host or []))  # a bad name refused before listening, as --listen
    token = read_token(token_file) if token_file is not None else None
    store = ctx.obj.store()
    serial = store.load().serial  # a missing or damaged state is refused before listening
    extras = goodput_extras(list(goodput or []), goodput_format)
    source = Source(store, [Path(log) for log in goodput or []], extras)
    sock = bind(host, port)
    # loopback or not as bound, not as spelt: a name of this machine's loopback (its own host name, 127.0.1.1 on
    # Debian) answering any Host would let a web page read the fleet through a name of its own (DNS rebinding)
    hosts = allowed_hosts(sock.getsockname()[0], list(allow_host or []))
    shown = f"[{host.replace('%', '%25')}]" if ":" in host else host  # an interface's `%` as a URL writes it
    intake = "on" if token is not None else "off (no --token-file)"
    typer.echo(
        f"tpufleet: serving {store.where} (serial {serial}) at http://{shown}:{sock.getsockname()[1]}/ ; "
        f"alert intake {intake}",
        err=True,
    )
    stopped = run(build_app(Server(source, metrics_inputs(), token, refresh, hosts)), sock)
    typer.echo(f"tpufleet: stopped{f' on {stopped}' if stopped else ''}", err=True)
    running = left_running()
    if running:
        exit_without(running)
