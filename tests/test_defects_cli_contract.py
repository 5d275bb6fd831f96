"""Regression tests for the command-line contract (a review of every command's options and outputs): a bad option
value exits 2 with one line naming the option and the value given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import one_line, snapshot


@pytest.mark.parametrize(
    "scale, said",
    [
        ("-1", "bad fault-rate factor -1 for host"),
        ("1e400", "bad fault-rate factor inf"),
        ("host=2000", "bad fault-rate factor 2000 for host"),
        ("gpu=2", "bad fault kind 'gpu'"),
    ],
)
def test_fault_scale_refused_by_its_range_or_kind_names_the_option(cli, scale, said):
    """Only the malformed factors named --fault-scale; one out of range or of an unknown kind did not."""
    line = one_line(cli("simulate-fleet", "--days", "0.05", "--fault-scale", scale, state=False), 2)
    assert f"bad option --fault-scale '{scale}': " in line and said in line


def test_goodput_report_refuses_a_segment_dimension_given_twice(cli):
    """`--by accelerator,accelerator` reported every accelerator segment twice; a repeat is refused, as a repeated
    --window or --capacity accelerator is."""
    r = cli("goodput-report", "fixtures/goodput/fleet.jsonl", "--by", "accelerator,size, accelerator", state=False)
    assert one_line(r, 2).endswith("bad option --by: 'accelerator' is given twice")
    r = cli("goodput-report", "fixtures/goodput/fleet.jsonl", "--by", "accelerator,size", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert sorted({s["dimension"] for s in r.json["segments"]}) == ["accelerator", "size"]


def test_serve_refuses_a_bad_goodput_format_without_logs_before_listening(fleet, monkeypatch):
    """`metrics --goodput-format bogus` is refused with or without --goodput; `serve` took it without logs and
    served."""
    from tpufleet.cli import serve

    monkeypatch.setattr(serve, "run", lambda application, sock: "listened")
    line = one_line(fleet("serve", "--listen", "127.0.0.1:0", "--goodput-format", "bogus"), 2)
    assert line.endswith("bad option --goodput-format 'bogus': native or ml-goodput")
    assert one_line(fleet("metrics", "--goodput-format", "bogus"), 2) == line
    r = fleet("serve", "--listen", "127.0.0.1:0", "--goodput-format", "ml-goodput")
    assert r.code == 0 and "stopped on listened" in r.err, r.err


@pytest.mark.parametrize(
    "args",
    [
        ("report", "--out", " "),
        ("report", "-o", "md", "--out", "\t"),
        ("plan-xconnect", "s", "--out", "sub/ "),
        ("export", "node-labels", "--out", " "),
        ("metrics", "--out", "  "),
        ("plan-maintenance", "--out", " "),
        ("simulate-availability", "--trials", "10", "--plot", " .png"),
        ("sweep", str(Path(__file__).parent.parent / "fixtures/sweeps/checkpoint-interval.yaml"), "--out", " "),
    ],
)
def test_a_blank_output_name_is_refused_as_an_empty_one(fleet, tmp_path, monkeypatch, args):
    """`report --out " "` wrote a file named a space (an empty name was refused)."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    before = snapshot(fleet.state)
    line = one_line(fleet(*args), 2)
    assert "blank name" in line or "no name before the extension" in line
    assert snapshot(fleet.state) == before
    assert sorted(p.name for p in tmp_path.rglob("*") if not p.is_relative_to(fleet.state)) == ["sub"]


@pytest.mark.parametrize(
    "args, named",
    [
        (("apply-xconnect", ""), "argument PLAN"),
        (("collective", "s", "--op", "all-reduce", "--profile", ""), "option --profile"),
        (("inject-fault", "--from", ""), "option --from"),
        (("inject-fault", "--from="), "option --from"),
        (("goodput-report", ""), "argument FILE"),
        (("metrics", "--goodput", ""), "option --goodput"),
        (("simulate-availability", "--fault-rates", ""), "option --fault-rates"),
        (("drift", "--nodes", ""), "option --nodes"),
        (("simulate-fleet", "--days", "1", "--workload", ""), "option --workload"),
        (("report", "--out", ""), "option --out"),
    ],
)
def test_an_empty_file_name_is_refused_naming_the_parameter(fleet, args, named):
    """Typer read '' as Path('.'): `inject-fault --from ""` said `.: field <root>: cannot be read: Is a
    directory`, naming neither the option nor the value given."""
    before = snapshot(fleet.state)
    assert one_line(fleet(*args), 2) == f"tpufleet: error: bad {named}: empty file name"
    assert snapshot(fleet.state) == before


