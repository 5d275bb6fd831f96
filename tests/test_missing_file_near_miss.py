"""An input file that is not there, beside one of a close name (`plan.jsn`, `Plan.json`): refused (exit 2, nothing
changed) naming the file it may mean; beside none, as before."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize("typed", ["s.pla", "S.plan", "s.plna"])
def test_apply_xconnect_of_a_near_miss_names_the_plan(fleet, tmp_path, typed):
    plan = tmp_path / "s.plan"
    assert fleet("allocate", "s", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "s", "--out", plan).code == 0
    before = snapshot(fleet.state)
    r = fleet("apply-xconnect", tmp_path / typed, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].endswith(f"no such plan file; did you mean {plan}?")
    assert snapshot(fleet.state) == before


def test_a_goodput_log_near_miss_names_the_log(cli, tmp_path):
    log = tmp_path / "fleet.jsonl"
    log.write_text("")
    line = one_line(cli("goodput-report", tmp_path / "fleet.jsnl", state=False), 2)
    assert line.endswith(f"no such goodput log; did you mean {log}?")


def test_a_missing_file_beside_none_alike_gets_no_guess(fleet, tmp_path):
    (tmp_path / "other.yaml").write_text("x: 1\n")
    assert "did you mean" not in one_line(fleet("apply-xconnect", tmp_path / "s.plan"), 2)
