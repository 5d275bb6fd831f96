"""Atomic file replacement and path safety for the state directory."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from tpufleet.errors import BadInput

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


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

    Readers see either the old file or the new one, never a mix; the file is created 0600.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def safe_child(base: Path, name: str, suffix: str = "") -> Path:
    """A file under `base` named after user input; refuse anything that could escape `base`."""
    if not SAFE_NAME.match(name or "") or name in {".", ".."}:
        raise BadInput(f"bad name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    path = (base / f"{name}{suffix}").resolve()
    if path.parent != base.resolve():
        raise BadInput(f"bad name {name!r}: it would leave the state directory")
    return path
