"""Ctrl-C while `goodput-report`'s decoding workers start: the tool's one interrupt line and exit 130, nothing else.

The report runs in a process of its own (its own session, so the Ctrl-C a terminal sends to its whole process group
reaches nothing else), its decoding pool forced on; the interrupt is sent from inside it at a named point, right
after a worker process is started and before the executor has noted it. No sleeps: the guard only tells a hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GUARD_S
from tpufleet.cli import INTERRUPTED

_REPORT_INTERRUPTED_AT_A_WORKERS_START = """
import multiprocessing.process, os, signal, sys
from tpufleet.state import goodputpool, goodputstreams
goodputpool.PARALLEL_MIN_BYTES = 0  # the decoding pool, whatever the log's size
goodputstreams.CHUNK_BYTES = 4096
goodputpool._cpus = lambda: (2, 2.0)  # and whatever else this machine runs
start, started = multiprocessing.process.BaseProcess.start, []

def start_then_ctrl_c(process):
    start(process)
    started.append(process)
    if len(started) == int(sys.argv[2]):  # a terminal's Ctrl-C reaches the whole process group, `kill -INT` one
        stop = signal.Signals["SIG" + sys.argv[4]]
        os.killpg(0, stop) if sys.argv[3] == "group" else os.kill(os.getpid(), stop)

multiprocessing.process.BaseProcess.start = start_then_ctrl_c
from tpufleet.cli import main
main(["goodput-report", sys.argv[1]])
"""


def _log(path: Path) -> Path:
    """The shipped demo log's first 400 lines: pieces enough for every worker."""
    import gzip
    import itertools

    demo = Path(__file__).parent.parent / "tpufleet" / "data" / "demo-goodput.jsonl.gz"
    with gzip.open(demo, "rt") as fh:
        path.write_text("".join(itertools.islice(fh, 400)))
    return path


@pytest.mark.parametrize("target", ["group", "process"])
@pytest.mark.parametrize("worker", [1, 2])
def test_ctrl_c_while_decoding_workers_start_is_the_one_line_interrupt(tmp_path, worker, target):
    """A Ctrl-C right after a worker's start, before the executor noted it: the first worker's queues were gone when
    it read them (its traceback on stderr), the second was never stopped and the exit waited for it for ever. SIGINT
    is now held back while a worker starts (and the fork server and its workers keep it blocked): the interrupt
    line, exit 130, no worker's traceback."""
    from tpufleet.goodput import fastread

    if not fastread.available():
        pytest.skip("no msgspec: the reading process decodes alone")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(Path.cwd()), *sys.path) if p)}
    log = _log(tmp_path / "log.jsonl")
    args = [sys.executable, "-c", _REPORT_INTERRUPTED_AT_A_WORKERS_START, str(log), str(worker), target, "INT"]
    assert _stopped(args, env) == (130, INTERRUPTED + "\n")


@pytest.mark.parametrize("worker", [1, 2])
def test_sigterm_while_decoding_workers_start_is_the_one_line_stop(tmp_path, worker):
    """SIGTERM stops a command as Ctrl-C does, so it is held back while a worker starts as Ctrl-C is (not blocked:
    the pool stops its workers by SIGTERM): the stop's line and exit 143, no worker left for the exit to wait on."""
    from tpufleet.goodput import fastread

    if not fastread.available():
        pytest.skip("no msgspec: the reading process decodes alone")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(Path.cwd()), *sys.path) if p)}
    log = _log(tmp_path / "log.jsonl")
    args = [sys.executable, "-c", _REPORT_INTERRUPTED_AT_A_WORKERS_START, str(log), str(worker), "process", "TERM"]
    said = "tpufleet: stopped by SIGTERM (a transaction in progress was not committed)\n"
    assert _stopped(args, env) == (128 + signal.SIGTERM, said)


def _stopped(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """The report's exit code and stderr; a report that never ends fails the test once the guard runs out."""
    with subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    ) as proc:
        try:
            _out, err = proc.communicate(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail("the interrupted report waited for a worker for ever")
    return proc.returncode, err


_FORK_SERVER_STARTED_WITH_INTERRUPTS_HELD = """
import multiprocessing
from multiprocessing import forkserver
from tpufleet.state import goodputpool

BLOCKED = "int(dict(l.split(':', 1) for l in open('/proc/%s/status'))['SigBlk'], 16) >> 1 & 1"  # SIGINT: signal 2
with goodputpool._interrupts_held():
    forkserver.ensure_running()  # as the pool's first worker starts it
worker = multiprocessing.get_context("forkserver").Process(target=exec, args=("exit(10 + (%s))" % BLOCKED % "self",))
worker.start()
worker.join()
server = forkserver._forkserver._forkserver_pid  # (its /proc status holds its mask from the first instant)
print(eval(BLOCKED % server), worker.exitcode - 10, eval(BLOCKED % "self"))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads a process's signal mask from /proc")
def test_the_fork_server_starts_with_ctrl_c_blocked_for_every_worker_it_forks():
    """In a fresh process (the fork server is one a process): the server started while interrupts are held keeps
    SIGINT blocked, and so does every worker it forks. Multiprocessing's resource tracker, started with the
    server, unblocked it in the starting thread, so the server ran without it: the tracker now starts first."""
    result = subprocess.run(
        [sys.executable, "-c", _FORK_SERVER_STARTED_WITH_INTERRUPTS_HELD],
        capture_output=True,
        text=True,
        timeout=GUARD_S,
    )
    assert (result.returncode, result.stdout) == (0, "1 1 0\n"), result.stderr  # the server, a worker, this one
