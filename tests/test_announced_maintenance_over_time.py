"""Maintenance a reservation announced for a later window, as the clock moves towards it with no commit in between:
what depends on the time (the spare target counts the cube as lost once its window starts within the horizon) must
follow the clock, not the last commit."""

from __future__ import annotations

import json

import pytest

WINDOW = {"windowStartTime": "2099-06-16T09:00:00Z", "windowEndTime": "2099-06-16T13:00:00Z"}


@pytest.fixture
def announced(fleet, tmp_path):
    """A TPU v4 pod with one slice, and maintenance announced on the sub-block that is cube c00 (free)."""
    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **WINDOW}}
    sub_block = {"name": "sb-a", "physicalTopology": {"block": "b1"}, "reservationSubBlockMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sub_block]))
    assert fleet("allocate", "a", "--shape", "4x4x8", "--cubes", "c10,c11").code == 0
    r = fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply", "-o", "json")
    assert r.code == 0, r.err
    assert [a["cube"] for a in r.json["maintenance_announced"]] == ["c00"]
    return fleet


def test_served_spare_figures_follow_the_clock_into_the_maintenance_horizon(announced, monkeypatch):
    """`serve` made its metrics once per serial: the spare target and free healthy cubes scraped a month before
    the window stayed as they were once the window came within plan-spares' 7 days, while `plan-spares` (and the
    same figures after any commit) counted the cube as lost."""
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    from prometheus_client.parser import text_string_to_metric_families
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import store
    from tpufleet.state.store import Store

    client = TestClient(build_app(Server(Source(Store(announced.state)), metrics_inputs())))

    def served() -> float:
        text = client.get("/metrics").text
        families = text_string_to_metric_families(text)
        return next(s.value for f in families for s in f.samples if s.name == "tpufleet_pod_free_healthy_cubes")

    for now in ("2099-05-16T09:00:00Z", "2099-06-12T09:00:00Z"):  # a month ahead, then 4 days ahead
        monkeypatch.setattr(store, "utc_now", lambda now=now: now)
        spares = announced("plan-spares", "-o", "json").json["pods"][0]
        assert served() == spares["free_healthy_cubes"], now
    assert spares["cubes_maintenance_in_horizon"] == ["c00"]


def test_a_failed_cube_under_announced_maintenance_is_down_now_not_also_in_the_horizon(announced, monkeypatch):
    """`cubes_maintenance_in_horizon` is the cubes up now that its drain will take: a cube that failed is listed down
    now only, so the two lists add up to the cubes lost (it was in both)."""
    from tpufleet.state import store

    assert announced("inject-fault", "cube:c00", "--reason", "power supply").code == 0
    monkeypatch.setattr(store, "utc_now", lambda: "2099-06-12T09:00:00Z")
    pod = announced("plan-spares", "-o", "json").json["pods"][0]
    assert pod["cubes_down_now"] == ["c00"] and pod["cubes_maintenance_in_horizon"] == []


def _proposal(fleet, name: str) -> list[str]:
    return next(s for s in fleet("show", "slices", "-o", "json").json if s["name"] == name)["proposal"]["cubes"]


def test_a_move_takes_a_cube_under_announced_maintenance_only_when_no_other_fits(announced):
    """A whole-cube slice's move took the pod's first free cube, c00, whose drain the reservation had announced,
    while c01 and on were free: the move would be stopped again by that drain."""
    assert announced("inject-fault", "host:c10/3").code == 0
    assert _proposal(announced, "a") == ["c01", "c11"]
    r = announced("reschedule", "a", "-o", "json")
    assert r.code == 0, r.err
    assert next(s for s in announced("show", "slices", "-o", "json").json if s["name"] == "a")["cubes"] == [
        "c01",
        "c11",
    ]


def test_a_move_reserved_before_the_maintenance_was_announced_is_proposed_again(fleet, tmp_path):
    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **WINDOW}}
    sub_block = {"name": "sb-a", "physicalTopology": {"block": "b1"}, "reservationSubBlockMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sub_block]))
    assert fleet("allocate", "a", "--shape", "4x4x8", "--cubes", "c10,c11").code == 0
    assert fleet("inject-fault", "host:c10/3").code == 0
    assert _proposal(fleet, "a") == ["c00", "c11"]  # reserved: nothing was announced yet
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0
    why = fleet("explain", "a", "-o", "json").json["why"]
    assert any("cubes c01, c11 in pod0 (the reserved c00: maintenance announced since" in w for w in why), why
    assert fleet("reschedule", "a").code == 0
    assert next(s for s in fleet("show", "slices", "-o", "json").json if s["name"] == "a")["cubes"] == ["c01", "c11"]


def test_the_free_healthy_cubes_help_names_what_plan_spares_leaves_out(announced):
    """The family is plan-spares' free healthy cubes, and its HELP says what that leaves out besides faults and
    slices: cubes under maintenance announced within plan-spares' 7 days, and those unplaced node pools hold."""
    from tpufleet.cli.serve import metrics_inputs
    from tpufleet.integrations.alertmetrics import alert_families
    from tpufleet.state.store import Store

    state = Store(announced.state).load()
    families = alert_families(state, metrics_inputs().spare_rows(state), {})
    (family,) = [f for f in families if f.name == "tpufleet_pod_free_healthy_cubes"]
    assert family.samples[0].value == announced("plan-spares", "-o", "json").json["pods"][0]["free_healthy_cubes"]
    assert "maintenance announced" in family.documentation
    assert "node pools" in family.documentation
