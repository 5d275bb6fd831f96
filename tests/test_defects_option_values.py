"""An option given another option as its value (its own value left out) is refused, not read as the value."""

from __future__ import annotations

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize("given", ["--dry-run", "-h", "--debug", "--planned"])
def test_a_reason_that_is_an_option_is_refused_and_nothing_is_injected(fleet, given):
    """`inject-fault host:c00/1 --reason --dry-run` took '--dry-run' as the reason and injected the fault for real."""
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "host:c00/1", "--reason", given, "--dry-run"), 2)
    assert (
        line == f"tpufleet: error: bad option --reason '{given}': that is an option; the value of --reason is missing"
    )
    assert snapshot(fleet.state) == before


def test_a_reason_that_only_starts_with_a_dash_is_text(fleet):
    r = fleet("inject-fault", "host:c00/1", "--reason", "-- healthd: PCIe errors", "-o", "json")
    assert r.code == 0, r.err


def test_the_state_option_given_an_option_is_refused_naming_it(fleet):
    line = one_line(fleet("--state", "--debug", "status", state=False), 2)
    assert line.startswith("tpufleet: error: bad option --state '--debug': that is an option")


def test_every_text_option_of_every_command_has_the_check():
    from tpufleet.cli import _click_command
    from tpufleet.cli.optionvalues import is_checked_text
    from tpufleet.cli.paths import is_checked

    def walk(command):
        for sub in getattr(command, "commands", {}).values():
            yield from walk(sub)
        yield from command.params

    text = [p for p in walk(_click_command()) if p.param_type_name == "option" and "String" in type(p.type).__name__]
    assert len(text) > 30
    assert all(is_checked_text(p.type) or is_checked(p.type) for p in text)
