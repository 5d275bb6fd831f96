"""Work on many items (logs) shared out to processes forked from this one, in two parts: each item's first part
(its reading) done in one child, which keeps what it made; once every item is read, this process decides from what
each reading found (`decide`, here), and each child does the second part of the items it kept (`finish`).

Two parts because a job may be named by several logs: which jobs those are is known only once every log is read,
and a child holding a log must not let it go before then (reading it again would cost what reading it once did).
The children take items from a counter they share (a child that is done early takes more), each item's summary
and result come back pickled through a pipe, and this process only waits, decides and gathers.

The answer is all or nothing: a child's error, a child that dies (killed for memory, say), a word cut short or a
`decide` that gives None ends every child and gives None, and the caller does the work in this process (which
raises the error where one process working in order would). An error `decide` raises ends every child and is
raised. A child ignores Ctrl-C (this process stops, and kills its children on the way out) and dies with this
process. Forked only where `forkedjobs.can_fork` says it is safe: Linux, and no other thread running here.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from tpufleet.state.forkedjobs import _ended, _Jobs, _stops_blocked, child_started

__all__ = ["Parts", "forked_parts"]

S = TypeVar("S")  # an item's summary, from its first part
K = TypeVar("K")  # what a child keeps of an item between the parts
D = TypeVar("D")  # the decision every child is given
R = TypeVar("R")  # an item's result, from its second part


class Parts(Generic[S, K, D, R]):
    """The two parts of the work on an item: `read` (run in a child: the item's summary and what the child keeps),
    `decide` (run here, on every summary in item order: the decision, or None to stop) and `finish` (run in the
    child that kept the item: its result)."""

    def __init__(
        self,
        read: Callable[[int], tuple[S, K]],
        decide: Callable[[list[S]], D | None],
        finish: Callable[[D, int, K], R],
    ) -> None:
        self.read, self.decide, self.finish = read, decide, finish


def forked_parts(parts: Parts[S, K, D, R], items: int, children: int) -> tuple[list[S], D, list[R]] | None:
    """Every item's summary and result, in item order, and the decision; None when a child failed or died, or
    `decide` gave None (the caller then does the work itself)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    shared = _Jobs(context, items)
    pipes: list[Any] = []
    pids: list[int] = []
    try:
        for _ in range(max(1, min(children, items))):
            mine, theirs = context.Pipe(duplex=True)
            pipes.append(mine)
            try:
                with _stops_blocked() as unblocked:  # a Ctrl-C now comes once the child is known, to be killed
                    pid = os.fork()
                    if pid == 0:  # the child: it never returns from here
                        _child(parts, shared, theirs, unblocked, pipes)
                    pids.append(pid)
            finally:
                theirs.close()
        return _gathered(parts, pipes, items)
    except OSError:  # no process or pipe to be had (EAGAIN, ENOMEM, EMFILE), a child gone as it is told: no answer
        return None
    finally:
        for pipe in pipes:
            pipe.close()
        _ended(pids)


def _gathered(parts: Parts[S, K, D, R], pipes: list[Any], items: int) -> tuple[list[S], D, list[R]] | None:
    """The children's summaries, the decision sent to each, then their results: None once one fails."""
    summaries = _words(pipes, items)
    if summaries is None:
        return None
    in_order = [summaries[i] for i in range(items)]
    decision = parts.decide(in_order)
    for pipe in pipes:  # (each child waits for it: sent even when it is None, so that every child ends; to a child
        pipe.send_bytes(pickle.dumps(decision, pickle.HIGHEST_PROTOCOL))  # dead since, an OSError: no answer)
    if decision is None:
        return None
    results = _words(pipes, items)
    return None if results is None else (in_order, decision, [results[i] for i in range(items)])


def _words(pipes: list[Any], items: int) -> dict[int, Any] | None:
    """(index, word) from every child until each says it is done with this part; None when one ends without
    saying so (it failed or died) or the items are not all there."""
    from multiprocessing.connection import wait

    got: dict[int, Any] = {}
    waiting = list(pipes)
    while waiting:
        ready: list[Any] = wait(waiting)
        for pipe in ready:
            try:
                index, word = pickle.loads(pipe.recv_bytes())
            except Exception:  # noqa: BLE001  (the pipe's end, or a word cut short: the child is gone either way)
                return None
            if index == _DONE:
                waiting.remove(pipe)
            else:
                got[index] = word
    return got if len(got) == items else None


_DONE = -1  # a child's word at the end of each part


def _child(parts: Parts[S, K, D, R], shared: _Jobs, pipe: Any, mask: Any, others: list[Any]) -> None:
    """Read items until none is left, keeping each, and send their summaries; wait for the decision; finish each
    kept item in order and send its result; leave by ``os._exit``, never into the caller's code. Any failure ends
    the child without its last word (its parent then stops them all)."""
    code = 0
    try:
        child_started(mask, others)
        kept: dict[int, Any] = {}
        while (index := shared.taken()) is not None:
            summary, kept[index] = parts.read(index)
            _send(pipe, index, summary)
        _send(pipe, _DONE, None)
        decision = pickle.loads(pipe.recv_bytes())
        if decision is not None:
            for index in sorted(kept):
                _send(pipe, index, parts.finish(decision, index, kept.pop(index)))  # (each let go once finished)
            _send(pipe, _DONE, None)
    except BaseException:  # noqa: BLE001  (its parent sees the pipe end without a last word)
        code = 1
    finally:
        os._exit(code)


def _send(pipe: Any, index: int, word: Any) -> None:
    pipe.send_bytes(pickle.dumps((index, word), pickle.HIGHEST_PROTOCOL))
