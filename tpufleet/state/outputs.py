"""Files the user names for a command's output (``--out``, ``--plot``): checked before the command runs, then
written. A regular file (or a new one) is replaced atomically with ordinary permissions; a device, FIFO or socket
is written through; a symlink is followed. Nothing ever changes the type of the path it was given, and nothing is
written into the state directory (`files.refuse_state_dir`)."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from tpufleet.errors import BadInput
from tpufleet.state.files import (
    CLOEXEC,
    NOFOLLOW,
    discarded_on_error,
    error_reason,
    fsync_dir,
    io_error,
    refuse_state_dir,
    write_all,
)
from tpufleet.state.temps import remove_stale_temps

STALE_OUTPUT_TEMP_SECONDS = 3600.0


def check_output_path(path: Path, option: str, inputs: Sequence[Path | None] = ()) -> None:
    """Refuse (BadInput, exit 2) an output path that cannot be written: its directory is missing, or it is one,
    or it is one of the command's `inputs` (by any name: the output would replace the file read, a log say).

    Call before any long computation, so a typo fails at once. A symlink is judged by where it points.
    """
    shown = str(path)
    if shown in ("", "."):  # a Path of '' reads '.'
        raise BadInput(f"bad option {option}: an empty name or '.': give a file name")
    refuse_blank_name(path, option)
    refuse_standard_output(path, option)
    refuse_state_dir(path, f"bad option {option} {shown!r}")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        parent = Path(os.path.realpath(path)).parent
        if not parent.is_dir():
            raise BadInput(f"bad option {option} {shown!r}: directory {str(parent)!r} does not exist") from None
        return
    except NotADirectoryError:
        raise BadInput(f"bad option {option} {shown!r}: a part of the path is not a directory") from None
    except OSError as exc:
        raise BadInput(f"bad option {option} {shown!r}: {error_reason(exc)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"bad option {option} {shown!r}: it is a directory; give a file name")
    for given in inputs:
        if given is not None and _same_file(st, given):
            what = "standard input" if str(given) == "-" else f"the input {str(given)!r}"
            raise BadInput(f"bad option {option} {shown!r}: it is {what}; the output would replace it")


def refuse_standard_output(path: Path, option: str) -> None:
    """Refuse (BadInput, exit 2) an output named '-' (or './-', as Path reads it too): the Unix habit for standard
    output, where a file named '-' would be written and not looked for."""
    if str(path) == "-":
        raise BadInput(f"bad option {option} '-': give a file name ('-' is not standard output here)")


def refuse_blank_name(path: Path, option: str) -> None:
    """Refuse (BadInput, exit 2) an output whose name is only blanks (`--out " "`, `--out "dir/ "`: a quoted shell
    variable holding a space), as an empty one is: the file made would be named a space, which no one finds."""
    if path.name and not path.name.strip():
        raise BadInput(f"bad option {option} {str(path)!r}: a blank name: give a file name")


def _same_file(st: os.stat_result, other: Path) -> bool:
    """Whether `other` (``-``: standard input, a file redirected to it) is the file `st` describes."""
    try:
        there = os.fstat(0) if str(other) == "-" else os.stat(other)
    except OSError:  # an input that cannot be read is the reader's to name
        return False
    return stat.S_ISREG(there.st_mode) and (st.st_dev, st.st_ino) == (there.st_dev, there.st_ino)


def write_output(path: Path, data: bytes) -> None:
    """Write a user's output file without ever changing what kind of thing is at `path`.

    - a regular file, or nothing: replaced atomically (temp file beside it, fsync, rename), so a reader never
      sees half a file; a new file gets the usual permissions (0666 less the umask), an existing one keeps its
      mode (and, run as root, its owner);
    - a character or block device, a FIFO, a socket: opened for writing (no truncation, no rename) and written
      through, as a shell's ``>`` would (``/dev/null``, a named pipe, ``/dev/stdout``);
    - a symlink: its target, by the same rules; the link stays a link.

    A directory is BadInput (exit 2), as is a path inside the state directory (`guard_state_dir`); an
    operating-system error is Refused naming the path (exit 1).
    """
    refuse_state_dir(path, f"cannot write {path}")
    st = _not_a_directory(path, os.stat)
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_through(path, data)
        return
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    _replace_regular(target, data, st)


def replace_own_file(path: Path, data: bytes) -> None:
    """Write a file whose name is the tool's own (a sweep's kept events), not one the operator named: whatever
    sits at `path` other than a directory is replaced atomically by a regular file (usual permissions), never
    written through. A FIFO planted there would block the write until something read it, a symlink would send
    the data to its target; `write_output` honours both for a user's `--out`, as a shell's ``>`` does. A
    directory is BadInput (exit 2)."""
    st = _not_a_directory(path, os.lstat)
    _replace_regular(path, data, st if st is not None and stat.S_ISREG(st.st_mode) else None)


def _not_a_directory(path: Path, look: Callable[[Path], os.stat_result]) -> os.stat_result | None:
    """What is at the output `path` (`os.stat` or `os.lstat`), None for nothing; a directory is BadInput."""
    try:
        st = look(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise io_error("write", path, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"cannot write {path}: it is a directory")
    return st


def _write_through(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | CLOEXEC)  # follows links (/dev/stdout); a FIFO waits for its reader
    except OSError as exc:
        raise io_error("write", path, exc) from None
    try:
        write_all(fd, data)
    except OSError as exc:
        raise io_error("write", path, exc) from None
    finally:
        os.close(fd)


def _replace_regular(target: Path, data: bytes, old: os.stat_result | None) -> None:
    # a killed earlier writer's (`timeout` around a cron job's `metrics --out`); an hour old, as the directory may
    # be shared with writers on other machines, whose pids say nothing here
    remove_stale_temps(target, older_than=STALE_OUTPUT_TEMP_SECONDS)
    tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, 0o666)  # umask applies
    except OSError as exc:
        raise io_error("write", target, exc) from None
    with discarded_on_error(tmp, target):
        try:
            if old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
                if os.geteuid() == 0:
                    with contextlib.suppress(OSError):
                        os.fchown(fd, old.st_uid, old.st_gid)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    with contextlib.suppress(OSError):
        fsync_dir(target.parent)
