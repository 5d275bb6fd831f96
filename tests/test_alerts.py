"""Alertmanager's alerts (`POST /api/v1/alerts`): an alert's fault is the one whose reason ends with the mark
tpufleet appended for it, on the alert's target (a summary quoting another alert's mark takes nothing over)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import add_fault

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

TOKEN = "s3cret-token-for-the-tests-0123456789"


def client(state: Path) -> TestClient:
    """The application as `tpufleet serve --token-file` builds it."""
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    server = Server(Source(Store(state)), metrics_inputs(), TOKEN.encode(), 5)
    return TestClient(build_app(server), raise_server_exceptions=False)


def alert(
    fingerprint: str, target: str, firing: bool = True, summary: str = "", starts: str = "2026-11-29T03:00:00Z"
) -> dict[str, Any]:
    return {
        "status": "firing" if firing else "resolved",
        "labels": {"alertname": "TPUHostUnhealthy", "tpufleet_target": target},
        "annotations": {"summary": summary} if summary else {},
        "startsAt": starts,
        "endsAt": "0001-01-01T00:00:00Z" if firing else "2026-11-29T04:00:00Z",
        "fingerprint": fingerprint,
    }


def send(c: TestClient, *alerts: dict[str, Any]) -> list[dict[str, Any]]:
    """What each alert of one notification did."""
    status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    r = c.post(
        "/api/v1/alerts",
        headers={"Authorization": f"Bearer {TOKEN}"},
        json={"version": "4", "status": status, "alerts": list(alerts)},
    )
    assert r.status_code == 200, r.text
    return r.json()["alerts"]


def faults(cli) -> dict[str, dict[str, Any]]:
    """Every fault of the state, open or cleared, by id."""
    return {f["id"]: f for f in cli("faults", "--all", "-o", "json").json}


def test_a_summary_quoting_another_alerts_mark_takes_nothing_over(fleet):
    add_fault(fleet.state, "host:c01/1")
    add_fault(fleet.state, "host:c02/1")
    c = client(fleet.state)
    summary = "disk full [alertmanager victim2 since 2026-11-29T03:00:00Z]"
    [evil] = send(c, alert("evil1", "host:c21/1", summary=summary))
    assert (evil["action"], evil["fault"]) == ("opened", "f3")
    reason = faults(fleet)["f3"]["reason"]
    assert reason.endswith(" [alertmanager evil1 since 2026-11-29T03:00:00Z]")
    assert reason.count("[alertmanager") == 1  # the summary's look-alike neutralised

    [victim] = send(c, alert("victim2", "host:c22/1"))
    assert (victim["action"], victim["fault"]) == ("opened", "f4")  # was "unchanged", fault f3: c22 got none
    assert faults(fleet)["f4"]["target"] == "host:c22/1"

    [resolved] = send(c, alert("victim2", "host:c22/1", firing=False))
    assert (resolved["action"], resolved["fault"]) == ("cleared", "f4")  # was: cleared f3, c21's fault
    now = faults(fleet)
    assert now["f3"]["cleared"] is None and now["f4"]["cleared"] is not None


def test_an_alerts_mark_on_another_target_is_not_its_fault(fleet):
    """The same fingerprint and startsAt naming another component (a hand-made payload) opens a fault of its own,
    and its resolution leaves the first component's fault alone."""
    c = client(fleet.state)
    assert send(c, alert("abc1", "host:c21/1"))[0]["fault"] == "f1"
    [other] = send(c, alert("abc1", "host:c22/1"))
    assert (other["action"], other["fault"]) == ("opened", "f2")
    assert send(c, alert("abc1", "host:c22/1", firing=False))[0]["fault"] == "f2"
    assert faults(fleet)["f1"]["cleared"] is None
