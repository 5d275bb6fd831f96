"""Operator experience through the CLI: --version, completion, -o anywhere, JSON errors, shapes in any order,
the config file, group-readable state and the lock-wait notice."""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tpufleet import __version__


def test_version_alone_prints_the_version(cli):
    r = cli("--version", state=False)
    assert (r.code, r.out.strip()) == (0, f"tpufleet {__version__}")


def test_completion_script_names_the_program():
    # Typer detects the shell from the process tree, which depends on how the suite was launched (none is found
    # under a detached runner): its own switch for tests takes the shell from the command line instead.
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    r = subprocess.run([sys.executable, "-m", "tpufleet", "--show-completion", "bash"], env=env, capture_output=True)
    assert r.returncode == 0 and b"_TPUFLEET_COMPLETE" in r.stdout


def test_completion_offers_commands_and_choices():
    env = {**os.environ, "_TPUFLEET_COMPLETE": "complete_bash", "COMP_WORDS": "tpufleet show ", "COMP_CWORD": "2"}
    out = subprocess.run([sys.executable, "-m", "tpufleet"], env=env, capture_output=True, text=True).stdout.split()
    assert {"inventory", "health", "slices", "ocs", "journal", "map"} <= set(out)


@pytest.mark.parametrize("where", ["before", "after"])
def test_output_option_before_or_after_the_command(fleet, where):
    args = ["-o", "json", "status"] if where == "before" else ["status", "-o", "json"]
    r = fleet(*args)
    assert r.code == 0 and r.json["serial"] == 1


def test_command_option_wins_over_the_global_one(fleet):
    r = fleet("-o", "json", "status", "-o", "yaml")
    assert r.code == 0 and r.out.startswith("serial: 1")


def test_errors_are_json_on_stderr_with_json_output(fleet):
    before = fleet("-o", "json", "allocate", "a", "--shape", "3x3x3")
    after = fleet("allocate", "a", "--shape", "3x3x3", "--output=json")
    for r in (before, after):
        assert r.code == 2 and r.out == ""
        err = json.loads(r.err)
        assert err["exit_code"] == 2 and "3x3x3" in err["error"] and err["items"] == []
    usage = fleet("-o", "json", "allocate")
    assert usage.code == 2 and json.loads(usage.err)["error"].startswith("Missing argument")


def test_refusal_items_are_listed_in_json_errors(fleet):
    assert fleet("inject-fault", "ocs:pod0/z/5").code == 0
    assert fleet("allocate", "a", "--shape", "8x8x8", "--no-fault-tolerant-routing").code == 0
    plain = fleet("plan-xconnect", "a", "--apply")
    r = fleet("-o", "json", "plan-xconnect", "a", "--apply")
    err = json.loads(r.err)
    assert r.code == plain.code == 1 and err["exit_code"] == 1
    assert err["items"] == ["ocs:pod0/z/5 is down (faults f1)"]
    assert plain.err.splitlines()[1:] == ["  ocs:pod0/z/5 is down (faults f1)"]


def test_plain_errors_stay_one_line(fleet):
    r = fleet("allocate", "a", "--shape", "3x3x3")
    assert r.code == 2 and r.err.count("\n") == 1 and r.err.startswith("tpufleet: error: bad shape")


def test_shape_in_any_order_is_reported_canonically(fleet):
    r = fleet("allocate", "a", "--shape", "8x4x4", "-o", "json")
    assert r.code == 0, r.err
    shown = fleet("show", "slices", "-o", "json").json
    assert [s["shape"] for s in shown] == ["4x4x8"]


