"""The tests' in-process runner (`conftest.Cli`) runs a command as a real run does."""

from __future__ import annotations

import sys


def test_the_journal_records_the_command_the_runner_ran_not_pytests_command_line(fleet, monkeypatch):
    """The journal records sys.argv: under the runner it was pytest's, as long as the list of files it was given,
    and a test with a small journal-line limit saw its own lines as damaged only when run among many files."""
    long_run = ["pytest", *[f"tests/test_{n}.py" for n in range(200)]]
    monkeypatch.setattr(sys, "argv", long_run)
    monkeypatch.setattr(type(fleet), "pytest_argv", tuple(long_run))  # as if pytest had been started so
    assert fleet("inject-fault", "host:c01/0").code == 0
    shown = fleet("show", "journal", "-o", "json").json
    assert shown[-1]["command"] == f"tpufleet --state {fleet.state} inject-fault host:c01/0"
    assert sys.argv == long_run  # given back after the command


def test_a_command_line_a_test_set_itself_is_the_one_recorded(fleet, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["tpufleet", f"--state={fleet.state}", "inject-fault", "host:c01/0"])
    assert fleet("inject-fault", "host:c01/0").code == 0
    assert fleet("show", "journal", "-o", "json").json[-1]["command"] == " ".join(sys.argv)