def test_every_file_parameter_of_every_command_refuses_an_empty_name():
    """The class, not the instances: walk the whole command tree as `main` builds it."""
    from tpufleet.cli import _click_command
    from tpufleet.cli.paths import is_checked

    def walk(command, path=()):
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, (*path, name))
        for param in command.params:
            yield path, param

    files = [(path, p.name) for path, p in walk(_click_command()) if "Path" in type(p.type).__name__]
    assert len(files) > 25
    for path, param in walk(_click_command()):
        if "Path" in type(param.type).__name__ or str(param.metavar).startswith("FILE|"):
            assert is_checked(param.type), (path, param.name)


@pytest.mark.parametrize(
    "plot, said",
    [
        ("", "bad option --plot: empty file name"),
        (".png", "bad option --plot '.png': no name before the extension (e.g. fig1.png)"),
        ("out/.svg", "bad option --plot 'out/.svg': no name before the extension (e.g. fig1.svg)"),
        ("./fig.pdf", "bad option --plot './fig.pdf': the name must end in .png or .svg"),
        ("-", "bad option --plot '-': give a file name ('-' is not standard output here)"),
    ],
)
def test_a_bad_plot_name_is_refused_naming_the_value_given_and_why(cli, plot, said):
    """`--plot ""` said `'.' must end in .png or .svg`, and `--plot .png` that '.png' must end in .png."""
    r = cli("simulate-availability", "--trials", "10", "--plot", plot, state=False)
    assert one_line(r, 2) == f"tpufleet: error: {said}"


@pytest.mark.parametrize(
    "args, said",
    [
        (("routes", "s", "--traffic", "all-to-all, all-to-all"), "--traffic: 'all-to-all' is given twice"),
        (("simulate-availability", "--cubes", "1,2,1"), "--cubes: '1' is given twice"),
        (("simulate-availability", "--chips", "64,64"), "--chips: '64' is given twice"),
        (("allocate", "t", "--shape", "4x4x8", "--cubes", "c00,c00"), "--cubes: 'c00' is given twice"),
        (("plan-spares", "--slices", "s,s"), "--slices: 's' is given twice"),
    ],
)
def test_a_list_option_refuses_a_repeat_naming_the_option_and_value(fleet, args, said):
    """`routes --traffic all-to-all,all-to-all` and `simulate-availability --cubes 1,1` or `--chips 64,64` dropped
    the repeat silently, while `--cubes`, `--pod` and `plan-spares --slices` refused one."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    before = snapshot(fleet.state)
    assert one_line(fleet(*args), 2) == f"tpufleet: error: bad option {said}"
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("slices", ["s,", ",s", "s,,s2", " , "])
def test_plan_spares_refuses_an_empty_slice_name_in_its_list(fleet, slices):
    """`plan-spares --slices "s,"` planned for `s` alone, while `--cubes c05,` and `--pod pod0,` refuse the empty
    name as a typo (a name left out)."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    line = one_line(fleet("plan-spares", "--slices", slices), 2)
    assert "--slices" in line and ("empty slice" in line or "empty list" in line)
    assert fleet("plan-spares", "--slices", "s").code == 0


@pytest.mark.parametrize(
    "args",
    [
        ("plan-spares", "--horizon", "0d"),
        ("capacity", "--confidence", "0.9", "--horizon", "0h"),
        ("suspects", "--window", "0d"),
    ],
)
def test_a_horizon_or_window_of_no_time_is_refused(fleet, args):
    """`plan-spares --horizon 0d` and `capacity --confidence 0.9 --horizon 0d` answered trivially (every cube
    healthy, no failure) while `suspects --window 0d` was refused."""
    said = f"tpufleet: error: bad option {args[-2]}: {args[-1]!r} must be longer than zero"
    assert one_line(fleet(*args), 2) == said


