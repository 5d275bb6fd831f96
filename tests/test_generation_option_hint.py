"""`allocate --generation v4` (and `capacity`, `plan-spares`): a command working in a pod's generation takes `--pod`,
not `--generation`; Click's bare `No such option` now says so, and nothing changes."""

from __future__ import annotations

import json

import pytest

from helpers import snapshot


@pytest.mark.parametrize(
    "args",
    [
        ("allocate", "x", "--shape", "4x4x4", "--generation", "tpu-v4"),
        ("capacity", "--generation=tpu-v4"),
        ("plan-spares", "--generation", "tpu-v4"),
    ],
)
def test_generation_given_for_a_pod_names_pod(fleet, args):
    before = snapshot(fleet.state)
    r = fleet(*args, "-o", "json")
    assert r.code == 2
    error = json.loads(r.err)["error"]
    assert f"`{args[0]}` works in the generation of the pod it is given" in error and "--pod POD" in error
    assert snapshot(fleet.state) == before


def test_a_command_without_pod_gets_no_such_hint(fleet):
    r = fleet("status", "--generation", "tpu-v4")
    assert r.code == 2 and "--generation" in r.err and "--pod" not in r.err


def test_generation_given_before_the_command_names_pod(fleet):
    before = snapshot(fleet.state)
    r = fleet("--generation", "tpu-v4", "allocate", "x", "--shape", "4x4x4", "-o", "json")
    error = json.loads(r.err)["error"]
    assert r.code == 2 and "`allocate` works in the generation of the pod it is given" in error
    assert "--pod POD" in error and "--version" not in error
    assert snapshot(fleet.state) == before
    r = fleet("--generation", "tpu-v4", "status")
    assert r.code == 2 and "--pod" not in r.err
