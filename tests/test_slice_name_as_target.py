"""A slice's or job's name given to `inject-fault` or `clear-fault`, which take a component's id: refused (exit 2,
nothing injected or cleared) saying what the name is and that `explain` names its cubes."""

from __future__ import annotations

import json

import pytest

from helpers import snapshot


@pytest.mark.parametrize("command", [("inject-fault",), ("inject-fault", "--dry-run"), ("clear-fault",)])
@pytest.mark.parametrize("name, kind", [("llm", "slice"), ("mj", "job"), ("mj-1", "slice")])
def test_a_slice_or_job_name_as_a_target_is_told_apart(fleet, command, name, kind):
    assert fleet("allocate", "llm", "--shape", "4x4x4").code == 0
    assert fleet("allocate", "mj", "--shape", "4x4x4", "--slices", "2").code == 0
    before = snapshot(fleet.state)
    r = fleet(command[0], name, *command[1:], "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].startswith(f"bad id '{name}': the name of a {kind}, not a component's id")
    assert f"`tpufleet explain {name}`" in said["error"]
    assert snapshot(fleet.state) == before
