"""The directories beside the state file, `routes/` and `cache/`, held to the state directory's own rule. Every
command that writes the state reads `routes/` too (tables a killed writer left waiting are installed from there,
`state push` copies the tables out), so before any write it must be the user's and writable by nobody else, as
the state directory must (`check_state_dir`: exit 2, naming the directory and the chmod that mends it). The cache
is never needed: one that others may write is neither read nor written (an entry there proves nothing), by any
command, and the command goes on without it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tpufleet.state.files import _check_own, check_state_dir, io_error


def check_state_dirs(state_dir: Path, routes_dir: Path) -> None:
    """`check_state_dir`, then the same check of `routes/` where it is a directory (a symbolic link or another file
    in its place is refused where it is used, as before)."""
    check_state_dir(state_dir)
    try:
        st = os.lstat(routes_dir)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise io_error("access", routes_dir, exc) from None
    if stat.S_ISDIR(st.st_mode):
        _check_own(routes_dir, st, "directory")


def private(path: Path) -> bool:
    """Whether a directory is the user's and writable by nobody else (a cache that is not is not read)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not stat.S_IMODE(st.st_mode) & 0o022


def table_names(routes_dir: Path, suffix: str) -> list[str]:
    """The names of the regular files `routes/NAME{suffix}` (what `unlink_tables` deletes; temporary files not)."""
    try:
        with os.scandir(routes_dir) as entries:
            files = [e.name for e in entries if e.name.endswith(suffix) and e.is_file(follow_symlinks=False)]
    except OSError:
        return []  # no routes directory, or not one: nothing of ours to delete
    return sorted(f.removesuffix(suffix) for f in files)


def unlink_tables(path: Path) -> None:
    """Delete tables no longer indexed, only when a regular file: what tpufleet writes there. A symbolic link (the
    operator's, perhaps on purpose: `routes` refuses it and leaves it to them), a directory or a FIFO stays, and
    what a link points to is never touched."""
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)
    except FileNotFoundError:
        pass
