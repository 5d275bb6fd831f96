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


@pytest.mark.parametrize(
    "command", [("history",), ("show", "journal"), ("report",), ("diff", "1"), ("faults", "--all"), ("suspects",)]
)
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
    for command in (("history",), ("faults", "--all"), ("suspects",), ("report",)):
        r = fleet(*command, "-o", "json")
        assert r.code == 0 and "missing inside it" not in r.err, (command, r.err)


@pytest.mark.parametrize("command", [("faults", "--all"), ("suspects",)])
def test_a_reader_of_faults_in_the_journal_says_what_history_says_of_its_ends(fleet, command):
    """Faults recorded in lines lost at the journal's end, or beyond an older state file, are not listed."""
    for cube in ("c03", "c04", "c05"):
        assert fleet("inject-fault", f"cube:{cube}").code == 0
    path = fleet.state / "journal.jsonl"
    whole = path.read_bytes()
    path.write_bytes(b"".join(whole.splitlines(keepends=True)[:2]))
    r = fleet(*command, "-o", "json")
    assert r.code == 0 and "the changes of serials 3..4 are not in it" in r.err, r.err
    path.write_bytes(whole)
    state = (fleet.state / "state.json").read_bytes()
    for cube in ("c06", "c07"):
        assert fleet("inject-fault", f"cube:{cube}").code == 0
    (fleet.state / "state.json").write_bytes(state)  # a state file older than its journal by two entries
    before = snapshot(fleet.state)
    r = fleet(*command, "-o", "json")
    assert r.code == 0 and "2 entries are beyond the state's serial" in r.err, r.err
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    ("start", "end", "missing"),
    [
        ("1", None, [{"from": 3, "to": 4}]),
        ("3", None, [{"from": 4, "to": 4}]),
        ("1", "3", [{"from": 3, "to": 3}]),
        ("4", None, []),
        ("1", "2", []),
    ],
)
def test_diff_gives_the_serials_missing_inside_its_range_in_its_json(holed, start, end, missing):
    r = holed("diff", start, *([end] if end else []), "-o", "json")
    assert r.code == 0, r.err
    assert (r.json["journal_missing"], r.json["journal_gap"]) == (missing, None)


def test_diff_of_a_whole_journal_misses_nothing(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    assert fleet("diff", "0", "-o", "json").json["journal_missing"] == []
