"""`allocate SLICE` gives the commands that wire and route the slice, as `explain SLICE` does (a job's allocate
already gave its own); before, a slice's allocate said nothing of what comes next."""

from __future__ import annotations

import shlex

import pytest


def _ok(cli, *args):
    r = cli(*args)
    assert r.code == 0, (args, r.err)
    return r


@pytest.mark.parametrize(
    ("before", "options"),
    [
        ([], ["--shape", "4x4x8"]),
        ([], ["--shape", "2x2x1"]),  # a sub-cube slice: nothing to route
        ([("inject-fault", "ocs:pod0/x/1")], ["--shape", "4x4x8"]),  # its pairs there deferred, rewired after
    ],
)
def test_allocate_gives_explains_steps_and_they_work(fleet, before, options):
    for command in before:
        _ok(fleet, *command)
    steps = _ok(fleet, "allocate", "a", *options, "-o", "json").json["next"]
    assert steps and steps == _ok(fleet, "explain", "a", "-o", "json").json["next"]
    for step in steps:
        _ok(fleet, *shlex.split(step)[1:])
    row = next(s for s in _ok(fleet, "show", "slices", "-o", "json").json if s["name"] == "a")
    assert row["state"] == "connected" and row["missing_xconnects"] == 0, row
    assert row["routes"] == ("none" if row["machines"] else "fresh"), row  # a sub-cube slice needs no tables


def test_the_table_lists_the_steps(cli):
    assert cli("init").code == 0
    r = _ok(cli, "allocate", "a", "--shape", "4x4x4")
    assert r.out.splitlines()[1:] == ["next: tpufleet plan-xconnect a --apply", "next: tpufleet routes a"], r.out
