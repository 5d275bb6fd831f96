"""A local Dask cluster's workers are never forked from the command's process: Dask's own threads run there when it
starts a worker (the scheduler's event loop, the nanny's), and a worker forked then inherits whatever lock one of
them held and can wait on it forever. They start from a fork server, a fresh single-threaded process that imported
what a worker runs."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from helpers import GUARD_S


def test_a_local_cluster_starts_from_a_fork_server_whatever_thread_runs(monkeypatch):
    dask = pytest.importorskip("dask", reason="the local cluster needs the sweep extra (make sweep-deps)")
    from tpufleet.sweep import backends

    seen: list[object] = []

    class Distributed:  # stands in for dask.distributed: records the start method the cluster would use
        @staticmethod
        def LocalCluster(**kwargs: object) -> str:
            seen.append(dask.config.get("distributed.worker.multiprocessing-method"))
            return "cluster"

    monkeypatch.delenv("TPUFLEET_DASK_START", raising=False)
    backends._local_cluster(Distributed, 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert backends._local_cluster(Distributed, 2) == "cluster"
    finally:
        stop.set()
        other.join()
    monkeypatch.setenv("TPUFLEET_DASK_START", "fork")  # the operator's choice still holds
    backends._local_cluster(Distributed, 2)
    assert seen == ["forkserver", "forkserver", "fork"]


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
