"""`tpufleet serve` on a real socket: what reaches the server before any route (a client slow to send its headers,
too many connections, the forms of the request target)."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("uvicorn", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")


class Serve:
    """Starts `tpufleet serve`'s application and server configuration on a state, on a free port (returned), in a
    thread. Keyword arguments go to `server_config`."""

    def __init__(self, state: Path) -> None:
        self.state = state
        self.running: list[tuple[Any, threading.Thread]] = []

    def __call__(self, **limits: Any) -> int:
        import uvicorn

        from tpufleet.cli.serve import bind, metrics_inputs, server_config
        from tpufleet.serve.app import Server, build_app
        from tpufleet.serve.snapshot import Source
        from tpufleet.state import Store

        sock = bind("127.0.0.1", 0)
        application = build_app(Server(Source(Store(self.state)), metrics_inputs(), None, 5))
        server = uvicorn.Server(server_config(application, **limits))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        self.running.append((server, thread))
        return int(sock.getsockname()[1])

    def connections(self) -> int:
        """How many connections the server started last has open."""
        return len(self.running[-1][0].server_state.connections)

    def stop(self) -> None:
        for server, thread in self.running:
            server.should_exit = True
            thread.join(timeout=30)


@pytest.fixture
def serve(fleet: Any) -> Iterator[Serve]:
    """`Serve` on the fleet; every server it started stopped at the end of the test."""
    served = Serve(fleet.state)
    yield served
    served.stop()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


def get(port: int, target: str, headers: str = "Host: x\r\n") -> tuple[int, bytes]:
    with connect(port) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n".encode())
        got = answer(sock)
    head, _, body = got.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_a_client_slow_to_send_its_headers_is_cut_off_and_others_are_served(serve):
    port = serve(header_seconds=0.5)
    with connect(port) as slow, connect(port) as idle:
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Trickle: a")  # the headers never finish
        got = answer(slow)  # returns once the server closes the connection (before it would hang, for good)
        head, _, body = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408") and json.loads(body)["status"] == 408
        assert answer(idle) == b""  # a connection that never sent a byte: closed too, without an answer
    assert get(port, "/healthz") == (200, b'{"status":"ok"}')


def test_the_next_request_on_a_kept_alive_connection_is_bounded_too(serve):
    port = serve(header_seconds=0.5)
    with connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while not first.endswith(b'{"status":"ok"}'):
            first += sock.recv(65536)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Trickle: a")  # uvicorn's keep-alive timer stops here
        assert answer(sock).startswith(b"HTTP/1.1 408")


def test_connections_over_the_cap_are_refused_and_those_open_still_served(serve):
    port = serve(max_connections=2)
    with connect(port) as first, connect(port) as second, connect(port) as third:
        head, _, body = answer(third).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 5" in head.lower()
        assert json.loads(body)["status"] == 503
        for sock in (first, second):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert answer(sock).endswith(b'{"status":"ok"}')


def test_the_default_limits_are_those_documented(fleet):
    from tpufleet.cli.serve import server_config
    from tpufleet.serve.connections import BoundedConnection, connection_cap

    config = server_config(lambda scope, receive, send: None)
    config.load()
    protocol = config.http_protocol_class
    assert issubclass(protocol, BoundedConnection)
    assert (protocol.header_seconds, protocol.max_connections) == (10.0, connection_cap())
    assert 1 <= connection_cap() <= 512


def kind(port: int, target: str) -> tuple[int, str, bytes]:
    """The status, content type and (but for the page and the metrics, which show the time) body of the answer."""
    with connect(port) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        head, _, body = answer(sock).partition(b"\r\n\r\n")
    fields = dict(line.split(b": ", 1) for line in head.lower().split(b"\r\n")[1:])
    kept = body if fields[b"content-type"].startswith(b"application/json") else b""
    return int(head.split()[1]), fields[b"content-type"].decode(), kept


@pytest.mark.parametrize(
    "target, path",
    [
        ("http://127.0.0.1:{port}/metrics", "/metrics"),
        ("HTTPS://tpufleet.example.org/api/v1/faults?all=true", "/api/v1/faults?all=true"),
        ("http://127.0.0.1:{port}", "/"),
    ],
)
def test_a_target_in_absolute_form_is_served_as_its_path(serve, target, path):
    port = serve()
    assert kind(port, target.format(port=port)) == kind(port, path)
    assert kind(port, path)[0] == 200


def test_a_body_framed_two_ways_is_refused_and_its_connection_closed(serve):
    """Content-Length and Transfer-Encoding both: a proxy going by the length would read `GET /healthz` as the body,
    the server as a second request; neither is served, and nothing after on that connection."""
    port = serve()
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"0\r\n\r\n" + smuggled
    with connect(port) as sock:
        sock.sendall(
            b"POST /api/v1/alerts HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n"
            % len(body)
            + body
        )
        got = answer(sock)
    assert got.startswith(b"HTTP/1.1 400") and got.count(b"HTTP/1.1") == 1
    assert json.loads(got.partition(b"\r\n\r\n")[2])["status"] == 400


def test_headers_over_the_bound_are_431_whether_they_arrive_whole_or_in_pieces(serve):
    from tpufleet.serve.app import MAX_HEADERS

    port = serve()
    big = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " + b"a" * (2 * MAX_HEADERS) + b"\r\n\r\n"
    for sent in (big, big[: MAX_HEADERS + 100]):  # whole, and only its first part (the rest would come later)
        with connect(port) as sock:
            sock.sendall(sent)
            head, _, body = answer(sock).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 431") and json.loads(body)["status"] == 431


def test_a_client_that_reads_none_of_its_answers_is_dropped(serve):
    """Pipelined requests for the fleet page whose answers are never read: the server's writes wait on the client;
    past the limit the connection is dropped, not held for good."""
    port = serve(send_seconds=0.3)
    requests = 400  # 9 MB of answers: more than the buffers between hold; 11 KB of requests: less
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (set before connecting: the buffers stay small)
    sock.settimeout(30)
    with sock:
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # (once answered, the server holds the connection)
        first = b""
        while not first.endswith(b'{"status":"ok"}'):
            first += sock.recv(65536)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * requests)
        deadline = time.monotonic() + 60  # (with the limit, gone within a second; without, never)
        while serve.connections() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert serve.connections() == 0
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
        except ConnectionResetError:
            pass
        assert got.count(b"HTTP/1.1 200") < requests
    assert get(port, "/healthz") == (200, b'{"status":"ok"}')


class Said(logging.Handler):
    """What uvicorn's server logs (on serve's stderr), kept."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.parametrize("upgrade", ["websocket", "h2c"])
