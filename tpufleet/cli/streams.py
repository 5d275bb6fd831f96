"""Standard output and error as the contract wants them whatever they are attached to: any text written (a
character the stream's encoding lacks, or a byte the file system could not decode, comes out as a JSON-style
escape, valid inside a JSON string and readable in a table), and a stream that cannot be written to (a full disk)
one line and exit 1, not an internal error."""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import sys
from typing import Any, TextIO

ESCAPE = "tpufleet-escape"
_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _escape(exc: UnicodeError) -> tuple[str, int]:
    """The characters an encoding lacks as JSON escapes: `\\u4fee` for U+4FEE, a surrogate pair above U+FFFF."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end


codecs.register_error(ESCAPE, _escape)


def carry_any_text() -> None:
    """Let stdout and stderr write any text (a Latin-1 terminal, a login name with an undecodable byte)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors=ESCAPE)
            except (AttributeError, ValueError, OSError):  # a stream that cannot change: left as it is
                continue


def is_write_failure(exc: OSError) -> bool:
    """An error writing output (the state layer reports its own file errors, naming the file)."""
    return exc.errno in _WRITE_ERRORS


def drop_stdout() -> None:
    """Point stdout at /dev/null: what could not be written is not tried again at exit."""
    _drop(sys.stdout)


def drop_stderr() -> None:
    """The same for stderr, where an error line could not be written (`2>/dev/full`)."""
    _drop(sys.stderr)


def tell(text: str) -> None:
    """Print to stderr what is not an error line (help shown for a missing command, the interrupt's line, a
    traceback): a stderr that cannot be written loses it, never the command's exit code."""
    try:
        print(text, file=sys.stderr)
        sys.stderr.flush()
    except OSError:
        drop_stderr()


class ReaderMayGo:
    """Standard output whose reader may go away (`tpufleet status | head -1`): the write or flush that meets the
    closed pipe points the descriptor at /dev/null, and the command goes on to its own exit code (Click would stop
    it there, exit 1, silent; `plan-xconnect --detailed-exitcode` must still say 4). Anything else is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            _drop(self._stream)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _drop(self._stream)
            with contextlib.suppress(BrokenPipeError):  # what the buffer held goes to /dev/null now
                self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _drop(stream: TextIO) -> None:
    with contextlib.suppress(OSError, ValueError):  # no real file descriptor (an in-process caller's stream)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)


class _ClosedOutput(io.TextIOBase):
    """Standard output the caller closed: writing to it fails as a full disk does, so a command that has output
    to give reports it lost (exit 1), and one with none to give (`serve`) is not troubled."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EIO, "standard output is closed")

    def fileno(self) -> int:
        return 1


def reopen_closed_streams() -> None:
    """Put /dev/null on standard input, output or error where the caller closed it (`>&-`, `2>&-`): else the first
    file a command opens (the state's lock, its journal) takes that descriptor, and a worker process started later
    writes its output into that file. What a command writes to a closed standard output is refused as lost."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:  # Python found the descriptor open at start-up
            continue
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        stream = _ClosedOutput() if fd == 1 else open(fd, "rw"[fd > 0], encoding="utf-8", closefd=False)  # noqa: SIM115
        setattr(sys, name, stream)
