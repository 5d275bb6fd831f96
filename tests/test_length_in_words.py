"""A time or length written in words or with a sign (`1 hour ago`, `7 days`, `-2h`): refused (exit 2) as before,
ending with the form the tool takes (`did you mean 1h?`)."""

from __future__ import annotations

import json

import pytest

from helpers import one_line


@pytest.mark.parametrize("typed, meant", [("1 hour ago", "1h"), ("-2h", "2h"), ("7 days", "7d"), ("30min", "30m")])
def test_history_since_in_words_names_the_age(fleet, typed, meant):
    r = fleet("history", "--since", typed, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].startswith("bad option --since: ") and said["error"].endswith(f"did you mean {meant}?")


@pytest.mark.parametrize("args", [("plan-spares", "--horizon", "7days"), ("suspects", "--window", "30 days")])
def test_a_length_option_in_words_names_the_length(fleet, args):
    meant = "7d" if "7days" in args else "30d"
    assert one_line(fleet(*args), 2).endswith(f"did you mean {meant}?")


def test_a_word_that_is_no_length_gets_no_guess(fleet):
    assert "did you mean" not in one_line(fleet("history", "--since", "someday"), 2)  # `yesterday`: test_time_words


def test_zero_in_words_where_zero_is_refused_names_no_length(fleet):
    line = one_line(fleet("suspects", "--window", "0 days"), 2)
    assert "--window" in line and "did you mean" not in line
    assert "did you mean 3d?" in one_line(fleet("suspects", "--window", "3 days"), 2)


@pytest.mark.parametrize("count", ["1" * 5000, "1000000"])
def test_a_count_no_length_takes_in_words_is_refused_naming_no_length(fleet, count):
    for argv in (["history", "--since", f"{count} days"], ["suspects", "--window", f"{count}days"]):
        line = one_line(fleet(*argv), 2)
        assert "did you mean" not in line