def test_a_request_to_upgrade_is_answered_as_http_and_writes_nothing_on_stderr(serve, upgrade):
    port = serve()
    said = Said()
    logging.getLogger("uvicorn.error").addHandler(said)
    try:
        asked = f"Upgrade: {upgrade}\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        with connect(port) as sock:
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: x\r\n{asked}Connection: Upgrade, close\r\n\r\n".encode())
            assert answer(sock).startswith(b"HTTP/1.1 200")
    finally:
        logging.getLogger("uvicorn.error").removeHandler(said)
    assert [r.getMessage() for r in said.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("host", [b"a b/c", b"x\x01y", b"host:notaport"])
def test_a_host_that_is_no_host_gets_400_on_the_socket_too(serve, host):
    """uvicorn passes such a Host on (the names not checked here: any host is answered)."""
    port = serve()
    status, body = get(port, "/api/v1/status", f"Host: {host.decode()}\r\n")
    assert status == 400 and json.loads(body)["status"] == 400 and b"pod0" not in body


def test_a_flood_of_unreadable_requests_is_one_line_then_a_count(serve):
    """A scanner's garbage (or TLS sent to the plain-HTTP port), request after request: each is answered 400 and
    closed, and serve's stderr gets the first, with its client, not one line each (uvicorn's own wrote 1,000 lines
    for 1,000 requests). A count follows at the end of the minute (`OnceAMinute`)."""
    port = serve()
    said = Said()
    logging.getLogger("uvicorn.error").addHandler(said)
    try:
        for _ in range(300):
            with connect(port) as sock:
                sock.sendall(b"\x16\x03\x01\x02\x00garbage\r\n\r\n")
                assert answer(sock).startswith(b"HTTP/1.1 400")  # (its line, if any, is written before the answer)
    finally:
        logging.getLogger("uvicorn.error").removeHandler(said)
    lines = [r.getMessage() for r in said.records if r.levelno >= logging.WARNING]
    assert lines[0].startswith("refused a request from 127.0.0.1:") and "answered 400" in lines[0]
    # (a slow machine may reach the end of the minute: its count, one more line)
    assert len(lines) <= 2 and all(line.startswith("refused ") for line in lines)
    assert get(port, "/healthz") == (200, b'{"status":"ok"}')


def test_the_refused_requests_are_said_once_then_counted_a_minute_at_a_time():
    from tpufleet.serve.connections import REFUSED_MORE, OnceAMinute, refused_line

    logger = logging.getLogger("test.refused")
    said = Said()
    logger.addHandler(said)
    logger.propagate = False
    ends: list[tuple[float, Callable[[], None]]] = []  # the minutes' ends asked for, run here in turn
    try:
        refusals = OnceAMinute(logger, REFUSED_MORE, later=lambda delay, callback: ends.append((delay, callback)))
        for n in range(1000):
            client = f"203.0.113.{n % 200}:4000"
            refusals.happened(client, refused_line(client, 400))
        assert [r.getMessage() for r in said.records] == [
            "refused a request from 203.0.113.0:4000 that does not read as HTTP/1.1 (garbage, TLS sent to this "
            "plain-HTTP port, headers over 16384 bytes): answered 400 and closed; any more are counted, one line a "
            "minute"
        ]
        assert [delay for delay, _ in ends] == [60.0]
        ends.pop()[1]()  # the minute is over: its count
        assert said.records[-1].getMessage() == (
            "refused 999 more request(s) that do not read as HTTP/1.1 in the last 60 s, "
            "the latest from 203.0.113.199:4000"
        )
        refusals.happened("198.51.100.1:1", refused_line("198.51.100.1:1", 431))  # still counting, the next minute
        ends.pop()[1]()
        assert said.records[-1].getMessage().startswith("refused 1 more request(s)")
        ends.pop()[1]()  # a minute without any: said nothing, the count ends
        assert len(said.records) == 3 and ends == []
        refusals.happened("198.51.100.2:2", refused_line("198.51.100.2:2", 431))  # said in full again
        assert said.records[-1].getMessage().startswith("refused a request from 198.51.100.2:2 ")
        assert "answered 431 and closed" in said.records[-1].getMessage()
        refusals.happened("198.51.100.3:3", "(not said: counted)")
        refusals.close()  # the server stops within the minute: its count said all the same
        assert said.records[-1].getMessage().startswith("refused 1 more request(s)")
        assert len(said.records) == 5
    finally:
        logger.removeHandler(said)
        logger.propagate = True


@pytest.mark.slow
def test_what_a_real_server_says_of_garbage_requests_is_bounded_and_counted_by_the_stop(fleet):
    """`tpufleet serve` itself: 200 requests that are not HTTP, then SIGTERM; stderr has the first (with its client)
    and the count of the rest, said at the stop within the minute, not a line each."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    command = [sys.executable, "-m", "tpufleet", "--state", str(fleet.state), "serve", "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stderr.readline())[1])  # type: ignore[index]
        for _ in range(200):
            with connect(port) as sock:
                sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n")
                assert answer(sock).startswith(b"HTTP/1.1 400")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        lines = proc.stderr.read().splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    refused = [line for line in lines if "refused" in line]
    assert refused[0].startswith("WARNING:  refused a request from 127.0.0.1:") and "answered 400" in refused[0]
    assert "Invalid HTTP request" not in "\n".join(lines) and len(refused) <= 3  # (a minute's end may come between)
    counted = [int(re.search(r"refused (\d+) more", line)[1]) for line in refused[1:]]  # type: ignore[index]
    assert sum(counted) == 199 and lines[-1] == "tpufleet: stopped on SIGTERM"


def test_connections_over_the_cap_are_said_on_stderr_once_then_counted(serve):
    """Clients answered 503 because the cap is reached: serve's stderr says so (it said nothing), the first with its
    client, however many come."""
    port = serve(max_connections=2)
    said = Said()
    logging.getLogger("uvicorn.error").addHandler(said)
    try:
        with connect(port) as first, connect(port) as second:
            for _ in range(20):
                with connect(port) as over:
                    assert answer(over).startswith(b"HTTP/1.1 503")  # (its line, if any, is written before)
            for sock in (first, second):
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert answer(sock).endswith(b'{"status":"ok"}')
    finally:
        logging.getLogger("uvicorn.error").removeHandler(said)
    lines = [r.getMessage() for r in said.records if r.levelno >= logging.WARNING]
    assert lines[0].startswith("refused a connection from 127.0.0.1:") and "(503): 2 are open, the most" in lines[0]
    # (a slow machine may reach the end of the minute: its count, one more line)
    assert len(lines) <= 2 and all(line.startswith("refused ") for line in lines)


def test_the_count_of_connections_over_the_cap_is_said_at_the_stop():
    from tpufleet.cli.serve import server_config

    protocol = server_config(lambda scope, receive, send: None, max_connections=2).http
    assert protocol.over_cap is not None
    protocol.over_cap.later = lambda delay, callback: None  # (no event loop here: the minute never ends)
    said = Said()
    logging.getLogger("uvicorn.error").addHandler(said)
    try:
        protocol.over_cap.happened("127.0.0.1:6", "(said in full)")
        protocol.over_cap.happened("127.0.0.1:7", "(counted)")
        protocol.say_counts()  # (`tpufleet.cli.serve.run`, once the server has stopped)
    finally:
        logging.getLogger("uvicorn.error").removeHandler(said)
    assert [r.getMessage() for r in said.records] == [
        "(said in full)",
        "refused 1 more connection(s) over the 2 allowed in the last 60 s, the latest from 127.0.0.1:7",
    ]
