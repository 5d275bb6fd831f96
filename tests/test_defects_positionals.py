"""Negative numbers given as arguments reach the argument, which says what it takes (not `No such option '-1'`)."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize(
    "args", [("diff", "-1"), ("diff", "0", "-1"), ("diff", "-1", "-o", "json"), ("diff", "--", "-1")]
)
def test_a_negative_serial_is_refused_naming_the_argument_and_value(fleet, args):
    """`diff -1` was refused as an unknown option '-1'; serials are the journal's own numbers, from 0."""
    before = snapshot(fleet.state)
    r = fleet(*args)
    said = "bad argument SERIAL '-1': serials count up from 0 (`tpufleet history` lists them)"
    if "json" in args:
        assert r.code == 2 and json.loads(r.err) == {"error": said, "exit_code": 2, "items": []}
    else:
        assert one_line(r, 2) == f"tpufleet: error: {said}"
    assert snapshot(fleet.state) == before


def test_a_negative_number_as_a_name_is_refused_as_a_bad_name(fleet):
    before = snapshot(fleet.state)
    line = one_line(fleet("allocate", "-1", "--shape", "4x4x4"), 2)
    assert line.startswith("tpufleet: error: bad name '-1': ")
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("shape, more", [("-4x4x4", ()), ("-4x4x8", ("--twisted", "-o", "json")), ("-4x", ())])
def test_a_shape_that_starts_with_a_dash_is_refused_as_a_bad_shape(fleet, shape, more):
    """`topology -4x4x4` was refused as `No such option '-4'`, naming neither the argument nor the value."""
    r = fleet("topology", shape, *more)
    said = f"bad shape '{shape}': expected AxBxC, e.g. 4x4x8"
    if "json" in more:
        assert r.code == 2 and json.loads(r.err) == {"error": said, "exit_code": 2, "items": []}
    else:
        assert one_line(r, 2) == f"tpufleet: error: {said}"


def test_an_unknown_option_is_still_refused_as_one(fleet):
    r = fleet("diff", "-x")
    assert r.code == 2 and "-x" in r.err and "SERIAL" not in r.err


def test_every_command_with_arguments_reads_a_negative_number_as_one():
    """The class, not the instances: walk the whole command tree as `main` builds it."""
    from tpufleet.cli import _click_command
    from tpufleet.cli.positionals import reads_negative_numbers

    def walk(command):
        for sub in getattr(command, "commands", {}).values():
            yield from walk(sub)
        yield command

    with_arguments = [c for c in walk(_click_command()) if any(p.param_type_name == "argument" for p in c.params)]
    assert len(with_arguments) > 15
    assert all(reads_negative_numbers(c) for c in with_arguments)


@pytest.mark.parametrize("since", ["-1", "-12"])
def test_history_since_a_negative_serial_says_serials_count_from_0(fleet, since):
    """`history --since -1` was told '-1' is not a date, an ISO time or an age, as if serials were not taken."""
    line = one_line(fleet("history", "--since", since), 2)
    assert line.startswith(f"tpufleet: error: bad option --since '{since}': serials count up from 0; or give a date")


def test_history_since_minus_zero_is_serial_zero_as_diff_reads_it(fleet):
    """`history --since -0` was refused with `serials count up from 0`, while `diff -0` read it as serial 0: -0 is
    0, no negative serial. -1 is still refused by both."""
    assert fleet("history", "--since", "-0", "-o", "json").json == fleet("history", "--since", "0", "-o", "json").json
    assert fleet("diff", "-0", "-o", "json").json == fleet("diff", "0", "-o", "json").json
    assert "serials count up from 0" in one_line(fleet("history", "--since", "-1"), 2)
    assert "serials count up from 0" in one_line(fleet("diff", "-1"), 2)


def test_history_since_neither_a_serial_nor_a_time_names_both_forms(fleet):
    """`history --since abc` was told it is not a date, an ISO time or an age: the serial it also takes went unsaid."""
    line = one_line(fleet("history", "--since", "abc"), 2)
    assert line.startswith("tpufleet: error: bad option --since: 'abc' is not a serial (40), a date (2026-01-06), ")
