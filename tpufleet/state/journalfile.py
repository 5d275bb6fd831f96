"""journal.jsonl read in bounded pieces: its lines forward or backward, none held longer than `MAX_LINE_BYTES`.

A crash on XFS or ext4 can leave a journal with a zero-filled tail, and a hand (or an attacker) a sparse one of
gigabytes (`truncate -s +8G`): such a run has no newline, so it is one line, longer than any commit writes (a
commit refuses a longer line). Its bytes are passed over, never kept (`Line.text` is None: a damaged line), and the
holes of a sparse file (which read as NULs, never a newline) are skipped without reading them. The journal's
readers (`drop_nul`) keep no line holding a NUL or a hole either, however short: no entry holds one (JSON has no
bare NUL), so such a line is damage whatever its bytes, and a hole of 200 MiB cost 400 MB of NULs to find that.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tpufleet.jsontext import MAX_STATE_BYTES

# The longest line a commit may write: its delta and the fault records it moves out of the state come from the
# state before and after it (each at most MAX_STATE_BYTES), with room to spare; `Store` refuses a longer one.
MAX_LINE_BYTES = 4 * MAX_STATE_BYTES
PIECE = 1 << 23  # bytes read at a time
_SEEK_DATA = getattr(os, "SEEK_DATA", None)


@dataclass(frozen=True)
class Line:
    """One line of the file: `start` .. `end` (after its newline, or the file's end for a torn last line)."""

    start: int
    end: int
    text: bytes | None  # without its newline; None: longer than MAX_LINE_BYTES (with drop_nul, or holding a NUL)
    newline: bool


class _Builder:
    """The line being read: its pieces (None once it is over the limit) and its length so far."""

    def __init__(self, end: int = 0, newline: bool = False, drop_nul: bool = False) -> None:
        self.parts: list[bytes] | None = []
        self.length = 0
        self.end, self.newline, self.drop_nul = end, newline, drop_nul

    def add(self, data: bytes | int, front: bool = False) -> None:
        """`data`, or that many NULs (a hole); at the line's front when reading backwards."""
        size = data if isinstance(data, int) else len(data)
        if not size:
            return
        self.length += size
        if self.parts is not None and self.length > MAX_LINE_BYTES:
            self.parts = None
        if self.parts is not None and self.drop_nul and (isinstance(data, int) or b"\0" in data):
            self.parts = None
        if self.parts is not None:
            piece = bytes(data) if isinstance(data, int) else data
            if front:
                self.parts.insert(0, piece)
            else:
                self.parts.append(piece)

    def line(self, start: int, end: int, newline: bool) -> Line:
        return Line(start, end, None if self.parts is None else b"".join(self.parts), newline)


def _next_data(fd: int, pos: int, end: int) -> int:
    """The first offset from `pos` that may hold data (`end` when only a hole is left before it)."""
    if _SEEK_DATA is None:
        return pos
    try:
        return min(os.lseek(fd, pos, _SEEK_DATA), end)
    except OSError as exc:  # ENXIO: nothing but a hole after `pos`; anything else: holes not known, read it all
        return end if exc.errno == errno.ENXIO else pos


def pieces(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """The data of `start` .. `end` in pieces of at most PIECE bytes, each with its offset; holes left out."""
    pos = start
    while pos < end:
        pos = _next_data(fd, pos, end)
        if pos >= end:
            return
        chunk = os.pread(fd, min(PIECE, end - pos), pos)
        if not chunk:
            return
        yield pos, chunk
        pos += len(chunk)


def _pieces_back(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """`pieces` of 0 .. `end` from the end back."""
    high = end
    while high > 0:
        low = max(0, high - PIECE)
        data = _next_data(fd, low, high)
        if data < high:
            chunk = os.pread(fd, high - data, data)
            if len(chunk) < high - data:
                return  # cut shorter while being read: what is left is read by its next reader
            yield data, chunk
        high = low


def lines(fd: int, size: int, drop_nul: bool = False) -> Iterator[Line]:
    """The file's lines (its first `size` bytes) from its start; a last piece without a newline is a torn line.
    `drop_nul`: a line holding a NUL or a hole is not kept either (see the module)."""
    line, start = _Builder(drop_nul=drop_nul), 0
    for offset, chunk in pieces(fd, 0, size):
        line.add(offset - start - line.length)  # the hole before this piece
        i = 0
        while (nl := chunk.find(b"\n", i)) >= 0:
            line.add(chunk[i:nl])
            yield line.line(start, offset + nl + 1, True)
            line, start, i = _Builder(drop_nul=drop_nul), offset + nl + 1, nl + 1
        line.add(chunk[i:])
    line.add(size - start - line.length)
    if line.length:
        yield line.line(start, size, False)


def lines_back(fd: int, size: int, drop_nul: bool = False) -> Iterator[Line]:
    """`lines` from the file's end back to its start."""
    line = _Builder(size, False, drop_nul)
    for offset, chunk in _pieces_back(fd, size):
        line.add(line.end - int(line.newline) - line.length - offset - len(chunk), front=True)  # a hole after it
        high = len(chunk)
        while (nl := chunk.rfind(b"\n", 0, high)) >= 0:
            line.add(chunk[nl + 1 : high], front=True)
            if line.length or line.newline:
                yield line.line(offset + nl + 1, line.end, line.newline)
            line, high = _Builder(offset + nl + 1, True, drop_nul), nl
        line.add(chunk[:high], front=True)
    line.add(line.end - int(line.newline) - line.length, front=True)
    if line.length or line.newline:
        yield line.line(0, line.end, line.newline)


def newlines_before(fd: int, end: int) -> int:
    return sum(chunk.count(b"\n") for _, chunk in pieces(fd, 0, end))


def split(raw: bytes) -> Iterator[Line]:
    """`lines` of bytes in memory."""
    *whole, torn = raw.split(b"\n")
    pos = 0
    for text in whole:
        yield Line(pos, pos + len(text) + 1, text if len(text) <= MAX_LINE_BYTES else None, True)
        pos += len(text) + 1
    if torn:
        yield Line(pos, pos + len(torn), torn if len(torn) <= MAX_LINE_BYTES else None, False)


def copier(src: int, size: int, ranges: list[tuple[int, int]]) -> Callable[[int], None]:
    """What writes `ranges` of the file `src` (of `size` bytes and a newline after them: a range may end at
    `size` + 1) one after another into a new file: holes stay holes, nothing is held whole."""

    def write(dst: int) -> None:
        out = 0
        for low, high in ranges:
            for offset, chunk in pieces(src, low, min(high, size)):
                _pwrite_all(dst, chunk, out + offset - low)
            if high > size:
                _pwrite_all(dst, b"\n", out + size - low)
            out += high - low
        os.ftruncate(dst, out)

    return write


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done
