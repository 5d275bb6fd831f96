"""`tpufleet serve` on loopback answers only loopback Host names and those named with `--allow-host`: a web page the
operator opens cannot point a name of its own at 127.0.0.1 (DNS rebinding) and read the fleet through the browser.
Any other Host gets 421 and nothing of the fleet."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

from tpufleet.serve.framing import allowed_hosts


@pytest.fixture
def state(fleet) -> Path:
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    return fleet.state


def _client(state: Path, listen_host: str, named: list[str]) -> TestClient:
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    server = Server(Source(Store(state)), metrics_inputs(), None, 5, allowed_hosts(listen_host, named))
    return TestClient(build_app(server), raise_server_exceptions=False)


@pytest.mark.parametrize("host", ["localhost:9478", "LOCALHOST", "127.0.0.1:9478", "127.0.0.2", "[::1]:9478"])
def test_loopback_names_are_answered_on_loopback(state, host):
    r = _client(state, "127.0.0.1", []).get("/api/v1/status", headers={"Host": host})
    assert r.status_code == 200 and r.json()["serial"] >= 1


@pytest.mark.parametrize("path", ["/api/v1/status", "/metrics", "/", "/healthz"])
def test_another_name_on_loopback_gets_421_and_nothing_of_the_fleet(state, path):
    r = _client(state, "127.0.0.1", []).get(path, headers={"Host": "rebound.example:9478"})
    assert r.status_code == 421
    body = r.json()
    assert body["status"] == 421 and "'rebound.example'" in body["error"] and "--allow-host" in body["error"]
    assert "pod0" not in r.text


def test_the_421_answer_carries_nosniff_as_every_other_answer(state):
    """The 421 answer lacked `X-Content-Type-Options: nosniff`, which every other answer, the 400s included,
    carries."""
    c = _client(state, "127.0.0.1", [])
    refused = c.get("/api/v1/status", headers={"Host": "rebound.example"})
    bad = c.get("/api/v1/status", headers={"Host": "a b"})
    assert (refused.status_code, bad.status_code) == (421, 400)
    assert refused.headers.get("x-content-type-options") == bad.headers.get("x-content-type-options") == "nosniff"


def test_named_hosts_are_answered_and_others_not(state):
    c = _client(state, "127.0.0.1", ["Fleet.Example.com"])
    assert c.get("/api/v1/status", headers={"Host": "fleet.example.com"}).status_code == 200
    assert c.get("/api/v1/status", headers={"Host": "localhost"}).status_code == 200
    assert c.get("/api/v1/status", headers={"Host": "other.example.com"}).status_code == 421


def test_a_service_name_with_an_underscore_can_be_named(state):
    """A Host header may carry `_` (container service names), so --allow-host takes it too."""
    c = _client(state, "127.0.0.1", ["tpu_fleet"])
    assert c.get("/api/v1/status", headers={"Host": "tpu_fleet:9478"}).status_code == 200
    assert c.get("/api/v1/status", headers={"Host": "tpu-fleet"}).status_code == 421


def test_an_absolute_target_is_judged_by_its_own_host(state):
    """RFC 9112 has the target's authority stand for the Host: the check sees it."""
    c = _client(state, "127.0.0.1", [])
    assert c.get("http://rebound.example:9478/api/v1/status").status_code == 421
    assert c.get("http://localhost:9478/api/v1/status").status_code == 200


@pytest.mark.parametrize(("listen_host", "named"), [("0.0.0.0", []), ("127.0.0.1", ["*"]), ("10.1.2.3", [])])
def test_any_host_is_answered_elsewhere_or_with_a_star(state, listen_host, named):
    assert allowed_hosts(listen_host, named) is None
    r = _client(state, listen_host, named).get("/api/v1/status", headers={"Host": "anything.example"})
    assert r.status_code == 200


def test_names_given_restrict_a_server_listening_elsewhere(state):
    c = _client(state, "0.0.0.0", ["fleet.example.com"])
    assert c.get("/api/v1/status", headers={"Host": "fleet.example.com:443"}).status_code == 200
    assert c.get("/api/v1/status", headers={"Host": "10.1.2.3:9478"}).status_code == 421


def test_a_bracketed_address_matches_its_host_header(state):
    c = _client(state, "127.0.0.1", ["[2001:db8::7]"])
    assert c.get("/api/v1/status", headers={"Host": "[2001:db8::7]:9478"}).status_code == 200


