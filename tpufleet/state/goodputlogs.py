"""Goodput event logs and --exclude files, read: the goodput report's only file access (its core,
`tpufleet.goodput`, takes the decoded records).

A log is a file or ``-`` (standard input), plain or gzip-compressed (known by its first two bytes, as `sweep
--keep-events` and the demo write them); every size limit counts the bytes as decompressed. A native log named
``*.csv`` or ``*.csv.gz`` is CSV, any other (standard input too) JSON lines (`is_csv`). Native JSONL is
streamed a piece of whole lines at a time (each line checked against MAX_LINE_BYTES before it is decoded); with
a large input and an idle CPU, pieces are decoded ahead in worker processes forked from a fork server (`_fork_pool`, sized from
``/proc/stat``), with the same answers as one process gives.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import sys
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, cast

from tpufleet.constants import MiB
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile, shown
from tpufleet.goodput import columnar, events, fastread, mlfast, mlgoodput
from tpufleet.goodput.times import BadRecord
from tpufleet.goodput.windows import Exclusion, parse_exclusions
from tpufleet.jsontext import parse_json_line
from tpufleet.state.files import kind_of
from tpufleet.state.generations import StepProfiles
from tpufleet.state.inputfiles import (
    MAX_LOG_BYTES,
    MAX_SPEC_BYTES,
    MissingFile,
    decode_utf8,
    load_json_file,
    open_input,
    size_text,
)

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor as Pool

__all__ = ["STDIN", "load", "load_exclusions", "shown_name"]

MAX_TOTAL_LOG_BYTES = 8 * MAX_LOG_BYTES  # all the files of one report together: about 20 M native events
_BOM = b"\xef\xbb\xbf"
_GZIP = b"\x1f\x8b"
CHUNK_BYTES = 8 * MiB  # native logs are read this much at a time
STDIN = "-"
CSV_NAMES = (".csv", ".csv.gz")  # how a native CSV log's name ends (`is_csv`)
_TOO_LONG = b"<a line over the limit>\n"  # stands in for a skipped over-long line: bad to every reader


NOT_READ_AGAIN = "cannot be read again as it changes: give the log's file"  # standard input, as serve reads


def shown_name(path: Path) -> str:
    """The name a message gives a log: ``<stdin>`` for ``-``."""
    return "<stdin>" if str(path) == STDIN else str(path)


def is_csv(path: Path) -> bool:
    """Whether a native log is CSV: its name ends in ``.csv``, or ``.csv.gz`` (gzip-compressed). Anything else is
    JSON lines, standard input included (it has no name to tell)."""
    return str(path).lower().endswith(CSV_NAMES)


def log_path(log: str | Path) -> Path:
    """The path of a log named `log`: ``-`` is standard input, but a file so named given as typed text (`./-`),
    whose Path would read ``-``, is made absolute so it is read as the file."""
    path = Path(log)
    return path.absolute() if str(path) == STDIN and str(log) != STDIN else path


def refuse_standard_input(paths: Sequence[Path]) -> None:
    """BadStateFile when a log read again as it changes is ``-``: standard input reads once, however often it is
    given (checked before `refuse_repeated`, which would call ``-`` twice a log counted twice)."""
    if any(str(path) == STDIN for path in paths):
        raise BadStateFile(shown_name(Path(STDIN)), "", NO_VALUE, NOT_READ_AGAIN)


def refuse_repeated(logs: Sequence[str | Path]) -> None:
    """BadInput when one log is given twice (the same name, another name of the same file, or ``-`` twice): its
    events would count twice. A log given as text is named as typed (`./a.jsonl` after `a.jsonl`: a Path drops the
    `./`). A log that cannot be read is left to the reading to name."""
    seen: dict[object, str] = {}
    for log in logs:
        path, name = log_path(log), shown_name(Path(log)) if str(log) == STDIN else str(log)
        key: object = STDIN if str(path) == STDIN else path.resolve()
        if key != STDIN:
            try:
                st = path.stat()
                key = (st.st_dev, st.st_ino)
            except OSError:
                pass
        if key in seen:
            raise BadInput(
                f"bad goodput logs: {name} is given twice (also as {seen[key]}): its events would count twice"
            )
        seen[key] = name


class Content(NamedTuple):
    """What a log held, to know a copy of it: its bytes (decompressed) and their CRC-32."""

    size: int
    crc: int


def refuse_same_content(seen: dict[Content, str], content: Content, name: str, records: int) -> None:
    """BadInput when log `name` holds, byte for byte, what an earlier one held (`seen`, added to): a copy, its
    gzip, or the same on standard input, whose events would count twice (exact repeats of an event are dropped
    only where they follow each other, and two logs' events at one instant interleave). Logs that hold no record
    (empty, a CSV header alone: an idle hour's rotated log) are alike and count nothing."""
    if not content.size or not records:
        return
    if content in seen:
        raise BadInput(
            f"bad goodput logs: {name} holds the same bytes as {seen[content]}: its events would count twice"
        )
    seen[content] = name


def _pieces(fh: BinaryIO, name: str, limit: int, skip_bad: bool, whole_lines: bool) -> Iterator[tuple[bytes, int]]:
    """The stream in pieces of whole lines (each ends at a newline but the last) with their byte offsets, so the
    whole file is never held. The size is checked as the pieces come, and each line against MAX_LINE_BYTES before
    it is decoded: an over-long line is an error naming its line, or with `skip_bad` one bad line (its bytes are
    dropped as they come). With `whole_lines`, a last line a writer has not finished is left out (`_finished`)."""
    total = consumed = lines = 0
    rest, dropping = b"", False
    while block := _read(fh, name, CHUNK_BYTES):
        total += len(block)
        if total > limit:
            raise _too_large(name, limit)
        if dropping:  # the rest of an over-long line
            cut = _first_line_end(block)
            if cut < 0:
                continue
            block, dropping = block[cut + 1 :], False
        data, rest = _split_at_line_end(rest + block)
        data = _without_long_lines(data, name, lines, skip_bad)
        if len(rest) > events.MAX_LINE_BYTES:
            _refuse_long_line(name, lines + _line_ends(data) + 1, rest, skip_bad)
            data, rest, dropping = data + _TOO_LONG, b"", True
        lines += _line_ends(data)
        yield data, consumed
        consumed += len(data)
    if getattr(fh, "cut_short", False):
        rest = rest[: _last_line_end(rest)]  # a line the cut runs through is not read (`_after_cut` names it)
    elif rest and whole_lines and not _finished(rest):
        rest = b""
    if rest:
        yield rest, consumed


def _last_line_end(data: bytes) -> int:
    """Where the last whole line of `data` ends (a line ends at a line feed or CR: see `events.log_lines`)."""
    return max(data.rfind(b"\n"), data.rfind(b"\r")) + 1


def _after_cut(fh: BinaryIO, name: str, line: int, reading: _Reading, log: events.Log) -> None:
    """A gzip stream cut off before its end (`_Gunzipped`) at `line`, the first line not read whole: an error
    naming it, or with `skip_bad` one bad line, counted and named (`Log.cut_off`). A log still being written
    (`whole_lines`) is a cut stream until its writer closes it: its whole lines are read, as a plain one's are."""
    if not getattr(fh, "cut_short", False) or reading.whole_lines:
        return
    if not reading.skip_bad:
        raise BadRecord(name, line, "<line>", NO_VALUE, _CUT_SHORT)
    log.skipped += 1
    log.cut_off.append((name, line))


_CUT_SHORT = "the gzip stream is cut off here, before its end (the file is truncated: a copy or upload stopped)"


def _finished(last: bytes) -> bool:
    """Whether a last line without a line break is a whole record: a JSON object (a writer partway through one
    leaves what is no JSON yet, or a CSV row that may be cut anywhere, a number included)."""
    try:
        return isinstance(parse_json_line(last.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


def _without_unfinished(data: bytes) -> bytes:
    """A log read whole without its last line if a writer has not finished it (a JSON array is left whole: its
    last line is never a record)."""
    cut = data.rfind(b"\n") + 1
    if cut == len(data) or _json_array(data) or _finished(data[cut:]):
        return data
    return data[:cut]


def _json_array(data: bytes) -> bool:
    """Whether a log is one JSON array (of Cloud Logging entries), read whole, not a line at a time."""
    return data.lstrip().removeprefix(_BOM).lstrip()[:1] == b"["


def _without_long_lines(data: bytes, name: str, lines_before: int, skip_bad: bool) -> bytes:
    """Whole lines with each one over MAX_LINE_BYTES refused (or, with `skip_bad`, put as one bad line): a
    newline in every half-limit of bytes (a few memchr calls a piece) rules any out; else a vectorised scan."""
    import numpy as np

    half = events.MAX_LINE_BYTES // 2
    if all(data.find(b"\n", i, i + half) >= 0 for i in range(0, len(data), half)):
        return data  # a newline in every half-limit of bytes: no line is over the limit (the usual case)
    byte = np.frombuffer(data, dtype=np.uint8)
    lf = byte == ord("\n")
    ends = np.flatnonzero(lf | ((byte == ord("\r")) & ~np.append(lf[1:], False)))  # a CR LF ends at its LF
    starts = np.concatenate(([0], ends[:-1] + 1))
    long = np.flatnonzero(ends - starts > events.MAX_LINE_BYTES)
    if not len(long):
        return data
    first = int(long[0])
    _refuse_long_line(name, lines_before + first + 1, data[int(starts[first]) : int(starts[first]) + 40], skip_bad)
    kept, done = [], 0
    for k in long.tolist():
        kept += [data[done : int(starts[k])], _TOO_LONG]
        done = int(ends[k]) + 1
    return b"".join([*kept, data[done:]])


def _refuse_long_line(name: str, line: int, text: bytes, skip_bad: bool) -> None:
    if not skip_bad:
        problem = f"longer than the {events.MAX_LINE_BYTES:,} bytes allowed for a line"
        raise BadRecord(name, line, "<line>", text[:40], problem)


def _too_large(name: str, limit: int) -> BadStateFile:
    return BadStateFile(
        name, "", NO_VALUE, f"larger than the {size_text(limit)} allowed for a goodput log (decompressed)"
    )


def _read(fh: BinaryIO, name: str, size: int) -> bytes:
    """Up to `size` bytes; a damaged gzip stream or a failed read is the one-line error naming the log."""
    try:
        return fh.read(size)
    except (OSError, EOFError, zlib.error) as exc:
        what = "not a readable gzip file" if isinstance(fh, _Gunzipped) else "cannot be read"
        raise BadStateFile(name, "", NO_VALUE, f"{what}: {getattr(exc, 'strerror', None) or exc}") from None


def _read_native_file(
    fh: BinaryIO, name: str, limit: int, log: events.Log, reading: _Reading, pool: Pool | None
) -> Content:
    """Each piece by msgspec when it can vouch for all of it, else by the standard reader (same answers); with
    a pool, pieces are decoded ahead in its worker processes and added here in file order. What was read."""
    line = read = crc = 0
    skip_bad = reading.skip_bad
    for piece, offset, decoded in _decoded(_pieces(fh, name, limit, skip_bad, reading.whole_lines), pool):
        read, crc = offset + len(piece), zlib.crc32(piece, crc)  # 4 GB/s: a twentieth of the decode's time
        fast = 0 if decoded is None else fastread.add_decoded(decoded, line + 1, name, log)
        if fast:
            line += fast
            continue
        lines = _text_lines(piece, name, offset, line, skip_bad, log)
        events.read_native_lines(enumerate(lines, start=line + 1), name, log, skip_bad)
        line += len(lines)
    _after_cut(fh, name, line + 1, reading, log)
    return Content(read, crc)


def _decoded(
    pieces: Iterator[tuple[bytes, int]], pool: Pool | None
) -> Iterator[tuple[bytes, int, fastread.Decoded | None]]:
    """Each piece with its decoding (None: read it the standard way, as a piece starting with a byte-order mark
    is, which that reader drops)."""
    if pool is not None:
        yield from _decoded_ahead(pieces, pool)
        return
    for piece, offset in pieces:
        yield piece, offset, None if _bom(piece, offset) else decode_piece(piece)


def _decoded_ahead(
    pieces: Iterator[tuple[bytes, int]], pool: Pool
) -> Iterator[tuple[bytes, int, fastread.Decoded | None]]:
    """`_decoded` with up to two pieces a worker decoded ahead in the pool. An error reading the file (too
    large, unreadable) is raised after the pieces before it are given, as reading one at a time would. Once a
    worker has died (killed for memory, say), the pieces left are decoded here: the same answers, where waiting
    for a piece no worker will hand back would wait for good."""
    from concurrent.futures.process import BrokenProcessPool

    ahead: deque[tuple[bytes, int, Any]] = deque()
    failure: BadInput | None = None
    broken = False
    while True:
        while failure is None and not broken and len(ahead) < 2 * _workers(pool):
            try:
                piece, offset = next(pieces)
            except StopIteration:
                break
            except BadInput as exc:
                failure = exc
                break
            job = None if _bom(piece, offset) else _submitted(pool, piece)
            ahead.append((piece, offset, job))
        if not ahead:
            if failure is not None:
                raise failure
            if broken:
                yield from _decoded(pieces, None)
            return
        piece, offset, job = ahead.popleft()
        try:
            decoded = None if job is None else job.result()
        except BrokenProcessPool:
            broken, decoded = True, decode_piece(piece)
        yield piece, offset, decoded


def _submitted(pool: Pool, piece: bytes) -> Any:
    """The piece handed to the pool, Ctrl-C held back meanwhile (`_interrupts_held`): a submit may start a worker."""
    with _interrupts_held():
        return pool.submit(decode_piece, piece)


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) held back, then raised once the block is done. An interrupt between a worker's start and the
    executor's note of it left a worker no shutdown stopped (the exit waited for it for ever) or one whose queues
    were gone (its traceback on stderr). SIGINT is blocked meanwhile, not only handled: the fork server a submit
    starts, and every worker it forks, keep that mask, so a terminal's Ctrl-C reaches the reading process alone
    (workers leave interrupts to it: `_leave_interrupts` only begins once a worker has started). Only the main
    thread is interrupted: elsewhere nothing is held."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda _signal, _frame: caught.append(1))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one pending now reaches the handler above
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
    if caught:
        raise KeyboardInterrupt


def decode_piece(piece: bytes) -> fastread.Decoded | None:
    """A piece as msgspec's records, else as Arrow's typed columns (when one of them vouches for all of it); None:
    read it the standard way. The same answers each way; msgspec first, as the faster here (benchmarks/
    bench_goodput.py measures both)."""
    decoded = fastread.decode_piece(piece)
    return columnar.decode_piece(piece) if decoded is None else decoded


def _bom(piece: bytes, offset: int) -> bool:
    return offset == 0 and piece.startswith(_BOM)


def _split_at_line_end(data: bytes) -> tuple[bytes, bytes]:
    """The whole lines of `data` and the rest. A line ends at a line feed, CR LF or a lone CR (`events.log_lines`:
    a log written with CRs alone was one over-long line here); a CR last may be half a CR LF, so no cut after it."""
    cut = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1)) + 1
    return data[:cut], data[cut:]


def _first_line_end(data: bytes) -> int:
    """Where the first line of `data` ends (its line feed or CR), or -1."""
    ends = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
    return min(ends) if ends else -1


def _line_ends(data: bytes) -> int:
    """How many lines end in `data` (a CR LF is one end)."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # what `surrogateescape` makes of a byte that is not UTF-8


def _text_lines(piece: bytes, name: str, offset: int, before: int, skip_bad: bool, log: events.Log) -> list[str]:
    """The piece's lines as text. A line that is not UTF-8 is bad input naming its line, or with `skip_bad` one
    bad line skipped (left empty, so the lines keep their numbers)."""
    try:
        return events.log_lines(_decode(piece, name, offset))
    except BadStateFile:
        pass
    text = piece[len(_BOM) if _bom(piece, offset) else 0 :].decode("utf-8", "surrogateescape")
    lines = events.log_lines(text)
    for i, line in enumerate(lines):
        if _ESCAPED_BYTE.search(line):  # an undecodable byte, escaped: no UTF-8 text has one
            if not skip_bad:
                raw = line.encode("utf-8", "surrogateescape")[:40]
                raise BadRecord(name, before + i + 1, "<line>", raw, "not UTF-8 text")
            log.skipped += 1
            lines[i] = ""
    return lines


def _decode(data: bytes, name: str, offset: int) -> str:
    """UTF-8, a byte-order mark dropped at the file's start; an error names the file offset of the bad byte."""
    try:
        return decode_utf8(data, name) if offset == 0 else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = offset + exc.start
        raise BadStateFile(
            name, "", data[exc.start : exc.start + 4], f"not UTF-8 text: invalid byte at offset {bad}"
        ) from None


@contextmanager
def _open(path: Path, files_only: bool = False) -> Iterator[BinaryIO]:
    """The log's bytes, decompressed when it starts as gzip does; ``-`` is standard input (left open). With
    `files_only`, a log that is not a regular file (a FIFO, a device, standard input) is refused, never read."""
    name = shown_name(path)
    with ExitStack() as stack:
        raw: BinaryIO = sys.stdin.buffer
        if str(path) == STDIN and files_only:
            raise BadStateFile(name, "", NO_VALUE, NOT_READ_AGAIN)
        if str(path) != STDIN:
            try:
                raw = stack.enter_context(_open_file(path, files_only))
            except FileNotFoundError:
                raise MissingFile(name, "", NO_VALUE, "cannot be read: no such goodput log") from None
            except OSError as exc:
                raise BadStateFile(name, "", NO_VALUE, f"cannot be read: {exc.strerror or exc}") from None
        head = _read(raw, name, len(_GZIP))
        stream = _Prefixed(head, raw)
        plain = cast(BinaryIO, stream)
        yield cast(BinaryIO, _Gunzipped(gzip.GzipFile(fileobj=plain, mode="rb"))) if head == _GZIP else plain


class _Gunzipped:
    """A gzip stream's bytes. A stream cut off before its end-of-stream marker (a copy or an upload that stopped
    partway) ends at the cut, with `cut_short` set: what came before it is read, where GzipFile.read raised and
    dropped everything it had decompressed in that call (a whole piece)."""

    def __init__(self, stream: gzip.GzipFile) -> None:
        self.stream, self.cut_short = stream, False

    def read(self, size: int = -1, /) -> bytes:
        parts: list[bytes] = []
        wanted = sys.maxsize if size is None or size < 0 else size
        while wanted > 0 and not self.cut_short:
            try:
                part = self.stream.read1(min(wanted, CHUNK_BYTES))
            except EOFError:
                self.cut_short = True
                break
            if not part:
                break
            parts.append(part)
            wanted -= len(part)
        return b"".join(parts)


def _open_file(path: Path, files_only: bool) -> BinaryIO:
    """The file, opened to read; with `files_only`, a regular file or BadStateFile. That open does not wait for a
    FIFO's writer (``O_NONBLOCK``), and what is checked is what was opened (no other file can be swapped in)."""
    if not files_only:
        return open_input(path)  # a FIFO is read only once a writer has it open
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError:
        _refuse_not_regular(path, os.stat(path).st_mode)  # a socket, say, cannot be opened at all
        raise
    try:
        _refuse_not_regular(path, os.fstat(fd).st_mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _refuse_not_regular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise BadStateFile(shown_name(path), "", NO_VALUE, f"cannot be read: a {kind_of(mode)}, not a regular file")


class _Prefixed:
    """A stream's bytes with the first few (already read to tell gzip from text) put back in front: standard
    input cannot seek back."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = head, rest

    def read(self, size: int = -1, /) -> bytes:
        if not self.head:
            return self.rest.read(size)
        if size is None or size < 0:
            out, self.head = self.head + self.rest.read(), b""
            return out
        out, self.head = self.head[:size], self.head[size:]
        return out if len(out) == size or not out else out + self.rest.read(size - len(out))


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False  # decode_utf8 names the byte
    return True


def _read_whole(fh: BinaryIO, name: str, limit: int) -> bytes:
    data = _read(fh, name, limit + 1)
    if len(data) > limit:
        raise _too_large(name, limit)
    return data


@dataclass(frozen=True)
class _Reading:
    """How the logs are read: malformed records skipped (and counted), or an error; with `whole_lines`, a last
    line without a line break that is no whole record yet left out (`tpufleet serve` reads logs being written)."""

    skip_bad: bool
    whole_lines: bool = False


def load(
    paths: list[Path],
    fmt: str,
    skip_bad: bool,
    job_limit: int | None = None,
    whole_lines: bool = False,
    files_only: bool = False,
) -> events.Log:
    """Every log into one Log: native JSONL is streamed (read and parsed a piece at a time); CSV and the
    ml-goodput forms are read whole (each at most MAX_LOG_BYTES decompressed). More than `job_limit` jobs is
    BadInput naming the log where the one too many is. With `whole_lines`, each log's last line is read only
    once finished: a JSON object, or ended by a line break (a writer may be partway through it). With
    `files_only`, a log that is not a regular file is BadStateFile, never read (a FIFO would wait for a writer)."""
    log = events.Log(job_limit=events.MAX_JOBS if job_limit is None else job_limit, step_profiles=StepProfiles())
    budget = MAX_TOTAL_LOG_BYTES
    native = [p for p in paths if fmt == "native" and not is_csv(p)]
    reading = _Reading(skip_bad, whole_lines)
    seen: dict[Content, str] = {}
    with _fork_pool(sum(_size(p) for p in native) >= PARALLEL_MIN_BYTES) as pool:
        for path in paths:
            name = shown_name(path)
            with _open(path, files_only) as fh:
                records = log.records
                try:
                    content = _load_one(fh, name, fmt, path in native, min(MAX_LOG_BYTES, budget), log, reading, pool)
                except events.TooManyJobs as exc:
                    raise BadInput(
                        f"{name}: field job: more than {exc.limit:,} jobs in one report; report on fewer logs "
                        f"(value {shown(exc.job)})"
                    ) from None
            budget -= content.size
            refuse_same_content(seen, content, name, log.records - records)
    return log


def _load_one(
    fh: BinaryIO, name: str, fmt: str, native: bool, limit: int, log: events.Log, reading: _Reading, pool: Pool | None
) -> Content:
    """One log into `log`; what it held (decompressed)."""
    if native:
        return _read_native_file(fh, name, limit, log, reading, pool)
    data = _read_whole(fh, name, limit)
    content = Content(len(data), zlib.crc32(data))
    if getattr(fh, "cut_short", False):
        data = data[: _last_line_end(data)]  # the line the cut runs through is not read (`_after_cut`)
    elif reading.whole_lines:
        data = _without_unfinished(data)
    cut_at = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n") + 1
    if getattr(fh, "cut_short", False) and not reading.whole_lines and _json_array(data):
        raise BadRecord(name, cut_at, "<line>", NO_VALUE, f"{_CUT_SHORT}; a JSON array of entries is read whole")
    _read_whole_log(data, name, fmt, log, reading.skip_bad)
    _after_cut(fh, name, cut_at, reading, log)
    return content


def _read_whole_log(data: bytes, name: str, fmt: str, log: events.Log, skip_bad: bool) -> None:
    """A CSV or ml-goodput log read whole into `log`."""
    if fmt == "ml-goodput" and (data.isascii() or _is_utf8(data)) and mlfast.read(data, name, log):
        return  # decoded and checked on columns: the same answers as the importer's, entry by entry
    text = decode_utf8(data, name)
    del data
    if fmt == "ml-goodput":
        mlgoodput.read(text, name, log, skip_bad)
    else:
        events.read_native(text, name, log, skip_bad, csv_format=True)


PARALLEL_MIN_BYTES = 64 * MiB  # native logs at least this large are decoded in worker processes too
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

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        before = _cpu_ticks()
        time.sleep(IDLE_SAMPLE_S)
        after = _cpu_ticks()
    except (OSError, ValueError, IndexError):
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        return cpus, cpus - load
    total, idle = after[0] - before[0], after[1] - before[1]
    return cpus, cpus * idle / total if total > 0 else float(cpus)


def _cpu_ticks() -> tuple[int, int]:
    """(all, idle + waiting for I/O) clock ticks of every CPU since boot, from the first line of /proc/stat."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    return sum(fields[:8]), fields[3] + fields[4]  # user nice system idle iowait irq softirq steal


@contextmanager
def _fork_pool(wanted: bool) -> Iterator[Pool | None]:
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


def _leave_interrupts() -> None:
    """A worker leaves Ctrl-C to the report (which stops handing it pieces): no worker's traceback on stderr."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _workers(pool: Pool) -> int:
    return int(getattr(pool, "_max_workers", 1))


def load_exclusions(path: Path) -> list[Exclusion]:
    """An --exclude file: a JSON list of {start, end, reason}."""
    return parse_exclusions(load_json_file(path, "exclusions file", MAX_SPEC_BYTES), str(path))


def on_disk_bytes(paths: list[Path]) -> int:
    """The logs' sizes on disk together (compressed, for gzip logs)."""
    return sum(_size(p) for p in paths)


def _size(path: Path) -> int:
    """The size on disk (compressed, for a gzip log; 0 for standard input): to decide on worker processes."""
    if str(path) == STDIN:
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0  # reading it says what is wrong


def load_part(path: Path, fmt: str, skip_bad: bool) -> tuple[events.Log, Content]:
    """One log read alone, in this process (a Dask worker's share of a report): its records and the bytes it
    held (decompressed), each log at most MAX_LOG_BYTES and MAX_JOBS jobs; the caller checks the limits of all
    the logs together (`load` is the reference: it says which log goes over)."""
    log = events.Log(job_limit=events.MAX_JOBS, step_profiles=StepProfiles())
    native = fmt == "native" and not is_csv(path)
    name = shown_name(path)
    with _open(path) as fh:
        try:
            content = _load_one(fh, name, fmt, native, MAX_LOG_BYTES, log, _Reading(skip_bad), None)
        except events.TooManyJobs as exc:
            raise BadInput(
                f"{name}: field job: more than {exc.limit:,} jobs in one log (value {shown(exc.job)})"
            ) from None
    return log, content
