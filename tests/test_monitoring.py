"""The monitoring mixin (monitoring/): promtool checks the rules and runs their unit tests (each alert fires and does
not fire), a planted mistake fails those tests, every metric the rules read is one `tpufleet serve` exposes, and the
dashboard draws only recording rules the mixin defines."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parent.parent
MIXIN = ROOT / "monitoring"
RULES = MIXIN / "prometheus" / "tpufleet-rules.yml"
UNIT_TESTS = MIXIN / "tests" / "tpufleet-rules.test.yml"
DASHBOARD = MIXIN / "dashboards" / "tpufleet.json"
GOODPUT = ROOT / "fixtures" / "goodput" / "fleet.jsonl"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian's prometheus package ships it: apt-get install prometheus)"
)


def rules() -> list[dict]:
    return [r for group in yaml.safe_load(RULES.read_text())["groups"] for r in group["rules"]]


def promtool(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@needs_promtool
def test_promtool_checks_the_rules():
    r = promtool("check", "rules", str(RULES))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(rules())} rules found" in r.stdout


@needs_promtool
def test_the_unit_tests_pass_and_cover_every_alert_firing_and_silent():
    r = promtool("test", "rules", UNIT_TESTS.name, cwd=UNIT_TESTS.parent)
    assert r.returncode == 0, r.stdout + r.stderr
    cases = [c for t in yaml.safe_load(UNIT_TESTS.read_text())["tests"] for c in t.get("alert_rule_test", [])]
    for alert in (r["alert"] for r in rules() if "alert" in r):
        mine = [c for c in cases if c["alertname"] == alert]
        assert any(c["exp_alerts"] for c in mine), f"{alert} is never tested firing"
        assert any(not c["exp_alerts"] for c in mine), f"{alert} is never tested silent"
    tested = {
        t["expr"].split("{")[0]
        for t in yaml.safe_load(UNIT_TESTS.read_text())["tests"]
        for t in t.get("promql_expr_test", [])
    }
    assert len(tested) >= 5


@needs_promtool
@pytest.mark.parametrize(
    "old, new",
    [
        ('tpufleet_slice_state{state="evicted"} == 1', 'tpufleet_slice_state{state="evicted"} == 0'),
        ('tpufleet_fault_opened_timestamp_seconds{planned="false"}', "tpufleet_fault_opened_timestamp_seconds"),
        ("> 6 * 3600", "> 8 * 3600"),
        ("unless on (slice, instance, job) tpufleet_slice_route_tables_through_faults == 1", ""),
        (
            'tpufleet_slice_route_tables_through_faults == 1\n          and on (slice, instance, job) tpufleet_slice_state{state="degraded"}',
            'tpufleet_slice_route_tables_through_faults == 1\n          and on (slice, instance, job) tpufleet_slice_state{state=~"degraded|connected"}',
        ),
    ],
)
def test_a_planted_mistake_in_a_rule_fails_its_unit_test(tmp_path, old, new):
    text = RULES.read_text()
    assert old in text
    (tmp_path / "prometheus").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "prometheus" / RULES.name).write_text(text.replace(old, new))
    shutil.copy(UNIT_TESTS, tmp_path / "tests" / UNIT_TESTS.name)
    r = promtool("test", "rules", UNIT_TESTS.name, cwd=tmp_path / "tests")
    assert r.returncode == 1 and "FAILED" in r.stdout + r.stderr


def test_recording_rules_are_named_level_metric_operation():
    for rule in rules():
        if "record" in rule:
            level, metric, operation = rule["record"].split(":")
            assert level and operation and metric.startswith("tpufleet_"), rule["record"]


def test_every_metric_the_rules_read_is_served(fleet, tmp_path):
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    from prometheus_client.parser import text_string_to_metric_families
    from starlette.testclient import TestClient

    from tpufleet.cli.serve import goodput_extras, metrics_inputs
    from tpufleet.serve.app import Server, build_app
    from tpufleet.serve.snapshot import Source
    from tpufleet.state import Store

    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    window = {"windowStartTime": "2099-06-16T09:00:00Z", "windowEndTime": "2099-06-16T13:00:00Z"}
    upcoming = {"upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING", **window}}
    sub_block = {"name": "sb-a", "physicalTopology": {"block": "b1"}, "reservationSubBlockMaintenance": upcoming}
    (tmp_path / "sb.json").write_text(json.dumps([sub_block]))
    assert fleet("import", "reservation", tmp_path / "sb.json", "--pod", "pod0", "--apply").code == 0
    source = Source(Store(fleet.state), [GOODPUT], goodput_extras([GOODPUT], "native"))
    text = TestClient(build_app(Server(source, metrics_inputs()))).get("/metrics").text
    served = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    read = {m for r in rules() for m in re.findall(r"\btpufleet_[a-z_]+\b", r["expr"])}
    assert len(read) >= 12
    assert read <= served, read - served


def test_the_dashboard_draws_the_recording_rules():
    dashboard = json.loads(DASHBOARD.read_text())
    recorded = {r["record"] for r in rules() if "record" in r}
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert set(exprs) == recorded  # every recording rule drawn, nothing else
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    cells: set[tuple[int, int]] = set()
    for p in dashboard["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, p["title"]  # no panel on top of another
        cells |= mine


def test_the_evicted_alert_names_a_command_that_shows_where_the_slice_would_move(fleet):
    """The first command of TpufleetSliceEvicted's description, run on an evicted slice, names the cubes reschedule
    would move it to (the proposal of `status -o json`)."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    cube = fleet("show", "slices", "-o", "json").json[0]["cubes"][0]
    assert fleet("inject-fault", f"host:{cube}/1").code == 0
    (row,) = fleet("status", "-o", "json").json["slices"]
    assert row["state"] == "evicted" and row["proposal"] is not None
    (alert,) = [r for r in rules() if r.get("alert") == "TpufleetSliceEvicted"]
    description = alert["annotations"]["description"].replace("{{ $labels.slice }}", "a")
    first = re.findall(r"`tpufleet ([^`]+)`", description)[0].split()
    shown = fleet(*first)
    assert shown.code == 0
    assert all(c in shown.out for c in row["proposal"]["cubes"]), shown.out


def test_the_below_floor_alert_sends_the_on_call_to_commands_that_take_a_degraded_slice(fleet):
    """A slice under TpufleetSliceDegradedBelowFloor is degraded, which `reschedule` refuses (exit 1): the
    description does not send the on-call there, and each command it gives in full runs on such a slice."""
    assert fleet("allocate", "a", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    assert fleet("show", "slices", "-o", "json").json[0]["state"] == "degraded"
    assert fleet("reschedule", "a").code == 1
    (alert,) = [r for r in rules() if r.get("alert") == "TpufleetSliceDegradedBelowFloor"]
    description = alert["annotations"]["description"].replace("{{ $labels.slice }}", "a")
    assert "reschedule" not in description
    commands = [c.split() for c in re.findall(r"`tpufleet ([^`]+)`", description)]
    full = [c for c in commands if len(c) > 1 and not any(w.isupper() for w in c)]
    assert full
    for command in full:
        assert fleet(*command).code == 0, command