@pytest.mark.parametrize("shape, side", [("99999999999x4x4", "99999999999"), ("4x10000x4", "10000")])
def test_a_shape_side_too_large_says_so_with_the_limit(cli, shape, side):
    """`topology 99999999999x4x4` said `expected AxBxC`: the syntax was right, the side too large."""
    line = one_line(cli("topology", shape, state=False), 2)
    assert line == f"tpufleet: error: bad shape {shape!r}: side {side!r} is too large (at most 9999)"
    assert one_line(cli("allocate", "s", "--shape", shape), 2) == line


def test_init_counts_say_one_pod_and_ocs_as_the_rest_of_the_output(cli):
    """`init` said "1 pods, ... 18432 ici links, ... 48 ocs", and "replaced a state of ... 1 slices"."""
    r = cli("init")
    assert r.code == 0, r.err
    assert r.out.rstrip().endswith(
        ": 1 pod, 64 cubes, 1024 machines, 4096 chips, 18432 ICI links, 6144 optical links, 48 OCS"
    ), r.out
    assert cli("allocate", "s", "--shape", "4x4x4").code == 0
    r = cli("init", "--force", "--pods", "2")
    assert r.code == 0, r.err
    assert ": 2 pods, 128 cubes," in r.out and r.out.rstrip().endswith("96 OCS\nreplaced a state of 1 pod, 1 slice")


def test_status_says_one_pod_in_the_singular(fleet):
    """`status` said "1 pod(s)" where `init` now says "1 pod"."""
    r = fleet("status")
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == "serial 1  ·  1 pod, 64 cubes, 4096 chips, 48 OCS"


@pytest.mark.parametrize(
    "args, said",
    [
        (("allocate", "t", "--shape", "4x4x4", "--shape", "4x4x8"), "--shape"),
        (("--state", "{state}", "allocate", "t", "--shape", "4x4x4"), "--state"),
        (("policy", "s", "--fault-tolerant-routing", "--no-fault-tolerant-routing"), "--fault-tolerant-routing/--no-"),
        (("policy", "s", "--min-throughput", "0.9", "--min-throughput", "0.1"), "--min-throughput"),
        (("status", "-o", "json", "--output", "yaml"), "-o/--output"),
        (("--lock-timeout", "1", "--lock-timeout", "5", "release", "s"), "--lock-timeout"),
    ],
)
def test_a_single_value_option_given_twice_is_refused(fleet, args, said):
    """Click kept the last without a word: `--shape 4x4x4 ... --shape 4x4x8` reserved twice the chips asked for,
    `--state A --state B` acted on B. Now, as a value given twice in a list option: exit 2 naming the option."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    before = snapshot(fleet.state)
    line = one_line(fleet(*(str(fleet.state) if a == "{state}" else a for a in args)), 2)
    assert line.startswith(f"tpufleet: error: bad option {said}") and line.endswith(
        "given more than once; give it once"
    )
    assert snapshot(fleet.state) == before


def test_an_option_before_the_command_and_after_it_is_not_a_repeat(fleet):
    """`tpufleet -o json status -o yaml`: the tool's option and the command's, and the command's wins."""
    r = fleet("-o", "json", "status", "-o", "yaml")
    assert r.code == 0 and r.out.startswith("serial: 1")


@pytest.mark.parametrize(
    "args, shown",
    [
        (("status", "-h", "-h"), "Usage: tpufleet status"),
        (("status", "--help", "-h"), "Usage: tpufleet status"),
        (("-h", "--help"), "Usage: tpufleet"),
        (("--version", "--version"), "tpufleet "),
    ],
)
def test_help_or_version_given_twice_is_shown_not_refused(cli, args, shown):
    """`status -h -h` was refused as an option given twice (exit 2); help and version act at once, nothing to
    choose between: shown, exit 0."""
    r = cli(*args, state=False)
    assert r.code == 0, r.err
    assert r.out.startswith(shown)


@pytest.mark.parametrize("group, commands", [("import", "k8s|reservation|slices"), ("state", "migrate|push|pull")])
def test_a_group_without_its_command_with_json_output_is_the_error_object(cli, group, commands):
    """`tpufleet -o json import` printed the group's multi-line help on stderr, which a script reading the error
    object could not parse; it is the one JSON error object, exit 2, naming the commands to choose from."""
    r = cli("-o", "json", group, state=False)
    assert r.code == 2 and r.out == ""
    error = json.loads(r.err)
    assert error == {"error": f"missing command: tpufleet {group} {commands}", "exit_code": 2, "items": []}


