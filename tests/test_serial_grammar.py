"""One grammar for a serial wherever one is given (`diff SERIAL [SERIAL]`, `history --since SERIAL`, serve's
`?since=`): the digits 0-9 alone. `diff +1` read serial 1 while `history --since +1` was "not a date"; `history
--since 0000000000000000000001` was "past the last serial" while `diff` read 1."""

from __future__ import annotations

import pytest

from helpers import one_line, snapshot

DIGITS_ALONE = "a serial is written in the digits 0-9 alone (no sign, no '_')"


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("+1", DIGITS_ALONE),
        ("+0", DIGITS_ALONE),
        ("1_000", DIGITS_ALONE),
        ("\u0663", DIGITS_ALONE),
        ("-1", "serials count up from 0"),
        ("9999999999999999999", "past the last serial tpufleet counts (18 digits)"),
    ],
)
def test_diff_and_history_refuse_a_serial_alike(fleet, given, reason):
    before = snapshot(fleet.state)
    assert one_line(fleet("diff", "--", given)).startswith(f"tpufleet: error: bad argument SERIAL {given!r}: {reason}")
    said = one_line(fleet("history", "--since", given))
    assert said.startswith(f"tpufleet: error: bad option --since {given!r}: {reason}")
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("given", ["1", " 1", "-0", "00", "0000000000000000000001"])
def test_diff_and_history_read_a_serial_alike(fleet, given):
    value = int(given)
    history = fleet("history", "--since", given, "-o", "json")
    assert history.code == 0, history.err
    assert [e["serial"] for e in history.json] == [s for s in (1,) if s >= value]
    diff = fleet("diff", given, "-o", "json")
    assert diff.code == 0, diff.err
    assert diff.json["from"] == value
