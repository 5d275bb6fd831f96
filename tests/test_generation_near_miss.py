"""`--generation` given a near miss of a shipped generation (`tpu7`, `v5p`, `TPU-V4`) or its other name
(`ironwood`): refused (exit 2, nothing written) naming the generation it may mean."""

from __future__ import annotations

import json

import pytest

from helpers import one_line


@pytest.mark.parametrize(
    "typed, meant", [("tpu7", "tpu7x"), ("v5p", "tpu-v5p"), ("TPU-V4", "tpu-v4"), ("ironwood", "tpu7x")]
)
def test_init_generation_near_miss_names_it(cli, typed, meant):
    r = cli("init", "--generation", typed, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].endswith(f"did you mean {meant}?")
    assert not cli.state.exists()


def test_simulate_availability_generation_near_miss_names_it(cli):
    line = one_line(cli("simulate-availability", "--generation", "tpu-v5", state=False), 2)
    assert line.endswith("did you mean tpu-v5p?")


def test_a_generation_like_none_gets_no_guess(cli):
    assert "did you mean" not in one_line(cli("init", "--generation", "xx"), 2)
