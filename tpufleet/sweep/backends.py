"""Where the runs of a sweep execute: in this process, one after another, or on a Dask cluster.

Both take plain tasks and yield plain results as runs finish (`runs.run_task` does the work either way). The
Dask executor starts an in-process `LocalCluster` of worker processes (one thread each: the simulation is pure
Python and holds the GIL) or connects to a running scheduler; Dask is imported only here, and only when used,
so the rest of the tool does not pay for it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from tpufleet.errors import BadInput, Refused
from tpufleet.sweep.runs import Result, Task, run_task

WORKER_WAIT_S = 30.0  # how long a remote cluster may take to show its first worker
INSTALL_HINT = "install the sweep extra: pip install 'tpufleet[sweep]' (or make sweep-deps)"


class Executor(Protocol):
    kind: str  # serial, local or remote
    workers: int

    def run(self, tasks: Sequence[Task]) -> Iterator[Result]: ...

    def close(self) -> None: ...


class Serial:
    kind = "serial"
    workers = 1

    def run(self, tasks: Sequence[Task]) -> Iterator[Result]:
        for task in tasks:
            yield run_task(task)

    def close(self) -> None:
        pass


def _distributed() -> Any:
    """The `distributed` module, typed loosely: its own annotations are partial, and it is an optional extra
    (mypy must pass with and without it installed)."""
    import importlib

    return importlib.import_module("distributed")


def dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def local_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _tpufleet_version() -> str | None:
    """Run on each worker: its tpufleet version (None if it has none)."""
    try:
        from tpufleet import __version__
    except ImportError:
        return None
    return __version__


def _local_cluster(dd: Any, workers: int) -> Any:
    """A LocalCluster of `workers` one-thread processes. On Linux they are forked from this process, which has
    the simulation imported already: spawning a fresh interpreter per worker (Dask's default, for platforms
    without fork) took 6 s on a busy 2-core machine against 0.6 s forked, more than a short sweep's runs."""
    import sys

    import dask

    method = os.environ.get("TPUFLEET_DASK_START") or ("fork" if sys.platform == "linux" else "spawn")
    import tpufleet.sweep.runs  # noqa: F401  # imported before the fork, so no worker imports it again

    # Dask's statistical profiler samples every worker's stack every 10 ms in a thread of its own, for a
    # dashboard this cluster does not serve: off, a 24-point sweep on 2 cores runs 1.68-1.70x -> 1.76x serial.
    config = {"distributed.worker.multiprocessing-method": method, "distributed.worker.profile.enabled": False}
    with dask.config.set(config):
        return dd.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )


class Dask:
    """Runs tasks on a Dask cluster: a local one of `workers` processes, or the scheduler at `address`."""

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        if not dask_available():
            raise BadInput(f"Dask is not installed: {INSTALL_HINT}")
        dd = _distributed()
        self.cluster: Any = None
        try:
            if address is None:
                self.workers = workers or local_workers()
                self.cluster = _local_cluster(dd, self.workers)
                self.client = dd.Client(self.cluster)
                self.kind = "local"
            else:
                self.client = dd.Client(address, timeout="10s")
                self._wait_for_a_worker()
                self.workers = sum(self.client.nthreads().values())
                self.kind = "remote"
                self._check_versions()
        except OSError as exc:  # no scheduler there, refused, timed out
            self.close()
            raise Refused(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        except Refused:
            self.close()
            raise

    def _wait_for_a_worker(self) -> None:
        """Workers started with the scheduler may still be registering: give them WORKER_WAIT_S."""
        try:
            self.client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            raise Refused(
                f"the Dask cluster has no workers after {WORKER_WAIT_S:g} s: start some with "
                "`dask worker SCHEDULER_ADDRESS`"
            ) from None

    def _check_versions(self) -> None:
        """Refuse workers without this version of tpufleet: another version may give other numbers."""
        from tpufleet import __version__

        theirs = self.client.run(_tpufleet_version)
        wrong = sorted(
            f"{worker} has {version or 'no tpufleet'}" for worker, version in theirs.items() if version != __version__
        )
        if wrong:
            raise Refused(f"Dask workers must run tpufleet {__version__}: " + "; ".join(wrong[:5]), wrong)

    def run(self, tasks: Sequence[Task]) -> Iterator[Result]:
        # Keys name the run, so a scheduler's dashboard shows which point each task is.
        futures = [
            self.client.submit(run_task, task, key=f"tpufleet-sweep-{task['key']}-r{task['replication']}", pure=False)
            for task in tasks
        ]
        by_future = dict(zip(futures, tasks, strict=True))
        try:
            for future in _distributed().as_completed(futures):
                yield self._result(future, by_future[future])
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    @staticmethod
    def _result(future: Any, task: Task) -> Result:
        try:
            result: Result = future.result()
        except Exception as exc:  # noqa: BLE001 - the cluster lost the run (a worker died): reported, not fatal
            return {
                "point": task["point"],
                "replication": task["replication"],
                "seed": task["seed"],
                "error": f"the cluster lost this run: {type(exc).__name__}: {exc}",
                "bug": False,
            }
        return result

    def dashboard(self) -> str:
        """The scheduler's dashboard address (where Dask shows each task's progress), or why there is none."""
        link = getattr(self.client, "dashboard_link", None)
        return str(link) if link else "not running (install bokeh on the scheduler for one)"

    def close(self) -> None:
        for part in (getattr(self, "client", None), self.cluster):
            if part is not None:
                with contextlib.suppress(Exception):
                    part.close()
