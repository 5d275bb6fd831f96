"""`history --until SERIAL|TIME`: the timeline up to a serial or a time, both included, alone or with --since (one
night's changes), so an operator reads a past window without `diff`'s net change."""

from __future__ import annotations

from helpers import snapshot


def _serials(fleet, *args: str) -> list[int]:
    r = fleet("history", *args, "-o", "json")
    assert r.code == 0, r.err
    return [row["serial"] for row in r.json]


def test_until_a_serial_stops_there_and_meets_since(fleet):
    for name in ("a", "b", "c"):
        assert fleet("allocate", name, "--shape", "4x4x4").code == 0
    last = _serials(fleet)[-1]
    assert _serials(fleet, "--until", str(last - 2)) == list(range(1, last - 1))
    assert _serials(fleet, "--since", str(last - 2), "--until", str(last - 1)) == [last - 2, last - 1]
    assert _serials(fleet, "--since", str(last), "--until", str(last)) == [last]
    assert _serials(fleet, "--until", "0") == []


def test_until_a_time_and_a_serial_with_a_time(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    every = _serials(fleet)
    assert _serials(fleet, "--until", "2999-01-01") == every
    assert _serials(fleet, "--until", "2000-01-01") == []
    assert _serials(fleet, "--since", str(every[-1]), "--until", "2999-01-01") == [every[-1]]
    assert _serials(fleet, "--since", "2000-01-01", "--until", "2999-01-01T00:00Z") == every


def test_until_before_since_is_exit_2_with_the_swapped_line(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    before = snapshot(fleet.state)
    r = fleet("history", "--since", "2", "--until", "1")
    assert r.code == 2 and "swap them: --since 1 --until 2" in r.err
    r = fleet("history", "--since", "1d", "--until", "7d")
    assert r.code == 2 and "--since 7d --until 1d" in r.err
    r = fleet("history", "--until", "99")  # past the current serial, as --since and diff refuse it
    assert r.code == 2 and "--until" in r.err
    r = fleet("history", "--until", "someday")
    assert r.code == 2 and "--until" in r.err and "'someday'" in r.err
    assert snapshot(fleet.state) == before


def test_until_a_date_takes_that_whole_day(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    rows = fleet("history", "-o", "json").json
    day = rows[-1]["time"][:10]  # the day the lines were written, as they record it (UTC)
    on_the_day = [row["serial"] for row in rows if row["time"].startswith(day)]
    assert on_the_day and _serials(fleet, "--since", day, "--until", day) == on_the_day
