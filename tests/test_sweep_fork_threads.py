"""A local Dask cluster's workers are never forked from the command's process: Dask's own threads run there when it
starts a worker (the scheduler's event loop, the nanny's), and a worker forked then inherits whatever lock one of
them held and can wait on it forever. They start from a fork server, a fresh single-threaded process that imported
what a worker runs."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers import GUARD_S

SPEC = "schema_version: 1\nsimulation: availability\nseeds: 2\nfixed: {trials: 100}\ngrid: {cubes: [8, 64]}\n"


def test_a_local_cluster_starts_from_a_fork_server_whatever_thread_runs(monkeypatch):
    """The fork server by default, another thread running or not; spawned when the server cannot start (its
    socket's path too long under a long TMPDIR: it was exit 70); the operator's choice holds. The settings last
    until the cluster is closed: a worker the nanny restarts reads them then."""
    dask = pytest.importorskip("dask", reason="the local cluster needs the sweep extra (make sweep-deps)")
    from tpufleet.sweep import localcluster

    method = "distributed.worker.multiprocessing-method"
    seen: list[object] = []
    servers: list[str] = []

    class Distributed:  # stands in for dask.distributed: records the start method the cluster would use
        @staticmethod
        def LocalCluster(**kwargs: object) -> str:
            seen.append(dask.config.get(method, None))
            return "cluster"

    def opened_and_closed() -> None:
        cluster, closed = localcluster.opened(Distributed, 2, localcluster.prepared("tpufleet.ops.sweep"))
        assert (cluster, dask.config.get(method, None)) == ("cluster", seen[-1])  # still in force
        closed()
        assert dask.config.get(method, None) == before

    before = dask.config.get(method, None)
    monkeypatch.delenv("TPUFLEET_DASK_START", raising=False)
    monkeypatch.setattr(localcluster, "start_fork_server", servers.append)
    opened_and_closed()
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        opened_and_closed()
    finally:
        stop.set()
        other.join()

    def no_socket(module: str) -> None:
        raise OSError("AF_UNIX path too long")

    monkeypatch.setattr(localcluster, "start_fork_server", no_socket)
    opened_and_closed()
    monkeypatch.setenv("TPUFLEET_DASK_START", "fork")  # the operator's choice still holds
    opened_and_closed()
    assert (seen, servers) == (["forkserver", "forkserver", "spawn", "fork"], ["tpufleet.ops.sweep"] * 2)


_WORKERS_PARENTS = """
import os, sys
from dask import distributed
from tpufleet.sweep import backends
from tpufleet.ops.sweep import run_task
cluster = backends.Dask(run_task, workers=2)
parents = set(cluster.client.run(os.getppid).values())
preloaded = cluster.client.run(eval, "'tpufleet.ops.sweep' in __import__('sys').modules")
print(len(parents), os.getpid() in parents, all(preloaded.values()))
cluster.close()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the fork server is the default on Linux")
def test_a_local_clusters_workers_come_from_one_fork_server_that_imported_their_work(monkeypatch):
    """In a fresh process (a fork server is one a process, and another test's may be running here already): both
    workers are children of one process that is not this one, and hold what a worker runs before any task."""
    pytest.importorskip("dask.distributed", reason="the local cluster needs the sweep extra (make sweep-deps)")
    monkeypatch.delenv("TPUFLEET_DASK_START", raising=False)
    result = subprocess.run(
        [sys.executable, "-c", _WORKERS_PARENTS], capture_output=True, text=True, timeout=GUARD_S * 4
    )
    assert (result.returncode, result.stdout) == (0, "1 False True\n"), result.stderr[-2000:]


_SWEEP_INTERRUPTED_AT_ITS_FIRST_RESULT = """
import os, signal, sys, threading
from tpufleet.sweep import backends
result = backends.Dask._result

def first(future, task):
    os.killpg(0, signal.SIGINT)  # a terminal's Ctrl-C: to the whole process group, workers and fork server too
    threading.Event().wait()  # the interrupt must reach this process
    return result(future, task)

backends.Dask._result = staticmethod(first)
from tpufleet.cli import main
main(["sweep", sys.argv[1], "--out", sys.argv[2], "--workers", "2"])
"""


def test_ctrl_c_during_a_sweep_on_a_local_cluster_is_the_one_line_interrupt(tmp_path, monkeypatch):
    """Ctrl-C once the first run has come back: the interrupt line and exit 130, nothing else. The workers took
    it too and printed Dask's tracebacks under that line; they start with it blocked now (from the fork server),
    and the command, which alone takes it, closes the cluster."""
    from tpufleet.cli import INTERRUPTED

    monkeypatch.delenv("TPUFLEET_DASK_START", raising=False)
    assert _sweep_stopped(_SWEEP_INTERRUPTED_AT_ITS_FIRST_RESULT, tmp_path) == (130, "", INTERRUPTED + "\n")


def test_the_workers_of_the_tpufleet_command_import_nothing_from_the_working_directory(tmp_path, monkeypatch):
    """The `tpufleet` command's own path leaves the working directory out; the fork server, run as ``python -c``,
    put it first, so a `distributed.py` (or a copy of tpufleet) in the directory a sweep ran from was imported by
    every worker. Here one that would leave a mark, and break the workers, is not imported at all."""
    pytest.importorskip("dask.distributed", reason="the local cluster needs the sweep extra (make sweep-deps)")
    command = Path(sys.executable).with_name("tpufleet")
    if not command.exists():
        pytest.skip(f"no tpufleet command beside {sys.executable} (the package is not installed in this Python)")
    monkeypatch.delenv("TPUFLEET_DASK_START", raising=False)
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    (tmp_path / "distributed.py").write_text("open('IMPORTED', 'w').close()\nraise ImportError('not Dask')\n")
    (tmp_path / "spec.yaml").write_text(SPEC)
    result = subprocess.run(
        [str(command), "sweep", "spec.yaml", "--out", "out", "--workers", "2", "-o", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=GUARD_S * 4,
    )
    assert (result.returncode, (tmp_path / "IMPORTED").exists()) == (0, False), result.stderr[-2000:]


_SWEEP_INTERRUPTED_AS_A_WORKER_STARTS = """
import itertools, multiprocessing.process, os, signal, sys
start, workers = multiprocessing.process.BaseProcess.start, itertools.count()

def start_then_ctrl_c(process):  # the nanny starting a worker process, the cluster half made
    start(process)
    # one Ctrl-C: the workers start on threads of their own, side by side (a second would go through at once)
    if process.name.startswith("Dask Worker") and next(workers) == 0:
        os.killpg(0, signal.SIGINT)

multiprocessing.process.BaseProcess.start = start_then_ctrl_c
from tpufleet.cli import main
main(["sweep", sys.argv[1], "--out", sys.argv[2], "--workers", "2"])
"""


def test_ctrl_c_while_the_local_cluster_starts_is_the_one_line_interrupt(tmp_path, monkeypatch):
    """Ctrl-C as the first worker process starts, the cluster half made: the interrupt line and exit 130, nothing
    else. Taken at once, it cut the workers' handshakes and Dask's start-up: a page of their errors followed. It is
    held until the cluster has started, which is then closed as any other (a second Ctrl-C would go through)."""
    from tpufleet.cli import INTERRUPTED

    monkeypatch.delenv("TPUFLEET_DASK_START", raising=False)
    assert _sweep_stopped(_SWEEP_INTERRUPTED_AS_A_WORKER_STARTS, tmp_path) == (130, "", INTERRUPTED + "\n")


def _sweep_stopped(script: str, tmp_path: Path) -> tuple[int, str, str]:
    """`script` (which stops its own sweep on a 2-worker local cluster, a Ctrl-C to its process group) run by a
    fresh Python in a session of its own: its exit code, stdout and stderr (the guard only tells a hang)."""
    pytest.importorskip("dask.distributed", reason="the local cluster needs the sweep extra (make sweep-deps)")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    result = subprocess.run(
        [sys.executable, "-c", script, str(spec), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=GUARD_S * 4,
        start_new_session=True,
    )
    return result.returncode, result.stdout, result.stderr
