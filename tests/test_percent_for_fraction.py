"""A percentage given where a fraction of 0-1 is taken (`--min-throughput 80`, `80%`, `--confidence 95`): refused
(exit 2, nothing changed) naming the fraction it may mean."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize("typed, meant", [("80", "0.8"), ("80%", "0.8"), ("2%", "0.02"), ("100", "1")])
def test_policy_min_throughput_as_a_percentage_names_the_fraction(fleet, typed, meant):
    assert fleet("allocate", "llm", "--shape", "4x4x4").code == 0
    before = snapshot(fleet.state)
    r = fleet("policy", "llm", "--min-throughput", typed, "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].startswith("bad option --min-throughput: ") and said["error"].endswith(
        f"did you mean {meant}?"
    )
    assert snapshot(fleet.state) == before


def test_plan_spares_confidence_as_a_percentage_names_the_fraction(fleet):
    assert one_line(fleet("plan-spares", "--confidence", "95"), 2).endswith("did you mean 0.95?")


@pytest.mark.parametrize("typed", ["1.5", "200", "x%"])
def test_a_number_that_is_no_percentage_gets_no_guess(fleet, typed):
    assert fleet("allocate", "llm", "--shape", "4x4x4").code == 0
    assert "did you mean" not in one_line(fleet("policy", "llm", "--min-throughput", typed), 2)


def test_a_whole_percentage_where_1_is_refused_names_no_fraction(fleet):
    for typed in ("100", "100%"):
        line = one_line(fleet("plan-spares", "--confidence", typed), 2)
        assert "--confidence" in line and "did you mean" not in line
    assert "did you mean 0.99?" in one_line(fleet("plan-spares", "--confidence", "99%"), 2)
