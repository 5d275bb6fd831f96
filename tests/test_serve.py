"""`tpufleet serve`: every route answers what the CLI's -o json answers, the serial is the ETag, a commit is seen
without a restart, hostile requests get their documented status and change nothing, Alertmanager's payloads open a
fault once and clear it, and a real server stops cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import snapshot

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tpufleet.fleetstate import DEFAULT_MIN_THROUGHPUT
from tpufleet.serve.app import MAX_BODY

ALERTS = Path(__file__).parent.parent / "fixtures" / "alertmanager"
TOKEN = "s3cret-token-for-the-tests-0123456789"


def client(state: Path, token: str | None = TOKEN, refresh: int = 5) -> TestClient:
    """The application as `tpufleet serve` builds it, on a state directory (a new one each call: a restart)."""
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    server = Server(Source(Store(state)), metrics_inputs(), token.encode() if token else None, refresh)
    return TestClient(build_app(server), raise_server_exceptions=False)


def samples(fam) -> list[tuple]:
    return sorted((s.name, sorted(s.labels.items()), s.value) for s in fam.samples)


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def busy(fleet):
    """Slice a degraded by an OCS fault (its tables stale after the next), slice b evicted by a host fault."""
    for name, shape in (("a", "4x4x8"), ("b", "8x8x8")):
        assert fleet("allocate", name, "--shape", shape).code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
    assert fleet("routes", "a").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/3", "--reason", "OCS x/3: lost power supply").code == 0
    assert fleet("inject-fault", "host:c09/2").code == 0
    states = {s["name"]: s["state"] for s in fleet("show", "slices", "-o", "json").json}
    assert states == {"a": "degraded", "b": "evicted"}
    return fleet


# ---- reads: the CLI's documents ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path, command",
    [
        ("/api/v1/status", ["status"]),
        ("/api/v1/slices", ["show", "slices"]),
        ("/api/v1/jobs", ["show", "jobs"]),
        ("/api/v1/faults", ["faults"]),
        ("/api/v1/faults?all=true", ["faults", "--all"]),
        ("/api/v1/journal", ["show", "journal"]),
    ],
)
def test_each_document_is_the_clis_json(busy, path, command):
    r = client(busy.state).get(path)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    cli = busy(*command, "-o", "json")
    assert r.text == cli.out and r.text.endswith("\n")  # the same encoder: byte for byte, the newline too


def test_journal_since_a_serial_gives_the_later_entries(busy):
    every = busy("show", "journal", "-o", "json").json
    later = client(busy.state).get("/api/v1/journal", params={"since": every[2]["serial"]}).json()
    assert later == every[3:] and len(later) == len(every) - 3


def test_a_damaged_journal_line_is_said_on_stderr_as_show_journal_says_it(busy, capsys):
    journal = busy.state / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join([*lines[:5], b"garbage{", *lines[5:]]))
    said = busy("show", "journal", "-o", "json")
    capsys.readouterr()
    r = client(busy.state).get("/api/v1/journal")
    assert r.status_code == 200 and r.text == said.out
    err = capsys.readouterr().err
    assert "damaged line(s) 6 skipped" in err and "damaged line(s) 6 skipped" in said.err


def test_the_serial_is_the_etag_and_a_commit_is_seen_without_a_restart(busy):
    c = client(busy.state)
    first = c.get("/api/v1/status")
    serial = first.json()["serial"]
    assert first.headers["etag"] == f'"{serial}"'
    for path in ("/api/v1/status", "/api/v1/slices", "/api/v1/faults", "/api/v1/journal?since=1"):
        again = c.get(path, headers={"If-None-Match": f'"{serial}"'})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == f'"{serial}"'
    assert busy("clear-fault", "ocs:pod0/x/3").code == 0
    after = c.get("/api/v1/status", headers={"If-None-Match": f'"{serial}"'})
    assert after.status_code == 200 and after.json()["serial"] == serial + 1
    assert after.headers["etag"] == f'"{serial + 1}"' and after.json()["open_faults"] == 1
    assert c.get("/readyz").json() == {"status": "ready", "serial": serial + 1}


def test_metrics_are_those_of_tpufleet_metrics_plus_the_mixins(busy):
    r = client(busy.state).get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    served = {f.name: f for f in text_string_to_metric_families(r.text)}
    cli = {f.name: f for f in text_string_to_metric_families(busy("metrics").out)}
    assert set(cli) < set(served)
    for name, fam in cli.items():
        assert samples(fam) == samples(served[name]), name

    def value(name, **labels):
        return [s.value for s in served[name].samples if all(s.labels.get(k) == v for k, v in labels.items())]

    assert value("tpufleet_slice_state", slice="b", state="evicted") == [1.0]
    assert value("tpufleet_slice_state", slice="a", state="degraded") == [1.0]
    assert value("tpufleet_slice_route_tables_stale", slice="a") == [1.0]
    assert value("tpufleet_slice_min_throughput_ratio", slice="a") == [DEFAULT_MIN_THROUGHPUT]
    assert busy("policy", "a", "--min-throughput", "0.95").code == 0
    again = {f.name: f for f in text_string_to_metric_families(client(busy.state).get("/metrics").text)}
    assert [s.value for s in again["tpufleet_slice_min_throughput_ratio"].samples if s.labels["slice"] == "a"] == [0.95]
    opened = {s.labels["fault"]: s.labels for s in served["tpufleet_fault_opened_timestamp_seconds"].samples}
    assert set(opened) == {"f1", "f2"} and opened["f2"]["kind"] == "host" and opened["f1"]["planned"] == "false"
    assert value("tpufleet_fault_repair_seconds", kind="host") == [8 * 3600.0]  # the shipped rates: 8 h


def test_the_spare_target_is_plan_spares(busy):
    served = {f.name: f for f in text_string_to_metric_families(client(busy.state).get("/metrics").text)}
    plan = busy("plan-spares", "-o", "json").json["pods"][0]
    assert [s.value for s in served["tpufleet_pod_spare_target_cubes"].samples] == [plan["best_spares"]]
    assert [s.value for s in served["tpufleet_pod_free_healthy_cubes"].samples] == [plan["free_healthy_cubes"]]


def test_openmetrics_when_the_scraper_asks_for_it(busy):
    r = client(busy.state).get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert r.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert r.text.endswith("# EOF\n")
    names = {f.name for f in parse_openmetrics(r.text)}
    assert {"tpufleet_state_serial", "tpufleet_slice_state", "tpufleet_fault_opened_timestamp_seconds"} <= names


@pytest.mark.parametrize(
    "accept, openmetrics",
    [
        ("application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2", True),
        ("application/openmetrics-text;q=0, text/plain", False),  # q=0: not acceptable (it was served)
        ("text/plain;q=0.9, application/openmetrics-text;q=0.5", False),
        # text/plain weighed by the range that names it most closely (it was 0 unless named: OpenMetrics won)
        ("application/openmetrics-text;q=0.6, */*;q=0.9", False),
        ("application/openmetrics-text;q=0.6, text/*;q=0.9", False),
        ("application/openmetrics-text;q=0.6, text/plain;q=0.1, */*;q=0.9", True),
        ("*/*", False),
        ("", False),
    ],
)
def test_the_metrics_format_follows_the_accept_weights(busy, accept, openmetrics):
    r = client(busy.state).get("/metrics", headers={"Accept": accept})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/openmetrics-text") is openmetrics
    assert r.text.endswith("# EOF\n") is openmetrics


def test_the_page_reloads_itself_and_shows_states_and_reasons(busy):
    r = client(busy.state, refresh=7).get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    assert '<meta http-equiv="refresh" content="7">' in html and "<script" not in html
    assert '<span class="warn">degraded</span>' in html and '<span class="bad">evicted</span>' in html
    assert "OCS x/3: lost power supply" in html  # the fault's reason
    assert "default-src 'none'" in r.headers["content-security-policy"]


def test_the_page_shows_the_cubes_the_reservation_reports_degraded_or_under_maintenance(reserved):
    """serve's page is `report -o html`'s: it lists the DEGRADED sub-blocks' cubes and the maintenance announced."""
    html = client(reserved.state).get("/").text
    assert "<h2>Degraded cubes (still serving)</h2>" in html and "<h2>Maintenance announced</h2>" in html
    assert "<td>reservation sub-block ironwood-superpod-block-0001-sub-0058</td><td>2 of 16</td>" in html
    assert "<td>2026-06-18T09:00:00Z</td><td>2026-06-18T13:00:00Z</td><td>drained</td>" in html


