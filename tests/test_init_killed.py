"""An `init` killed after its journal line, before its state file: its fleet was never committed, so the next
`init` drops that line as every writer drops a crash's line beyond the state, and takes its serial."""

from __future__ import annotations

from helpers import crash_at


def test_an_init_killed_after_its_journal_line_leaves_one_init_in_history(cli):
    crash_at(cli.state, "journal.after_fsync", "init")
    assert not (cli.state / "state.json").exists()
    r = cli("init", "-o", "json")
    assert r.code == 0, r.err
    assert cli("show", "inventory", "-o", "json").code == 0
    history = cli("history", "-o", "json")
    assert history.code == 0 and history.err == ""
    assert [row["serial"] for row in history.json] == [1]
    assert len((cli.state / "journal.jsonl").read_bytes().splitlines()) == 1


def test_an_init_killed_after_a_fleets_changes_keeps_them_and_numbers_on(cli):
    assert cli("init").code == 0
    assert cli("inject-fault", "cube:c03").code == 0
    (cli.state / "state.json").unlink()  # the state file lost: the journal's serials go on
    crash_at(cli.state, "journal.after_fsync", "init")
    assert cli("init").code == 0
    history = cli("history", "-o", "json")
    assert history.code == 0, history.err
    assert [row["serial"] for row in history.json] == [1, 2, 3]
    assert [row["summary"].split(":")[0] for row in history.json] == ["init", "inject-fault f1 cube", "init"]
