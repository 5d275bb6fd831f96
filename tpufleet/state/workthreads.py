"""Daemon threads that run a report's work (pieces of a log, jobs' accounts) beside its main thread, as an executor.

Not `concurrent.futures.ThreadPoolExecutor`: its threads are joined when the interpreter exits, so a Ctrl-C while a
large job was accounted waited for that job (seconds) and a second Ctrl-C in that wait printed a traceback from
the interpreter's exit. These threads are daemons: on an interrupt the work not started is cancelled, the main
thread goes on to its one-line message and exit 130 at once, and the work running is abandoned with the process
(it holds references to all it reads and writes, and writes nothing but its own arrays).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

from tpufleet.heldsignals import STOPS

T = TypeVar("T")
_Call = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class WorkThreads(Executor):
    """`count` daemon threads named ``name_k`` taking submitted calls in order."""

    def __init__(self, count: int, name: str) -> None:
        self._max_workers = count
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        for k in range(count):
            thread = threading.Thread(target=self._work, name=f"{name}_{k}", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no thread to be had (a container's process limit): those started end
                self.shutdown(wait=False)
                raise
            self._threads.append(thread)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._calls.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        _leave_stops_to_the_main_thread()
        while (call := self._calls.get()) is not None:
            future, function, args, kwargs = call
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001  (handed to the caller, as an executor does)
                future.set_exception(exc)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = True) -> None:
        """Calls not started are cancelled (always: nothing here waits for work it gave up); the threads end after
        the calls running, waited for when `wait`."""
        while True:
            try:
                call = self._calls.get_nowait()
            except queue.Empty:
                break
            if call is not None:
                call[0].cancel()
        for _ in self._threads:
            self._calls.put(None)
        if wait:
            for thread in self._threads:
                thread.join()


def _leave_stops_to_the_main_thread() -> None:
    """Ctrl-C, SIGTERM and SIGHUP blocked in this thread, so that the kernel hands them to the main thread.

    The kernel gives a signal sent to the process to any thread that does not block it, and Python only runs the
    handler between the main thread's instructions: one taken by a work thread left the main thread asleep in its
    wait for that thread's result, which for a job that never ends was for ever."""
    import signal

    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)


def waited(future: Future[T]) -> T:
    """`future.result()`, waited for WAKE_SECONDS at a time, so that a Ctrl-C reaches the main thread however it
    came. Python notes a signal at once but raises it between instructions: one noted just before a wait without
    an end (after its last check, before the thread slept) was raised when the wait ended, which for a job that
    never ends was never. A wait with an end goes back to the instructions, and the interrupt with it."""
    from concurrent.futures import wait

    while not future.done():
        wait([future], timeout=WAKE_SECONDS)
    return future.result()


WAKE_SECONDS = 0.2  # the longest a Ctrl-C waits in `waited`: the wait costs a wake-up in each of these