def test_a_damaged_state_is_not_ready_and_says_why(busy):
    (busy.state / "state.json").write_text("{")
    c = client(busy.state)
    assert c.get("/healthz").status_code == 200
    for path in ("/readyz", "/api/v1/status", "/metrics", "/"):
        r = c.get(path)
        assert r.status_code == 503 and "state.json" in r.json()["error"], path


# ---- hostile requests ----------------------------------------------------------------------------------------------
HOSTILE = [
    ("GET", "/" + "a" * 8000, {}, None, 404),
    ("GET", "/" + "a" * 20_000, {}, None, 431),
    ("GET", "/healthz", {"X-Big": "b" * 17_000}, None, 431),
    ("GET", "/api/v1/../../state.json", {}, None, 404),
    ("GET", "/%2e%2e/%2e%2e/state.json", {}, None, 404),
    ("GET", "/api/v1/status/", {}, None, 404),
    ("GET", "/api/v1/journal?since=-1", {}, None, 400),
    ("GET", "/api/v1/journal?since=1e3", {}, None, 400),
    ("GET", "/api/v1/journal?since=" + "9" * 40, {}, None, 400),
    ("GET", "/api/v1/faults?all=maybe", {}, None, 400),
    ("DELETE", "/api/v1/status", {}, None, 405),
    ("PUT", "/metrics", {}, b"x", 405),
    ("PATCH", "/", {}, None, 405),
    ("POST", "/api/v1/faults", {}, b"{}", 405),
    ("GET", "/api/v1/alerts", {}, None, 405),
    ("POST", "/api/v1/alerts", {}, b"{}", 401),
    ("POST", "/api/v1/alerts", {"Authorization": "Bearer wrong"}, b"{}", 401),
    ("POST", "/api/v1/alerts", {"Authorization": f"Basic {TOKEN}"}, b"{}", 401),
    ("POST", "/api/v1/alerts", bearer(), b"{not json", 400),
    ("POST", "/api/v1/alerts", bearer(), b'{"version": NaN}', 400),
    ("POST", "/api/v1/alerts", bearer(), b"\xff\xfe", 400),
    ("POST", "/api/v1/alerts", bearer(), b"[" * 100_000, 400),
    ("POST", "/api/v1/alerts", bearer(), b"[]", 422),
    ("POST", "/api/v1/alerts", bearer(), b'{"version": "3", "alerts": []}', 422),
    ("POST", "/api/v1/alerts", bearer(), b'{"version": "4", "alerts": [{"status": "firing"}]}', 422),
    ("POST", "/api/v1/alerts", bearer(), b"{" + b" " * MAX_BODY + b"}", 413),
]


