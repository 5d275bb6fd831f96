"""goodput-report's --since/--until read as `history` and `faults` read theirs: a date given to --until runs to its
day's end (`--since D --until D` is that whole day), an --until before --since is refused (exit 2) in the same words,
naming both values and the options swapped; one at the very moment --since is (a window of no time, which has no
figures) is refused too, naming both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import one_line

LOG = Path(__file__).parent.parent / "fixtures/goodput/fleet.jsonl"  # 2026-01-05, from 00:00:00 to 00:10:30


def _fleet(cli, *args: str) -> dict:
    r = cli("goodput-report", LOG, *args, "-o", "json", state=False)
    assert r.code == 0, r.err
    return r.json["fleet"]


@pytest.mark.parametrize(
    "since, until",
    [("2026-12-01", "2026-11-01"), ("1d", "7d"), ("2026-01-06", "2026-01-05")],
)
def test_a_reversed_window_names_both_and_the_swap(cli, since, until):
    r = cli("goodput-report", LOG, "--since", since, "--until", until, "-o", "json", state=False)
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert f"--until '{until}' is before --since '{since}'" in said["error"]
    assert said["error"].endswith(f"swap them: --since {until} --until {since}")


def test_an_empty_window_names_both_and_asks_for_a_later_until(cli):
    r = cli("goodput-report", LOG, "--since", "2026-01-05T00:05Z", "--until", "2026-01-05T00:05:00Z", state=False)
    line = one_line(r, 2)
    assert "--until '2026-01-05T00:05:00Z' is the moment --since '2026-01-05T00:05Z'" in line
    assert line.endswith("give a later --until")


def test_the_same_age_at_both_ends_is_an_empty_window(cli):
    """The two ages were counted back from two moments a few microseconds apart, so `--since 1d --until 1d` was
    no empty window, and the run went on to find no job events in it."""
    r = cli("goodput-report", LOG, "--since", "1d", "--until", "1d", state=False)
    line = one_line(r, 2)
    assert "--until '1d' is the moment --since '1d'" in line and line.endswith("give a later --until")


def test_until_a_date_takes_that_whole_day(cli):
    whole = _fleet(cli)
    assert _fleet(cli, "--since", "2026-01-05", "--until", "2026-01-05") == whole
    assert _fleet(cli, "--until", "2026-01-05") == whole
    assert _fleet(cli, "--until", "20260105T2359Z") == whole  # a time is that moment: the same day's end
    r = cli("goodput-report", LOG, "--until", "2026-01-04", state=False)  # the day before the logs: nothing
    assert r.code == 2 and "--since/--until" in r.err


def test_until_in_words_is_told_the_date_to_its_end(cli):
    line = one_line(cli("goodput-report", LOG, "--until", "yesterday", state=False), 2)
    assert "--until" in line and "(to its end)" in line


def test_until_the_bounds_last_date_is_taken_to_the_bound(cli):
    # 2200-01-01 is inside the logs' bounds (1970-01-01 .. 2200-01-01): its day runs to the bound, not past it
    assert _fleet(cli, "--until", "2200-01-01") == _fleet(cli)
    r = cli("goodput-report", LOG, "--until", "2200-01-02", state=False)
    assert r.code == 2 and "--until" in r.err


def test_eight_digits_that_are_a_date_are_refused_naming_both_readings(cli):
    """`--until 20260105` was read as POSIX seconds, 1970-08-23, and the report of January's logs was empty."""
    r = cli("goodput-report", LOG, "--until", "20260105", state=False)
    line = one_line(r, 2)
    assert "POSIX seconds (1970-08-23) or the date 2026-01-05?" in line and "20260105.0" in line
    assert _fleet(cli, "--until", "2026-01-05") == _fleet(cli)  # the date, given as the refusal says
    seconds = cli("goodput-report", LOG, "--since", "1767571200", "-o", "json", state=False)  # 2026-01-05T00:00Z
    assert seconds.code == 0 and seconds.json["fleet"] == _fleet(cli)  # other numbers are seconds, as before
