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


@pytest.mark.parametrize(
    "args, word, meant",
    [
        (("report", "\u2014out", "x.txt"), "\u2014out", "--out"),
        (("status", "\u2013o", "json"), "\u2013o", "-o"),
        (("allocate", "x", "\u2014shape", "4x4x4"), "\u2014shape", "--shape"),
        (("allocate", "x", "--shape=4x4x4", "\u2013\u2013twisted"), "\u2013\u2013twisted", "--twisted"),
        (("inject-fault", "host:c00/1", "\u2014dry-run"), "\u2014dry-run", "--dry-run"),
        (("\u2014debug", "status"), "\u2014debug", "--debug"),
    ],
)
def test_an_option_typed_with_a_typographic_dash_is_named_with_the_option_meant(
    fleet, tmp_path, monkeypatch, args, word, meant
):
    """`report —out x` (an em dash, as a document or a chat writes `--`) was refused as unexpected extra arguments,
    `allocate x —shape 4x4x4` as a bad slice name, neither naming the option meant."""
    monkeypatch.chdir(tmp_path)
    before = snapshot(fleet.state)
    line = one_line(fleet(*args), 2)
    assert line == f"tpufleet: error: bad option '{word}': typed with a typographic dash (text pasted?); type {meant}"
    assert snapshot(fleet.state) == before
    assert [p for p in tmp_path.iterdir() if p != fleet.state] == []


def test_text_with_a_typographic_dash_is_still_text(fleet):
    r = fleet("inject-fault", "host:c00/1", "--reason", "\u2014 see the ticket", "-o", "json")
    assert r.code == 0, r.err
    assert fleet("status", "--", "\u2014out").code == 2  # after `--` an argument, which status takes none of


def test_every_command_checks_for_typographic_dashes():
    from tpufleet.cli import _click_command
    from tpufleet.cli.dashes import checks_dashes

    def walk(command):
        for sub in getattr(command, "commands", {}).values():
            yield from walk(sub)
        yield command

    assert all(checks_dashes(c) for c in walk(_click_command()))


@pytest.mark.parametrize("target", ["host:c00/1", "ocs:pod0/x/5"])
def test_a_target_taken_as_the_reason_is_named(fleet, target):
    """`inject-fault --reason host:c00/1` was told to give a TARGET, which it had: --reason took it as its text."""
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "--reason", target, "--dry-run"), 2)
    assert line == (
        "tpufleet: error: give exactly one of TARGET, --from FILE or --random N "
        f"(--reason took '{target}' as its text: was the reason left out?)"
    )
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    "args, option, given",
    [
        (("plan-spares",), "--confidence", "1"),
        (("capacity",), "--confidence", "0"),
        (("suspects",), "--p-value", "1.00"),
    ],
)
def test_a_probability_outside_0_to_1_is_refused_as_typed(fleet, args, option, given):
    """`plan-spares --confidence 1` said `1.0 must be between 0 and 1 (exclusive)`: the number as converted, not as
    typed, unlike every other range an option refuses (`'-1' is not between 0 and 86400`)."""
    line = one_line(fleet(*args, option, given), 2)
    assert line == f"tpufleet: error: bad option {option}: '{given}' is not between 0 and 1 (exclusive)"


@pytest.mark.parametrize("given", ["1001", "99999999999"])
def test_capacity_after_beyond_its_bound_is_refused_as_typed_as_every_range_is(fleet, given):
    """`capacity --after 99999999999` said `99999999999 is outside 0-1000`, unlike every other option's range
    (`'-1' is below 0`, `'0' is not between 1 and 10000`)."""
    line = one_line(fleet("capacity", "--after", given), 2)
    assert line == f"tpufleet: error: bad option --after: '{given}' is not between 0 and 1000"


SPEC = "fixtures/sweeps/spare-cubes.yaml"


@pytest.mark.parametrize(
    "args, options",
    [
        (("simulate-availability", "--cubes", "1", "--chips", "64"), "--cubes and --chips"),
        (("simulate-availability", "--fault-rates", "shipped", "--host-availability", "0.9"), "--fault-rates and"),
        (("sweep", SPEC, "--out", "{tmp}/out", "--serial", "--workers", "2"), "--serial and --cluster/--workers"),
        (("sweep", SPEC, "--out", "{tmp}/out", "--workers", "2", "--cluster", "tcp://h:1"), "--workers and --cluster"),
        (("goodput-report", "log.jsonl", "--workers", "2", "--cluster", "tcp://h:1"), "--workers and --cluster"),
    ],
)
def test_two_options_that_exclude_each_other_are_refused_as_bad_options(cli, tmp_path, args, options):
    """`simulate-availability --cubes 1 --chips 64` said `give --cubes or --chips, not both` (and `sweep`,
    `goodput-report` of --serial, --workers and --cluster alike), unlike every other refusal of an option's value,
    `bad option(s) NAME: ...`; nothing is run."""
    line = one_line(cli(*(a.format(tmp=tmp_path) for a in args), state=False), 2)
    assert line.startswith(f"tpufleet: error: bad options {options}")
    assert not (tmp_path / "out").exists()
