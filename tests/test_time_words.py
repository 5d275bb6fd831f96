"""A time written in words (`--since yesterday`, `--since 'last week'`) is refused, as before, but the refusal names
the form meant: yesterday's date (its start) or the age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from helpers import snapshot


def test_yesterday_names_its_date_and_the_age(fleet):
    before = snapshot(fleet.state)
    r = fleet("faults", "--since", "yesterday")
    day = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    other = (datetime.now(UTC) - timedelta(days=2)).date().isoformat()  # a run across midnight
    assert r.code == 2 and "'yesterday'" in r.err
    assert f"did you mean {day} (its start), or 1d?" in r.err or f"did you mean {other} (its start), or 1d?" in r.err
    assert snapshot(fleet.state) == before


def test_a_span_in_words_names_the_age_and_the_suggestion_is_taken(fleet):
    r = fleet("history", "--since", "Last  Week")
    assert r.code == 2 and "did you mean 7d?" in r.err
    assert fleet("history", "--since", "7d").code == 0
    r = fleet("history", "--since", "next week")  # no reading of it: no guess
    assert r.code == 2 and "did you mean" not in r.err
