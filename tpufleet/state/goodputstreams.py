"""A goodput log's bytes as they are read: the file or ``-`` (standard input) opened, gzip told by its first two
bytes and decompressed (a stream cut off before its end read up to the cut), and, where the log must be a regular
file (`tpufleet serve`), a FIFO or device refused unopened. Kept apart from what the records say (`goodputlogs`) and
from cutting the bytes into whole lines (`goodputpieces`): this is the only part of the goodput report that opens
files.

CHUNK_BYTES, how much is read at a time, is defined here and read at call time both by the gzip stream here and by
`goodputpieces` (as ``goodputstreams.CHUNK_BYTES``, never a copy): lowering it here lowers it for both.
"""

from __future__ import annotations

import gzip
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import BinaryIO, cast

from tpufleet.constants import MiB
from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.state.files import kind_of
from tpufleet.state.inputfiles import MissingFile, near_file, open_input, size_text

_GZIP = b"\x1f\x8b"


CHUNK_BYTES = 8 * MiB  # native logs are read this much at a time


STDIN = "-"


NOT_READ_AGAIN = "cannot be read again as it changes: give the log's file"  # standard input, as serve reads


def shown_name(path: Path) -> str:
    """The name a message gives a log: ``<stdin>`` for ``-``."""
    return "<stdin>" if str(path) == STDIN else str(path)


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
                raise MissingFile(
                    name, "", NO_VALUE, f"cannot be read: no such goodput log{near_file(str(path))}"
                ) from None
            except OSError as exc:
                raise BadStateFile(name, "", NO_VALUE, f"cannot be read: {exc.strerror or exc}") from None
        head = _read(raw, name, len(_GZIP))
        plain = _rewound(raw, head)
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


def _rewound(raw: BinaryIO, head: bytes) -> BinaryIO:
    """A stream from its start again, the few bytes read to tell gzip from text put back: sought back when it can
    seek (a regular file, standard input redirected from one), where putting them in front cost a copy of the whole
    log (0.1 s at 80 MB); else put in front (a pipe, a FIFO)."""
    seekable = getattr(raw, "seekable", None)  # (a FIFO's stream, its first bytes waited for, has no seek)
    if seekable is not None and seekable():
        raw.seek(-len(head), os.SEEK_CUR)
        return raw
    return cast(BinaryIO, _Prefixed(head, raw))


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


def _read_whole(fh: BinaryIO, name: str, limit: int) -> bytes:
    data = _read(fh, name, limit + 1)
    if len(data) > limit:
        raise _too_large(name, limit)
    return data


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
