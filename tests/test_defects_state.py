"""Regression tests through the CLI for the defects that could brick the state or lose tables: numbers that JSON
cannot carry, integers written as floats, a state grown past what a load accepts, tables changed before the
commit, and text from outside reaching the terminal."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import pytest

from helpers import crash_at, one_line, snapshot
from tpufleet.cli import main
from tpufleet.state import Store

FIXTURE = Path(__file__).parent.parent / "fixtures" / "k8s" / "pod-64.json"


def state_doc(state: Path) -> dict:
    return json.loads((state / "state.json").read_text())


# ---- numbers: NaN, infinities and digits of other scripts are refused at every numeric option ------------------
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999", "\u0660.\u0665", "0_5", "1_0"])
def test_non_finite_or_non_ascii_throughput_is_refused_and_the_state_stays_loadable(fleet, value):
    before = snapshot(fleet.state)
    assert "--min-throughput" in one_line(fleet("allocate", "x", "--shape", "2x2x1", "--min-throughput", value))
    assert snapshot(fleet.state) == before
    assert fleet("allocate", "x", "--shape", "2x2x1").code == 0
    assert "--min-throughput" in one_line(fleet("policy", "x", "--min-throughput", value))
    assert fleet("status").code == 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("diff", "abc"), "'abc': a serial is written in the digits 0-9 alone"),
        (("--lock-timeout", "abc", "status"), "'abc' is not a number"),
        (("allocate", "j", "--shape", "2x2x1", "--slices", "2.5"), "'2.5' is not a whole number"),
    ],
)
def test_a_word_for_a_number_is_named_as_such(fleet, args, said):
    assert said in one_line(fleet(*args))


def test_digit_groups_are_refused_and_minus_zero_is_stored_as_zero(fleet):
    before = snapshot(fleet.state)
    assert "--slices" in one_line(fleet("allocate", "j", "--shape", "2x2x1", "--slices", "1_0"))
    assert snapshot(fleet.state) == before
    assert fleet("allocate", "x", "--shape", "2x2x1", "--min-throughput", "-0").code == 0
    assert fleet("policy", "x", "--min-throughput", "-0.0").code == 0
    stored = state_doc(fleet.state)["slices"]["x"]["min_throughput"]
    assert stored == 0 and math.copysign(1, stored) == 1  # not -0.0, shown as "-0"


def _commands(command, path=()):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_every_numeric_parameter_of_every_command_is_checked():
    """The class, not the instances: walk the whole command tree as `main` builds it."""
    from tpufleet.cli import _click_command
    from tpufleet.cli.numbers import is_strict

    root = _click_command()
    numeric, seeds = [], []
    for path, command in _commands(root):
        for param in command.params:
            kind = type(param.type).__mro__
            if any(k.__name__ in ("FloatParamType", "IntParamType") for k in kind):
                numeric.append((path, param.name))
                assert is_strict(param.type), (path, param.name)
            if param.name == "seed":
                seeds.append(path)
                assert getattr(param.type, "min", None) == 0, path
    assert len(numeric) > 20 and len(seeds) >= 3


def test_negative_seed_and_nan_availability_are_bad_input(fleet):
    assert "--seed" in one_line(fleet("simulate-availability", "--seed", "-1"))
    assert "--host-availability" in one_line(fleet("simulate-availability", "--host-availability", "nan"))


@pytest.mark.parametrize(
    "args",
    [
        ("simulate-availability", "--host-availability", "1e400"),
        ("simulate-availability", "--ocs-availability", "-inf"),
        ("allocate", "s", "--shape", "4x4x4", "--min-throughput", "1e400"),
    ],
)
def test_an_infinite_number_for_a_ranged_option_is_named_as_typed(fleet, args):
    """A ranged option read 1e400 as infinity and Click's range check said "inf is not in the range", a value the
    operator never typed; it is refused as the other infinities are, quoting what was typed."""
    before = snapshot(fleet.state)
    r = fleet(*args)
    assert r.code == 2 and f"{args[-1]!r} is not a finite number" in one_line(r) and args[-2] in r.err
    assert snapshot(fleet.state) == before


# ---- integers are integers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [("serial", 6.0), ("next_fault", 2.0)])
def test_an_integer_written_as_a_float_is_refused_naming_the_field(fleet, field, value):
    doc = state_doc(fleet.state)
    doc[field] = value
    (fleet.state / "state.json").write_text(json.dumps(doc))
    line = one_line(fleet("status"))
    assert f"field {field}" in line and "state.json" in line


# ---- the state stays the size of the fleet -----------------------------------------------------------------------
def test_a_commit_the_next_load_would_refuse_is_refused(fleet, monkeypatch):
    from tpufleet.state import inputfiles

    size = (fleet.state / "state.json").stat().st_size
    monkeypatch.setattr(inputfiles, "MAX_STATE_BYTES", size + 200)
    before = snapshot(fleet.state)
    line = one_line(fleet("inject-fault", "host:c01/1", "--reason", "r" * 900))
    assert "limit" in line and "nothing changed" in line
    assert snapshot(fleet.state) == before
    monkeypatch.undo()
    assert fleet("status").code == 0


def test_a_reason_over_the_limit_is_refused(fleet):
    before = snapshot(fleet.state)
    assert "reason" in one_line(fleet("inject-fault", "host:c01/1", "--reason", "r" * 1025))
    assert snapshot(fleet.state) == before


def test_a_huge_node_condition_reason_is_kept_short(fleet, tmp_path):
    nodes = json.loads(FIXTURE.read_text())
    node = nodes["items"][0]
    for cond in node["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond.update(status="False", reason="Kubelet" + "X" * 2_000_000)
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    r = fleet("import", "k8s", path, "--apply", "-o", "json")
    assert r.code == 0, r.err
    reasons = [f["reason"] for f in state_doc(fleet.state)["faults"]]
    assert reasons and max(map(len, reasons)) < 300
    assert (fleet.state / "state.json").stat().st_size < 200_000


def test_cleared_faults_move_to_the_journal_and_faults_all_still_lists_them(fleet):
    from tpufleet.state.store import CLEARED_FAULTS_KEPT

    count = CLEARED_FAULTS_KEPT + 40
    for i in range(count):
        assert fleet("inject-fault", f"host:c{i % 60:02d}/{i % 16}", "--reason", f"r{i}").code == 0
        assert fleet("clear-fault", f"f{i + 1}").code == 0
    doc = state_doc(fleet.state)
    assert len(doc["faults"]) == CLEARED_FAULTS_KEPT  # the most recent ones
    assert {f["id"] for f in doc["faults"]} == {f"f{n}" for n in range(41, count + 1)}
    listed = fleet("faults", "--all", "-o", "json").json
    assert [f["id"] for f in listed] == [f"f{n}" for n in range(1, count + 1)]
    assert [f["reason"] for f in listed] == [f"r{i}" for i in range(count)]
    assert all(f["cleared"] for f in listed)
    assert fleet("faults", "-o", "json").json == []
    line = one_line(fleet("clear-fault", "f1"), 1)
    assert "not open" in line
    opened = fleet("metrics").out
    assert f"tpufleet_faults_opened_total {count}.0" in opened


def test_a_fault_cleared_and_moved_in_one_commit_is_in_that_commits_delta(fleet):
    from tpufleet.state.store import CLEARED_FAULTS_KEPT

    scenario = fleet.state.parent / "many.yaml"
    targets = [f"host:c{i // 16:02d}/{i % 16}" for i in range(CLEARED_FAULTS_KEPT + 10)]
    scenario.write_text("\n".join(f"- {t}" for t in targets) + "\n")
    assert fleet("inject-fault", "--from", scenario).code == 0
    for t in targets:
        assert fleet("clear-fault", t).code == 0
    history = fleet("history", "-o", "json").json
    cleared = [i for e in history for i in e.get("delta", {}).get("faults", {}).get("cleared", [])]
    assert sorted(cleared, key=lambda f: int(f[1:])) == [f"f{n}" for n in range(1, len(targets) + 1)]


# ---- files beside the state change only after its commit ---------------------------------------------------------
def test_a_release_that_does_not_commit_keeps_the_tables(routed):
    tables = routed.state / "routes" / "s.npz"
    before = tables.read_bytes()
    crash_at(routed.state, "atomic_write.before_rename", "release", "s")
    assert tables.read_bytes() == before
    assert "s" in state_doc(routed.state)["routes"]
    assert routed("release", "s").code == 0
    assert not tables.exists() and not list((routed.state / "routes").iterdir())


@pytest.mark.parametrize("command", [("release", "s"), ("init", "--force")])
def test_tables_a_killed_release_leaves_behind_are_deleted_by_the_next_writer(routed, command):
    """Killed after its commit, before deleting the tables: they are no longer indexed, so the next command that
    changes the state deletes them, and a new slice of that name starts with none."""
    tables = routed.state / "routes" / "s.npz"
    crash_at(routed.state, "transaction.before_side_files", *command)
    assert "s" not in state_doc(routed.state)["routes"] and tables.exists()
    assert routed("collective", "s", "--op", "all-to-all", "--bytes", "1MiB").code != 0  # read: not indexed
    assert routed("inject-fault", "host:c40/1").code == 0
    assert not list((routed.state / "routes").iterdir())


def test_routes_that_do_not_commit_keep_the_old_tables(routed):
    tables = routed.state / "routes" / "s.npz"
    before, index = tables.read_bytes(), state_doc(routed.state)["routes"]["s"]
    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    crash_at(routed.state, "atomic_write.before_rename", "routes", "s")
    assert tables.read_bytes() == before
    assert state_doc(routed.state)["routes"]["s"]["serial"] == index["serial"]
    assert routed("routes", "s").code == 0  # and the next writer clears what the killed one left
    assert [p.name for p in (routed.state / "routes").iterdir()] == ["s.npz"]
    assert tables.read_bytes() != before


@pytest.mark.parametrize(
    "commands",
    [
        [("release", "s")],
        [("inject-fault", "host:c40/1")],
        [("init", "--force"), ("allocate", "s2", "--shape", "4x4x4")],
    ],
)
def test_tables_a_routes_killed_before_its_commit_left_go_with_the_next_commit(routed, commands):
    """A `routes` killed before its commit left its new tables under their temporary name; only a later `routes` of
    that slice removed them, so once the slice was released (or the fleet replaced) they stayed in `routes/` for
    good. The next command that commits deletes them; a refused one leaves them."""
    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    crash_at(routed.state, "atomic_write.before_rename", "routes", "s")
    routes = routed.state / "routes"
    left = [p for p in routes.iterdir() if p.name.startswith(".s.npz.")]
    assert len(left) == 1
    assert routed("allocate", "s", "--shape", "4x4x4").code == 1  # refused: the files beside the state stay
    assert left[0].exists()
    for command in commands:
        assert routed(*command).code == 0
    assert not [p.name for p in routes.iterdir() if p.name.endswith(".tmp")]


def test_tables_are_swapped_in_only_after_the_state_is_committed(routed):
    tables = routed.state / "routes" / "s.npz"
    before = tables.read_bytes()
    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    crash_at(routed.state, "transaction.before_side_files", "routes", "s")
    # the state is committed; the new tables wait beside the old ones under a temporary name
    assert state_doc(routed.state)["routes"]["s"]["stale"] is False
    assert tables.read_bytes() == before
    waiting = [p for p in (routed.state / "routes").iterdir() if p.name.startswith(".s.npz.")]
    assert len(waiting) == 1
    committed = waiting[0].read_bytes()
    # until a command changes the state, the old file is not taken for the indexed tables
    r = routed("collective", "s", "--op", "all-to-all", "--bytes", "1MiB", "-o", "json")
    assert (
        r.code == 0
        and r.json["tables"]["stale"] is True
        and "older tables than the indexed ones" in r.json["tables"]["stale_reason"]
    )
    # the next change (of anything) finishes the interrupted one: the committed tables are renamed in
    assert routed("inject-fault", "host:c40/1").code == 0
    assert tables.read_bytes() == committed and not waiting[0].exists()
    r = routed("collective", "s", "--op", "all-to-all", "--bytes", "1MiB", "-o", "json")
    assert r.json["tables"]["stale"] is False and r.json["tables"]["degraded"] is True


# ---- text from outside never drives the terminal -----------------------------------------------------------------
def test_control_characters_in_a_reason_are_shown_escaped(fleet):
    reason = "healthd\nf99  host:c09/9  fault  forged-row\x1b[2J\u202e\x00"
    assert fleet("inject-fault", "host:c01/1", "--reason", reason).code == 0
    table = fleet("faults").out
    assert "\x1b" not in table and "\u202e" not in table and "\x00" not in table
    assert len(table.strip().splitlines()) == 3  # header, rule, one fault: no forged row
    assert "\\n" in table and "\\x1b" in table


def test_the_lock_holders_command_line_is_shown_escaped(fleet):
    from tpufleet.state.lock import exclusive

    with exclusive(fleet.state, 1, "tpufleet \x1b[2J\x1b]0;pwned\x07 allocate"):
        r = fleet("--lock-timeout", "0", "inject-fault", "host:c01/1")
    assert r.code == 3
    assert "\x1b" not in r.err and "\x07" not in r.err and "\\x1b" in r.err
    assert Store(fleet.state).load().open_faults() == []


@pytest.mark.parametrize(
    "command",
    [("allocate", "a", "--shape", "4x4x4"), ("clear-fault", "f1"), ("release", "a")],
)
def test_a_change_to_a_state_directory_that_does_not_exist_makes_nothing_there(cli, command):
    """A mistyped --state: refused as holding no fleet state, without making the directory and its lock files."""
    assert not cli.state.exists()
    r = cli(*command)
    assert one_line(r, 1).startswith(f"tpufleet: error: no fleet state in {cli.state}")
    assert not cli.state.exists()


@pytest.mark.parametrize(
    "command",
    [("allocate", "a", "--shape", "4x4x4"), ("clear-fault", "f1"), ("release", "a")],
)
def test_a_change_to_an_empty_state_directory_leaves_it_empty(cli, command):
    """An empty directory (made for the state, init not yet run): a change was refused as holding no fleet state,
    but only after taking the lock, which left `.lock` and `.lock.info` in it."""
    cli.state.mkdir()
    r = cli(*command)
    assert one_line(r, 1).startswith(f"tpufleet: error: no fleet state in {cli.state}")
    assert sorted(p.name for p in cli.state.iterdir()) == []


def test_a_change_waits_for_an_init_under_way_in_an_empty_directory(tmp_path):
    """Only a directory with no lock file is refused at once: one whose lock is held (an `init` under way) is
    waited for, as it was before the early refusal: with no time to wait, the lock's timeout (exit 3), not "no
    fleet state" (exit 1); once the lock is released with a state written under it, the change applies to it."""
    import shutil
    import subprocess
    import sys

    from tpufleet.state.lock import exclusive

    made, state = tmp_path / "made", tmp_path / "state"
    with contextlib.suppress(SystemExit):
        main(["--state", str(made), "init"])
    state.mkdir(mode=0o700)
    cli = [sys.executable, "-m", "tpufleet", "--state", str(state)]
    change = [*cli, "allocate", "a", "--shape", "4x4x4"]
    with exclusive(state, 1, "tpufleet init"):  # another process: the lock is held against it
        waited = subprocess.run([*cli, "--lock-timeout", "0", *change[len(cli) :]], capture_output=True, text=True)
        assert waited.returncode == 3, waited.stderr
        for name in ("state.json", "journal.jsonl"):
            shutil.copy2(made / name, state / name)
    assert subprocess.run(change, capture_output=True).returncode == 0
    assert state_doc(state)["slices"]["a"]["state"] == "allocated"


