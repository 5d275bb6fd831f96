"""`tpufleet serve`'s query parameters: each route takes only its own (`all` on /api/v1/faults, `since` on
/api/v1/journal, none elsewhere), each at most once; anything else is 400 naming the parameter, not answered as if it
were absent (a typo, `?All=true`) or as the last of its repeats says."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

from tpufleet.errors import shown


@pytest.fixture
def client(fleet) -> TestClient:
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    server = Server(Source(Store(Path(fleet.state))), metrics_inputs(), None, 5)
    return TestClient(build_app(server), raise_server_exceptions=False)


def _refused(client: TestClient, target: str) -> str:
    r = client.get(target)
    assert r.status_code == 400 and r.json()["status"] == 400, (target, r.status_code, r.text[:200])
    assert "pod0" not in r.text
    error: str = r.json()["error"]
    return error


@pytest.mark.parametrize(
    "target",
    ["/api/v1/faults?all=true&all=false", "/api/v1/faults?all=false&all=false", "/api/v1/journal?since=0&since=5"],
)
def test_a_repeated_parameter_is_refused_naming_it(client, target):
    name = target.partition("?")[2].partition("=")[0]
    assert _refused(client, target) == f"bad query {name}: given 2 times; give it once"


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("/api/v1/status?pod=a", "bad query 'pod': /api/v1/status takes none"),
        ("/api/v1/faults?All=true", "bad query 'All': /api/v1/faults takes only all"),
        ("/api/v1/journal?since=1&tail=5", "bad query 'tail': /api/v1/journal takes only since"),
        ("/api/v1/slices?pod=a", "bad query 'pod': /api/v1/slices takes none"),
    ],
)
def test_a_parameter_the_route_does_not_take_is_refused_naming_it(client, target, said):
    assert _refused(client, target) == said


@pytest.mark.parametrize(
    "target", ["/api/v1/faults?all=true", "/api/v1/journal?since=1", "/api/v1/status?", "/api/v1/slices", "/healthz"]
)
def test_the_parameters_a_route_takes_are_answered(client, target):
    assert client.get(target).status_code == 200


@pytest.mark.parametrize("target", ["/healthz?probe=1", "/readyz?x&x", "/metrics?module=tpu&module=x", "/?_=1"])
def test_the_page_the_probes_and_metrics_ignore_a_query(client, target):
    """They read none, and what calls them adds one: Prometheus's `params`, a probe's or a browser's cache buster."""
    plain = client.get(target.partition("?")[0])
    r = client.get(target)
    assert r.status_code == plain.status_code == 200
    assert r.headers["content-type"] == plain.headers["content-type"]


def test_the_alert_intake_ignores_a_query(client):
    """Alertmanager posts to the URL it is given, query and all: the intake (off here, no token) answers the same."""
    assert client.post("/api/v1/alerts?x=1", json={}).status_code == client.post("/api/v1/alerts", json={}).status_code


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("%2B1", "'+1': a serial is written in the digits 0-9 alone (no sign, no '_')"),
        ("1_000", "'1_000': a serial is written in the digits 0-9 alone (no sign, no '_')"),
        ("-1", "'-1': serials count up from 0"),
    ],
)
def test_since_is_read_as_diff_and_history_read_a_serial(client, given, reason):
    """`?since=` had its own reading and message; it refuses what `diff` and `history --since` refuse, alike."""
    assert _refused(client, f"/api/v1/journal?since={given}") == f"bad query since {reason}"
    assert client.get("/api/v1/journal?since=-0").json() == client.get("/api/v1/journal?since=0").json()


def test_since_past_the_current_serial_is_refused_as_diff_refuses_it(client, fleet):
    """`?since=` past the state's serial was answered `[]`, while `diff` and `history --since` refuse that serial
    (exit 2); it is 400 naming the parameter and the value as typed. The current serial itself is nothing new."""
    current = client.get("/readyz").json()["serial"]
    assert client.get(f"/api/v1/journal?since={current}").json() == []
    assert fleet("history", "--since", str(current + 1)).code == 2
    said = _refused(client, f"/api/v1/journal?since=0{current + 1}")
    assert said == f"bad query since '0{current + 1}': need SERIAL <= {current} (the current serial)"


@pytest.mark.parametrize("given", ["YES", "Nope", "x" * 100])
def test_a_bad_all_is_named_as_typed(client, given):
    """`?all=YES` was named 'yes', lowercased: not the value the client sent."""
    said = _refused(client, f"/api/v1/faults?all={given}")
    assert said == f"bad query all: {shown(given)}; true or false (or 1, 0)"


def test_all_takes_1_and_0_as_the_readme_says(client, fleet):
    """1 and 0 are true and false, as the refusal and the README say (the README listed true/false only)."""
    assert fleet("inject-fault", "ocs:pod0/x/0").code == 0
    assert fleet("clear-fault", "f1").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/1").code == 0
    every, open_only = client.get("/api/v1/faults?all=true").json(), client.get("/api/v1/faults?all=false").json()
    assert len(every) == 2 and len(open_only) == 1
    assert client.get("/api/v1/faults?all=1").json() == every
    assert client.get("/api/v1/faults?all=0").json() == open_only
