"""Worker processes that decode a large native log's pieces ahead of the reading, with the same answers as one
process gives: forked from a fork server, used only when a CPU is idle (``/proc/stat``), Ctrl-C held back while a
worker starts and a worker killed for memory outlived. Kept apart from reading the log (`goodputlogs`,
`goodputpieces`): it is process management alone, and where tests force the pool on or off (PARALLEL_MIN_BYTES,
`_cpus`, read at call time).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tpufleet.constants import MiB
from tpufleet.errors import BadInput
from tpufleet.goodput import columnar, fastread, linescan
from tpufleet.state import crcjoin, prebuiltcache
from tpufleet.state.goodputpieces import _bom, _line_ends
from tpufleet.state.workthreads import WorkThreads, waited

if TYPE_CHECKING:
    from concurrent.futures import Executor as Pool
    from concurrent.futures import ProcessPoolExecutor

    from tpufleet.goodput.pipeline import Mapper


Framed = tuple[bytes, int, fastread.Decoded | None, int, int]  # a piece, its offset, decoding, CRC-32, line ends


def _decoded(pieces: Iterator[tuple[bytes, int]], pool: Pool | None, compiled: bool = False) -> Iterator[Framed]:
    """Each piece with its offset and the work on it that needs no other piece (`framed`: its decoding, CRC-32 and
    line ends); `compiled`: event lines by the compiled loop first (`compiled_for`)."""
    if pool is not None:
        yield from _decoded_ahead(pieces, pool, compiled)
        return
    for piece, offset in pieces:
        yield piece, offset, *framed(piece, offset, compiled)


def framed(piece: bytes, offset: int, compiled: bool) -> tuple[fastread.Decoded | None, int, int]:
    """A piece's decoding (None: read it the standard way, as a piece starting with a byte-order mark is, which
    that reader drops), its CRC-32 and how many lines end in it: done where the piece is decoded, a worker thread
    or process, so that the reading thread only joins them in order (`crcjoin`), with no pass of its own over the
    bytes (they were a third of its time). A decoded piece's lines are its line feeds and a last record without
    one (each decoder reads a line a feed; spaces after the last feed are no line to them): its feeds are not
    counted again."""
    decoded = None if _bom(piece, offset) else decode_piece(piece, compiled)
    feeds = None if decoded is None else decoded.lines - (piece.rstrip(b" \t")[-1:] == b"}")
    return decoded, crcjoin.crc32(piece), _line_ends(piece, feeds)


def _decoded_ahead(pieces: Iterator[tuple[bytes, int]], pool: Pool, compiled: bool) -> Iterator[Framed]:
    """`_decoded` with pieces a worker (a process, or a thread of the compiled loop) framed ahead in the pool
    (`_ahead`). An error reading the file (too large, unreadable) is raised after the pieces before it are given,
    as reading one at a time would. Once a worker process has died (killed for memory, say), the pieces left are
    framed here: the same answers, where waiting for a piece no worker will hand back would wait for good."""
    from concurrent.futures.process import BrokenProcessPool

    ahead: deque[tuple[bytes, int, Any]] = deque()
    failure: BadInput | None = None
    broken = False
    while True:
        while failure is None and not broken and len(ahead) < _ahead(pool):
            try:
                piece, offset = next(pieces)
            except StopIteration:
                break
            except BadInput as exc:
                failure = exc
                break
            ahead.append((piece, offset, _submitted(pool, piece, offset, compiled)))
        if not ahead:
            if failure is not None:
                raise failure
            if broken:
                yield from _decoded(pieces, None, compiled)
            return
        piece, offset, job = ahead.popleft()
        try:
            work = waited(job)
        except BrokenProcessPool:
            broken, work = True, framed(piece, offset, compiled)
        yield piece, offset, *work


def _submitted(pool: Pool, piece: bytes, offset: int, compiled: bool) -> Any:
    """The piece's `framed` work handed to the pool, Ctrl-C held back meanwhile (`_interrupts_held`): a submit may start a worker
    process (a thread needs nothing held: it is stopped by the pool's shutdown, its piece done)."""
    if isinstance(pool, WorkThreads):
        return pool.submit(framed, piece, offset, compiled)
    with _interrupts_held():
        return pool.submit(framed, piece, offset, compiled)


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) held back, then raised once the block is done. An interrupt between a worker's start and the
    executor's note of it left a worker no shutdown stopped (the exit waited for it for ever) or one whose queues
    were gone (its traceback on stderr). SIGINT is blocked meanwhile, not only handled: the fork server a submit
    starts, and every worker it forks, keep that mask, so a terminal's Ctrl-C reaches the reading process alone
    (workers leave interrupts to it: `_leave_interrupts` only begins once a worker has started). Only the main
    thread is interrupted: elsewhere nothing is held. SIGTERM and SIGHUP, which stop a command as Ctrl-C does, are
    held too but not blocked: the pool stops its workers with SIGTERM, which a worker must not inherit blocked."""
    from tpufleet.heldsignals import interrupts_blocked, stops_held

    # (the mask restored first: a Ctrl-C pending then reaches stops_held's recorder, which sends it again after)
    with stops_held(), interrupts_blocked():
        yield


def decode_piece(piece: bytes, compiled: bool = False) -> fastread.Decoded | None:
    """A piece as msgspec's records, else as Arrow's typed columns (when one of them vouches for all of it); None:
    read it the standard way. The same answers each way; msgspec first, as the faster here (benchmarks/
    bench_goodput.py measures both). With `compiled`, the compiled loop of event lines goes before them all."""
    decoded = linescan.decode_piece(piece) if compiled else None
    if decoded is not None:
        return decoded
    decoded = fastread.decode_piece(piece)
    return columnar.decode_piece(piece) if decoded is None else decoded


PARALLEL_MIN_BYTES = 64 * MiB  # native logs at least this large are decoded in worker processes too

# Native logs at least this large have their event lines read by the compiled loop (`linescan`), when Numba is
# installed: loading Numba and the loop cost about a second (compiling it the first time, a few more), which the
# loop won back at about this size (benchmarks/bench_goodput.py). Built ahead of time (`prebuiltcache`), it loads
# in 0.03 s, but its first build takes about 8 s: a smaller log would pay that on a new install.
COMPILED_MIN_BYTES = 128 * MiB


def compiled_for(size: int) -> bool:
    """Whether native logs of `size` bytes in all are read with the compiled loop (read at call time: tests set
    COMPILED_MIN_BYTES)."""
    return size >= COMPILED_MIN_BYTES and loop_available()


def loop_available() -> bool:
    """Whether the compiled loop can be used, loading it now: the prebuilt kernels where they can be built or are
    (`prebuiltcache`: no import of Numba), else Numba's JIT."""
    prebuiltcache.install()
    return linescan.available()


