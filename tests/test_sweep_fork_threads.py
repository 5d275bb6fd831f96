"""A local Dask cluster's workers are never forked while another thread runs in the process: a forked worker
inherits whatever lock that thread held (another cluster's event loop, a server's) and can wait on it forever.
Then they start from a fork server, a fresh single-threaded process."""

from __future__ import annotations

import threading

import pytest


def test_a_local_cluster_is_not_forked_while_another_thread_runs(monkeypatch):
    dask = pytest.importorskip("dask", reason="the local cluster needs the sweep extra (make sweep-deps)")
    from tpufleet.sweep import backends

    seen: dict[str, object] = {}

    class Distributed:  # stands in for dask.distributed: records the start method the cluster would use
        @staticmethod
        def LocalCluster(**kwargs: object) -> str:
            seen["method"] = dask.config.get("distributed.worker.multiprocessing-method")
            return "cluster"

    monkeypatch.delenv("TPUFLEET_DASK_START", raising=False)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert backends._local_cluster(Distributed, 2) == "cluster"
    finally:
        stop.set()
        other.join()
    threaded = seen.pop("method")
    monkeypatch.setenv("TPUFLEET_DASK_START", "spawn")  # the operator's choice still holds
    backends._local_cluster(Distributed, 2)
    assert (threaded, seen["method"]) == ("forkserver", "spawn")
