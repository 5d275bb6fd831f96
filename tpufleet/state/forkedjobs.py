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

__all__ = ["can_fork", "child_started", "forked_map"]

T = TypeVar("T")

_FAILED = object()  # a job no child handed back (it failed there, or the child died): made again here


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
    shared = _Jobs(multiprocessing.get_context("fork"), len(names))
    pipes: list[Any] = []
    pids: list[int] = []
    try:
        for _ in range(children):
            receive, send = shared.context.Pipe(duplex=False)
            with _stops_blocked() as unblocked:  # a Ctrl-C now comes once the child is known, to be killed
                pid = os.fork()
                if pid == 0:  # the child: it never returns from here
                    _child(function, names, shared, send, unblocked, [*pipes, receive])
                pids.append(pid)
            pipes.append(receive)
            send.close()
        yield from _gathered(function, names, shared, pipes, pids)
    finally:
        _ended(pids)


class _Jobs:
    """The next job to take, shared by the processes: a counter in shared memory, under a lock."""

    def __init__(self, context: Any, count: int) -> None:
        self.context, self.count = context, count
        self.counter, self.lock = context.RawValue("q", 0), context.Lock()

    def taken(self, give_up: Callable[[], bool] | None = None) -> int | None:
        """The next job's index; None once every job is taken, or when `give_up` says to stop waiting for the
        lock (a child died: it may have died holding it)."""
        if not self._locked(give_up):
            return None
        try:
            index = int(self.counter.value)
            if index >= self.count:
                return None
            self.counter.value = index + 1
            return index
        finally:
            self.lock.release()

    def stop(self, give_up: Callable[[], bool]) -> None:
        """No job taken from now on, here or in a child."""
        if self._locked(give_up):
            self.counter.value = self.count
            self.lock.release()

    def _locked(self, give_up: Callable[[], bool] | None) -> bool:
        while not self.lock.acquire(timeout=_WAKE_SECONDS):
            if give_up is not None and give_up():
                return False
        return True


_DONE = -1  # a child's last word: it took every job it could (a pipe that ends without it, a child that died)


@contextlib.contextmanager
def _stops_blocked() -> Iterator[Any]:
    """Ctrl-C, SIGTERM and SIGHUP blocked in this thread for the block (one that comes meanwhile is raised as it
    ends): between a fork and the note of the child's pid, an interrupt left a child no one killed. Gives the
    mask to restore (the child restores it too, once it ignores Ctrl-C)."""
    import signal

    from tpufleet.heldsignals import STOPS

    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield mask
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _child(
    function: Callable[[str], Any], names: list[str], shared: _Jobs, send: Any, mask: Any, read_ends: list[Any]
) -> None:
    """Take jobs and send back (index, account, False) for each, (index, None, True) for one that failed (then
    stop), and (_DONE, None, False) last; leave by ``os._exit``, never into the caller's code (its `finally`
    blocks, its exit handlers, its buffers). Ctrl-C is ignored (the parent stops, and kills this child), the child
    is killed with its parent, and holds no pipe's reading end (a write to a parent gone fails at once)."""
    code = 0
    try:
        import pickle

        child_started(mask, read_ends)
        while (index := shared.taken()) is not None:
            try:
                account = function(names[index])
            except BaseException:  # noqa: BLE001  (made again in the parent, which raises it)
                send.send_bytes(pickle.dumps((index, None, True), pickle.HIGHEST_PROTOCOL))
                break
            send.send_bytes(pickle.dumps((index, account, False), pickle.HIGHEST_PROTOCOL))
        send.send_bytes(pickle.dumps((_DONE, None, False), pickle.HIGHEST_PROTOCOL))
    except BaseException:  # noqa: BLE001  (a pipe closed by the parent: it accounts what is missing)
        code = 1
    finally:
        os._exit(code)


def child_started(mask: Any, others: list[Any]) -> None:
    """A forked child's first steps: Ctrl-C ignored (its parent stops, and kills it), the signal `mask` the fork
    began with restored, death with its parent asked for, and the pipe ends it does not use closed (`others`: a
    write to a parent gone then fails at once)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    _die_with_parent()
    for end in others:
        end.close()


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


def _gathered(
    function: Callable[[str], T], names: list[str], shared: _Jobs, pipes: list[Any], pids: list[int]
) -> Iterator[T]:
    """Take jobs here while the children do, then give every account in job order: a job a child did not hand
    back (it failed there, or the child died) accounted here. A failure here stops the taking: every job before it
    is already taken, so the first failure in job order is raised, wherever it came from. Once a child has died,
    the others are killed too (one may wait for good on the lock the dead one held): what they did not hand back
    is accounted here."""
    done: dict[int, Any] = {}
    died = threading.Event()
    readers = [threading.Thread(target=_receive, args=(pipe, done, died), daemon=True) for pipe in pipes]
    for reader in readers:
        reader.start()
    failure: tuple[int, BaseException] | None = None
    while (index := shared.taken(died.is_set)) is not None:
        try:
            done[index] = function(names[index])
        except Exception as exc:  # noqa: BLE001  (raised below, once the jobs before it are known to be right)
            shared.stop(died.is_set)
            failure = (index, exc)
            break
    for reader in readers:
        while reader.is_alive():  # a little at a time, so that a Ctrl-C reaches this thread however it came
            reader.join(_WAKE_SECONDS)
            if died.is_set():
                _killed(pids)
    for index, name in enumerate(names):
        if failure is not None and index == failure[0]:
            raise failure[1]
        account = done.pop(index, _FAILED)
        yield function(name) if account is _FAILED else account


def _receive(pipe: Any, done: dict[int, Any], died: threading.Event) -> None:
    """A child's accounts, until it closes its pipe; `died` set when it did without its last word."""
    import pickle

    finished = False
    try:
        while True:
            index, account, failed = pickle.loads(pipe.recv_bytes())
            if index == _DONE:
                finished = True
            elif not failed:
                done[index] = account
    except Exception:  # noqa: BLE001  (the pipe's end, or a word cut short: the child is gone either way)
        pass
    finally:
        pipe.close()
        if not finished:
            died.set()


_WAKE_SECONDS = 0.2


def _killed(pids: list[int]) -> None:
    import signal

    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _ended(pids: list[int]) -> None:
    """The children stopped (any still at work: the report is done with them, or failed) and reaped (by this
    process: where SIGCHLD is ignored, the system reaped them already)."""
    _killed(pids)
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