MAX_WORKERS = 4


# Decoding workers pay off only with a CPU to spare: on the 2-CPU project machine, quiet, 10 M events take
# 17.5-18.4 s with them (26-27 s of CPU: pieces and columns cross pipes, two processes share one cache) against
# 22.1 s in one process; with another busy process they would fight it for the one free CPU. Accounting jobs in
# workers never paid (each job's account pickled back: twice the CPU, slower on the clock), so it stays here.
MIN_IDLE_CPUS = 1.5


IDLE_SAMPLE_S = 0.1  # how long idle CPU time is watched before deciding (the load average lags by a minute)


def _cpus() -> tuple[int, float]:
    """(CPUs this process may use, how many of them are idle now: from the idle share of /proc/stat over
    IDLE_SAMPLE_S on Linux, else CPUs less the 1-minute load average)."""
    import os
    import time

    cpus = _usable_cpus()
    try:
        before = _cpu_ticks()
        time.sleep(IDLE_SAMPLE_S)
        after = _cpu_ticks()
    except (OSError, ValueError, IndexError):
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        return cpus, cpus - load
    total, idle = after[0] - before[0], after[1] - before[1]
    return cpus, cpus * idle / total if total > 0 else float(cpus)


def _usable_cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _cpu_ticks() -> tuple[int, int]:
    """(all, idle + waiting for I/O) clock ticks of every CPU since boot, from the first line of /proc/stat."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    return sum(fields[:8]), fields[3] + fields[4]  # user nice system idle iowait irq softirq steal


@contextmanager
def _fork_pool(wanted: bool) -> Iterator[ProcessPoolExecutor | None]:
    """Worker processes, when `wanted`, msgspec is there (the large-input path) and a CPU is idle to run them;
    None otherwise, or where a fork server is not available: one process does the work, with the same answers."""
    import multiprocessing

    if not wanted or not (fastread.available() or columnar.available()):
        yield None
        return
    cpus, idle = _cpus()
    if cpus < 2 or idle < MIN_IDLE_CPUS:
        yield None
        return
    try:
        # Forked from a server process that holds nothing (not from this one, whose other threads, a server's
        # or a Dask client's, may hold locks a forked child would wait on for ever).
        context = multiprocessing.get_context("forkserver")
    except ValueError:
        yield None
        return
    context.set_forkserver_preload([__name__])
    from concurrent.futures import ProcessPoolExecutor

    # An executor, not a multiprocessing Pool: a Pool whose worker died (the kernel's OOM killer) never hands back
    # that worker's piece, and the report waited for it for good; the executor says it is broken.
    pool = ProcessPoolExecutor(min(cpus, MAX_WORKERS), mp_context=context, initializer=_leave_interrupts)
    try:
        yield pool
    finally:
        # Shut down, not killed: at most two pieces a worker are still queued (those not started are cancelled).
        pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def _loop_threads(wanted: bool) -> Iterator[WorkThreads | None]:
    """Threads that run the compiled loop (`linescan`) on pieces ahead of the reading, when `wanted` and there are
    CPUs for them; None otherwise. The loop holds no interpreter lock while it runs (Numba's ``nogil``), so the
    pieces are read on every CPU while this thread reads the file and adds the columns, with nothing copied: the
    decoding worker processes lost to the loop alone (pieces and columns crossed pipes), threads do not. Taken
    without the idle check of `_fork_pool`: a thread that finds no free CPU costs its share of the time, no more."""
    with _threads(wanted, "goodput-loop") as pool:
        yield pool


@contextmanager
def _threads(wanted: bool, name: str) -> Iterator[WorkThreads | None]:
    """Up to LOOP_THREADS threads named `name` when `wanted` and this process may use two CPUs or more; else None.
    Shut down on the way out, the pieces or jobs not started cancelled; on an error or Ctrl-C, those running are
    not waited for (`workthreads`: a large job's account takes seconds)."""
    cpus = _usable_cpus()
    if not wanted or cpus < 2:
        yield None
        return
    try:
        pool = WorkThreads(min(cpus, LOOP_THREADS), name)
    except RuntimeError:  # no thread can be started: this one does the work, with the same answers
        yield None
        return
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False)
        raise
    pool.shutdown(wait=True)


LOOP_THREADS = 2


@contextmanager
def job_mapper(records: int) -> Iterator[Mapper]:
    """How the jobs of a log of `records` records are accounted (`pipeline.Mapper`): in this process and processes
    forked from it when it is large enough (JOB_PROCESSES_MIN_RECORDS), there are CPUs for them and forking is
    safe here (`forkedjobs.can_fork`); else as `job_threads` says."""
    from tpufleet.state import forkedjobs

    cpus = _usable_cpus()
    if records >= JOB_PROCESSES_MIN_RECORDS and cpus >= 2 and forkedjobs.can_fork():
        yield functools.partial(forkedjobs.forked_map, children=min(cpus, MAX_JOB_PROCESSES) - 1)
        return
    with job_threads(records) as mapper:
        yield mapper


# Below this the accounting takes about a quarter of a second: forking a child to share it (its page tables are a
# copy of this process's, a few milliseconds a GiB) and its accounts pickled back are not worth it.
JOB_PROCESSES_MIN_RECORDS = 1_000_000
MAX_JOB_PROCESSES = 4  # this one and three forked


@contextmanager
def job_threads(records: int) -> Iterator[Mapper]:
    """How the jobs of a log of `records` records are accounted (`pipeline.Mapper`): side by side on threads when
    it is large enough (JOB_THREADS_MIN_RECORDS) and there are CPUs for them, else `map`. A job's account is numpy
    on its own columns, whose loops run without the interpreter's lock: two threads account 10 M events in 0.67 of
    the time one takes, with nothing copied (processes would pickle every job's columns to them)."""
    with _threads(records >= JOB_THREADS_MIN_RECORDS, "goodput-jobs") as pool:
        yield map if pool is None else functools.partial(_in_order, pool)


def _in_order(pool: Pool, function: Callable[[str], Any], jobs: Iterable[str]) -> Iterator[Any]:
    """`function` of each job on the pool's threads, given in job order, with at most JOBS_AHEAD of them queued
    (``Executor.map`` queues them all at once: a future each, for up to 100,000 jobs)."""
    queued: deque[Any] = deque()
    for job in jobs:
        queued.append(pool.submit(function, job))
        if len(queued) > JOBS_AHEAD:
            yield waited(queued.popleft())
    while queued:
        yield waited(queued.popleft())


JOBS_AHEAD = 16


JOB_THREADS_MIN_RECORDS = 200_000  # below this, the report's accounting takes a tenth of a second


def _leave_interrupts() -> None:
    """A worker leaves Ctrl-C to the report (which stops handing it pieces): no worker's traceback on stderr."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _workers(pool: Pool) -> int:
    return int(getattr(pool, "_max_workers", 1))


def _ahead(pool: Pool) -> int:
    """How many pieces are decoded ahead: two a worker process (one crossing a pipe while it decodes the other);
    one a thread and THREAD_SLACK more, so that a thread rarely waits for the reading thread to hand it a piece."""
    return _workers(pool) + THREAD_SLACK if isinstance(pool, WorkThreads) else 2 * _workers(pool)


# Pieces decoded ahead beyond one a thread: 10 M events were read in 1.22-1.24 s with 3 or 4 (2 MiB each, their
# columns about as much again), 1.27-1.30 s with 2 and 1.30-1.35 s with 1; the peak grows by 4 MiB a piece.
THREAD_SLACK = 3