@pytest.mark.parametrize("name", ["", "fleet.example.com:443", "http://fleet.example.com", "a b", "-1", "x/y"])
def test_a_name_no_host_header_could_match_is_refused_before_listening(fleet, name):
    """A name with its port would never match a Host (whose port is set aside): every request would get 421."""
    r = fleet("serve", "--listen", "127.0.0.1:0", "--allow-host", name)
    assert r.code == 2 and r.err.count("\n") == 1
    assert "--allow-host" in r.err and repr(name) in r.err and "serving" not in r.err


@pytest.mark.parametrize("name", ["fe80::1%eth0", "[fe80::1%25eth0]", "::1%1"])
def test_an_address_with_its_interface_is_refused_by_allow_host(name):
    """`--allow-host fe80::1%eth0` was taken, yet no Host header carries an interface (one that does gets 400):
    every request naming the address got 421. It is refused as bad input, naming the option and the value."""
    from tpufleet.errors import BadInput
    from tpufleet.serve.framing import allowed_hosts

    with pytest.raises(BadInput, match="--allow-host"):
        allowed_hosts("127.0.0.1", [name])


BAD_HOSTS = [
    "a b/c",
    "host:notaport",
    "x\x01y",
    "fleet.example.com:",
    "h:65536",
    "a@b",
    "::1",
    "[::g]",
    "",
    "é.example",
]


@pytest.mark.parametrize(("listen_host", "named"), [("0.0.0.0", []), ("127.0.0.1", ["*"]), ("127.0.0.1", [])])
@pytest.mark.parametrize("host", BAD_HOSTS)
def test_a_host_that_is_no_host_gets_400_and_nothing_of_the_fleet(state, listen_host, named, host):
    """RFC 9112 section 3.2: a Host that is not a host name or address (with a numeric port or none) is a bad
    request, whether or not the names are checked."""
    sent = host.encode()
    r = _client(state, listen_host, named).get("/api/v1/status", headers={"Host": sent})
    assert r.status_code == 400 and r.headers["x-content-type-options"] == "nosniff"
    body = r.json()
    assert body["status"] == 400 and body["error"].startswith(f"bad Host {host!r}: ")
    assert "pod0" not in r.text


@pytest.mark.parametrize(
    "host", ["tpu_fleet:9478", "[2001:db8::7]", "10.1.2.3:80", "fleet.example.com.", "FLEET.example:0", " x.example "]
)
def test_any_host_name_or_address_is_still_answered_when_names_are_not_checked(state, host):
    r = _client(state, "0.0.0.0", []).get("/api/v1/status", headers={"Host": host})
    assert r.status_code == 200 and r.json()["serial"] >= 1


def test_two_hosts_get_400(state):
    client = _client(state, "0.0.0.0", [])
    r = client.get("/api/v1/status", headers=[("Host", "a.example"), ("Host", "b.example")])
    assert r.status_code == 400 and r.json()["error"].startswith("bad Host 'a.example, b.example': ")


@pytest.mark.parametrize(
    ("named", "host"),
    [("fleet.example.com.", "fleet.example.com:9478"), ("fleet.example.com", "Fleet.Example.Com.:9478")],
)
def test_a_name_with_or_without_its_root_dot_is_one_host(state, named, host):
    """`fleet.example.com.` and `fleet.example.com` name one host: a name given to --allow-host with its root dot
    (as a zone file writes it) got 421 for every request naming it without, told to name it with --allow-host."""
    c = _client(state, "127.0.0.1", [named])
    assert c.get("/api/v1/status", headers={"Host": host}).status_code == 200
    assert c.get("/api/v1/status", headers={"Host": "example.com."}).status_code == 421


def test_a_host_not_in_utf8_is_named_with_each_byte_escaped_once():
    """A Host byte that is not UTF-8 (as uvicorn hands it on) was named with its backslash escaped again
    (`'h\\\\xe9llo'`)."""
    import asyncio
    import json

    from tpufleet.serve.framing import KnownHost

    sent: list[dict] = []

    async def app(scope, receive, send):
        raise AssertionError("the request reached the routes")

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "headers": [(b"host", b"h\xe9llo")]}
    asyncio.run(KnownHost(app, None)(scope, receive, send))
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["error"].startswith("bad Host 'h\u00e9llo': ")
