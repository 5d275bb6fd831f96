"""A value that is a near miss of one of an option's or argument's choices is refused (exit 2, nothing changed)
naming the choice it may mean; a value like none of them is refused as before."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize(
    "args, meant",
    [
        (("status", "-o", "jsn"), "json"),
        (("-o", "JSON", "status"), "json"),
        (("show", "slics"), "slices"),
        (("show", "map", "-o", "tabel"), "table"),
        (("metrics", "--format", "prom"), "prometheus"),
        (("export", "slurm-topology", "--format", "yml"), "yaml"),
        (("collective", "--topology", "4x4x4", "--op", "allreduce", "--bytes", "1GiB"), "all-reduce"),
        (
            ("collective", "--topology", "4x4x4", "--op", "all-reduce", "--algorithm", "bidir", "--bytes", "1GiB"),
            "bidir-ring",
        ),
        (("goodput-report", "log.jsonl", "--by", "accelrator"), "accelerator"),
        (("goodput-report", "log.jsonl", "--period", "weak"), "week"),
    ],
)
def test_a_near_miss_of_a_choice_names_it(fleet, args, meant):
    before = snapshot(fleet.state)
    line = one_line(fleet(*args), 2)
    assert line.endswith(f"; did you mean {meant}?")
    assert snapshot(fleet.state) == before


def test_routes_traffic_near_miss_names_it(routed):
    r = routed("routes", "s", "--traffic", "alltoall", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2 and said["error"].endswith("did you mean all-to-all?")


@pytest.mark.parametrize("args", [("status", "-o", "csv"), ("show", "zzz")])
def test_a_value_like_no_choice_gets_no_guess(fleet, args):
    assert "did you mean" not in one_line(fleet(*args), 2)
