"""Stops held back while a committed change finishes the files beside its state."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP held back for the block, each sent again to its own handler once it is done.

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
    kept = {
        s: signal.signal(s, lambda signum, _frame: caught.append(signum))
        for s in STOPS
        if signal.getsignal(s) not in (signal.SIG_IGN, None)
    }
    try:
        yield
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(caught):  # each once, in the order they came
            signal.raise_signal(signum)