def test_a_state_path_through_a_file_is_still_named_as_such(cli, tmp_path):
    """Only a missing directory is "no fleet state": a path through a file says what is wrong with it."""
    (tmp_path / "afile").write_text("")
    cli.state = tmp_path / "afile" / "st"
    r = cli("allocate", "a", "--shape", "4x4x4")
    assert r.code == 2 and "no fleet state" not in r.err and "not a directory" in r.err


def test_inits_line_shows_a_directory_name_with_a_newline_escaped(cli, tmp_path):
    cli.state = tmp_path / "two\nlines"
    r = cli("init")
    assert r.code == 0 and len(r.out.strip().splitlines()) == 1 and "two\\nlines" in r.out


def test_tables_waiting_to_be_swapped_in_are_shown_stale_as_collective_flags_them(routed):
    """Killed after its commit, before its tables were renamed in: the file holds the tables before them, which
    `collective` models flagged stale; `status`, `show slices`, `explain`, `report` and `metrics` showed them fresh."""
    assert routed("inject-fault", "link:c00/x/3/out").code == 0
    crash_at(routed.state, "transaction.before_side_files", "routes", "s")
    r = routed("collective", "s", "--op", "all-to-all", "--bytes", "1MiB", "-o", "json")
    assert r.code == 0 and r.json["tables"]["stale"] is True
    status = routed("status", "-o", "json").json
    assert status["stale_routes"] == ["s"] and status["missing_routes"] == []
    assert status["slices"][0]["routes"] == "stale"
    assert routed("show", "slices", "-o", "json").json[0]["routes"] == "stale"
    assert routed("explain", "s", "-o", "json").json["routes"] == "stale"
    assert routed("report", "-o", "json").json["stale_routes"] == ["s"]
    assert "tpufleet_stale_route_tables 1.0" in routed("metrics").out
    assert routed("inject-fault", "host:c40/1").code == 0  # the next change installs them
    assert routed("show", "slices", "-o", "json").json[0]["routes"] == "fresh"


def test_a_release_whose_tables_cannot_be_deleted_says_it_is_committed(routed, monkeypatch):
    """`release s` committed, then could not delete routes/s.npz: the message said `'s' is already released: serial
    5 removed it ...; nothing to release`, the command's own commit taken for an earlier one. It says the change is
    committed, names the file and that the next command tries again."""
    import errno

    from tpufleet.state import filebackend

    def refuse(path):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(filebackend, "unlink_tables", refuse)
    serial = routed("status", "-o", "json").json["serial"]
    r = routed("release", "s")
    assert r.code == 1 and r.err.count("\n") == 1, r.err
    assert f"cannot delete {routed.state / 'routes' / 's.npz'}" in r.err
    assert f"its change is committed as serial {serial + 1}" in r.err and "already released" not in r.err
    assert routed("show", "slices", "-o", "json").json == []