def _config(tmp_path: Path, monkeypatch, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    monkeypatch.setenv("TPUFLEET_CONFIG", str(path))
    return path


def test_config_file_sets_state_and_output(cli, tmp_path, monkeypatch):
    _config(tmp_path, monkeypatch, f'state = "{tmp_path / "cfgstate"}"\noutput = "json"\n')
    assert cli("init", state=False).code == 0
    assert (tmp_path / "cfgstate" / "state.json").exists()
    r = cli("status", state=False)
    assert r.code == 0 and r.json["serial"] == 1
    assert cli("status", "-o", "yaml", state=False).out.startswith("serial: 1")  # the option wins


@pytest.mark.parametrize(
    "text, field",
    [('outptu = "json"\n', "outptu"), ('output = "xml"\n', "output"), ("lock_timeout = -1\n", "lock_timeout")],
)
def test_bad_config_is_refused_naming_the_key(cli, tmp_path, monkeypatch, text, field):
    path = _config(tmp_path, monkeypatch, text)
    r = cli("status")
    assert r.code == 2 and str(path) in r.err and f"field {field}" in r.err


def test_state_is_private_by_default(fleet):
    assert stat.S_IMODE(fleet.state.stat().st_mode) == 0o700
    assert stat.S_IMODE((fleet.state / "state.json").stat().st_mode) == 0o600


def test_group_makes_state_group_readable_never_world(cli):
    import grp

    group = grp.getgrgid(os.getegid()).gr_name
    assert cli("--group", group, "init").code == 0
    assert cli("--group", group, "allocate", "a", "--shape", "4x4x4").code == 0
    assert stat.S_IMODE(cli.state.stat().st_mode) == 0o750
    for name in ("state.json", "journal.jsonl"):
        st = (cli.state / name).stat()
        assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_gid == grp.getgrnam(group).gr_gid
    assert cli("--group", "no-such-group-here", "status").code == 2


def _run_on_a_terminal(args: list[str]) -> tuple[int, str]:
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-m", "tpufleet", *args])
    output = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


def test_lock_wait_notice_on_a_terminal(fleet):
    """Terraform-style: past one second of waiting, a TTY is told who holds the lock (scripts are not)."""
    from tpufleet.state.lock import exclusive

    with exclusive(fleet.state, 5, "tpufleet hold-for-test"):
        code, text = _run_on_a_terminal(["--state", str(fleet.state), "--lock-timeout", "1.5", "release", "x"])
    assert code == 3
    assert f"waiting for the state lock held by pid {os.getpid()} (tpufleet hold-for-test, since " in text


def test_no_lock_wait_notice_without_a_terminal(fleet):
    from tpufleet.state.lock import exclusive

    with exclusive(fleet.state, 5, "tpufleet hold-for-test"):
        r = subprocess.run(
            [sys.executable, "-m", "tpufleet", "--state", str(fleet.state), "--lock-timeout", "1.5", "release", "x"],
            capture_output=True,
            text=True,
        )
    assert r.returncode == 3 and "waiting for" not in r.stderr and r.stderr.count("\n") == 1


def _saved_plan(fleet, tmp_path, name="s", shape="4x4x8"):
    assert fleet("allocate", name, "--shape", shape).code == 0
    plan = tmp_path / f"{name}.plan.json"
    assert fleet("plan-xconnect", name, "--out", plan).code == 0
    return plan


def test_saved_plan_survives_unrelated_changes(fleet, tmp_path):
    plan = _saved_plan(fleet, tmp_path)
    assert fleet("allocate", "other", "--shape", "4x4x8").code == 0
    assert fleet("plan-xconnect", "other", "--apply").code == 0  # same OCS, other ports
    assert fleet("inject-fault", "cube:c60").code == 0  # a cube the plan does not use
    r = fleet("apply-xconnect", plan, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["applied"] is True
    slices = {s["name"]: s for s in fleet("show", "slices", "-o", "json").json}
    assert slices["s"]["state"] == "connected" and slices["s"]["missing_xconnects"] == 0


def test_saved_plan_refused_naming_a_fault_on_its_cube(fleet, tmp_path):
    plan = _saved_plan(fleet, tmp_path)
    cube = fleet("show", "slices", "-o", "json").json[0]["cubes"][1]
    assert fleet("inject-fault", f"link:{cube}/x/2/in").code == 0
    r = fleet("apply-xconnect", plan)
    assert r.code == 1 and "stale plan" in r.err and f"on link:{cube}/x/2/in opened at serial" in r.err


def test_saved_plan_refused_when_its_slice_changed(fleet, tmp_path):
    plan = _saved_plan(fleet, tmp_path)
    assert fleet("release", "s").code == 0
    assert fleet("-o", "json", "apply-xconnect", plan).code == 1
    assert fleet("allocate", "s", "--shape", "4x4x8", "--cubes", "c10,c11").code == 0
    r = fleet("-o", "json", "apply-xconnect", plan)
    err = json.loads(r.err)
    assert r.code == 1 and err["items"] == ["slice 's' now holds cubes c10,c11"]


def test_long_commands_show_progress_on_a_terminal(fleet):
    state = ["--state", str(fleet.state)]
    for step in (["allocate", "s", "--shape", "4x4x8"], ["plan-xconnect", "s", "--apply"]):
        assert fleet(*step).code == 0
    code, text = _run_on_a_terminal([*state, "routes", "s"])
    assert code == 0 and "routing s" in text
    code, text = _run_on_a_terminal([*state, "inject-fault", "ocs:pod0/x/1", "--dry-run"])
    assert code == 0 and "analysing" in text
    piped = subprocess.run([sys.executable, "-m", "tpufleet", *state, "routes", "s"], capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == ""


def test_progress_on_a_terminal_only():
    args = ["simulate-availability", "--trials", "8000", "--cubes", "1,64", "-o", "json"]
    code, text = _run_on_a_terminal(args)
    assert code == 0 and "simulating pods" in text
    piped = subprocess.run([sys.executable, "-m", "tpufleet", *args], capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == "" and len(json.loads(piped.stdout)["results"]) == 2


def test_group_readable_state_stays_so_without_the_option(cli):
    import grp

    group = grp.getgrgid(os.getegid()).gr_name
    assert cli("--group", group, "init").code == 0
    assert cli("allocate", "a", "--shape", "4x4x4").code == 0  # no --group this time
    for name in ("state.json", "journal.jsonl"):
        assert stat.S_IMODE((cli.state / name).stat().st_mode) == 0o640


def test_config_report_format_leaves_other_commands_alone(fleet, tmp_path, monkeypatch):
    _config(tmp_path, monkeypatch, 'output = "md"\n')
    assert fleet("status").out.startswith("serial 1")  # status has no md: its table
    assert fleet("report").out.startswith("# Fleet report")
    r = fleet("-o", "md", "status")  # given as an option, the format must suit the command
    assert r.code == 2 and "'md' is not one of" in r.err


def test_config_csv_reaches_the_reports_that_write_it_and_leaves_the_others_their_table(fleet, tmp_path, monkeypatch):
    """As README says: a config `output` reaches each command that has the format; the others keep their table,
    quietly (one config file serves reports and everyday commands alike)."""
    _config(tmp_path, monkeypatch, 'output = "csv"\n')
    status = fleet("status")
    assert status.code == 0 and status.out.startswith("serial 1") and status.err == ""
    report = fleet("simulate-availability", "--cubes", "1", "--trials", "100")
    assert report.code == 0 and report.out.splitlines()[0].startswith("cubes,chips,")
    assert fleet("status", "-o", "json").json["serial"] == 1  # the command's own -o still wins
    r = fleet("-o", "csv", "status")  # given as an option, it must suit the command
    assert r.code == 2 and r.err.startswith("tpufleet: error:") and "csv" in r.err and "table" in r.err


@pytest.mark.parametrize("value", ["nan", "inf", "1e9"])
def test_lock_timeout_must_be_a_real_duration(fleet, value):
    r = fleet("--lock-timeout", value, "status")
    assert r.code == 2 and "--lock-timeout" in r.err


def test_saved_plan_refusal_names_a_cleared_fault(fleet, tmp_path):
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    plan = _saved_plan(fleet, tmp_path)  # made while x/3 is down: its pairs there are deferred
    assert fleet("clear-fault", "ocs:pod0/x/3").code == 0
    r = fleet("-o", "json", "apply-xconnect", plan)
    err = json.loads(r.err)
    assert r.code == 1 and "stale plan" in err["error"]
    assert any(item.startswith("fault f1 on ocs:pod0/x/3 was cleared at") for item in err["items"])


def test_saved_plan_refusal_names_the_slice_now_on_its_ports(fleet, tmp_path):
    steps = [
        ("allocate", "x", "--shape", "4x4x16", "--cubes", "c10,c11,c12,c13"),
        ("plan-xconnect", "x", "--apply"),
        ("release", "x"),
        ("allocate", "a", "--shape", "4x4x8", "--cubes", "c10,c11"),
    ]
    for step in steps:
        assert fleet(*step).code == 0, step
    plan = tmp_path / "a.plan"
    assert fleet("plan-xconnect", "a", "--out", plan).code == 0
    assert fleet("allocate", "b", "--shape", "4x4x8", "--cubes", "c12,c13").code == 0
    assert fleet("plan-xconnect", "b", "--apply").code == 0
    r = fleet("-o", "json", "apply-xconnect", plan)
    err = json.loads(r.err)
    assert r.code == 1 and err["items"] and all("now wired for slice b" in i for i in err["items"])


def test_config_that_is_not_a_file_is_refused(cli, tmp_path, monkeypatch):
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("TPUFLEET_CONFIG", str(fifo))
    r = cli("status")
    assert r.code == 2 and "not a regular file" in r.err


def test_goodput_times_as_operators_type_them(cli, tmp_path):
    import gzip

    from tpufleet.demo import JOB_LOG

    log = tmp_path / "jobs.jsonl"
    log.write_bytes(gzip.decompress(JOB_LOG.read_bytes()))
    reports = [
        cli("goodput-report", log, "--since", since, "-o", "json", state=False)
        for since in ("1767657600", "2026-01-06", "2026-01-06T00:00", "2026-01-06T02:00+02:00")
    ]
    assert all(r.code == 0 for r in reports), [r.err for r in reports]
    fleets = [r.json["fleet"] for r in reports]
    assert all(f == fleets[0] for f in fleets) and fleets[0]["jobs"] > 0
    bad = cli("goodput-report", log, "--since", "last tuesday", state=False)
    assert bad.code == 2 and "--since" in bad.err and "7d" in bad.err


def _leaf_commands(command, path=()):
    subs = getattr(command, "commands", None)
    if not subs:
        yield path, command
        return
    for name, sub in subs.items():
        yield from _leaf_commands(sub, (*path, name))


def test_every_command_has_examples_and_plain_help(cli):
    import typer

    from tpufleet.cli import app, plain_metavars

    root = typer.main.get_command(app)
    plain_metavars(root)
    leaves = list(_leaf_commands(root))
    assert len(leaves) >= 29
    for path, command in leaves:
        assert "Examples:" in (command.epilog or ""), path
        r = cli(*path, "--help", state=False)
        assert r.code == 0, path
        text = r.out.lower()
        assert "list[" not in text and "brief" not in text and "seed 00" not in text, path
        assert "float range" not in text and "integer range" not in text, path


def test_a_relative_state_in_the_config_file_is_taken_from_the_files_directory(cli, tmp_path, monkeypatch):
    """`state = "fleet"` named ./fleet of wherever a command ran: `init` in one directory and `status` in another
    told of two fleets. Now it is the directory beside the config file, from anywhere."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.toml").write_text('state = "fleet"\n')
    monkeypatch.setenv("TPUFLEET_CONFIG", str(conf / "config.toml"))
    for place in ("a", "b"):
        (tmp_path / place).mkdir()
    monkeypatch.chdir(tmp_path / "a")
    made = cli("init", "-o", "json", state=False)
    assert made.code == 0 and made.json["state_dir"] == str(conf / "fleet")
    monkeypatch.chdir(tmp_path / "b")
    assert cli("status", "-o", "json", state=False).json["serial"] == 1
    assert not (tmp_path / "a" / "fleet").exists() and not (tmp_path / "b" / "fleet").exists()


def _two_groups() -> list[str]:
    """Two groups this user may give files to (root: any two), else the test is skipped."""
    import grp

    if os.geteuid() == 0:
        names = [g.gr_name for g in grp.getgrall()][:2]
    else:
        names = [grp.getgrgid(g).gr_name for g in sorted(set(os.getgroups()))][:2]
    if len(names) < 2:
        pytest.skip("this user can give files to one group only")
    return names


def _modes(state: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory of the state, but the lock's note: (mode, gid)."""
    paths = [state, *state.rglob("*")]
    return {str(p.relative_to(state)): (stat.S_IMODE(p.stat().st_mode), p.stat().st_gid) for p in paths}


def test_a_group_given_later_takes_the_tables_and_the_cache_with_it(cli):
    """`--group G` on a state made private (or shared with another group) shared the state file and the journal,
    but left `routes/`, `cache/` and the tables 0700/0600 (a group member's `status` called every table missing),
    or left the directory with the old group (no one could read it). The whole state goes to the group."""
    import grp

    first, second = _two_groups()
    for args in (("init",), ("allocate", "a", "--shape", "4x4x4"), ("plan-xconnect", "a", "--apply"), ("routes", "a")):
        assert cli(*args).code == 0
    assert (cli.state / "routes" / "a.npz").exists() and (cli.state / "cache").is_dir()
    for group in (first, second):
        assert cli("--group", group, "inject-fault", "host:c40/1").code == 0
        assert cli("clear-fault", "host:c40/1").code == 0
        gid = grp.getgrnam(group).gr_gid
        modes = _modes(cli.state)
        assert {m for m in modes.values()} == {(0o750, gid), (0o640, gid)}, modes
        assert modes["routes/a.npz"] == modes["state.json"] == (0o640, gid) and modes["routes"] == (0o750, gid)
