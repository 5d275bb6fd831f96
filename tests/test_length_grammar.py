"""One reading of a length of time wherever one is given (`suspects --window`, `plan-spares`/`capacity
--horizon`, `goodput-report --window`, an age in `history --since`): `0000001h` was "longer than this tool counts"
for three of them and "not a length" for the fourth; `999999d`, within the 999999 of a unit said to be counted, was
"outside the calendar" for `suspects` and "not a length" for `goodput-report`."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import one_line

LOG = Path(__file__).parent.parent / "fixtures" / "goodput" / "fleet.jsonl"
NOT_A_LENGTH = "is not a length of time such as 7d, 12h, 30m or 2w (a whole number and one of s, m, h, d, w)"


def _commands(value: str) -> list[tuple[str, ...]]:
    return [
        ("suspects", "--window", value),
        ("plan-spares", "--confidence", "0.9", "--horizon", value),
        ("goodput-report", str(LOG), "--window", value),
    ]


def test_leading_zeros_are_read_as_every_number_reads_them(fleet):
    assert fleet("suspects", "--window", "0000001h", "-o", "json").json["window_days"] == pytest.approx(1 / 24)
    report = fleet("goodput-report", str(LOG), "--window", "0000001h", "-o", "json")
    assert report.code == 0, report.err
    assert [w["window"] for w in report.json["windows"]] == ["1h"]
    assert fleet("history", "--since", "0000001h").code == 0


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("7D", NOT_A_LENGTH + "; did you mean 7d?"),
        ("1.5h", NOT_A_LENGTH),
        ("0h", "must be longer than zero"),
        ("1000000d", "is longer than this tool counts (999999 of a unit)"),
    ],
)
def test_each_option_refuses_a_length_alike(fleet, value, said):
    for args in _commands(value):
        option = args[-2]
        assert one_line(fleet(*args)) == f"tpufleet: error: bad option {option}: {value!r} {said}", args


def test_the_longest_length_counted_is_read_or_refused_as_too_long(fleet):
    assert fleet("suspects", "--window", "999999d", "-o", "json").json["window_days"] == 999999
    said = one_line(fleet("goodput-report", str(LOG), "--window", "999999d"))
    assert (
        said == "tpufleet: error: bad option --window: '999999d' is longer than a log's times span (to the year 2200)"
    )


def test_an_age_past_the_calendar_start_is_everything_for_history_as_for_suspects(fleet):
    """`suspects --window 999999w` took every fault; `history --since 999999w` was refused as outside the calendar."""
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert fleet("suspects", "--window", "999999w", "-o", "json").code == 0
    r = fleet("history", "--since", "999999w", "-o", "json")
    assert r.code == 0, r.err
    assert [row["serial"] for row in r.json] == [1, 2]
