"""Alertmanager's alerts (`POST /api/v1/alerts`): an alert's fault is the one whose reason ends with the mark
tpufleet appended for it, on the alert's target (a summary quoting another alert's mark takes nothing over); a fault
cleared by hand is not opened again by a repeat of its alert, even once it left the state for the journal (the state
remembers the alerts that opened faults, `alert_marks`, bounded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import add_fault, snapshot

pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

from tpufleet.constants import ALERT_MARKS_KEPT

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


# ---- a fault cleared by hand stays cleared, however long ago --------------------------------------------------------
def others(firing: bool) -> list[dict[str, Any]]:
    """140 other alerts, each on its own host."""
    return [alert(f"other{i:03d}", f"host:c{30 + i // 16:02d}/{i % 16}", firing) for i in range(140)]


def test_a_fault_cleared_by_hand_is_not_reopened_after_140_other_alerts(fleet):
    for machine in range(7):
        add_fault(fleet.state, f"host:c01/{machine}")
    c = client(fleet.state)
    keep = alert("keep1", "host:c05/5", starts="2026-11-29T05:00:00Z")
    assert send(c, keep)[0]["fault"] == "f8"
    assert fleet("clear-fault", "f8").code == 0
    [row] = send(c, keep)
    assert (row["action"], row["fault"]) == ("unchanged", "f8")
    for firing in (True, False):  # opened, then resolved, a notification of 35 alerts at a time
        batch = others(firing)
        for at in range(0, len(batch), 35):
            assert {a["action"] for a in send(c, *batch[at : at + 35])} == {"opened" if firing else "cleared"}
    on_file = json.loads((fleet.state / "state.json").read_text())
    assert "f8" not in {f["id"] for f in on_file["faults"]}  # left the state for the journal
    before = snapshot(fleet.state)
    for again in (c, client(fleet.state)):  # and after a restart of the server
        [row] = send(again, keep)
        assert (row["action"], row["fault"]) == ("unchanged", "f8")  # was: opened f149
        assert snapshot(fleet.state) == before
    assert "host:c05/5" not in {f["target"] for f in fleet("faults", "-o", "json").json}
    # what the state remembers: the alert whose fault was cleared by hand (the others resolved, forgotten)
    assert on_file["alert_marks"] == [
        {"fingerprint": "keep1", "starts_at": "2026-11-29T05:00:00Z", "target": "host:c05/5", "fault": "f8"}
    ]


def test_an_alert_resolved_is_forgotten_and_a_new_episode_opens_a_new_fault(fleet):
    c = client(fleet.state)
    first = alert("ep1", "host:c05/5", starts="2026-11-29T05:00:00Z")
    assert send(c, first)[0]["fault"] == "f1"
    assert json.loads((fleet.state / "state.json").read_text())["alert_marks"][0]["fault"] == "f1"
    assert send(c, alert("ep1", "host:c05/5", firing=False, starts="2026-11-29T05:00:00Z"))[0]["action"] == "cleared"
    assert "alert_marks" not in json.loads((fleet.state / "state.json").read_text())  # the file's old shape again
    [late] = send(c, first)  # a late repeat of the episode: its fault, cleared, is still in the state
    assert (late["action"], late["fault"]) == ("unchanged", "f1")
    [again] = send(c, alert("ep1", "host:c05/5", starts="2026-11-30T08:00:00Z"))  # it fires again: a new episode
    assert (again["action"], again["fault"]) == ("opened", "f2")


def test_the_alerts_remembered_are_bounded_the_oldest_forgotten_first():
    from tpufleet.fleetstate import FleetState
    from tpufleet.gkerecords import AlertMark
    from tpufleet.model import default_fleet

    state = FleetState(default_fleet())
    for i in range(ALERT_MARKS_KEPT + 5):
        state.note_alert(AlertMark(f"a{i}", "2026-11-29T05:00:00Z", "host:c01/1", f"f{i + 1}"))
    assert len(state.alert_marks) == ALERT_MARKS_KEPT and next(iter(state.alert_marks)) == "a5"
    state.note_alert(AlertMark("a5", "2026-11-30T05:00:00Z", "host:c01/1", "f9999"))  # its next episode: the newest
    assert list(state.alert_marks)[-1] == "a5" and len(state.alert_marks) == ALERT_MARKS_KEPT


def _mark(i: int, target: str = "host:c05/5") -> dict[str, str]:
    return {"fingerprint": f"a{i}", "starts_at": "2026-11-29T05:00:00Z", "target": target, "fault": f"f{i + 1}"}


@pytest.mark.parametrize(
    ("marks", "field"),
    [
        ([_mark(0), _mark(0)], "alert_marks.1.fingerprint"),
        ([_mark(0, "host:c05")], "alert_marks.0.target"),
        ([_mark(0) | {"fingerprint": "../x"}], "alert_marks.0.fingerprint"),
        ([_mark(0) | {"extra": 1}], "alert_marks.0"),
        ([_mark(i) for i in range(ALERT_MARKS_KEPT + 1)], "alert_marks"),
    ],
)
def test_bad_alert_marks_in_a_state_file_are_exit_2(fleet, marks, field):
    path = fleet.state / "state.json"
    doc = json.loads(path.read_text())
    assert "alert_marks" not in doc  # a state without alerts keeps the file's old shape, and loads as it was
    path.write_text(json.dumps(doc | {"alert_marks": [_mark(i) for i in range(3)]}))
    assert fleet("status").code == 0
    path.write_text(json.dumps(doc | {"alert_marks": marks}))
    r = fleet("status")
    assert r.code == 2 and f"field {field}" in r.err, r.err


def test_a_resolution_naming_its_target_another_way_still_clears_its_fault(fleet):
    """An id is written one way: a firing alert naming `host:c07/03` is ignored (saying `did you mean host:c07/3`).
    Before that, such an alert opened its fault on host:c07/3 (as the first alert here did); its resolution, naming
    the target the same way, must still clear that fault, not leave it open for good."""
    c = client(fleet.state)
    [fired] = send(c, alert("old1", "host:c07/3"))
    assert fired["action"] == "opened"
    [again] = send(c, alert("new1", "host:c07/03"))
    assert again["action"] == "ignored" and "did you mean host:c07/3?" in again["why"]
    [resolved] = send(c, alert("old1", "host:c07/03", firing=False))
    assert (resolved["action"], resolved["fault"]) == ("cleared", fired["fault"])
    assert faults(fleet)[fired["fault"]]["cleared"] is not None
    [unknown] = send(c, alert("old2", "host:c999/03", firing=False))
    assert unknown["action"] == "ignored"