@pytest.mark.parametrize(
    "args", [("import", "-o", "json"), ("state", "--output", "json"), ("-o", "json", "export", "-o", "json")]
)
def test_a_group_given_options_but_no_command_is_the_same_error_object(cli, args):
    """`tpufleet import -o json` (the -o after the group's name, as the README allows) said only `Missing
    command.`, not the commands to choose from that `tpufleet -o json import` names; the same object now."""
    r = cli(*args, state=False)
    assert r.code == 2 and r.out == ""
    group = next(a for a in args if a in ("import", "state", "export"))
    assert json.loads(r.err)["error"].startswith(f"missing command: tpufleet {group} ")


@pytest.mark.parametrize("args", [("import", "-o", "table"), ("--lock-timeout", "5")])
def test_a_group_given_options_but_no_command_shows_its_help_as_without_them(cli, args):
    """Without -o json a group without its command shows its help (exit 2); given an option (`tpufleet import -o
    table`, `tpufleet --lock-timeout 5`), it said `Missing command.` instead."""
    r = cli(*args, state=False)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("Usage: tpufleet")


@pytest.mark.parametrize("key", ["F1", "12", "xx"])
def test_clear_fault_of_neither_an_id_nor_a_target_names_both_forms(fleet, key):
    """`clear-fault F1` said only `expected KIND:..., KIND one of cube, ...`, as if fault ids were not taken;
    it names both forms it takes, exit 2, nothing changed."""
    assert fleet("inject-fault", "cube:c05").code == 0
    before = snapshot(fleet.state)
    line = one_line(fleet("clear-fault", key), 2)
    assert line.startswith(f"tpufleet: error: bad fault id or target '{key}'") and "(f12)" in line
    assert "cube:c07" in line
    assert snapshot(fleet.state) == before


def test_history_since_an_age_over_the_counted_length_says_so(fleet):
    """`history --since 99999999999d` said the value was not a date, an ISO time or an age, though it is an age:
    it says the age is longer than the tool counts, as `plan-spares --horizon` does, exit 2."""
    line = one_line(fleet("history", "--since", "99999999999d"), 2)
    assert (
        line == "tpufleet: error: bad option --since: '99999999999d' is longer than this tool counts (999999 of a unit)"
    )


def test_history_since_a_serial_over_the_counted_length_says_so(fleet):
    """`history --since 9999999999999999999` (a serial of 19 digits) said the value was not a date, an ISO time or
    an age, never naming the serial it is: it says the serial is past the last one counted, exit 2."""
    line = one_line(fleet("history", "--since", "9999999999999999999"), 2)
    assert line == (
        "tpufleet: error: bad option --since '9999999999999999999': past the last serial tpufleet counts (18 digits)"
    )
    line = one_line(fleet("history", "--since", "999999999999999999"), 2)  # a serial, past the current one
    assert line.endswith("need SERIAL <= 1 (the current serial)")


@pytest.mark.parametrize("debug", [("--debug",), ()])
def test_debug_shows_the_traceback_and_keeps_the_exit_code(fleet, monkeypatch, debug):
    """With --debug (or $TPUFLEET_DEBUG) the exception was raised out of the tool: every error exited 1 (Python's
    code), bad input and a bug alike, and the error line was gone. The traceback now comes first, then the same
    line and exit code as without it: 2 for bad input, 1 for a refusal, 70 for a bug."""
    import tpufleet.ops.explain

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    r = fleet(*debug, "allocate", "a", "--shape", "4x4x5")
    assert r.code == 2 and r.err.strip().splitlines()[-1].startswith("tpufleet: error: bad shape '4x4x5'")
    assert ("Traceback" in r.err) == bool(debug)
    r = fleet(*debug, "-o", "json", "release", "nosuch")
    assert r.code == 1 and json.loads(r.err.strip().splitlines()[-1])["exit_code"] == 1
    monkeypatch.setattr(tpufleet.ops.explain, "explain", broken)
    r = fleet(*debug, "explain", "x")
    assert r.code == 70 and r.out == ""
    assert r.err.strip().splitlines()[-1].startswith("tpufleet: error: internal error: ZeroDivisionError: a bug")
    assert ("Traceback" in r.err) == bool(debug)


