"""SIGTERM and SIGHUP stop a command as Ctrl-C does: at every named point of the write protocol, a real process
sent the signal there rolls its change back (or, past the commit point, finishes it), leaves no temp file and no
lock, says in one line whether its change was committed, and exits 128 + the signal's number. A SIGHUP the parent
ignores (`nohup`) stays ignored; a process forked from the command dies of the signal as without the handler."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pgserver
import pytest

from helpers import GUARD_S, wired
from tpufleet.state import Store
from tpufleet.state.crashpoints import POINTS

pg_server = pgserver.pg_server  # the fixtures: a server for the session, a new database per test
pg_url = pgserver.pg_url
COMMITTED_FROM = POINTS.index("atomic_write.before_dir_fsync")  # the state file's rename is the commit point


def _tpufleet(state: Path, point: str, signal_name: str, *args: str, **popen) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).parent.parent),
        "TPUFLEET_CRASH_AT": point,
        "TPUFLEET_CRASH_SIGNAL": signal_name,
    }
    command = [sys.executable, "-m", "tpufleet", "--state", str(state), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=GUARD_S, **popen)


def _temps(state: Path) -> list[str]:
    return sorted(p.name for p in state.rglob("*") if p.name.endswith(".tmp"))


def _serials(state: Path) -> tuple[int, int]:
    """The state's serial and the journal's lines: one a committed change."""
    lines = (state / "journal.jsonl").read_text().splitlines()
    return Store(state).load().serial, len(lines)


@pytest.mark.parametrize("point", POINTS)
def test_sigterm_at_each_point_of_a_commit(fleet, point):
    wired(fleet, "s", "4x4x4")
    before = _serials(fleet.state)
    r = _tpufleet(fleet.state, point, "TERM", "routes", "s")
    committed = POINTS.index(point) >= COMMITTED_FROM
    said = (
        f"tpufleet: stopped by SIGTERM after its change was committed as serial {before[0] + 1} (`tpufleet history` shows it)"
        if committed
        else "tpufleet: stopped by SIGTERM (a transaction in progress was not committed)"
    )
    assert (r.returncode, r.stderr) == (128 + signal.SIGTERM, said + "\n")
    assert _serials(fleet.state) == ((before[0] + 1, before[1] + 1) if committed else before)
    assert _temps(fleet.state) == [], sorted(p.name for p in fleet.state.rglob("*"))
    assert (fleet.state / "routes" / "s.npz").exists() is committed  # committed: its tables in place, not waiting
    status = fleet("--lock-timeout", "0", "inject-fault", "host:c01/1", "-o", "json")  # the lock is free
    assert status.code == 0, status.err


@pytest.mark.parametrize("point", ["journal.after_fsync", "transaction.before_side_files"])
def test_sighup_is_a_stop_too(fleet, point):
    wired(fleet, "s", "4x4x4")
    before = _serials(fleet.state)
    r = _tpufleet(fleet.state, point, "HUP", "routes", "s")
    assert r.returncode == 128 + signal.SIGHUP and r.stderr.startswith("tpufleet: stopped by SIGHUP"), r.stderr
    committed = point == "transaction.before_side_files"
    assert _serials(fleet.state) == ((before[0] + 1, before[1] + 1) if committed else before)
    assert _temps(fleet.state) == []


def test_a_sighup_ignored_by_nohup_stays_ignored(fleet):
    wired(fleet, "s", "4x4x4")
    ignoring = lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)  # noqa: E731 - what nohup does before exec
    r = _tpufleet(fleet.state, "atomic_write.before_rename", "HUP", "routes", "s", preexec_fn=ignoring)
    assert (r.returncode, r.stderr) == (0, "")
    assert (fleet.state / "routes" / "s.npz").exists() and _temps(fleet.state) == []


def test_a_forked_child_dies_of_the_signal_as_without_the_handler():
    from tpufleet.cli.stopsignals import RECEIVED, stopping_as_interrupt

    with stopping_as_interrupt():
        pid = os.fork()
        if pid == 0:  # the child: the default action kills it at the kill; anything after is the handler's doing
            try:
                os.kill(os.getpid(), signal.SIGTERM)
            finally:
                os._exit(3)
        _pid, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    assert RECEIVED == []  # nor did the parent take it for its own stop
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # and the handler is gone after the command


@pytest.mark.parametrize("point", POINTS)
def test_sigterm_at_each_point_of_a_database_commit(pg_url, capsys, point):
    """On PostgreSQL the stop rolls the open transaction back (the server would at the disconnect anyway) or, past
    its COMMIT, says the serial it committed; the session's lock goes with it."""
    from conftest import Cli

    cli = Cli(capsys, pg_url)
    assert cli("init").code == 0
    r = _tpufleet(pg_url, point, "TERM", "inject-fault", "host:c01/1", "--reason", "stop test")
    committed = POINTS.index(point) >= COMMITTED_FROM
    said = (
        "after its change was committed as serial 2 (`tpufleet history` shows it)"
        if committed
        else "(a transaction in progress was not committed)"
    )
    assert (r.returncode, r.stderr) == (128 + signal.SIGTERM, f"tpufleet: stopped by SIGTERM {said}\n")
    assert cli("status", "-o", "json").json["serial"] == 1 + committed
    assert len(cli("faults", "-o", "json").json) == committed
    assert cli("--lock-timeout", "0", "inject-fault", "host:c02/2").code == 0  # the lock is free


STOPPED_IN_EXEC = """
import importlib
import sys

app = importlib.import_module("tpufleet.cli.app")  # (the package's own `app` is the Typer application)

located = app._state_location


def stopped_while_a_module_loads(state):  # the signal handled inside exec(), as while a dataclass is made
    exec("import os, signal\\nos.kill(os.getpid(), signal.SIG%s)\\nfor _ in range(10**6): pass")
    return located(state)


app._state_location = stopped_while_a_module_loads
from tpufleet.cli import main

main(sys.argv[1:])
"""


@pytest.mark.parametrize("name", ["TERM", "HUP"])
def test_a_stop_inside_exec_still_exits_with_the_signals_code(tmp_path, name):
    """A KeyboardInterrupt that left an `exec` marks CPython's interpreter, which then ended the process by SIGINT
    (130) whatever `sys.exit` said, under `python -m`: a SIGTERM while a module's dataclass was being made came
    out as a Ctrl-C."""
    (tmp_path / "stopped_in_exec.py").write_text(STOPPED_IN_EXEC % name)  # run with -m, as `python -m tpufleet`
    env = {**os.environ, "PYTHONPATH": f"{Path(__file__).parent.parent}{os.pathsep}{tmp_path}"}
    command = [sys.executable, "-m", "stopped_in_exec", "--state", str(tmp_path / "s"), "status"]
    r = subprocess.run(command, capture_output=True, text=True, env=env, timeout=GUARD_S, check=False)
    number = signal.Signals[f"SIG{name}"]
    said = f"tpufleet: stopped by SIG{name} (a transaction in progress was not committed)\n"
    assert (r.returncode, r.stderr) == (128 + number, said)
