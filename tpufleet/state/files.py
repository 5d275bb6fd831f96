"""Atomic file replacement and path safety for the state directory."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from tpufleet.errors import BadInput
from tpufleet.state.crashpoints import reached

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TEMP = re.compile(r"(\d+)\.[a-z0-9_]+\.tmp")  # after ".NAME.": PID.RANDOM.tmp (mkstemp's random part)


def ensure_private_dir(path: Path) -> None:
    """Create the state directory 0700 (and leave an existing one's mode alone unless we made it)."""
    if not path.exists():
        path.mkdir(parents=True, mode=0o700)
        os.chmod(path, 0o700)
    elif not path.is_dir():
        raise BadInput(f"state directory {str(path)!r} is not a directory")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temp file in the same directory, fsync, rename over `path`, fsync the directory.

    Readers see either the old file or the new one, never a mix; the file is created 0600. The temp file is
    named ``.NAME.PID.RANDOM.tmp``; a writer killed before its rename leaves it behind, and the next
    `atomic_write` of the same file removes it (see `remove_stale_temps`).

    A crash test can stop it at ``atomic_write.before_fsync``, ``atomic_write.before_rename`` and
    ``atomic_write.before_dir_fsync`` (see crashpoints.py).
    """
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            reached("atomic_write.before_fsync")
            os.fsync(fh.fileno())
        reached("atomic_write.before_rename")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    reached("atomic_write.before_dir_fsync")
    fsync_dir(path.parent)


def remove_stale_temps(path: Path) -> list[Path]:
    """Delete the temp files of `path` whose writer is dead (killed before its rename); return them.

    A temp file carries its writer's pid. While that process lives its file is left alone, so this is safe
    without a lock; a writer cannot come back to a file once its pid is gone. (Pids are per machine: the
    directory must not be shared by writers on several machines, which the state lock assumes too.)
    """
    prefix, removed = f".{path.name}.", []
    try:
        names = os.listdir(path.parent)
    except FileNotFoundError:
        return []
    for name in names:
        mine = _TEMP.fullmatch(name[len(prefix) :]) if name.startswith(prefix) else None
        if mine is None or _alive(int(mine[1])):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.parent / name)
            removed.append(path.parent / name)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def safe_child(base: Path, name: str, suffix: str = "") -> Path:
    """A file under `base` named after user input; refuse anything that could escape `base`."""
    if not SAFE_NAME.match(name or "") or name in {".", ".."}:
        raise BadInput(f"bad name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    path = (base / f"{name}{suffix}").resolve()
    if path.parent != base.resolve():
        raise BadInput(f"bad name {name!r}: it would leave the state directory")
    return path
