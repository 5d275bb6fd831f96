"""goodput-report with --until before --since: refused (exit 2) naming both values and the options swapped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import one_line

LOG = Path(__file__).parent.parent / "fixtures/goodput/fleet.jsonl"


@pytest.mark.parametrize(
    "since, until",
    [("2026-12-01", "2026-11-01"), ("1d", "7d")],
)
def test_a_reversed_window_names_both_and_the_swap(cli, since, until):
    r = cli("goodput-report", LOG, "--since", since, "--until", until, "-o", "json", state=False)
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert f"--until '{until}'" in said["error"] and f"--since '{since}'" in said["error"]
    assert said["error"].endswith(f"swap them: --since {until} --until {since}")


def test_an_empty_window_asks_for_a_later_until(cli):
    line = one_line(cli("goodput-report", LOG, "--since", "2026-01-05", "--until", "2026-01-05", state=False), 2)
    assert line.endswith("give a later --until")
