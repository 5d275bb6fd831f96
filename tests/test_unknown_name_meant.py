"""A slice or job name that is a near miss of a known one is refused naming the one meant; a long list is cut."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.fixture
def named(fleet):
    assert fleet("allocate", "llm", "--shape", "4x4x4").code == 0
    assert fleet("allocate", "jb", "--shape", "4x4x4", "--slices", "2").code == 0
    return fleet


@pytest.mark.parametrize(
    "command, typed, meant",
    [
        (("explain",), "lmm", "llm"),
        (("release",), "LLM", "llm"),
        (("routes",), "jbb", "jb"),
        (("reschedule",), "jb-11", "jb-1"),  # `jb-2`, as near jb-0 as jb-1, gets no guess (test_text_closest)
        (("policy",), "llm-", "llm"),
    ],
)
def test_a_near_miss_is_refused_naming_the_name_meant(named, command, typed, meant):
    before = snapshot(named.state)
    r = named(*command, typed, *(["--min-throughput", "0.8"] if command == ("policy",) else []), "-o", "json")
    said = json.loads(r.err)
    assert r.code == 1 and said["exit_code"] == 1
    assert f"'{typed}'; did you mean {meant}?" in said["error"]
    assert snapshot(named.state) == before


def test_a_name_like_none_is_refused_without_a_guess(named):
    line = one_line(named("explain", "zzz"), 1)
    assert "did you mean" not in line and "slices: jb-0, jb-1, llm" in line


def test_a_long_list_of_slices_is_cut_and_counted(fleet):
    for i in range(23):
        assert fleet("allocate", f"s{i}", "--shape", "2x2x1").code == 0
    line = one_line(fleet("release", "s99"), 1)
    assert "s0, s1, s2" in line and "s19 and 3 more" in line and "s20" not in line
