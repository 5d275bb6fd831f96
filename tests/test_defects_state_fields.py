"""Fields of state.json checked at load (and so at save) as the tool writes them: a hand edit the next command
would trip over is refused at once, naming the field and the value."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from helpers import one_line, snapshot
from tpufleet.cli import main

LAST_FAULT_NUMBER = 10**18 - 1  # f999999999999999999: fault ids are at most 19 characters


def _edit(state, change) -> None:
    path = state / "state.json"
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("counter", [LAST_FAULT_NUMBER + 1, 2**63])
def test_a_fault_counter_past_the_last_fault_id_is_refused_at_load(fleet, counter):
    _edit(fleet.state, lambda d: d.update(next_fault=counter))
    line = one_line(fleet("status"))
    assert "field next_fault" in line and f"(value {counter})" in line and "fault number too large" in line
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "cube:c20"))
    assert "field next_fault" in line and "faults." not in line
    assert snapshot(fleet.state) == before


def test_the_last_fault_counter_loads_and_its_fault_is_refused_naming_the_counter(fleet):
    _edit(fleet.state, lambda d: d.update(next_fault=LAST_FAULT_NUMBER))
    assert fleet("status").code == 0
    line = one_line(fleet("inject-fault", "cube:c20"))
    assert "refused" in line and "field next_fault" in line and f"(value {LAST_FAULT_NUMBER + 1})" in line


# ---- times: each time field holds a time in the form the tool writes ---------------------------------------------

_COMMANDS = (
    ["init"],
    ["allocate", "s", "--shape", "4x4x4"],
    ["allocate", "j", "--shape", "4x4x4", "--slices", "2"],
    ["plan-xconnect", "s", "--apply"],
    ["routes", "s"],
    ["inject-fault", "host:c20/1"],
    ["clear-fault", "f1"],
    ["inject-fault", "host:c21/1"],
)
_SUB_BLOCK = {"cube": "c22", "block": "b1", "health": "HEALTHY", "maintenance": {"status": "PENDING"}}


@pytest.fixture(scope="module")
def timed_state(tmp_path_factory) -> Path:
    """A state holding every time field: its creation, a slice's and a job's, route tables made, a fault cleared
    and one open (a drain window on it), a reservation sub-block with its maintenance window."""
    state = tmp_path_factory.mktemp("timed") / "state"
    for args in _COMMANDS:
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            main(["--state", str(state), *args])
    windows = {"window_start": "2026-06-16T09:00:00Z", "window_end": "2026-06-16T13:00:00Z"}

    def add(doc):
        doc["faults"][1].update(windows)
        doc["reservation"] = {"sub_blocks": {"sb-1": {**_SUB_BLOCK, "maintenance": {"status": "PENDING", **windows}}}}

    _edit(state, add)
    return state


@pytest.fixture
def timed(fleet, timed_state):
    shutil.rmtree(fleet.state)
    shutil.copytree(timed_state, fleet.state)
    assert fleet("status").code == 0
    return fleet


_TIME_FIELDS = {
    "created": lambda d: d,
    "slices.s.created": lambda d: d["slices"]["s"],
    "jobs.j.created": lambda d: d["jobs"]["j"],
    "routes.s.made": lambda d: d["routes"]["s"],
    "faults.0.opened": lambda d: d["faults"][0],
    "faults.0.cleared": lambda d: d["faults"][0],
    "faults.1.window_start": lambda d: d["faults"][1],
    "faults.1.window_end": lambda d: d["faults"][1],
    "reservation.sub_blocks.sb-1.maintenance.window_start": lambda d: d["reservation"]["sub_blocks"]["sb-1"][
        "maintenance"
    ],
    "reservation.sub_blocks.sb-1.maintenance.window_end": lambda d: d["reservation"]["sub_blocks"]["sb-1"][
        "maintenance"
    ],
}


def _set_time(state: Path, field: str, value: str) -> None:
    _edit(state, lambda d: _TIME_FIELDS[field](d).update({field.rsplit(".", 1)[-1]: value}))


@pytest.mark.parametrize("field", list(_TIME_FIELDS))
@pytest.mark.parametrize("value", ["x", "2026-13-45T99:99:99Z", "2026-06-16 09:00:00", "tomorrow"])
def test_a_time_field_that_is_no_time_is_refused_at_load(timed, field, value):
    _set_time(timed.state, field, value)
    for args in (["status"], ["export", "slices"]):
        line = one_line(timed(*args))
        assert f"field {field}:" in line and f"(value {value!r})" in line
    before = snapshot(timed.state)
    one_line(timed("inject-fault", "host:c23/1"))
    assert snapshot(timed.state) == before


@pytest.mark.parametrize("field", [f for f in _TIME_FIELDS if "window" not in f])
@pytest.mark.parametrize("value", ["2026-06-16T09:00:00.5Z", "2026-06-16T09:00:00+02:00", "2026-06-16T09:00Z"])
def test_a_moment_the_tool_wrote_is_utc_to_the_second(timed, field, value):
    _set_time(timed.state, field, value)
    assert f"field {field}:" in one_line(timed("status"))


@pytest.mark.parametrize("field", [f for f in _TIME_FIELDS if "window" in f])
@pytest.mark.parametrize(
    "value", ["2026-06-16T11:00:00+02:00", "2026-06-16T09:00:00.250Z", "2026-06-16T01:30:00-07:30"]
)
def test_a_maintenance_window_kept_as_given_by_an_earlier_version_still_loads(timed, field, value):
    _set_time(timed.state, field, value)
    assert timed("status").code == 0
    assert timed("inject-fault", "host:c23/1").code == 0
    assert timed("export", "slices").code == 0


@pytest.mark.parametrize("field", [f for f in _TIME_FIELDS if f.endswith("window_end")])
def test_a_maintenance_window_ending_before_it_starts_is_refused_at_load(timed, field):
    """A drain's or a reservation's window whose end comes before its start (which `import reservation` refuses)
    loaded and was listed as `[2026-06-16T09:00:00Z .. 2026-06-15T09:00:00Z]`; it is refused, naming the field."""
    _set_time(timed.state, field, "2026-06-16T10:00:00+02:00")  # 08:00Z, before the 09:00Z start
    r = timed("faults")
    assert r.code == 2 and f"field {field}:" in one_line(r) and "before window_start 2026-06-16T09:00:00Z" in r.err
    _set_time(timed.state, field, "2026-06-16T09:00:00Z")  # a window of no length: a reservation may say so
    assert timed("faults").code == 0


def _alert_mark(starts_at: str) -> dict[str, str]:
    return {"fingerprint": "a1b2", "starts_at": starts_at, "target": "host:c20/1", "fault": "f1"}


@pytest.mark.parametrize("value", ["x", "2026-13-45T99:99:99Z", "2026-06-16 09:00:00", "since yesterday"])
def test_an_alert_marks_start_that_is_no_time_is_refused_at_load(timed, value):
    """`alert_marks.N.starts_at` (the startsAt of an alert that opened a fault) took any text; it is refused as the
    webhook refuses such a startsAt, naming the field and the value, and nothing is written."""
    _edit(timed.state, lambda d: d.update(alert_marks=[_alert_mark(value)]))
    line = one_line(timed("status"))
    assert "field alert_marks.0.starts_at:" in line and f"(value {value!r})" in line
    before = snapshot(timed.state)
    assert "field alert_marks.0.starts_at:" in one_line(timed("inject-fault", "host:c23/1"))
    assert snapshot(timed.state) == before


@pytest.mark.parametrize(
    "value", ["2026-06-16T09:00:00.123456789Z", "2026-06-16t09:00:00+02:00", "0001-01-01T00:00:00Z"]
)
def test_an_alert_marks_start_as_alertmanager_sends_it_loads(timed, value):
    _edit(timed.state, lambda d: d.update(alert_marks=[_alert_mark(value)]))
    assert timed("status").code == 0
    assert timed("inject-fault", "host:c23/1").code == 0