@pytest.mark.parametrize("method, path, headers, body, status", HOSTILE, ids=lambda v: str(v)[:40])
def test_a_hostile_request_gets_its_status_and_changes_nothing(fleet, method, path, headers, body, status):
    assert fleet("inject-fault", "ocs:pod0/y/1").code == 0
    before = snapshot(fleet.state)
    r = client(fleet.state).request(method, path, headers=headers, content=body)
    assert r.status_code == status, r.text[:200]
    assert r.json()["status"] == status and r.json()["error"]
    assert snapshot(fleet.state) == before


def test_a_bad_alert_is_named_by_its_field(fleet):
    payload = json.loads((ALERTS / "firing.json").read_text())
    payload["alerts"][0]["fingerprint"] = "../../etc"
    r = client(fleet.state).post("/api/v1/alerts", headers=bearer(), json=payload)
    assert r.status_code == 422 and r.json()["error"].startswith("alerts[0].fingerprint:")


@pytest.mark.parametrize(
    ("drop", "said"),
    [("version", 'version: missing; this server takes Alertmanager\'s version "4"'), ("alerts", "alerts: missing")],
)
def test_a_payload_missing_a_field_says_it_is_missing(fleet, drop, said):
    """A payload without `version` was refused as `version: null`, one without `alerts` as `alerts: not a list`."""
    payload = json.loads((ALERTS / "firing.json").read_text())
    del payload[drop]
    r = client(fleet.state).post("/api/v1/alerts", headers=bearer(), json=payload)
    assert r.status_code == 422 and r.json()["error"] == said, r.text


