"""A native goodput log cut into pieces of whole lines as it streams (the whole file is never held), each line
checked against MAX_LINE_BYTES before it is decoded, an unfinished last line told from a whole record, and a piece's
lines as text (a byte that is not UTF-8 named by its line). Kept apart from opening the log (`goodputstreams`) and
from decoding the pieces (`goodputpool`, perhaps in worker processes): this is the line framing alone, the same
whichever process decodes.
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Iterator
from typing import BinaryIO

from tpufleet.constants import KiB
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile
from tpufleet.goodput import eventlines, events, linescan
from tpufleet.goodput.times import BadRecord
from tpufleet.jsontext import parse_json_line
from tpufleet.state import goodputstreams
from tpufleet.state.goodputstreams import _read, _too_large
from tpufleet.state.inputfiles import decode_utf8

_BOM = b"\xef\xbb\xbf"


_TOO_LONG = b"<a line over the limit>\n"  # stands in for a skipped over-long line: bad to every reader


def _pieces(
    fh: BinaryIO, name: str, limit: int, skip_bad: bool, whole_lines: bool, most: int | None = None
) -> Iterator[tuple[bytes, int]]:
    """The stream in pieces of whole lines (each ends at a newline but the last) with their byte offsets, so the
    whole file is never held: read CHUNK_BYTES at a time, each read's lines given in pieces of about `most` bytes
    when that is less (`_smaller`). The size is checked as the reads come, and each line against MAX_LINE_BYTES
    before it is decoded: an over-long line is LongLine, raised once the lines before it are given (whoever counts
    the lines given numbers it), or with `skip_bad` one bad line (its bytes are dropped as they come). With
    `whole_lines`, a last line a writer has not finished is left out (`_finished`).

    A plain regular file within `limit` read in pieces of `most` (the compiled loop's; not with `whole_lines`) is
    read a piece at a time by offset instead (`_read_by_offset`) as far as that can vouch for its pieces, and as a
    stream, as above, from where it stops."""
    consumed = 0
    if most is not None and most >= 1 and not whole_lines and (span := _offset_span(fh, limit)) is not None:
        start, end = span
        for piece, consumed in _read_by_offset(fh.fileno(), start, end, most, limit):
            yield piece, consumed
            consumed += len(piece)
        _seek(fh, name, start + consumed)
    yield from _streamed(fh, name, limit, skip_bad, whole_lines, most, consumed)


def _streamed(
    fh: BinaryIO, name: str, limit: int, skip_bad: bool, whole_lines: bool, most: int | None, consumed: int
) -> Iterator[tuple[bytes, int]]:
    """`_pieces` from the stream's place, `consumed` bytes into the log (each of them in a piece given already)."""
    total = consumed
    rest, dropping, after_cr = b"", False, False
    while block := _read(fh, name, goodputstreams.CHUNK_BYTES):
        total += len(block)
        if total > limit:
            raise _too_large(name, limit)
        if after_cr and block.startswith(b"\n"):  # the LF of a dropped line's CR LF, not an empty line
            block = block[1:]
        after_cr = False
        if dropping:  # the rest of an over-long line
            block, dropping, after_cr = _after_first_line(block)
            if dropping:
                continue
        lines = _whole_lines(rest, block)
        too_long = None
        if lines is None:  # a line may be over the limit (or no line feed in the block): the lines joined, scanned
            data, rest = _split_at_line_end(rest + block)
            data, too_long = _without_long_lines(data, skip_bad)
            lines = (b"", data, len(data))
        else:
            rest = block[lines[2] :]
        if too_long is None and len(rest) - rest.endswith(b"\r") > events.MAX_LINE_BYTES:  # (a CR last ends the line)
            if not skip_bad:
                too_long = LongLine(rest)
            else:
                after_cr = rest.endswith(b"\r")  # the line's end (`_split_at_line_end` keeps a CR last in the rest)
                data = _part(*lines, 0, len(lines[0]) + lines[2]) + _TOO_LONG
                lines, rest, dropping = (b"", data, len(data)), b"", not after_cr
        yield from _smaller(*lines, consumed, most)
        if too_long is not None:  # its piece's lines before it are read first: the first bad line is the one named
            raise too_long
        consumed += len(lines[0]) + lines[2]
    if getattr(fh, "cut_short", False):
        rest = rest[: _last_line_end(rest)]  # a line the cut runs through is not read (`goodputlogs._after_cut`)
    elif rest and whole_lines and _still_written(rest, at_start=not consumed):
        rest = b""
    if rest:
        yield rest, consumed


def _offset_span(fh: BinaryIO, limit: int) -> tuple[int, int] | None:
    """Where the bytes of a plain regular file start (where the stream is) and end (its size now), when its pieces
    can be read by offset (`_read_by_offset`); None for a gzip log, standard input from a pipe, or a file over
    `limit` already (refused as a stream, after the same lines as any other log)."""
    if not isinstance(fh, io.BufferedReader | io.FileIO):
        return None
    try:
        start, size = fh.tell(), os.fstat(fh.fileno())
    except (OSError, ValueError):
        return None
    return (start, size.st_size) if stat.S_ISREG(size.st_mode) and size.st_size - start <= limit else None


def _read_by_offset(fd: int, start: int, end: int, most: int, limit: int) -> Iterator[tuple[bytes, int]]:
    """Pieces of a regular file from `start` to about `end`, each its bytes up to the first line feed at or past
    `most` (as `_smaller` cuts), read by offset (`os.pread`: a piece's bytes copied once, where a stream's read
    and its cut into pieces were two copies, a quarter of the loop's time), with their offsets from `start`. It
    stops, and the stream reads on from there, where it cannot vouch for the next piece as the stream would cut
    it: fewer than `most` bytes left before `end` (the file's last lines), no line feed found near enough (a line
    that may be over the limit), a piece with a line that may be (no line feed in one of its half-limits, as
    `_without_long_lines` looks), a read that comes back short or fails (a file cut or damaged under the reading:
    the stream's own read then names a failure), or `limit` passed."""
    at = start
    while at + most <= end and (stop := _line_end_past(fd, at + most - 1)) >= 0 and stop - start <= limit:
        piece = _read_at(fd, stop - at, at)
        if piece is None or len(piece) != stop - at or not piece.endswith(b"\n") or not _no_long_line(piece):
            return
        yield piece, at - start
        at = stop


def _line_end_past(fd: int, at: int) -> int:
    """Where the line holding byte `at` of the file ends (after its line feed), looked for in reads from 4 KiB (a
    line of a log is about a hundred bytes) growing fourfold while about MAX_LINE_BYTES are not yet looked at (a
    piece holding a longer line is refused after, by `_no_long_line`); -1 when the file ends or a read fails first,
    or no line feed is found."""
    looked, size = 0, 4 * KiB
    while looked <= events.MAX_LINE_BYTES:
        data = _read_at(fd, size, at + looked)
        if data is None:
            return -1
        found = data.find(b"\n")
        if found >= 0:
            return at + looked + found + 1
        if len(data) < size:
            return -1
        looked, size = looked + size, min(size * 4, events.MAX_LINE_BYTES)
    return -1


def _read_at(fd: int, size: int, offset: int) -> bytes | None:
    """Up to `size` bytes at `offset`; None when the read fails (the stream reading on names the failure)."""
    try:
        return os.pread(fd, size, offset)
    except (OSError, OverflowError):
        return None


def _seek(fh: BinaryIO, name: str, offset: int) -> None:
    """The stream moved to `offset`, where the reading by offset stopped; a failure is the one-line error naming
    the log (`goodputstreams._read`)."""
    try:
        fh.seek(offset)
    except OSError as exc:
        raise BadStateFile(name, "", NO_VALUE, f"cannot be read: {exc.strerror or exc}") from None


class LongLine(BadInput):
    """The line after the pieces `_pieces` gave is over MAX_LINE_BYTES. Its number is the count of the lines
    they held, plus one: the reader counts them (`numbered`), where they are decoded, so the reading thread
    makes no pass over the bytes to count them."""

    def __init__(self, text: bytes) -> None:
        super().__init__("a line over the limit")
        self.text = text[:40]

    def numbered(self, name: str, lines_before: int) -> BadRecord:
        return _too_long(name, lines_before + 1, self.text)


def _whole_lines(rest: bytes, block: bytes) -> tuple[bytes, bytes, int] | None:
    """The whole lines of `rest` + `block`, not joined (the rest, the block and where in it they end: each join or
    cut of a block copies it, and those copies were a third of the reading thread's time), when the usual checks
    show no line over MAX_LINE_BYTES: a line feed in the block, the first line (with the rest) under half the
    limit, and a line feed in every half-limit of the block after it. None otherwise: `_split_at_line_end` and
    `_without_long_lines` judge the lines joined."""
    half = events.MAX_LINE_BYTES // 2
    first = block.find(b"\n")
    if first < 0 or len(rest) + first >= half:
        return None
    cut = block.rfind(b"\n") + 1
    cut = max(cut, block.rfind(b"\r", cut, len(block) - 1) + 1)  # as `_split_at_line_end` cuts
    if not all(block.find(b"\n", i, i + half) >= 0 for i in range(first + 1, cut, half)):
        return None
    return rest, block, cut


def _smaller(head: bytes, block: bytes, cut: int, offset: int, most: int | None) -> Iterator[tuple[bytes, int]]:
    """The whole lines `head` + `block[:cut]` at `offset` in pieces of about `most` bytes, each cut after a line
    feed (whole when `most` is None), each copied once from the two (`_part`). Cut after the read, not read in
    smaller blocks: the size limit is checked a read at a time, and a log over it must be refused after the same
    lines whichever reader decodes it."""
    skip, total, start = len(head), len(head) + cut, 0
    while most is not None and total - start > most:
        at = block.find(b"\n", max(start + most - 1 - skip, 0), cut)  # (`head` holds no line feed)
        if at < 0:
            break
        yield _part(head, block, cut, start, skip + at + 1), offset + start
        start = skip + at + 1
    if start < total or not total:
        yield _part(head, block, cut, start, total), offset + start


def _part(head: bytes, block: bytes, cut: int, start: int, end: int) -> bytes:
    """Bytes `start` to `end` of `head` + `block[:cut]` (the block itself when that is all of it: no copy)."""
    skip = len(head)
    if start >= skip:
        return block[start - skip : end - skip]
    return head[start:] + block[: end - skip] if end > skip else head[start:end]


def _last_line_end(data: bytes) -> int:
    """Where the last whole line of `data` ends (a line ends at a line feed or CR: see `eventlines.log_lines`)."""
    return max(data.rfind(b"\n"), data.rfind(b"\r")) + 1


def _still_written(last: bytes, at_start: bool) -> bool:
    """Whether a writer may be partway through the last line: no line break ends it (a CR last does end it, kept
    in the rest as it may be half a CR LF) and it is no whole record yet (`_finished`)."""
    return not last.endswith(b"\r") and not _finished(last, at_start)


def _finished(last: bytes, at_start: bool) -> bool:
    """Whether a last line without a line break is a whole record: a JSON object (a writer partway through one
    leaves what is no JSON yet, or a CSV row that may be cut anywhere, a number included). A line `at_start` of
    the file may open with a byte-order mark, which the readers drop."""
    try:
        return isinstance(parse_json_line((last.removeprefix(_BOM) if at_start else last).decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


def _without_unfinished(data: bytes) -> bytes:
    """A log read whole without its last line if a writer has not finished it (a JSON array is left whole: its
    last line is never a record)."""
    cut = _last_line_end(data)  # a lone CR ends a line too
    if cut == len(data) or _json_array(data) or _finished(data[cut:], at_start=not cut):
        return data
    return data[:cut]


def _json_array(data: bytes) -> bool:
    """Whether a log is one JSON array (of Cloud Logging entries), read whole, not a line at a time."""
    return data.lstrip().removeprefix(_BOM).lstrip()[:1] == b"["


def _without_long_lines(data: bytes, skip_bad: bool) -> tuple[bytes, LongLine | None]:
    """Whole lines with each one over MAX_LINE_BYTES put as one bad line with `skip_bad`; else the lines before the
    first one and its error (raised once they are read): a newline in every half-limit of bytes (a few memchr
    calls a piece) rules any out; else a vectorised scan."""
    import numpy as np

    if _no_long_line(data):
        return data, None
    byte = np.frombuffer(data, dtype=np.uint8)
    lf = byte == ord("\n")
    ends = np.flatnonzero(lf | ((byte == ord("\r")) & ~np.append(lf[1:], False)))  # a CR LF ends at its LF
    starts = np.concatenate(([0], ends[:-1] + 1))
    crlf = (ends > starts) & lf[ends] & (byte[np.maximum(ends - 1, 0)] == ord("\r"))  # its CR is no byte of the line
    long = np.flatnonzero(ends - starts - crlf > events.MAX_LINE_BYTES)
    if not len(long):
        return data, None
    first = int(starts[long[0]])
    if not skip_bad:
        return data[:first], LongLine(data[first : first + 40])
    kept, done = [], 0
    for k in long.tolist():
        kept += [data[done : int(starts[k])], _TOO_LONG]
        done = int(ends[k]) + 1
    return b"".join([*kept, data[done:]]), None


def _no_long_line(data: bytes) -> bool:
    """Whether a line feed is in every half-limit of `data`: then no line is over MAX_LINE_BYTES (the usual case,
    told by a few memchr calls a piece)."""
    half = events.MAX_LINE_BYTES // 2
    return all(data.find(b"\n", i, i + half) >= 0 for i in range(0, len(data), half))


def _too_long(name: str, line: int, text: bytes) -> BadRecord:
    return BadRecord(
        name, line, "<line>", text[:40], f"longer than the {events.MAX_LINE_BYTES:,} bytes allowed for a line"
    )


def _bom(piece: bytes, offset: int) -> bool:
    return offset == 0 and piece.startswith(_BOM)


def _split_at_line_end(data: bytes) -> tuple[bytes, bytes]:
    """The whole lines of `data` and the rest. A line ends at a line feed, CR LF or a lone CR (`eventlines.log_lines`:
    a log written with CRs alone was one over-long line here); a CR last may be half a CR LF, so no cut after it."""
    cut = data.rfind(b"\n") + 1
    cut = max(cut, data.rfind(b"\r", cut, len(data) - 1) + 1)  # a CR after it only: a log has none, or few
    return data[:cut], data[cut:]


def _after_first_line(block: bytes) -> tuple[bytes, bool, bool]:
    """What follows the first line of `block`, whether that line goes on past it (then nothing follows), and whether
    it ended at a CR that was the block's last byte (a LF opening the next block is that CR LF's second half)."""
    cut = _first_line_end(block)
    if cut < 0:
        return b"", True, False
    if block[cut : cut + 2] == b"\r\n":
        cut += 1
    return block[cut + 1 :], False, cut == len(block) - 1 and block[cut:] == b"\r"


def _first_line_end(data: bytes) -> int:
    """Where the first line of `data` ends (its line feed or CR), or -1."""
    ends = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
    return min(ends) if ends else -1


def _line_ends(data: bytes, feeds: int | None = None) -> int:
    """How many lines end in `data` (a CR LF is one end); `feeds`: its line feeds, when counted already."""
    if feeds is None:
        feeds = linescan.line_feeds(data)
    if feeds is None:
        feeds = data.count(b"\n")
    if b"\r" not in data:  # the usual log: one count, where the others took twice its time again
        return feeds
    return feeds + data.count(b"\r") - data.count(b"\r\n")


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # what `surrogateescape` makes of a byte that is not UTF-8


def _text_lines(
    piece: bytes, name: str, offset: int, before: int, skip_bad: bool, log: events.Log
) -> tuple[list[str], BadRecord | None]:
    """The piece's lines as text. A line that is not UTF-8 is, with `skip_bad`, one bad line skipped (left empty,
    so the lines keep their numbers); else the lines before it are given with its error, raised once they are
    read (so the first bad line is the one named)."""
    try:
        return eventlines.log_lines(_decode(piece, name, offset)), None
    except BadStateFile:
        pass
    text = piece[len(_BOM) if _bom(piece, offset) else 0 :].decode("utf-8", "surrogateescape")
    lines = eventlines.log_lines(text)
    for i, line in enumerate(lines):
        if _ESCAPED_BYTE.search(line):  # an undecodable byte, escaped: no UTF-8 text has one
            if not skip_bad:
                raw = line.encode("utf-8", "surrogateescape")[:40]
                return lines[:i], BadRecord(name, before + i + 1, "<line>", raw, "not UTF-8 text")
            log.skipped += 1
            lines[i] = ""
    return lines, None


def _decode(data: bytes, name: str, offset: int) -> str:
    """UTF-8, a byte-order mark dropped at the file's start; an error names the file offset of the bad byte."""
    try:
        return decode_utf8(data, name) if offset == 0 else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = offset + exc.start
        raise BadStateFile(
            name, "", data[exc.start : exc.start + 4], f"not UTF-8 text: invalid byte at offset {bad}"
        ) from None
