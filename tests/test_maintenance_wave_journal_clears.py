"""A maintenance wave applied after its window is over opens and clears its drain in one commit: the journal line's
delta, `show journal` and `diff` list that drain as cleared too, not as left open."""

from __future__ import annotations

import yaml


def test_a_drain_opened_and_cleared_by_one_wave_is_in_the_lines_cleared(cli, tmp_path):
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert cli("allocate", "s", "--shape", "4x4x4").code == 0  # c00
    notices = tmp_path / "notices.yaml"
    notices.write_text(
        yaml.safe_dump(
            [{"target": "cube:c00", "window_start": "2026-01-01T09:00:00Z", "window_end": "2026-01-01T13:00:00Z"}]
        )
    )
    plan = tmp_path / "plan.json"
    assert cli("plan-maintenance", "--notices", notices, "--out", plan).code == 0
    before = cli("status", "-o", "json").json["serial"]
    assert cli("apply-maintenance", plan, "--wave", "1").code == 0
    drains = [f for f in cli("faults", "--all", "-o", "json").json if f["target"] == "cube:c00"]
    assert len(drains) == 1 and drains[0]["cleared"] is not None
    fid = drains[0]["id"]
    line = cli("show", "journal", "--tail", "1", "-o", "json").json[0]
    assert [f["id"] for f in line["delta"]["faults"]["opened"]] == [fid]
    assert line["delta"]["faults"]["cleared"] == [fid]
    net = cli("diff", str(before), "-o", "json").json["faults"]
    assert net["cleared"] == [fid]
