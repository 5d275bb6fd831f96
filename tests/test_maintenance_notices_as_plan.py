"""`apply-maintenance` given the notices file instead of the plan made from it says so, and names the command that
makes the plan, in YAML and in JSON alike; nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

NOTICES = [{"target": "cube:c01", "window_start": "2099-07-01T09:00:00Z", "window_end": "2099-07-01T13:00:00Z"}]


def test_notices_given_for_a_plan_are_told_to_be_planned_first(fleet, tmp_path):
    yaml_notices = tmp_path / "notices.yaml"
    yaml_notices.write_text(
        "- target: cube:c01\n  window_start: 2099-07-01T09:00:00Z\n  window_end: 2099-07-01T13:00:00Z\n"
    )
    json_notices = tmp_path / "notices.json"
    json_notices.write_text(json.dumps(NOTICES))
    state = Path(fleet.state) / "state.json"
    before = state.read_bytes()
    for notices in (yaml_notices, json_notices):
        r = fleet("apply-maintenance", notices, "--wave", "1")
        assert r.code == 2, (r.code, r.err)
        assert state.read_bytes() == before  # nothing changed
        assert "maintenance notices, not a maintenance plan" in r.err, r.err
        assert f"`tpufleet plan-maintenance --notices {notices} --out plan.json`" in r.err, r.err
        made = fleet("plan-maintenance", "--notices", notices, "--out", tmp_path / "plan.json")
        assert made.code == 0, made.err  # the command named makes the plan from that file


def test_a_file_that_is_neither_is_still_refused_as_not_json(fleet, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("hello: world\n")
    r = fleet("apply-maintenance", other, "--wave", "1")
    assert r.code == 2 and "maintenance notices" not in r.err, r.err


def test_notices_written_as_the_readme_writes_them_are_told_too(fleet, tmp_path):
    """The README's `notices.yaml` writes each notice in flow style, `- {target: cube:c00, ...}`: given to
    `apply-maintenance`, that file was refused as "not valid JSON", with no word of what it is or what to run."""
    text = (Path(__file__).parent.parent / "README.md").read_text()
    readme_notices = text.split("# notices.yaml\n", 1)[1].split("```", 1)[0]
    assert readme_notices.startswith("- {target: cube:c00,")
    for name, body in (
        ("readme.yaml", readme_notices),
        (
            "quoted.yaml",
            "- {'target': cube:c01, window_start: 2099-07-01T09:00:00Z, window_end: 2099-07-01T13:00:00Z}\n",
        ),
        ("keyed.yaml", 'notices:\n  - {"target": cube:c01, window_start: 2099-07-01T09:00:00Z}\n'),
    ):
        notices = tmp_path / name
        notices.write_text(body)
        r = fleet("apply-maintenance", notices, "--wave", "1")
        assert r.code == 2, (r.code, r.err)
        assert "maintenance notices, not a maintenance plan" in r.err, (name, r.err)
        assert f"`tpufleet plan-maintenance --notices {notices} --out plan.json`" in r.err, r.err
