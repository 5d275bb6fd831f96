"""`state push URL DIR` or `state pull DIR URL` (the arguments swapped): refused (exit 2, nothing moved or made)
with the command in order, the URL's password left out."""

from __future__ import annotations

import json

from helpers import one_line, snapshot


def test_push_with_the_url_first_gives_the_command_in_order(fleet):
    before = snapshot(fleet.state)
    r = fleet("state", "push", "postgresql://alice@db.example.com/fleet", fleet.state, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].endswith(f"run `tpufleet state push {fleet.state} postgresql://alice@db.example.com/fleet`")
    assert snapshot(fleet.state) == before


def test_pull_with_the_directory_first_gives_the_command_in_order_without_the_password(cli, tmp_path):
    target = tmp_path / "copy"
    line = one_line(cli("state", "pull", target, "postgresql://alice:hunter2@db/fleet", state=False), 2)
    assert line.endswith(f"run `tpufleet state pull postgresql://alice@db/fleet {target}`")
    assert "hunter2" not in line and not target.exists()