def test_an_alert_with_a_key_given_twice_is_refused_not_read_by_its_last(fleet):
    """A second `tpufleet_target` label in one alert opened a fault on the last one (Python's decoder keeps the last,
    other readers the first); the intake refuses it (422, naming the key), as every input file of the CLI does."""
    before = snapshot(fleet.state)
    text = (ALERTS / "firing.json").read_text()
    twice = text.replace(
        '"tpufleet_target": "host:c07/3"}', '"tpufleet_target": "host:c07/3", "tpufleet_target": "host:c08/1"}'
    )
    assert twice.count("host:c08/1") == 2
    r = client(fleet.state).post("/api/v1/alerts", headers=bearer(), content=twice.encode())
    assert r.status_code == 422 and r.json()["error"] == 'key "tpufleet_target" is given twice in one object', r.text
    assert snapshot(fleet.state) == before


def test_an_alert_with_two_authorization_headers_is_refused_whichever_comes_first(fleet):
    """The first of two `Authorization` headers was checked and the second ignored (a proxy in front may check the
    other); two are refused (400), as two Host headers are, and nothing changes."""
    before = snapshot(fleet.state)
    body = (ALERTS / "firing.json").read_bytes()
    for first, second in ((TOKEN, "wrong"), ("wrong", TOKEN)):
        headers = [("Authorization", f"Bearer {first}"), ("Authorization", f"Bearer {second}")]
        r = client(fleet.state).post("/api/v1/alerts", headers=headers, content=body)
        assert r.status_code == 400 and "Authorization" in r.json()["error"], r.text
    assert snapshot(fleet.state) == before


