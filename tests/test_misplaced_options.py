"""An option on the wrong side of the command's name is refused naming the option and the command line that runs."""

from __future__ import annotations

import json

import pytest

from helpers import one_line, snapshot


def test_the_tools_option_after_the_command_gives_the_line_with_it_before(fleet):
    before = snapshot(fleet.state)
    line = one_line(fleet("status", "--state", str(fleet.state), state=False), 2)
    assert line.startswith("tpufleet: error: bad option --state: ")
    assert line.endswith(f"run `tpufleet --state {fleet.state} status`")
    assert snapshot(fleet.state) == before


def test_a_commands_option_before_the_command_gives_the_line_with_it_after(fleet):
    before = snapshot(fleet.state)
    r = fleet("--dry-run", "inject-fault", "cube:c10", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].startswith("bad option --dry-run: ")
    assert said["error"].endswith(f"run `tpufleet --state {fleet.state} inject-fault cube:c10 -o json --dry-run`")
    assert snapshot(fleet.state) == before


def test_an_option_of_a_groups_command_before_it_names_the_command(fleet):
    line = one_line(fleet("--state", fleet.state, "--apply", "import", "k8s", "nodes.json", state=False), 2)
    assert "`import k8s`" in line
    assert line.endswith(f"run `tpufleet --state {fleet.state} import k8s nodes.json --apply`")


def test_an_option_with_its_value_moves_with_it(fleet):
    before = snapshot(fleet.state)
    line = one_line(fleet("--state", fleet.state, "--shape", "4x4x8", "allocate", "q", state=False), 2)
    assert line.endswith(f"run `tpufleet --state {fleet.state} allocate q --shape 4x4x8`")
    assert snapshot(fleet.state) == before


def test_an_option_no_command_has_is_refused_as_before(fleet):
    line = one_line(fleet("--bogus", "status"), 2)
    assert "--bogus" in line and "run `" not in line


def test_two_names_where_one_is_taken_say_what_the_command_takes(fleet):
    assert fleet("allocate", "a", "--shape", "4x4x4").code == 0
    assert fleet("allocate", "b", "--shape", "4x4x4").code == 0
    before = snapshot(fleet.state)
    r = fleet("release", "a", "b", "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert "(b)" in said["error"] and said["error"].endswith("`release` takes SLICE|JOB: one command for each")
    assert snapshot(fleet.state) == before


def test_an_argument_to_a_command_without_any_says_so(fleet):
    assert one_line(fleet("status", "extra"), 2).endswith("`status` takes no argument")


def test_a_groups_command_is_named_whole(fleet):
    assert one_line(fleet("import", "k8s", "a.json", "b.json"), 2).endswith(
        "`import k8s` takes FILE|-: one command for each"
    )


def test_a_shape_typed_without_its_option_gives_the_line_with_it(fleet):
    before = snapshot(fleet.state)
    line = one_line(fleet("--state", fleet.state, "allocate", "a", "4x4x8", "--twisted", state=False), 2)
    assert "--shape" in line and line.endswith(
        f"run `tpufleet --state {fleet.state} allocate a --shape 4x4x8 --twisted`"
    )
    assert snapshot(fleet.state) == before


def test_an_option_without_its_value_never_moves_the_commands_name_as_its_value(fleet):
    before = snapshot(fleet.state)
    line = one_line(fleet("--shape", "allocate", "q"), 2)
    assert "--shape" in line and "run `" not in line
    line = one_line(fleet("status", "--group", state=False), 2)
    assert "--group" in line and "run `" not in line
    assert snapshot(fleet.state) == before


def test_the_tools_option_on_both_sides_gives_no_line_that_repeats_the_refused_one(fleet):
    before = snapshot(fleet.state)
    r = fleet("status", "--state", str(fleet.state), "-o", "json")
    said = json.loads(r.err)
    assert r.code == 2 and said["exit_code"] == 2
    assert said["error"].startswith("bad option --state: ") and "run `" not in said["error"]
    assert snapshot(fleet.state) == before


def test_a_shape_that_is_the_name_or_another_options_value_gets_no_line(fleet):
    before = snapshot(fleet.state)
    for argv in (["allocate", "4x4x4"], ["allocate", "--pod", "4x4x4", "q"]):
        line = one_line(fleet(*argv), 2)
        assert "--shape" in line and "run `" not in line
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["--dry-run", "inject-fault", "cube:c10", "--dry-run"],
        ["--shape", "4x4x4", "allocate", "q", "--shape", "4x4x4"],
        ["--pod", "pod0", "allocate", "q", "--shape", "4x4x4", "--pod", "pod0"],
    ],
)
def test_a_commands_option_on_both_sides_gives_no_line_that_repeats_it(fleet, argv):
    before = snapshot(fleet.state)
    line = one_line(fleet(*argv), 2)
    assert f"bad option {argv[0]}: " in line and "run `" not in line
    assert snapshot(fleet.state) == before


def test_every_tool_option_after_the_command_moves_in_one_line(fleet):
    """`status --state DIR --lock-timeout 5 --debug` moved only --state: each run then fixed one option more."""
    before = snapshot(fleet.state)
    args = ("status", "--state", str(fleet.state), "--lock-timeout", "5", "-o", "json", "--debug")
    said = json.loads(fleet(*args, state=False).err)["error"]
    assert said.startswith("bad option --state (and --debug, --lock-timeout): options of tpufleet itself")
    line = said.split("run `", 1)[1].rstrip("`")
    assert line == f"tpufleet --state {fleet.state} --lock-timeout 5 --debug status -o json"
    assert fleet(*line.split()[1:], state=False).code == 0  # the line given runs
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--state", "postgresql://bob:s3cret@127.0.0.1:1/f"],
        ["--state=postgresql://bob:s3cret@127.0.0.1:1/f", "allocate", "a", "4x4x4"],
    ],
)
def test_the_line_given_never_prints_a_database_password(cli, argv):
    r = cli(*argv, state=False)  # refused before any connection
    assert r.code == 2 and "s3cret" not in r.out + r.err
    assert "postgresql://bob@127.0.0.1:1/f" in r.err