@pytest.mark.parametrize("job", [(), ("--slices", "2")])
def test_a_throughput_floor_for_a_slice_that_never_reroutes_is_refused(fleet, job):
    """`allocate --min-throughput 0.5 --no-fault-tolerant-routing` was accepted silently: the floor of a rerouting
    the slice never does."""
    before = snapshot(fleet.state)
    args = ("allocate", "a", "--shape", "4x4x4", *job, "--min-throughput", "0.5", "--no-fault-tolerant-routing")
    line = one_line(fleet(*args), 2)
    assert "--min-throughput 0.5" in line and "--no-fault-tolerant-routing" in line
    assert snapshot(fleet.state) == before
    alone = fleet("allocate", "b", "--shape", "4x4x4", *job, "--no-fault-tolerant-routing", "-o", "json")
    floor = fleet("allocate", "c", "--shape", "4x4x4", *job, "--min-throughput", "0.8", "-o", "json")
    assert alone.code == floor.code == 0, alone.err + floor.err
    shown = [alone.json, floor.json] if not job else [alone.json["slices"][0], floor.json["slices"][0]]
    assert [(d["fault_tolerant_routing"], d["min_throughput"]) for d in shown] == [(False, 0.5), (True, 0.8)]


@pytest.mark.parametrize(
    "args",
    [
        ("policy", "s", "--min-throughput", "1e400"),
        ("allocate", "t", "--shape", "2x2x1", "--min-throughput", "1e400"),
        ("simulate-availability", "--host-availability", "1e400"),
        ("simulate-fleet", "--days", "1e400"),
        ("--lock-timeout", "1e400", "status"),
    ],
)
def test_a_number_too_large_for_a_float_is_named_as_given(fleet, args):
    """`--min-throughput 1e400` was refused as "inf is not in the range 0.0<=x<=1.0": the range check ran on the
    number read, so the operator was shown a value they never typed. Now the text given is named."""
    assert fleet("allocate", "s", "--shape", "2x2x1").code == 0
    before = snapshot(fleet.state)
    line = one_line(fleet(*args), 2)
    option = args[args.index("1e400") - 1]
    assert f"bad option {option}: '1e400' is not a finite number" in line, line
    assert snapshot(fleet.state) == before


def test_the_lock_timeout_help_gives_the_range_the_option_takes(cli):
    """`tpufleet --help` said `--lock-timeout` takes `x>=0`, but anything over a day (86400 s) was refused: the
    help now gives the range that holds, and a value outside it is refused naming it."""
    r = cli("--help", state=False)
    assert r.code == 0 and "0<=x<=86400" in " ".join(r.out.split())
    line = one_line(cli("--lock-timeout", "100000", "status"), 2)
    assert "--lock-timeout" in line and "100000" in line


def test_a_cube_reserved_for_an_evicted_slices_move_is_not_counted_free(fleet):
    """`status`, `show inventory` and `metrics` counted the cube held for an evicted slice's move as free, though
    `allocate` refuses it and `show map` and `capacity` count it out: an operator read one free cube more than there
    is. It is allocated now, named by the slice whose move holds it; the free count is the map's."""
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    assert fleet("plan-xconnect", "s", "--apply").code == 0
    assert fleet("inject-fault", "host:c00/1").code == 0
    (reserved,) = fleet("show", "slices", "-o", "json").json[0]["proposal"]["cubes"]
    assert fleet("status", "-o", "json").json["cubes"] == {"free": 62, "allocated": 1, "out": 1}
    row = next(r for r in fleet("show", "inventory", "-o", "json").json if r["cube"] == reserved)
    assert (row["state"], row["slices"]) == ("allocated", ["s"])
    assert fleet("show", "map", "-o", "json").json["pods"][0]["counts"]["free"] == 62
    assert 'tpufleet_cubes{pod="pod0",state="free"} 62.0' in fleet("metrics").out
    assert fleet("allocate", "x", "--shape", "4x4x4", "--cubes", reserved).code == 1


