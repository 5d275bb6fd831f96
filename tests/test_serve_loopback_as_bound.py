"""`tpufleet serve` judges whether it listens on loopback by the address its socket is bound to, not by how
--listen spells it: a name of this machine's loopback (its own host name, which Debian maps to 127.0.1.1; any name
/etc/hosts maps to 127.0.0.1) bound a loopback socket that answered any Host, so a web page the operator opened
could point a name of its own at it (DNS rebinding) and read the fleet."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient


def _served(fleet, monkeypatch, listen: str, address: str, *named: str) -> TestClient:
    """The application `serve --listen LISTEN` runs when LISTEN's host resolves to `address` (the socket bound
    there as the resolver would have it), without running the server."""
    from tpufleet.cli import serve

    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    apps: list[object] = []

    def bind(host: str, port: int) -> socket.socket:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.bind((address, 0))
        except OSError:
            sock.close()
            pytest.skip(f"cannot bind {address} here")
        return sock

    def run(application: object, sock: socket.socket) -> None:
        apps.append(application)
        sock.close()

    monkeypatch.setattr(serve, "bind", bind)
    monkeypatch.setattr(serve, "run", run)
    allowed = [a for name in named for a in ("--allow-host", name)]
    r = fleet("serve", "--listen", listen, *allowed)
    assert r.code == 0, r.err
    return TestClient(apps[0], raise_server_exceptions=False)  # type: ignore[arg-type]


@pytest.mark.parametrize(("listen", "address"), [("fleet-host:0", "127.0.1.1"), ("ip6-loopback:0", "::1")])
def test_a_name_bound_on_loopback_answers_only_loopback_hosts(fleet, monkeypatch, listen, address):
    client = _served(fleet, monkeypatch, listen, address)
    refused = client.get("/api/v1/status", headers={"Host": "rebound.example"})
    assert refused.status_code == 421 and "pod0" not in refused.text
    assert client.get("/api/v1/status", headers={"Host": "localhost:9478"}).status_code == 200


def test_a_name_bound_on_loopback_still_answers_the_names_given(fleet, monkeypatch):
    client = _served(fleet, monkeypatch, "fleet-host:0", "127.0.1.1", "fleet-host")
    assert client.get("/api/v1/status", headers={"Host": "fleet-host:9478"}).status_code == 200
    assert client.get("/api/v1/status", headers={"Host": "rebound.example"}).status_code == 421


def test_a_name_bound_elsewhere_answers_any_host(fleet, monkeypatch):
    """Listening on another address, any Host is answered unless names are given, as before."""
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.bind(("0.0.0.0", 0))
        probe.close()
    except OSError:
        pytest.skip("cannot bind the wildcard address here")
    client = _served(fleet, monkeypatch, "fleet-host:0", "0.0.0.0")
    assert client.get("/api/v1/status", headers={"Host": "fleet.example.com"}).status_code == 200


def test_an_ipv4_mapped_loopback_address_is_loopback():
    from tpufleet.serve.framing import allowed_hosts

    assert allowed_hosts("::ffff:127.0.0.1", []) is not None
    assert allowed_hosts("::ffff:10.0.0.7", []) is None


@pytest.mark.parametrize("listen", ["[::1:9478", "[::1]]:9478", "[127.0.0.1:0", "::1]:0"])
def test_a_listen_address_with_stray_brackets_is_bad_input(fleet, monkeypatch, listen):
    """It was handed to the resolver: `cannot listen on [::1:9478: Name or service not known`, exit 1."""
    from tpufleet.cli import serve

    def bind(*args: object) -> None:
        pytest.fail("listened")

    monkeypatch.setattr(serve, "bind", bind)
    r = fleet("serve", "--listen", listen)
    assert r.code == 2 and f"bad option --listen {listen!r}" in r.err
