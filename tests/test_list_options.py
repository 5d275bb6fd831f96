"""Comma-separated options refuse an empty item alike (`plan-spares --slices a,`, `allocate --cubes c01,`)."""

from __future__ import annotations

from pathlib import Path

import pytest

LOG = Path(__file__).parent.parent / "fixtures" / "goodput" / "fleet.jsonl"


@pytest.mark.parametrize("by", ["size,", ",", "size,,phase"])
def test_by_naming_an_empty_segment_is_refused_as_every_list_refuses_one(cli, by):
    """`goodput-report --by size,` dropped the empty item unsaid (`--by ,` gave no segment at all)."""
    r = cli("goodput-report", LOG, "--by", by)
    (line,) = r.err.strip().splitlines()
    assert r.code == 2
    assert line == f"tpufleet: error: bad option --by: {by!r} names an empty segment (between two commas, or at an end)"


def test_allocate_pod_naming_an_empty_pod_is_said_as_the_other_lists_say_it(fleet):
    r = fleet("allocate", "j", "--shape", "4x4x4", "--slices", "2", "--pod", "pod0,")
    assert r.code == 2
    assert r.err.strip() == (
        "tpufleet: error: bad option --pod: 'pod0,' names an empty pod (between two commas, or at an end)"
    )


@pytest.mark.parametrize("by", ["", " "])
def test_by_naming_no_segment_is_refused_as_an_empty_slice_list_is(cli, by):
    """`goodput-report --by ""` (a script's unset variable) made a report of no segment unsaid."""
    r = cli("goodput-report", LOG, "--by", by)
    assert r.code == 2 and r.err.strip() == "tpufleet: error: bad option --by: empty list"
