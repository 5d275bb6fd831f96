"""The in-process local Dask cluster `backends.Dask` starts when no scheduler is named: how its workers start.

On Linux they start from multiprocessing's fork server, a fresh single-threaded process that imported what a worker
runs. Forked from the command, as they once were, a worker was forked while Dask's own threads ran there (the
scheduler's event loop, the nanny's) and could inherit a lock one of them held (a logging stream's, in a hang seen
under load) and wait on it forever. Spawning a fresh interpreter a worker (Dask's default, for platforms without
fork) took 6 s on a busy 2-core machine; the fork server costs about 0.5 s more than forking, once a process.
`TPUFLEET_DASK_START` chooses another method.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from tpufleet.errors import BadInput, shown
from tpufleet.heldsignals import interrupts_blocked

START_METHODS = ("fork", "forkserver", "spawn")  # multiprocessing's, as Dask takes them


def start_method() -> str | None:
    """How `TPUFLEET_DASK_START` says the local cluster's workers start (None: unset or empty, the default);
    BadInput for a method multiprocessing has not (Dask's nanny would fail with its traceback)."""
    method = os.environ.get("TPUFLEET_DASK_START") or None
    if method is not None and method not in START_METHODS:
        raise BadInput(
            f"bad environment variable TPUFLEET_DASK_START {shown(method)}: {', '.join(START_METHODS)} (or unset)"
        )
    return method


def local_start_method() -> str:
    """As `TPUFLEET_DASK_START` says, else from a fork server on Linux, else spawned (Dask's default)."""
    return start_method() or ("forkserver" if sys.platform == "linux" else "spawn")


def prepared(worker_module: str) -> str:
    """How the workers will start (`local_start_method`), their fork server started now if they start from one,
    before the command imports Dask, so that both import it at once (0.4 s each). A fork server that cannot start
    (its socket's path too long under a long TMPDIR) leaves the workers spawned."""
    method = local_start_method()
    if method == "forkserver":
        try:
            start_fork_server(worker_module)
        except OSError:
            return "spawn"
    return method


def opened(dd: Any, workers: int, method: str) -> tuple[Any, Callable[[], None]]:
    """A LocalCluster of `workers` one-thread processes started by `method` (`prepared`), and what to call once it
    is closed. Its Dask settings hold until then, not only while it starts: a worker the nanny restarts (one killed
    for memory) reads them again, and under Dask's defaults would be spawned, with none of what the fork server
    gives a worker."""
    import dask

    # Dask's statistical profiler samples every worker's stack every 10 ms in a thread of its own, for a
    # dashboard this cluster does not serve: off, a 24-point sweep on 2 cores runs 1.68-1.70x -> 1.76x serial.
    settings: Any = dask.config.set(
        {"distributed.worker.multiprocessing-method": method, "distributed.worker.profile.enabled": False}
    )
    try:
        cluster = dd.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            # None still serves the scheduler's HTTP routes on 8787, and warns on stderr when another cluster (a
            # second report, a sweep) holds it: any free port instead, never a word
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        )
    except BaseException:
        settings.__exit__(None, None, None)
        raise
    return cluster, lambda: settings.__exit__(None, None, None)


def start_fork_server(worker_module: str) -> None:
    """Start the fork server now, to import Dask's package, what the workers start with (`workerlog`) and
    `worker_module` (whose functions they run): there once, not by each worker. Set before Dask's first call sets
    its list (Dask's package alone), which only holds for a server not yet started: one already running (the
    report's decoding workers') keeps its own, and its workers import more (and log a failed task: the one line
    said here comes after)."""
    import multiprocessing
    from multiprocessing import forkserver

    preload = ["distributed", "tpufleet.sweep.workerlog", worker_module]
    multiprocessing.get_context("forkserver").set_forkserver_preload(preload)
    # Ctrl-C blocked while it starts: the server and every worker it forks keep that mask. A terminal's Ctrl-C
    # reaches the whole process group, and workers that took it printed Dask's tracebacks under the interrupt's one
    # line; the command alone takes it, and closing the cluster stops the workers.
    with _this_path_only(), interrupts_blocked():
        forkserver.ensure_running()


@contextlib.contextmanager
def _this_path_only() -> Iterator[None]:
    """The processes started in the block import from this command's path, not from the working directory: they
    run as ``python -c``, which puts it first (a `distributed.py` or a copy of tpufleet there was imported by the
    workers of a `tpufleet` command, whose own path leaves it out). `python -m tpufleet` has it: so do they."""
    here = {"", os.getcwd()}
    if here & set(sys.path) or "PYTHONSAFEPATH" in os.environ:
        yield
        return
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        del os.environ["PYTHONSAFEPATH"]
