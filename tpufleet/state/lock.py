"""The exclusive state lock, with a note of who holds it so a waiting runbook can say whom it waited for.

flock-based (via `filelock`): the kernel drops the lock when its holder dies, even by SIGKILL, so a crashed
runbook never wedges the fleet. `.lock` must be a regular file (a symlink, directory or FIFO in its place is
refused, exit 2, before filelock opens it; filelock itself opens with ``O_NOFOLLOW``); `.lock.info` is written
without following a symlink either. An operating-system error taking the lock is one line naming `.lock` (exit 1).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tpufleet.errors import BadInput, LockTimeout, Refused
from tpufleet.state.files import SHARING, io_error, kind_of, open_state_file, write_all
from tpufleet.state.temps import alive
from tpufleet.text import bounded, printable, seconds_text
from tpufleet.timeparse import STAMP_FORMAT

if TYPE_CHECKING:
    from filelock import BaseFileLock

LOCK, LOCK_INFO = ".lock", ".lock.info"
MAX_INFO_BYTES = 65536  # of `.lock.info`: far more than a note holds (its command is cut to _INFO_COMMAND characters)
_INFO_COMMAND = 1024  # characters of the holder's command the note keeps (200 are shown)
WAIT_NOTICE_AFTER = 1.0  # seconds: a lock released sooner is not worth a line


class _WaitNotice:
    """Where to say "waiting for the state lock held by ..." once a wait passes one second; None says nothing.

    Set by the command-line shell when stderr is a terminal (as Terraform does); scripts see no extra output.
    """

    say: Callable[[str], None] | None = None


WAIT_NOTICE = _WaitNotice()


def _holder(info_path: Path) -> str:
    try:
        fd = open_state_file(info_path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            note = fh.read(MAX_INFO_BYTES + 1)  # a huge or sparse note planted there is not read whole
        if len(note) > MAX_INFO_BYTES:
            return "an unknown process"
        info = json.loads(note)
        # the holder's command line is another user's text: escaped, and cut short; its passwords hidden, as this
        # tpufleet records them (another writer's, an older tpufleet's, may hold one)
        command = bounded(shown_command(str(info["command"])), 200)
        if type(info["pid"]) is int and not alive(info["pid"]):  # a killed holder's note: another holds the lock now
            return printable(f"an unknown process (the lock's note names pid {info['pid']}, which has exited)")
        return printable(f"pid {info['pid']} ({command}, since {info['started']})")
    except (OSError, ValueError, KeyError, TypeError, RecursionError, BadInput):
        return "an unknown process"


def _check_lock_file(lock_path: Path) -> None:
    """Refuse a `.lock` that is not a regular file (filelock would follow nothing, but fail obscurely)."""
    try:
        st = os.lstat(lock_path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise io_error("lock", lock_path, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(
            f"state lock {lock_path} is a {kind_of(st.st_mode)}, not a regular file; remove it (no tpufleet command "
            "makes one)"
        )


def _write_info(info_path: Path, command: str) -> None:
    """Note who holds the lock. Only informative: an operating-system error here does not stop the command
    (the journal and state writes that follow report a full or read-only disk themselves); a symlink does."""
    started = time.strftime(STAMP_FORMAT, time.gmtime())
    payload = json.dumps({"pid": os.getpid(), "command": command[:_INFO_COMMAND], "started": started}).encode()
    try:
        fd = open_state_file(info_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            write_all(fd, payload)
    finally:
        os.close(fd)


def _clear_info(info_path: Path) -> None:
    """Empty the note as the lock is let go (still held: the next holder's note is not touched), so that whoever
    takes the lock without writing one (`flock .lock tar ...`, a backup) is "an unknown process", not the last
    command. Best effort, as the note is: a killed holder's stays until the next holder's replaces it."""
    with contextlib.suppress(OSError, BadInput):
        os.close(open_state_file(info_path, os.O_WRONLY | os.O_TRUNC))


def _acquire(lock: BaseFileLock, timeout: float, info_path: Path) -> None:
    """Take the lock within `timeout` seconds; past the first second, say once whom we are waiting for."""
    say = WAIT_NOTICE.say
    if say is None or timeout <= WAIT_NOTICE_AFTER:
        lock.acquire()
        return
    from filelock import Timeout

    try:
        lock.acquire(timeout=WAIT_NOTICE_AFTER)
        return
    except Timeout:
        say(f"waiting for the state lock held by {_holder(info_path)}")
    lock.acquire(timeout=timeout - WAIT_NOTICE_AFTER)


@contextmanager
def exclusive(state_dir: Path, timeout: float, command: str) -> Iterator[Callable[[], bool]]:
    """Hold the lock; the value says whether the lock file is still the one held (not removed or replaced)."""
    from filelock import FileLock, Timeout

    lock_path, info_path = state_dir / LOCK, state_dir / LOCK_INFO
    _check_lock_file(lock_path)
    lock = FileLock(str(lock_path), timeout=timeout, mode=SHARING.file_mode)
    try:
        _acquire(lock, timeout, info_path)
    except Timeout:
        raise LockTimeout(
            f"state {state_dir} is locked by {_holder(info_path)}; gave up after {seconds_text(timeout)}s (see --lock-timeout)"
        ) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR):
            _check_lock_file(lock_path)  # replaced since the first look: say what it is now
        raise io_error("lock", lock_path, exc) from None
    try:
        _write_info(info_path, command)
        held = _identity(lock_path)
        yield lambda: held is not None and _identity(lock_path) == held
    finally:
        _clear_info(info_path)
        lock.release()


def _identity(path: Path) -> tuple[int, int] | None:
    """The file at `path` (device, inode); None when there is none."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def lock_lost(state_dir: Path) -> Refused:
    """A commit refused because the lock file was removed or replaced while held: another command may have taken a
    new one and be writing (or have written) the state meanwhile."""
    return Refused(
        f"the state lock {state_dir / LOCK} was removed or replaced while this command held it, or another command "
        "wrote the state meanwhile: nothing was changed by this one; run it again (never remove .lock: a lock no "
        "process holds is free already)"
    )


def command_line() -> str:
    """The command as the journal and the lock's holder record it (`shown_command`). Database URLs are redacted
    argument by argument first: an argument is where a URL ends, which the joined line no longer says."""
    from tpufleet.state.dburl import redacted_arg

    args = [redacted_arg(arg) if "://" in arg else arg for arg in sys.argv[1:]]
    return shown_command(" ".join(["tpufleet", *args]))


def shown_command(text: str) -> str:
    """A command line as recorded and shown: database URLs without their passwords, and bytes the file system's
    encoding could not decode (a lone surrogate to Python) as escapes, so every writer of UTF-8 takes it."""
    if text.isascii() and "://" not in text:  # (nearly every line of a journal: read without a second look)
        return text
    from tpufleet.state.dburl import redacted_words

    return redacted_words(valid_text(text))


def valid_text(arg: str) -> str:
    """`arg` as valid text: Python keeps a byte of argv it could not decode as a lone surrogate."""
    try:
        return arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no decoding made
        return arg.encode("utf-8", "backslashreplace").decode("utf-8")


def login_name() -> str:
    """Who runs the command, as the journal, the lock's holder and the schema's history record it: on one line, in
    valid text ($USER may hold anything, a newline or an undecodable byte included)."""
    import getpass

    from tpufleet.text import printable

    try:
        return printable(valid_text(getpass.getuser()))
    except (KeyError, OSError):
        return str(os.getuid())
