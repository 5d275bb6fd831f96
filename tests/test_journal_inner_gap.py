"""A journal that lacks serials inside it (lines lost between others): every reader that presents the journal
says which serials are missing, as it says those missing at its end, and changes nothing."""

from __future__ import annotations

import pytest

from helpers import snapshot

INNER = "serials 3..4 are missing inside it"


@pytest.fixture
def holed(fleet):
    """Serials 1..5 committed; the lines of serials 3 and 4 lost before serial 5 was written."""
    assert fleet("inject-fault", "cube:c03").code == 0
    assert fleet("inject-fault", "cube:c04").code == 0
    assert fleet("inject-fault", "cube:c05").code == 0
    path = fleet.state / "journal.jsonl"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:2]))
    assert fleet("inject-fault", "cube:c06").code == 0
    return fleet


@pytest.mark.parametrize("command", [("history",), ("show", "journal"), ("report",), ("diff", "1")])
def test_a_reader_of_a_journal_with_lost_lines_inside_says_which_serials_are_missing(holed, command):
    before = snapshot(holed.state)
    r = holed(*command, "-o", "json")
    assert r.code == 0, r.err
    assert r.err.count(INNER) == 1
    assert snapshot(holed.state) == before


def test_a_damaged_line_inside_is_named_as_damaged_not_as_missing_serials(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    assert fleet("inject-fault", "cube:c04").code == 0
    path = fleet.state / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = b"garbage\n"
    path.write_bytes(b"".join(lines))
    r = fleet("history", "-o", "json")
    assert r.code == 0, r.err
    assert "damaged line(s) 2 skipped" in r.err and "missing inside it" not in r.err


def test_a_whole_journal_says_nothing_of_missing_serials(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    for command in (("history",), ("report",)):
        r = fleet(*command, "-o", "json")
        assert r.code == 0 and "missing inside it" not in r.err, (command, r.err)
