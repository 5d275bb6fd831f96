"""SIGTERM and SIGHUP end a command as Ctrl-C does: the transaction in progress rolled back (or, past its commit
point, finished), the lock released, the temp files removed, one line on stderr and exit 128 + the signal's number.

A runbook's `timeout`, a CI job's cancel, systemd or Kubernetes stopping a pod, a closed SSH session: without a
handler Python dies on the spot, saying nothing, leaving its temp files and no word of whether its change was
committed. The handler raises KeyboardInterrupt, the one exception every layer already cleans up after.

A signal the parent set to be ignored stays ignored (`nohup tpufleet ...` keeps running when the terminal goes);
a process forked from this one (a local Dask cluster's worker) dies of the signal as it would have without us.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # heldsignals.STOPS less SIGINT (the state package: not at start)
RECEIVED: list[int] = []  # the stopping signals this command got, first first
_OWNER: list[int] = []  # the pid that installed the handler


def _stop(signum: int, _frame: FrameType | None) -> None:
    if os.getpid() not in _OWNER:  # a forked child: the default action, as if nothing had been installed
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    RECEIVED.append(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def stopping_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise KeyboardInterrupt (in the main thread only: elsewhere Python
    cannot install a handler; the signals left at their default action are the only ones taken)."""
    RECEIVED.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _OWNER[:] = [os.getpid()]
    kept = {s: signal.signal(s, _stop) for s in STOP_SIGNALS if signal.getsignal(s) == signal.SIG_DFL}
    try:
        yield
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)


def stopped_by() -> str | None:
    """The name of the signal that stopped the command (`SIGTERM`), None for a Ctrl-C or no stop at all."""
    return signal.Signals(RECEIVED[0]).name if RECEIVED else None


def interrupt_exit_code() -> int:
    """128 + the stopping signal's number (143 for SIGTERM, 129 for SIGHUP), as a shell reports it; 130 for Ctrl-C."""
    return 128 + RECEIVED[0] if RECEIVED else 128 + signal.SIGINT


def exit_stopped(code: int) -> None:
    """End a process a signal stopped with `code`, whatever Python would do at its exit: a KeyboardInterrupt that
    left an `exec` on its way (a dataclass being made while a command loads a module) marks the interpreter, and
    CPython then ends the process by SIGINT, exit 130, overriding `sys.exit`. Exit handlers still run. Only for a
    stop by SIGTERM or SIGHUP: a Ctrl-C's 130 is what the shell reports either way."""
    import atexit
    import sys

    if not RECEIVED:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)
