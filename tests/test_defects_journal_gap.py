"""Regression tests for a journal that ends before the state's serial (its last lines lost: an older journal put
back). Every reader that presents the journal says which serials it lacks, and still works."""

from __future__ import annotations

import pytest

from helpers import snapshot


@pytest.fixture
def short(fleet):
    """Serials 1..4 committed; the journal cut back to its first two lines."""
    assert fleet("inject-fault", "cube:c03").code == 0
    assert fleet("inject-fault", "cube:c04").code == 0
    assert fleet("inject-fault", "cube:c05").code == 0
    path = fleet.state / "journal.jsonl"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:2]))
    return fleet


@pytest.mark.parametrize(
    "command", [("history",), ("show", "journal"), ("show", "journal", "--tail", "1"), ("report",)]
)
def test_a_reader_of_a_journal_ending_before_the_state_says_which_serials_it_lacks(short, command):
    before = snapshot(short.state)
    r = short(*command, "-o", "json")
    assert r.code == 0, r.err
    assert "the changes of serials 3..4 are not in it" in r.err
    assert snapshot(short.state) == before


def test_diff_gives_the_journal_gap_in_its_json(short):
    r = short("diff", "1", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["journal_gap"] == {"from": 3, "to": 4}
    assert "the changes of serials 3..4 are not in it" in r.err


def test_a_whole_journal_says_nothing_of_a_gap(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    r = fleet("diff", "0", "-o", "json")
    assert r.json["journal_gap"] is None
    for command in (("history",), ("show", "journal"), ("report",)):
        assert "are not in it" not in fleet(*command).err


def test_damaged_last_lines_are_named_as_damaged_not_as_a_gap(short):
    path = short.state / "journal.jsonl"
    path.write_bytes(path.read_bytes() + b'{"serial": 3, garbage\n')
    r = short("history")
    assert "damaged line(s) 3 skipped" in r.err and "the changes of serials 3..4 are not in it" in r.err
    path.write_bytes(path.read_bytes() + b"not json\n")
    r = short("history")
    assert "damaged line(s) 3, 4 skipped" in r.err and "are not in it" not in r.err


def test_a_line_copied_by_hand_to_the_journals_end_is_no_gap(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    path = fleet.state / "journal.jsonl"
    path.write_bytes(path.read_bytes() + path.read_bytes().splitlines(keepends=True)[0])  # serial 1 again, last
    for command in (("show", "journal", "--tail", "1"), ("history",), ("report",)):
        r = fleet(*command)
        assert r.code == 0 and "are not in it" not in r.err


@pytest.mark.parametrize(
    "command", [("history",), ("diff", "0"), ("show", "journal"), ("show", "journal", "--tail", "1"), ("report",)]
)
def test_a_reader_of_a_state_file_older_than_its_journal_says_how_many_entries_it_does_not_show(fleet, command):
    """A state file put back from an older backup: every writer refuses it (exit 2), and the readers showed the
    shorter history without a word."""
    backup = (fleet.state / "state.json").read_bytes()  # serial 1
    for cube in ("c03", "c04", "c05"):
        assert fleet("inject-fault", f"cube:{cube}").code == 0
    (fleet.state / "state.json").write_bytes(backup)
    before = snapshot(fleet.state)
    r = fleet(*command)
    assert r.code == 0 and "3 entries are beyond the state's serial 1 (up to serial 4)" in r.err
    assert snapshot(fleet.state) == before


def test_one_entry_beyond_the_state_a_crash_leaves_is_not_remarked(fleet):
    assert fleet("inject-fault", "cube:c03").code == 0
    backup = (fleet.state / "state.json").read_bytes()
    assert fleet("inject-fault", "cube:c04").code == 0
    (fleet.state / "state.json").write_bytes(backup)  # as a crash between the journal line and the state leaves it
    assert "beyond" not in fleet("history").err


def test_serve_says_on_stderr_what_show_journal_says_of_the_journals_ends(short, capsys):
    pytest.importorskip("starlette", reason="tpufleet serve needs the serve extra (starlette, uvicorn)")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from test_serve import client

    said = short("show", "journal", "-o", "json")
    capsys.readouterr()
    r = client(short.state).get("/api/v1/journal")
    assert r.status_code == 200 and r.text == said.out
    err = capsys.readouterr().err
    assert (
        "the changes of serials 3..4 are not in it" in err and "the changes of serials 3..4 are not in it" in said.err
    )
