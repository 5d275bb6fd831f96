"""Native JSON lines a piece at a time, event lines read by a compiled loop (pure; used for large inputs when Numba
is installed).

msgspec's decoder (`fastread`) builds a Python record a line before the events become columns: at 10 M events that
is most of the report's time. Here `linekernel.scan` reads each event line written in tpufleet's own form straight
from the bytes into the columns, with the values msgspec gives, and leaves every other line to msgspec, one line
each: job, capacity and schema records are judged as before; a line in any other form that is an event (spaces, a
label, a time written another way) sends the whole piece back to msgspec's reader, and so does a line msgspec
refuses. The result is `fastread.Decoded`, added to the Log as the msgspec reader's is: the same answers.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tpufleet.goodput import fastread, prebuilt
from tpufleet.goodput.events import CODE, EVENT_NAMES, MAX_CHIPS, MAX_STEP, MAX_TEXT
from tpufleet.goodput.fastread import Decoded, _odd_breaks, flat_lines, group_runs
from tpufleet.goodput.fastread import available as msgspec_available
from tpufleet.goodput.times import MAX_TIME, SMALLEST_TIME

__all__ = ["available", "decode_piece", "line_feeds", "loaded"]

_COMMON = ("step_start", "data_loading_start", "data_loading_end", "checkpoint_start", "checkpoint_end")
# per-slice counts are left to the standard reader; the loop tries names in this order, a training log's commonest
# first (10% of the loop's time)
_TAKEN_NAMES = _COMMON + tuple(n for n in EVENT_NAMES if n not in _COMMON and n != "slice_counts")
_STEP_START, _ALLOCATION = CODE["step_start"], CODE["allocation"]


def available() -> bool:
    """Whether the compiled loop can be used: Numba installed and the loop compiled or loaded from its cache (the
    first call pays for that; a failure there, an unwritable cache say, leaves the other readers)."""
    return _kernel() is not None


@functools.cache
def _kernel() -> Any:
    import importlib
    import importlib.util

    if importlib.util.find_spec("numba") is None:
        return None
    import warnings

    import numpy as np

    try:
        with warnings.catch_warnings(), without_scipy_blas():  # Numba warns of a cache it cannot write: the loop is
            warnings.simplefilter("ignore")  # compiled each time
            linekernel = prebuilt.installed() or importlib.import_module("tpufleet.goodput.linekernel")
            debugged = _jitted(linekernel) and linekernel.numba.config.DISABLE_JIT
            if debugged:  # Numba's debug switch: the loop would run as Python on numpy bytes (uint8 arithmetic that
                return None  # wraps), and slowly
            _, t, cols, counts = _scanned(linekernel, _CHECK_LINE) or (0, [0], [[0]], ())  # compiled (or loaded) now
            filled = _stops_when_full(linekernel)
            feeds = linekernel.line_count(np.frombuffer(_CHECK_LINE * 3, dtype=np.uint8))  # (`line_feeds`' count)
    except Exception:  # noqa: BLE001  (Numba's own failures, a compiler or cache error, have no common base)
        return None
    right = (counts, t[0], cols[1][0], feeds) == ((1, 1, 0), 1767571300.5, 300, 3) and filled
    return linekernel if right else None


def _stops_when_full(linekernel: Any) -> bool:
    """Whether the loop stops, saying so, once its columns are full: three lines into two rows (of columns with a
    row to spare, so that a loop that did not stop writes nothing beyond them)."""
    import numpy as np

    t, cols = _columns(3)
    events, _, _, more = linekernel.scan(np.frombuffer(_CHECK_LINE * 3, dtype=np.uint8), *_tables(), t[:2], cols)
    return bool(more and events == 2)


@contextmanager
def without_scipy_blas() -> Iterator[None]:
    """SciPy's BLAS and LAPACK bindings hidden while Numba loads a kernel: Numba imports them (and `scipy.linalg`)
    as it first types array code, for its `np.linalg` support, which no tpufleet loop uses: 0.15 s of every large
    report's start. Hidden for the block only (an import of them then fails, which Numba takes as no SciPy);
    anything importing them later gets them. Only while this thread is the process's one: another (a server's)
    could be importing SciPy meanwhile, and would be refused."""
    import sys
    import threading

    alone = threading.active_count() == 1
    hidden = [name for name in _SCIPY_BLAS if name not in sys.modules] if alone else []
    for name in hidden:  # (an import of a module set to None fails at once)
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


_SCIPY_BLAS = ("scipy.linalg.cython_blas", "scipy.linalg.cython_lapack")


def loaded() -> bool:
    """Whether the compiled loop is loaded already (nothing is loaded here: the reading that uses it loads it)."""
    return bool(_kernel.cache_info().currsize) and _kernel() is not None


def _jitted(kernel: Any) -> bool:
    """Whether `kernel` is the loop's module as Numba's JIT compiles it (not none, nor the one built ahead of time)."""
    return isinstance(kernel, types.ModuleType)


def line_feeds(data: bytes) -> int | None:
    """The line feeds in `data`, counted by the compiled loop's count once the loop is loaded from Numba's JIT
    (twice as fast as ``bytes.count``, and run without the interpreter's lock); None when it is not loaded (nothing
    is loaded here: the reading that uses the loop loads it) or is the one built ahead of time (`prebuilt`: built
    for a generic CPU, its count is not vectorised and ``bytes.count`` is faster)."""
    kernel: Any = _kernel() if loaded() else None
    if not _jitted(kernel):
        return None
    import numpy as np

    lines = int(kernel.line_count(np.frombuffer(data, dtype=np.uint8)))
    return lines - (len(data) > 0 and data[-1] != _LINE_FEED)  # (a last line without a feed counts as a line)


_LINE_FEED = ord("\n")
# A line the loop must read as this time and step: checked once it is loaded, so a loop that would misread them
# (a Numba that does not compile, say) is never used.
_CHECK_LINE = b'{"type":"event","job":"j","time":1767571300.5,"event":"step_start","step":300}\n'
# Lines shorter than this on average are left to msgspec's reader: the shortest line the loop takes is 52 bytes,
# and its columns cost 80 bytes a line (a piece of empty lines would cost ten times its size).
MIN_MEAN_LINE_BYTES = 32


@functools.cache
def _tables() -> tuple[Any, Any, Any, Any, Any]:
    import numpy as np

    encoded = [n.encode() for n in _TAKEN_NAMES]
    return (
        np.frombuffer(b"".join(encoded), dtype=np.uint8),
        np.cumsum([0] + [len(n) for n in encoded]).astype(np.int64),
        np.array([CODE[n] for n in _TAKEN_NAMES], dtype=np.int64),
        np.array([MAX_TEXT, MAX_STEP, MAX_CHIPS], dtype=np.int64),
        np.array([SMALLEST_TIME, MAX_TIME], dtype=np.float64),
    )


def decode_piece(piece: bytes) -> Decoded | None:
    """A piece of whole lines decoded as `fastread.decode_piece` does (the same Decoded, whose `lines` are the
    piece's line feeds and a last line without one); None when it is not in the taken form, the caller then gives
    it to msgspec's reader."""
    kernel = _kernel()
    if kernel is None or not msgspec_available():
        return None
    import numpy as np

    scanned = _scanned(kernel, piece)
    if scanned is None:
        return None
    lines, t, cols, (events, runs, other) = scanned
    code, step, chips = cols[0, :events].astype(np.int8), cols[1, :events].copy(), cols[2, :events].copy()
    if (((code == _STEP_START) & (step < 0)) | ((code == _ALLOCATION) & (chips < 0))).any():
        return None  # a field its event needs is missing: the standard reader names it
    others = _others(piece, cols[6:9, :other])
    if others is None:
        return None
    names = [piece[a:b].decode("ascii") for a, b in zip(cols[4, :runs].tolist(), cols[5, :runs].tolist(), strict=True)]
    return Decoded(lines, group_runs(names, cols[3, :runs], t[:events], code, step, chips), others)


def _scanned(kernel: Any, piece: bytes) -> tuple[int, Any, Any, tuple[int, int, int]] | None:
    """The loop run over a piece: its lines, time column, other columns and (events, runs, other lines); None for
    a piece of lines too short to be worth columns (more than one a MIN_MEAN_LINE_BYTES: the loop stops when its
    columns, a row for each, are full). A line feed ends a line (other breaks are judged with the lines left), and
    so does the piece's end."""
    import numpy as np

    t, cols = _columns(max(len(piece), MIN_MEAN_LINE_BYTES) // MIN_MEAN_LINE_BYTES)
    events, runs, others, more = kernel.scan(np.frombuffer(piece, dtype=np.uint8), *_tables(), t, cols)
    return None if more else (events + others, t, cols, (events, runs, others))


def _columns(rows: int) -> tuple[Any, Any]:
    """The loop's columns for up to `rows` lines: times, and the other nine (`linekernel.scan`). Rows never
    written are never touched: their pages cost nothing."""
    import numpy as np

    return np.empty(rows, dtype=np.float64), np.empty((9, rows), dtype=np.int64)


def _others(piece: bytes, spans: Any) -> list[tuple[int, str, dict[str, Any]]] | None:
    """The lines the loop left (rows of line number, start, end), decoded one by one: each must be a job, capacity
    or schema record that msgspec's reader would take in its piece (one flat object, no other line break, no
    per-slice key), else None at the first that is not."""
    rest = []
    for k in range(spans.shape[1]):
        row, start, end = (int(v) for v in spans[:, k])
        line = piece[start:end]
        if flat_lines(line) != 1 or _odd_breaks(line) or b'"slice"' in line:
            return None
        record = typed_record(line)
        if record is None:
            return None
        rest.append((row, *record))
    return rest


def typed_record(line: bytes) -> tuple[str, dict[str, Any]] | None:
    """A job, capacity or schema record's type and fields as `fastread.decode_piece` gives them; None for an
    event or a line msgspec refuses."""
    try:
        record = fastread._DECODER.decode(line)
    except (ValueError, RecursionError):  # msgspec.DecodeError is a ValueError
        return None
    return None if type(record) is fastread._EVENT else (record.__struct_config__.tag, fastread._fields(record))
