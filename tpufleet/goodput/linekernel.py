"""The compiled loop of `linescan`: event lines of the one form tpufleet writes, read straight from the bytes.

Compiled by Numba when first imported (a few seconds; cached beside this file or in Numba's cache directory, then
about a second to load with Numba itself). A line is taken only when it is exactly
``{"type":"event","job":"<id>","time":<number>,"event":"<name>"}`` with, optionally, ``,"step":<n>`` and
``,"chips":<n>`` (either order, each once) before the closing brace, and every value is one the typed decoder
(msgspec) takes with the same value:

- the job id 1 to MAX_TEXT printable ASCII characters, no quote or backslash (so no escape);
- the time plain digits with at most one point, no sign or exponent, at most 15 significant digits and 22 after
  the point, within the reader's range: the exact decimal m / 10**k is then one correctly rounded division of two
  numbers a double holds exactly (m < 2**53, 10**k <= 10**22), the value any correct parser gives;
- the event one of the names given (as bytes), step and chips whole numbers within their limits.

Every other line (a job, capacity or schema record, spaces, a label, a value in any other form, a defect) is left
to the caller, by its number in the piece and its bytes. Nothing here judges a line it does not take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numba  # type: ignore[import-untyped, import-not-found, unused-ignore]
import numpy as np

_PREFIX = np.frombuffer(b'{"type":"event","job":"', dtype=np.uint8)
_TIME = np.frombuffer(b'","time":', dtype=np.uint8)
_EVENT = np.frombuffer(b',"event":"', dtype=np.uint8)
_STEP = np.frombuffer(b',"step":', dtype=np.uint8)
_CHIPS = np.frombuffer(b',"chips":', dtype=np.uint8)
POW10 = np.array([10.0**k for k in range(23)])  # exact doubles: 10**22 is the largest power of ten one holds
MAX_DIGITS = 15  # significant digits of a time: below 2**53
QUOTE, BACKSLASH, POINT, CLOSE, NEWLINE, ZERO, NINE = 34, 92, 46, 125, 10, 48, 57

_compile: Any = numba.njit(cache=True, nogil=True, boundscheck=False)
_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(function: _F) -> _F:
    """Numba's compiler as a typed decorator (mypy sees Numba as Any where it is not installed)."""
    compiled: _F = _compile(function)
    return compiled


# No chained comparison (``a <= x <= b``) below: Numba compiles one to code 2.5x slower than the two tests.


@_jit
def _matches(buf: Any, i: int, lit: Any) -> bool:
    """Whether the bytes at `i` are `lit`."""
    if i < 0 or i + len(lit) > len(buf):
        return False
    for k in range(len(lit)):  # noqa: SIM110  (a loop Numba compiles; all() of a generator it would not)
        if buf[i + k] != lit[k]:
            return False
    return True


@_jit
def _digit(buf: Any, i: int) -> bool:
    return i >= 0 and i < len(buf) and buf[i] >= ZERO and buf[i] <= NINE


@_jit
def _whole(buf: Any, i: int, limit: int) -> tuple[int, int]:
    """(value, index after it) of a JSON integer 0..limit without sign, else (-1, -1)."""
    if not _digit(buf, i) or (buf[i] == ZERO and _digit(buf, i + 1)):
        return -1, -1
    value, start = 0, i
    while _digit(buf, i):
        if i - start >= 18:  # more digits than any limit here: the caller's decoder judges it
            return -1, -1
        value = value * 10 + (buf[i] - ZERO)
        i += 1
    return (value, i) if value <= limit else (-1, -1)


@_jit
def _time(buf: Any, i: int, low: float, high: float) -> tuple[float, int]:
    """(value, index after it) of digits[.digits] within [low, high], else (-1.0, -1)."""
    if not _digit(buf, i) or (buf[i] == ZERO and _digit(buf, i + 1)):
        return -1.0, -1
    mantissa, significant, decimals = 0, 0, 0
    while _digit(buf, i):
        mantissa = mantissa * 10 + (buf[i] - ZERO)
        significant += mantissa > 0
        i += 1
        if significant > MAX_DIGITS:
            return -1.0, -1
    if i < len(buf) and buf[i] == POINT:
        i += 1
        if not _digit(buf, i):
            return -1.0, -1
        while _digit(buf, i):
            mantissa = mantissa * 10 + (buf[i] - ZERO)
            significant += mantissa > 0
            decimals += 1
            i += 1
            if significant > MAX_DIGITS or decimals >= len(POW10):
                return -1.0, -1
    value = mantissa / POW10[decimals]
    return (value, i) if value >= low and value <= high else (-1.0, -1)


