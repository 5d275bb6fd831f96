"""`--pod` given a pod's number alone, in capitals or cut short is refused (exit 2, nothing changed) naming the pod
it may mean; a well-formed pod the fleet lacks is refused listing the pods, with no guess."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.fixture
def two_pods(cli):
    assert cli("init", "--generation", "tpu7x", "--pods", "2").code == 0
    return cli


@pytest.mark.parametrize("typed, meant", [("1", "pod1"), ("POD0", "pod0"), ("p1", "pod1"), ("Pod1", "pod1")])
def test_allocate_pod_near_miss_names_the_pod(two_pods, typed, meant):
    before = snapshot(two_pods.state)
    r = two_pods("allocate", "z", "--shape", "4x4x4", "--pod", typed, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].endswith(f"(did you mean {meant}?)")
    assert snapshot(two_pods.state) == before


@pytest.mark.parametrize("typed", ["pod2", "5", "x"])
def test_a_pod_like_none_lists_the_pods(two_pods, typed):
    line = one_line(two_pods("capacity", "--pod", typed), 2)
    assert "did you mean" not in line and line.endswith("(pods: pod0, pod1)")
