"""A maintenance notice's times are RFC 3339: a time without its UTC offset is bad input, not read as UTC."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("2099-07-01T09:00:00", "2099-07-01T13:00:00Z"),  # local time as a person writes it: no offset
        ("2099-07-01T09:00:00Z", "2099-07-01T13:00:00"),
        ("2099-07-01", "2099-07-02T00:00:00Z"),  # a day, no time of day
    ],
)
def test_a_notice_time_without_its_offset_is_bad_input(fleet, tmp_path, start, end):
    """`window_start: 2099-07-01T09:00:00` (meant as local time) planned a drain at 09:00 UTC, and a bare day at
    midnight UTC, without a word: the wave drained cubes hours before or after the maintenance."""
    given = tmp_path / "notices.yaml"
    given.write_text(f'- {{target: "cube:c00", window_start: "{start}", window_end: "{end}"}}\n')
    for extra in ([], ["-o", "json"]):
        r = fleet("plan-maintenance", "--notices", str(given), *extra)
        bad = start if not start.endswith("Z") else end
        field = "window_start" if bad == start else "window_end"
        assert r.code == 2, (r.code, r.out)
        assert str(given) in r.err and f"field {field}: '{bad}'" in r.err, r.err


@pytest.mark.parametrize("start", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_notice_time_outside_the_calendar_in_utc_is_told_so(fleet, tmp_path, start):
    """Valid RFC 3339, but the year 0 or 10000 once in UTC: it was refused as "not an RFC 3339 time"."""
    given = tmp_path / "notices.yaml"
    given.write_text(f'- {{target: "cube:c00", window_start: "{start}", window_end: "2099-07-01T13:00:00Z"}}\n')
    r = fleet("plan-maintenance", "--notices", str(given))
    assert r.code == 2 and r.err.count("\n") == 1
    assert f"field window_start: '{start}' lies outside the years 1 to 9999 once in UTC" in r.err, r.err
