"""`capacity --confidence P --horizon H` writes its horizon in days as people read a number, never in exponent form."""

from __future__ import annotations


def test_a_long_horizon_is_written_in_whole_days(fleet):
    r = fleet("capacity", "--confidence", "0.95", "--horizon", "999999w")
    assert r.code == 0, r.err
    lines = [line for line in r.out.splitlines() if "expected case:" in line]
    assert lines and all("fail over 6,999,993 days " in line for line in lines), lines


def test_one_day_is_one_day(fleet):
    r = fleet("capacity", "--confidence", "0.95", "--horizon", "1d")
    assert r.code == 0, r.err
    assert "fail over 1 day " in r.out, r.out