def test_a_body_that_lies_about_its_length_is_still_bounded(fleet):
    before = snapshot(fleet.state)

    def chunks():
        for _ in range(MAX_BODY // (64 * 1024) + 4):
            yield b" " * (64 * 1024)

    r = client(fleet.state).post("/api/v1/alerts", headers=bearer(), content=chunks())  # chunked: no Content-Length
    assert r.status_code == 413
    assert snapshot(fleet.state) == before


# ---- Alertmanager ------------------------------------------------------------------------------------------------
def post(c: TestClient, name: str, headers: dict[str, str] | None = None):
    return c.post(
        "/api/v1/alerts", headers=bearer() if headers is None else headers, content=(ALERTS / name).read_bytes()
    )


def open_on(cli, target: str) -> list[dict]:
    return [f for f in cli("faults", "-o", "json").json if f["target"] == target]


def test_fire_opens_once_repeat_changes_nothing_resolve_clears(fleet):
    c = client(fleet.state)
    r = post(c, "firing.json")
    assert r.status_code == 200
    d = r.json()
    assert d["opened"] == ["f1"] and d["cleared"] == [] and d["alerts"][0]["action"] == "opened"
    opened = open_on(fleet, "host:c07/3")
    assert len(opened) == 1 and "[alertmanager 4f2c9a6b1d0e7c35 since 2026-03-02T10:15:04.123Z]" in opened[0]["reason"]
    assert opened[0]["reason"].startswith("TPUHostUnhealthy: healthd: PCIe AER errors")
    assert fleet("show", "journal", "-o", "json").json[-1]["command"] == "tpufleet serve: POST /api/v1/alerts"

    before = snapshot(fleet.state)
    for again in (c, client(fleet.state)):  # repeated, and after a restart of the server
        r = post(again, "firing.json")
        assert r.json()["opened"] == [] and r.json()["alerts"][0]["action"] == "unchanged"
        assert r.json()["alerts"][0]["fault"] == "f1"
        assert snapshot(fleet.state) == before

    r = post(c, "resolved.json")
    assert r.json()["cleared"] == ["f1"] and r.json()["alerts"][0]["action"] == "cleared"
    assert open_on(fleet, "host:c07/3") == []
    before = snapshot(fleet.state)
    for name in ("resolved.json", "firing.json"):  # a late repeat of the firing episode does not reopen it
        assert post(c, name).json()["alerts"][0]["action"] == "unchanged"
    assert snapshot(fleet.state) == before


def test_without_the_token_nothing_changes(fleet):
    before = snapshot(fleet.state)
    for headers in ({}, bearer("x" * len(TOKEN)), bearer(TOKEN[:-1])):
        assert post(client(fleet.state), "firing.json", headers).status_code == 401
    r = post(client(fleet.state, token=None), "firing.json")
    assert r.status_code == 404 and "--token-file" in r.json()["error"]
    r = client(fleet.state, token=None).get("/api/v1/alerts")  # off whatever the method (was 405)
    assert r.status_code == 404 and "--token-file" in r.json()["error"]
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_the_intake_off_is_404_to_every_method(fleet, method):
    """Without --token-file, a PUT or DELETE got 405 with `Allow: POST, GET, HEAD`, naming methods that get 404."""
    r = client(fleet.state, token=None).request(method, "/api/v1/alerts")
    assert r.status_code == 404 and "--token-file" in r.json()["error"] and "allow" not in r.headers
    assert r.headers["x-content-type-options"] == "nosniff"


def test_each_alert_of_a_group_is_answered(fleet):
    d = post(client(fleet.state), "mixed.json").json()
    actions = [(a["target"], a["action"]) for a in d["alerts"]]
    assert actions == [("link:c12/x/5/out", "opened"), (None, "ignored"), ("host:c99/3", "ignored")]
    assert "no tpufleet_target label" in d["alerts"][1]["why"] and "c99" in d["alerts"][2]["why"]
    assert [f["target"] for f in fleet("faults", "-o", "json").json] == ["link:c12/x/5/out"]


def test_an_alert_on_a_component_already_failed_by_hand_leaves_that_fault_alone(fleet):
    assert fleet("inject-fault", "host:c07/3", "--reason", "by hand").code == 0
    c = client(fleet.state)
    assert post(c, "firing.json").json()["alerts"][0] == {
        "fingerprint": "4f2c9a6b1d0e7c35",
        "alertname": "TPUHostUnhealthy",
        "status": "firing",
        "target": "host:c07/3",
        "action": "unchanged",
        "fault": "f1",
        "why": "host:c07/3 already has an open fault",
    }
    assert post(c, "resolved.json").json()["alerts"][0]["action"] == "unchanged"
    assert [f["reason"] for f in open_on(fleet, "host:c07/3")] == ["by hand"]


# ---- the command ---------------------------------------------------------------------------------------------------
def test_bad_options_are_refused_before_listening(fleet, tmp_path):
    from helpers import one_line

    assert "--listen" in one_line(fleet("serve", "--listen", "localhost"))
    assert "--listen" in one_line(fleet("serve", "--listen", "127.0.0.1:70000"))
    short = tmp_path / "token"
    short.write_text("abc\n")
    assert "--token-file" in one_line(fleet("serve", "--token-file", short))
    assert "--token-file" in one_line(fleet("serve", "--token-file", tmp_path / "missing"))
    empty = tmp_path / "empty"
    assert f"`tpufleet --state {empty} init`" in one_line(fleet("--state", empty, "serve", state=False), code=1)


@pytest.mark.parametrize(
    ("listen", "host"),
    [("256.0.0.1:8080", "256.0.0.1"), ("1.2.3:80", "1.2.3"), ("010.0.0.1:80", "010.0.0.1"), ("[::g]:80", "::g")],
)
def test_a_host_written_as_an_address_that_is_none_is_bad_input(fleet, listen, host):
    """`--listen 256.0.0.1:8080` failed as a name not found (exit 1): a malformed address is bad input."""
    from helpers import one_line

    line = one_line(fleet("serve", "--listen", listen))
    assert line.startswith(f"tpufleet: error: bad option --listen {listen!r}: {host} ")


@pytest.mark.parametrize("listen", ["::1:9478", "::1:80", "fe80::1:0"])
def test_an_ipv6_address_without_brackets_is_bad_input(fleet, listen):
    """`--listen ::1:80` was taken as host ::1 and port 80, though `::1:80` is an IPv6 address too: the address
    is written in brackets, as the README says, and one without them is refused."""
    from helpers import one_line

    line = one_line(fleet("serve", "--listen", listen))
    assert line == (
        f"tpufleet: error: bad option --listen {listen!r}: an IPv6 address is written in brackets, e.g. [::1]:9478"
    )


def test_a_scoped_ipv6_address_is_bound_on_its_interface(monkeypatch):
    """`--listen '[fe80::1%lo]:0'` failed at bind (exit 1, "Invalid argument"): the address was bound without its
    interface, which a link-local address needs. It is bound with the interface's scope id now (here the interface
    by number, so nothing depends on this machine's interfaces)."""
    from tpufleet.cli import serve

    bound = []

    class Socket:
        def __init__(self, *args):
            pass

        def setsockopt(self, *args):
            pass

        def bind(self, address):
            bound.append(address)

        def listen(self, backlog):
            pass

    monkeypatch.setattr(socket, "socket", Socket)
    serve.bind(*serve.parse_listen("[fe80::1%7]:9478"))
    serve.bind(*serve.parse_listen("[::1]:9478"))
    assert bound == [("fe80::1", 9478, 0, 7), ("::1", 9478, 0, 0)]


def test_a_link_local_address_without_its_interface_is_bad_input(fleet):
    """`--listen '[fe80::1]:9478'` failed at bind (exit 1, "Invalid argument"): every interface has such an
    address, and the one meant is not said."""
    from helpers import one_line

    line = one_line(fleet("serve", "--listen", "[fe80::1]:9478"))
    assert line.startswith("tpufleet: error: bad option --listen '[fe80::1]:9478': ")


@pytest.mark.parametrize("listen", ["[::1%lo]:9478", "[fd00::2%eth0]:9478"])
def test_an_interface_with_an_address_not_link_local_is_bad_input(fleet, listen):
    """`--listen '[::1%lo]:9478'` failed as a name not found (exit 1): the C library reads an interface with a
    link-local address only (and by number, `[::%1]`, bound every interface, the interface set aside). It is bad
    input, naming the option and the value."""
    from helpers import one_line
    from tpufleet.cli.serve import parse_listen
    from tpufleet.errors import BadInput

    line = one_line(fleet("serve", "--listen", listen))
    assert line.startswith(f"tpufleet: error: bad option --listen {listen!r}: ")
    with pytest.raises(BadInput):
        parse_listen("[::%1]:0")


def test_a_port_in_use_is_one_line(fleet):
    from helpers import one_line

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert f"cannot listen on 127.0.0.1:{port}" in one_line(fleet("serve", "--listen", f"127.0.0.1:{port}"), 1)


def test_a_port_in_use_on_an_ipv6_address_names_it_in_brackets(fleet):
    """`cannot listen on ::1:9478` (the address and port written as one IPv6 address, the way `--listen` refuses
    as reading two ways): the address is written in brackets, as `--listen` takes it."""
    from helpers import one_line

    with socket.socket(socket.AF_INET6) as taken:
        try:
            taken.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback here")
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line(fleet("serve", "--listen", f"[::1]:{port}"), 1)
        assert line.startswith(f"tpufleet: error: cannot listen on [::1]:{port}: ")


def raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):  # the server closes the connection after its answer
            answer += chunk
        return answer


