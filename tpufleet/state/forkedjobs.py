"""A large log's jobs accounted by this process and by processes forked from it once the log is read.

A job's account is a few hundred numpy calls on its columns, most of whose time holds the interpreter's lock: two
threads accounted 10 M events in 0.85 of one thread's time, where two processes take about half. A child forked
here shares the log's columns with this process (copy on write: nothing is pickled to it), takes jobs from a
counter they share, and hands back each job's account pickled through a pipe, as a Dask worker hands them back.

The answers are one process's: the accounts are given in job order; a job whose account fails in a child is
accounted again here, for its own error, and the first failure in job order is the one raised, as one job after
another raises it; the jobs of a child that dies (killed for memory, say) before handing them back are accounted
here. A child ignores Ctrl-C (the report's process stops, and kills its children on the way out).

Forked only where that is safe (`can_fork`): Linux, and no other thread running here (a thread holding a lock at
the fork leaves it held for good in the child: a server's or a Dask worker's report uses threads instead).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["can_fork", "forked_map"]

T = TypeVar("T")

_FAILED = object()  # a child's word that a job's account failed there (its error is made again here)


def can_fork() -> bool:
    """Whether jobs can be accounted in forked processes here: Linux, and this thread the only one."""
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


def forked_map(function: Callable[[str], T], jobs: Iterable[str], children: int = 1) -> Iterator[T]:
    """`function` of each job, given in job order, computed by this process and `children` forked ones (no more
    than there are jobs for: a log of one job is accounted here alone)."""
    import multiprocessing

    names = list(jobs)
    children = min(children, len(names) - 1)
    if children < 1:
        yield from map(function, names)
        return
    context = multiprocessing.get_context("fork")
    counter, lock = context.RawValue("q", 0), context.Lock()  # the next job to take
    pipes: list[Any] = []
    pids: list[int] = []
    try:
        for _ in range(children):
            receive, send = context.Pipe(duplex=False)
            pipes.append(receive)
            with _stops_blocked() as unblocked:  # a Ctrl-C now comes once the child is known, to be killed
                pid = os.fork()
                if pid == 0:  # the child: it never returns from here
                    _child(function, names, counter, lock, send, unblocked)
                pids.append(pid)
            send.close()
        yield from _gathered(function, names, counter, lock, pipes)
    finally:
        _ended(pids)


@contextlib.contextmanager
def _stops_blocked() -> Iterator[Any]:
    """Ctrl-C, SIGTERM and SIGHUP blocked in this thread for the block (one that comes meanwhile is raised as it
    ends): between a fork and the note of the child's pid, an interrupt left a child no one killed. Gives the
    mask to restore (the child restores it too, once it ignores Ctrl-C)."""
    import signal

    from tpufleet.state.heldsignals import STOPS

    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield mask
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _taken(counter: Any, lock: Any, count: int) -> int | None:
    """The next job's index, taken from the shared counter; None once every job is taken."""
    with lock:
        index = int(counter.value)
        if index >= count:
            return None
        counter.value = index + 1
    return index


def _child(function: Callable[[str], Any], names: list[str], counter: Any, lock: Any, send: Any, mask: Any) -> None:
    """Take jobs and send back (index, account) for each, (index, None, True) for one that failed (then stop);
    leave by ``os._exit``, never into the caller's code (its `finally` blocks, its exit handlers, its buffers).
    Ctrl-C is ignored (the parent stops, and kills this child), and the child is killed with its parent."""
    import pickle
    import signal

    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _die_with_parent()
        while (index := _taken(counter, lock, len(names))) is not None:
            try:
                account = function(names[index])
            except BaseException:  # noqa: BLE001  (made again in the parent, which raises it)
                send.send_bytes(pickle.dumps((index, None, True), pickle.HIGHEST_PROTOCOL))
                break
            send.send_bytes(pickle.dumps((index, account, False), pickle.HIGHEST_PROTOCOL))
    except BaseException:  # noqa: BLE001  (a pipe closed by the parent: it accounts what is missing)
        code = 1
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    """SIGKILL for this child when the process that forked it ends, however it ends (a parent killed with SIGKILL
    runs no `finally`): Linux's PR_SET_PDEATHSIG. A parent gone already (before the call) ends the child now."""
    import ctypes
    import signal

    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):  # (no C library to call: the child ends at its pipe)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent or parent == 1:
        os._exit(1)


_PR_SET_PDEATHSIG = 1


def _gathered(function: Callable[[str], T], names: list[str], counter: Any, lock: Any, pipes: list[Any]) -> Iterator[T]:
    """Take jobs here while the children do, then give every account in job order: a job a child did not hand
    back (it failed there, or the child died) accounted here. A failure here stops the taking: every job before it
    is already taken, so the first failure in job order is raised, wherever it came from."""
    done: dict[int, Any] = {}
    readers = [threading.Thread(target=_receive, args=(pipe, done), daemon=True) for pipe in pipes]
    for reader in readers:
        reader.start()
    failure: tuple[int, BaseException] | None = None
    while (index := _taken(counter, lock, len(names))) is not None:
        try:
            done[index] = function(names[index])
        except Exception as exc:  # noqa: BLE001  (raised below, once the jobs before it are known to be right)
            with lock:
                counter.value = len(names)  # nothing more is taken, here or in a child
            failure = (index, exc)
            break
    for reader in readers:
        _joined(reader)
    for index, name in enumerate(names):
        if failure is not None and index == failure[0]:
            raise failure[1]
        account = done.pop(index, _FAILED)
        yield function(name) if account is _FAILED else account


def _receive(pipe: Any, done: dict[int, Any]) -> None:
    """A child's accounts, until it closes its pipe (done, failed or killed)."""
    import pickle

    try:
        while True:
            index, account, failed = pickle.loads(pipe.recv_bytes())
            if not failed:
                done[index] = account
    except (EOFError, OSError):
        pass
    finally:
        pipe.close()


def _joined(thread: threading.Thread) -> None:
    """Wait for `thread` a little at a time, so that a Ctrl-C reaches this thread however it came."""
    while thread.is_alive():
        thread.join(_WAKE_SECONDS)


_WAKE_SECONDS = 0.2


def _ended(pids: list[int]) -> None:
    """The children stopped (any still at work: the report is done with them, or failed) and reaped."""
    import signal

    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
