"""A probability shown beside the confidence it is compared with keeps the side of it the figure is on: a
plan-spares figure just short of 95 % is not printed 0.9500 beside "out of reach", and capacity's expected-case
probability, which meets the confidence, is never printed below it. The figures are checked against exact rational
arithmetic on the same rates (no scipy, no numpy)."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest

OCS_PER_DAY = 0.0004  # the shipped TPU v4 rate per OCS per day
HOST_PER_DAY, LINK_PER_DAY = 0.0008, 0.00005


def test_plan_spares_just_short_of_the_confidence_is_not_shown_as_meeting_it(fleet):
    cli = fleet
    # one cube without fault-tolerant routing: the OCS term exp(-48 x 0.0004 x H) caps every spare count, and
    # over 3847 minutes it is 0.94999996, a hair under 95 %
    assert cli("allocate", "n", "--shape", "4x4x4", "--no-fault-tolerant-routing").code == 0
    cap = math.exp(-48 * OCS_PER_DAY * 3847 / 1440)
    assert 0.94995 <= cap < 0.95
    r = cli("plan-spares", "--horizon", "3847m", "-o", "json")
    (pod,) = r.json["pods"]
    assert pod["spares"] is None and pod["probability"] < 0.95
    p_cube = math.exp(-3847 / 1440 * (16 * HOST_PER_DAY + 96 * LINK_PER_DAY))
    held = pod["best_spares"]  # P(the slice's cube or one of the held spares stays healthy) x the OCS term
    assert pod["probability"] == pytest.approx(cap * (1 - (1 - p_cube) ** (1 + held)), rel=1e-12)
    assert "at most 0.9500," not in pod["note"]
    shown = float(re.search(r"at most ([0-9.e-]+),", pod["note"]).group(1))  # type: ignore[union-attr]
    assert shown < 0.95
    table = cli("plan-spares", "--horizon", "3847m").out
    row = next(line for line in table.splitlines() if line.startswith("pod0"))
    assert float(row.split()[6]) < 0.95 and "0.9500" not in table


def test_capacity_expected_probability_is_never_shown_below_the_confidence(fleet):
    cli = fleet
    # 64 clean cubes over 14 days: P(at most 22 fail) = 0.99300049..., exactly (rational arithmetic below)
    p = Fraction(math.exp(-14 * (16 * HOST_PER_DAY + 96 * LINK_PER_DAY)))
    at_most_22 = sum(math.comb(64, k) * (1 - p) ** k * p ** (64 - k) for k in range(23))
    at_most_21 = at_most_22 - math.comb(64, 22) * (1 - p) ** 22 * p**42
    confidence = 0.9930004
    assert at_most_21 < confidence <= at_most_22
    r = cli("capacity", "--confidence", str(confidence), "--horizon", "14d", "-o", "json")
    e = r.json["pods"][0]["expected_failures"]
    assert e["failures"] == 22 and e["probability"] == pytest.approx(float(at_most_22), rel=1e-12)
    line = next(
        x
        for x in cli("capacity", "--confidence", str(confidence), "--horizon", "14d").out.splitlines()
        if "expected case" in x
    )
    shown = float(re.search(r"with probability ([0-9.e-]+) ", line).group(1))  # type: ignore[union-attr]
    assert shown >= confidence, line