@pytest.mark.slow
def test_a_real_server_answers_and_stops_cleanly_on_sigterm(fleet, tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    command = [sys.executable, "-m", "tpufleet", "--state", str(fleet.state), "serve", "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen([*command, "--token-file", str(token)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line)[1])  # type: ignore[index]
        assert b'{"status":"ok"}' in raw(port, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        assert raw(port, b"GET /../state.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").startswith(
            b"HTTP/1.1 404"
        )
        big = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n"
        assert raw(port, big).startswith(b"HTTP/1.1 431")  # headers over 16 KiB: refused, not a 500
        split = socket.create_connection(("127.0.0.1", port), timeout=10)  # the same, arriving in pieces
        split.sendall(big[:30_000])
        split.sendall(big[30_000:])
        assert split.recv(100).startswith(b"HTTP/1.1 4")
        split.close()
        before = snapshot(fleet.state)
        slow = socket.create_connection(("127.0.0.1", port), timeout=10)  # a slow client holds nothing up
        slow.sendall(b"POST /api/v1/alerts HTTP/1.1\r\nHost: localhost\r\n")
        assert raw(port, b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").startswith(
            b"HTTP/1.1 200"
        )
        slow.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        said = proc.stderr.read()
        assert "stopped on SIGTERM" in said and "unfinished" not in said  # every thread ended: a clean stop
        assert snapshot(fleet.state) == before
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---- a real browser ------------------------------------------------------------------------------------------------
CHROMIUM: str | None = next(
    (path for n in ("chromium", "chromium-browser", "google-chrome") if (path := shutil.which(n))), None
)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (make test-browser installs one)")
def test_a_real_browser_sees_a_new_fault_without_a_reload_by_hand(fleet):
    """Headless Chromium opens the page and is left alone; a fault is injected; the browser fetches the page again
    by itself (the meta refresh) and gets one that shows the fault."""
    import threading
    import time

    import uvicorn

    from tpufleet.cli.serve import bind, metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    pages: list[tuple[str, str]] = []

    class Recording(Server):
        def page(self, request):
            answer = super().page(request)
            pages.append((request.headers.get("user-agent", ""), bytes(answer.body).decode()))
            return answer

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(Recording(Source(Store(fleet.state)), metrics_inputs(), None, 2)),
            lifespan="off",
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert CHROMIUM is not None
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1920,1080", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not any("HeadlessChrome" in ua for ua, _ in pages) and time.monotonic() < deadline:
            time.sleep(0.1)
        first = len(pages)
        assert first >= 1 and "browser-visible reason" not in pages[0][1]
        assert fleet("inject-fault", "host:c07/3", "--reason", "browser-visible reason").code == 0
        while time.monotonic() < deadline and not any("browser-visible reason" in p for _, p in pages[first:]):
            time.sleep(0.1)
        later = [(ua, p) for ua, p in pages[first:] if "browser-visible reason" in p]
        assert later and "HeadlessChrome" in later[0][0]
        assert "cube c07 (position 7): out; faults f1" in later[0][1]
    finally:
        browser.kill()
        browser.wait()
        server.should_exit = True
        thread.join(timeout=30)


def test_a_compressed_alert_body_is_refused_saying_so(fleet):
    """`Content-Encoding: gzip` was ignored: the gzip body was refused as "not JSON", a plain one taken though it
    said gzip. Either is 415 naming the encoding, and nothing changes."""
    import gzip

    before = snapshot(fleet.state)
    body = (ALERTS / "firing.json").read_bytes()
    for sent in (gzip.compress(body), body):
        r = client(fleet.state).post("/api/v1/alerts", headers={**bearer(), "Content-Encoding": "gzip"}, content=sent)
        assert r.status_code == 415 and "'gzip'" in r.json()["error"], r.text
    assert snapshot(fleet.state) == before
    plain = client(fleet.state).post(
        "/api/v1/alerts", headers={**bearer(), "Content-Encoding": "identity"}, content=body
    )
    assert plain.status_code == 200, plain.text


@pytest.mark.parametrize("target", ["/api%2Fv1/status", "/api/v1%2Fslices", "/%6Detrics"])
def test_a_percent_encoded_path_names_no_route(fleet, target):
    """uvicorn decodes the path before routing: `/api%2Fv1/status` answered the status. The route table is
    matched against the target as sent: 404."""
    r = client(fleet.state).get(target)
    assert r.status_code == 404, (target, r.status_code)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"version": "4",\n "alerts": [}', "line 2, column 13"),
        (b'{"version": NaN}', "it holds NaN"),
        (b'{"version": "\xff"}', "not UTF-8 at byte 13"),
    ],
)
def test_a_body_that_is_not_json_is_named_where(fleet, body, said):
    """The body was named only by the reader's error type (`JSONDecodeError`); it says where, as the CLI's readers."""
    r = client(fleet.state).post("/api/v1/alerts", headers=bearer(), content=body)
    assert r.status_code == 400 and said in r.json()["error"], r.text


def test_an_alert_body_with_a_byte_order_mark_is_read(fleet):
    """A leading byte-order mark was refused as not JSON, while the CLI's input files drop it."""
    body = b"\xef\xbb\xbf" + (ALERTS / "firing.json").read_bytes()
    r = client(fleet.state).post("/api/v1/alerts", headers=bearer(), content=body)
    assert r.status_code == 200, r.text
