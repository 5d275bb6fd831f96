"""Where the runs of a sweep execute: in this process, one after another, or on a Dask cluster.

Both take plain tasks and yield plain results as runs finish (the `run_task` they are given does the work
either way: `tpufleet.ops.sweep.run_task`). The
Dask executor starts an in-process `LocalCluster` of worker processes (one thread each: the simulation is pure
Python and holds the GIL) or connects to a running scheduler; Dask is imported only here, and only when used,
so the rest of the tool does not pay for it.

A remote scheduler's address is checked before Dask sees it (`scheduler_address`), and every exchange with it
before the first task (connecting, counting its workers, their versions) runs under a deadline: Dask's own
connect timeout covers opening the socket but not the handshake that follows, so a port that accepts and never
answers would hold the sweep forever, and a peer that answers with other bytes makes Dask's reader fail in ways
of its own (a frame length of exabytes, a bad struct). Both are the same thing to the operator: no scheduler
there (`Refused`, exit 1).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from tpufleet.errors import BadInput, Refused, shown
from tpufleet.heldsignals import stops_held
from tpufleet.sweep import localcluster
from tpufleet.sweep.runs import Result, Task

WORKER_WAIT_S = 30.0  # how long a remote cluster may take to show its first worker
CONNECT_TIMEOUT_S = 10.0  # default --cluster-timeout: how long the scheduler may take to answer
DEFAULT_PORT = 8786  # the Dask scheduler's own default
SCHEMES = ("tcp", "tls")  # the network transports a Dask scheduler listens on without extra packages
INSTALL_HINT = "install the sweep extra: pip install 'tpufleet[sweep]' (or make sweep-deps)"
_ADDRESS = re.compile(
    r"(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\[\]]+)(?::(?P<port>[0-9]{1,5}))?", re.ASCII
)
_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")  # a DNS label (and Docker's underscores)
T = TypeVar("T")


Runner = Callable[[Task], Result]  # runs one task, never raising (`tpufleet.ops.sweep.run_task`)


class Executor(Protocol):
    kind: str  # serial, local or remote
    workers: int

    def run(self, tasks: Sequence[Task]) -> Iterator[Result]: ...

    def close(self) -> None: ...


class Serial:
    """Runs the tasks in this process, one after another, with `run_task`."""

    kind = "serial"
    workers = 1

    def __init__(self, run_task: Runner) -> None:
        self.run_task = run_task

    def run(self, tasks: Sequence[Task]) -> Iterator[Result]:
        for task in tasks:
            yield self.run_task(task)

    def close(self) -> None:
        pass


def _distributed() -> Any:
    """The `distributed` module, typed loosely: its own annotations are partial, and it is an optional extra
    (mypy must pass with and without it installed)."""
    import importlib

    return importlib.import_module("distributed")


def dask_available() -> bool:
    """Whether Dask's distributed package is installed, found without importing it (0.4 s: a local cluster's fork
    server imports it meanwhile)."""
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


def local_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _module_of(run_task: Runner | None) -> str:
    return getattr(run_task, "__module__", None) or __name__


def _tpufleet_version() -> str | None:
    """Run on each worker: its tpufleet version (None if it has none)."""
    try:
        from tpufleet import __version__
    except ImportError:
        return None
    return __version__


def scheduler_address(text: str) -> str:
    """`--cluster` checked and spelt out: ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` (scheme tcp and port 8786
    when left out); BadInput naming the option and the value otherwise.

    >>> scheduler_address("scheduler"), scheduler_address("tls://[::1]:9000")
    ('tcp://scheduler:8786', 'tls://[::1]:9000')
    """
    match = _ADDRESS.fullmatch(text) if text.isascii() and len(text) <= 300 else None
    scheme = (match.group("scheme") or "tcp") if match else None
    port = int(match.group("port") or DEFAULT_PORT) if match else 0
    if match is None or scheme not in SCHEMES or not 1 <= port <= 65535 or not _good_host(match.group("host")):
        raise BadInput(
            f"bad option --cluster {shown(text)}: give a Dask scheduler's address, "
            f"tcp://HOST:PORT or tls://HOST:PORT (HOST a name or an IP address, PORT 1-65535)"
        )
    return f"{scheme}://{match.group('host')}:{port}"


def _good_host(host: str) -> bool:
    """An IPv4 address, an IPv6 one in brackets, or a DNS name (at most 253 characters, labels of at most 63)."""
    if host.startswith("["):
        try:
            return isinstance(ipaddress.ip_address(host[1:-1]), ipaddress.IPv6Address)
        except ValueError:
            return False
    labels = host.removesuffix(".").split(".")
    return len(host) <= 253 and all(_LABEL.fullmatch(label) for label in labels)


def _within(seconds: float, what: str, call: Callable[[], T]) -> T:
    """`call()`, given at most `seconds`: Refused (exit 1) saying so when it has not returned by then.

    It runs in a daemon thread, because Dask's synchronous client blocks inside its own event loop where no
    timeout of ours reaches; a thread still waiting on a silent peer is left behind (it ends when the peer
    closes the connection, or with the process)."""
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, which raises it
            done["error"] = exc

    thread = threading.Thread(target=run, name=f"tpufleet {what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise Refused(f"{what} did not answer within {seconds:g} s (--cluster-timeout)")
    if "error" in done:
        raise done["error"]
    value: T = done["value"]
    return value


class Dask:
    """Runs tasks with `run_task` (a module-level function: the workers import it) on a Dask cluster: a local one
    of `workers` processes, or the scheduler at `address` (checked by `scheduler_address`), which must answer
    within `timeout` seconds. Without `run_task` only its `client` is for use (`goodput-report` submits its own
    tasks to it). A local cluster's fork server imports `worker_module` (by default `run_task`'s module)."""

    def __init__(
        self,
        run_task: Runner | None = None,
        address: str | None = None,
        workers: int | None = None,
        timeout: float = CONNECT_TIMEOUT_S,
        worker_module: str | None = None,
    ):
        self.run_task = run_task
        if not dask_available():
            raise BadInput(f"Dask is not installed: {INSTALL_HINT}")
        # (a bad TPUFLEET_DASK_START said first; the fork server started before Dask is imported here)
        method = None if address is not None else localcluster.prepared(worker_module or _module_of(run_task))
        try:
            dd = _distributed()
        except ImportError as exc:  # found, but broken (a dependency of its own missing)
            raise BadInput(f"Dask cannot be imported ({exc}): {INSTALL_HINT}") from None
        self.cluster: Any = None
        self.client: Any = None
        self._settings_undone: Callable[[], None] | None = None
        try:
            if address is not None:
                self._connect(dd, address, timeout)
            else:
                assert method is not None
                self._start_local(dd, workers or local_workers(), method)
        except OSError as exc:  # no port or process for the local cluster
            self.close()
            raise Refused(f"cannot start a local Dask cluster: {exc}") from None
        except BaseException:  # Refused, or a stop (Ctrl-C) taken once the local cluster had started
            self.close()
            raise

    def _start_local(self, dd: Any, workers: int, method: str) -> None:
        """The local cluster and its client, stops held back meanwhile (a second one goes through): Ctrl-C while
        it started printed its workers' errors and Dask's own, their handshakes cut; taken once it has started, it
        is closed as any other."""
        self.workers, self.kind = workers, "local"
        with stops_held(second_stops=True):
            self.cluster, self._settings_undone = localcluster.opened(dd, workers, method)
            self.client = dd.Client(self.cluster)

    def _connect(self, dd: Any, address: str, timeout: float) -> None:
        """Connect to the scheduler, wait for a worker, count the workers and check their versions, each under
        a deadline; whatever Dask raises on the way means no scheduler answered there."""
        where = f"the Dask scheduler at {shown(address)}"
        try:
            # Dask's own timeout (its connect retries, on a refused connection) gets half the deadline, so that
            # a refused port is told apart from a silent one.
            self.client = _within(timeout, where, lambda: dd.Client(address, timeout=timeout / 2))
            _within(WORKER_WAIT_S + timeout, where, self._wait_for_a_worker)
            self.workers = _within(timeout, where, lambda: sum(self.client.nthreads().values()))
            self.kind = "remote"
            _within(WORKER_WAIT_S + timeout, where, self._check_versions)
        except (Refused, BadInput):
            raise
        # Refused, connection refused, a timeout, or a peer that is no Dask scheduler: Dask's reader fails on
        # its bytes with MemoryError, struct.error, ValueError... all of them one answer: nothing usable there.
        except Exception as exc:  # noqa: BLE001
            reason = " ".join(str(exc).split())[:120] or "no reason given"
            raise Refused(f"cannot reach {where}: {type(exc).__name__}: {reason}") from None

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
        wrong = sorted(  # the names and versions are the peer's words: each cut short
            f"{shown(worker)} has {shown(version) if version else 'no tpufleet'}"
            for worker, version in theirs.items()
            if version != __version__
        )
        if wrong:
            raise Refused(f"Dask workers must run tpufleet {__version__}: " + "; ".join(wrong[:5]), wrong)

    def run(self, tasks: Sequence[Task]) -> Iterator[Result]:
        assert self.run_task is not None, "a Dask made without run_task runs no sweep"
        # Keys name the run, so a scheduler's dashboard shows which point each task is.
        futures = [
            self.client.submit(
                self.run_task, task, key=f"tpufleet-sweep-{task['key']}-r{task['replication']}", pure=False
            )
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
        undone, self._settings_undone = getattr(self, "_settings_undone", None), None
        if undone is not None:
            undone()