def test_a_cube_some_of_whose_machines_are_reserved_for_a_move_is_not_counted_free(fleet):
    """A sub-cube slice's move reserves machines of another cube, which `allocate` then refuses whole and
    `capacity` does not count free: `status`, `show inventory`, `metrics` and `show map` counted it free."""
    assert fleet("allocate", "a", "--shape", "4x4x2").code == 0
    assert fleet("allocate", "b", "--shape", "4x4x2").code == 0
    assert fleet("inject-fault", "host:c00/0").code == 0
    (reserved,) = fleet("show", "slices", "-o", "json").json[0]["proposal"]["cubes"]
    assert fleet("status", "-o", "json").json["cubes"] == {"free": 62, "allocated": 1, "out": 1}
    row = next(r for r in fleet("show", "inventory", "-o", "json").json if r["cube"] == reserved)
    assert (row["state"], row["slices"]) == ("allocated", ["a"])
    counts = fleet("show", "map", "-o", "json").json["pods"][0]["counts"]
    assert (counts["free"], counts["reserved"]) == (62, 1)
    assert 'tpufleet_cubes{pod="pod0",state="free"} 62.0' in fleet("metrics").out
    assert fleet("capacity", "-o", "json").json["pods"][0]["free_healthy_cubes"] == 62
    assert fleet("allocate", "x", "--shape", "4x4x4", "--cubes", reserved).code == 1


def test_the_tables_file_routes_names_is_written_escaped(cli, capsys, tmp_path):
    """A state directory's name may hold a newline: `routes` named the tables' file it stored raw, the line split
    in two, and `release` the symbolic link it left where a slice's tables were."""
    run = type(cli)(capsys, tmp_path / "n\nl")
    assert run("init").code == 0
    assert run("allocate", "a", "--shape", "4x4x4").code == 0
    assert run("plan-xconnect", "a", "--apply").code == 0
    for _ in range(2):  # stored, then already these
        r = run("routes", "a")
        assert r.code == 0 and "\nl/routes" not in r.out and "n\\nl/routes" in r.out
    tables = run.state / "routes" / "a.npz"
    tables.unlink()
    tables.symlink_to(tmp_path)
    r = run("release", "a")
    assert r.code == 0 and "left the symbolic link" in r.out and "\nl/routes" not in r.out


def test_init_force_over_a_damaged_state_says_what_it_held_is_unknown(cli):
    """`init --force` over a state file cut short reported `"replaced": {"pods": 0, "slices": 0, ...}` and journaled
    "replaced a state of 0 pods": a state that held a pod and a slice, recorded as empty."""
    assert cli("init").code == 0 and cli("allocate", "s", "--shape", "4x4x4").code == 0
    state = cli.state / "state.json"
    state.write_bytes(state.read_bytes()[:200])
    r = cli("init", "--force", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["replaced"] == {"damaged": True}
    (last,) = cli("history", "-o", "json").json[-1:]
    assert last["summary"].endswith("(replaced a damaged state, which could not be read: what it held is unknown)")
    r = cli("init", "--force", "-o", "json")  # this time over a whole one: counted
    assert r.json["replaced"]["pods"] == 1 and "damaged" not in r.json["replaced"]


@pytest.mark.parametrize(
    ("args", "said"), [(("explain", ""), "bad argument SLICE|JOB|TARGET ''"), (("release", " "), "bad name ' '")]
)
def test_a_name_no_slice_can_have_is_bad_input_as_allocate_says(fleet, args, said):
    """`explain ""` and `release ""` exited 1 (an unknown slice) where `allocate ""` exits 2: no slice, job or
    component can be named so."""
    before = snapshot(fleet.state)
    assert one_line(fleet(*args), 2).startswith(f"tpufleet: error: {said}")
    assert snapshot(fleet.state) == before


@pytest.mark.parametrize("args", [("-o", "json", "serve"), ("serve", "-o", "json"), ("serve", "--output=yaml")])
def test_serve_given_an_output_format_says_it_takes_none_on_either_side(fleet, args):
    """`tpufleet -o json serve` explained that serve writes no document, but `serve -o json` was Click's "No such
    option '-o'" though the tool has one: both say the same."""
    r = fleet(*args)
    assert r.code == 2 and "bad option -o/--output: `serve` takes none; leave -o out" in (r.err + r.out)
