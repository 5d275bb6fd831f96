"""`apply-maintenance`'s refusal of a wave out of order names the command to run first: runnable as written."""

from __future__ import annotations

import re
import shlex


def test_the_wave_to_apply_first_is_a_command_that_runs_with_a_plan_path_holding_spaces(fleet, tmp_path):
    """The path was written as given, `(tpufleet apply-maintenance /srv/maint plans/plan 1.json --wave 1)`: pasted
    into a shell, the command named files `/srv/maint`, `plans/plan` and `1.json`."""
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0  # c00
    assert fleet("plan-xconnect", "a", "--apply").code == 0
    notices = tmp_path / "notices.yaml"
    notices.write_text(
        "- {target: cube:c00, window_start: 2020-07-01T09:00:00Z, window_end: 2020-07-01T13:00:00Z}\n"
        "- {target: cube:c05, window_start: 2020-07-02T09:00:00Z, window_end: 2020-07-02T13:00:00Z}\n"
    )
    (tmp_path / "maint plans").mkdir()
    plan = tmp_path / "maint plans" / "plan 1.json"
    made = fleet("plan-maintenance", "--notices", notices, "--max-parallel", "1", "--out", plan)
    assert made.code == 0, made.err
    r = fleet("apply-maintenance", plan, "--wave", "2")
    assert r.code == 1, (r.code, r.err)
    found = re.search(r"`(tpufleet apply-maintenance [^`]*)`", r.err)
    assert found, r.err
    words = shlex.split(found.group(1))
    assert words == ["tpufleet", "apply-maintenance", str(plan), "--wave", "1"], words
    assert fleet(*words[1:]).code == 0
