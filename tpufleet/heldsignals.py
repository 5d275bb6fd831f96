"""Stops held back while a committed change finishes the files beside its state."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stops_held(second_stops: bool = False) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP held back for the block, each sent again to its own handler once it is done;
    with `second_stops`, a second stop while one is held goes to its handler at once (a block that waits on other
    processes, a Dask cluster starting, is never stuck).

    Once the state is committed, the routing tables it indexes are renamed into place: a few renames, which an
    interrupt between would leave half done (the state naming tables still under their temporary names until the
    next change). The handlers are swapped, not the signal mask: a signal sent to the process reaches any of its
    threads (a routing worker's), and Python runs the handler in the main thread whichever took it. Only the main
    thread can swap them; elsewhere nothing is held. A signal the process ignores stays ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def held(signum: int, frame: FrameType | None) -> None:
        if second_stops and caught:
            caught.clear()  # (this one stops the block: none is sent again after it)
            _to_handler(signum, kept[signal.Signals(signum)], frame)
            return
        caught.append(signum)

    kept = {s: signal.signal(s, held) for s in STOPS if signal.getsignal(s) not in (signal.SIG_IGN, None)}
    try:
        yield
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(caught):  # each once, in the order they came
            signal.raise_signal(signum)


def _to_handler(signum: int, handler: Any, frame: FrameType | None) -> None:
    """The signal to the handler it had before the block (the default action once it is back, if it had none)."""
    if callable(handler):
        handler(signum, frame)
        return
    signal.signal(signum, handler)
    signal.raise_signal(signum)


@contextlib.contextmanager
def interrupts_blocked() -> Iterator[None]:
    """Ctrl-C (SIGINT) blocked in this thread for the block, not only handled: a process started there keeps that
    mask, and so does every process it forks (a fork server's workers), so that a terminal's Ctrl-C, sent to the
    whole process group, reaches this process alone. Multiprocessing's resource tracker is started first: starting,
    it unblocks SIGINT in the calling thread, and a fork server started after would run without the block. Only
    from the main thread (elsewhere nothing is blocked)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one pending now reaches the handler