@_jit
def _job_end(buf: Any, a: int, longest: int) -> int:
    """The index of the quote closing a job id that starts at `a`, else -1."""
    j = a
    while j < len(buf) and buf[j] != QUOTE:
        if buf[j] < 32 or buf[j] > 126 or buf[j] == BACKSLASH or j - a >= longest:
            return -1
        j += 1
    return j if j > a and j < len(buf) else -1


@_jit
def _name(buf: Any, s: int, names: Any, name_at: Any, name_code: Any) -> tuple[int, int]:
    """(event code, index after the closing quote) of a known name starting at `s`, else (-1, -1)."""
    if s < 0:
        return -1, -1
    for q in range(len(name_code)):
        p, size = name_at[q], name_at[q + 1] - name_at[q]
        end = s + size
        if end < len(buf) and buf[end] == QUOTE:
            same = True
            for r in range(size):
                if names[p + r] != buf[s + r]:
                    same = False
                    break
            if same:
                return name_code[q], end + 1
    return -1, -1


@_jit
def _same_job(buf: Any, a: int, b: int, pa: int, pb: int) -> bool:
    if b - a != pb - pa:
        return False
    for k in range(b - a):  # noqa: SIM110  (a loop Numba compiles; all() of a generator it would not)
        if buf[a + k] != buf[pa + k]:
            return False
    return True


@_jit
def line_count(buf: Any) -> int:
    """Lines in the piece: line feeds, and a last line without one (a loop here is twice as fast as bytes.count)."""
    feeds = 0
    for byte in buf:
        feeds += byte == NEWLINE
    return feeds + (len(buf) > 0 and buf[len(buf) - 1] != NEWLINE)


@_jit
def _line_end(buf: Any, i: int) -> int:
    """The index of the line feed ending the line at `i` (the piece's length for a last line without one)."""
    while i < len(buf) and buf[i] != NEWLINE:
        i += 1
    return i


# `scan` reads a line in its own body and calls only helpers that return one or two numbers: a helper returning the
# whole line's seven values, called once a line, cost as much as the rest of the loop (Numba builds and passes the
# tuple through its calling convention), and so did an open-ended loop over the optional keys.


@_jit
def scan(buf: Any, names: Any, name_at: Any, name_code: Any, limits: Any, times: Any, out: Any, cols: Any) -> Any:
    """Read a piece of whole lines: per event line taken, its time (`out[0]`), code, step and chips (`cols[0:3]`);
    where a run of one job's events begins, the event's index and the id's bytes (`cols[3:6]`); per other line,
    its number in the piece and its bytes (`cols[6:9]`). Returns (events, runs, other lines, whether lines were
    left unread): the columns hold a row a line, so the reading stops once they are full and lines are left (the
    piece's lines are not counted first: that pass over its bytes cost a fifth of the loop's time)."""
    i, line, events, runs, others, last_a, last_b = 0, 0, 0, 0, 0, -1, -1
    while i < len(buf):
        if line == len(out):
            return events, runs, others, True
        a, step, chips = i + len(_PREFIX), -1, -1
        b = _job_end(buf, a, limits[0]) if _matches(buf, i, _PREFIX) else -1
        value, j = _time(buf, b + len(_TIME), times[0], times[1]) if _matches(buf, b, _TIME) else (-1.0, -1)
        code, j = _name(buf, j + len(_EVENT), names, name_at, name_code) if _matches(buf, j, _EVENT) else (-1, -1)
        for _ in range(2 if code >= 0 else 0):  # ,"step":<n> and ,"chips":<n>, each at most once, either order
            if step < 0 and _matches(buf, j, _STEP):
                step, j = _whole(buf, j + len(_STEP), limits[1])
            elif chips < 0 and _matches(buf, j, _CHIPS):
                chips, j = _whole(buf, j + len(_CHIPS), limits[2])
            else:
                break
        if code >= 0 and j >= 0 and j < len(buf) and buf[j] == CLOSE and (j + 1 == len(buf) or buf[j + 1] == NEWLINE):
            out[events] = value
            cols[0, events], cols[1, events], cols[2, events] = code, step, chips
            if not _same_job(buf, a, b, last_a, last_b):
                cols[3, runs], cols[4, runs], cols[5, runs] = events, a, b
                runs += 1
                last_a, last_b = a, b
            events += 1
            i = j + 2
        else:
            end = _line_end(buf, i)
            cols[6, others], cols[7, others], cols[8, others] = line, i, end
            others += 1
            i = end + 1
        line += 1
    return events, runs, others, False
