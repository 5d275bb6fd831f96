"""The directories beside the state file, `routes/` and `cache/`, held to the state directory's own rule. Every
command that writes the state reads `routes/` too (tables a killed writer left waiting are installed from there,
`state push` copies the tables out), so before any write it must be the user's and writable by nobody else, as
the state directory must (`check_state_dir`: exit 2, naming the directory and the chmod that mends it). The cache
is never needed: one that others may write is neither read nor written (an entry there proves nothing), by any
command, and the command goes on without it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
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


def share_with_group(state_dir: Path) -> None:
    """A writer given a group (`--group`, the config's `group`) for a state directory kept private, or shared with
    another group: the directory, `routes/`, `cache/` and their files go to that group (0750 directories, 0640
    files). The files a commit writes are shared as written, but the tables and cache entries already there were
    not: `status` then called every table of a group member missing, and `collective` could not read them. Only
    what the user owns and is no symbolic link is changed; what cannot be is left for the checks that read it."""
    from tpufleet.state.files import SHARING, _share

    try:
        st = os.stat(state_dir)
    except OSError:
        return  # made by `ensure_private_dir`, shared as it is made
    private = stat.S_IMODE(st.st_mode) & 0o777 == 0o700
    if SHARING.gid is None or st.st_uid != os.geteuid() or not (private or st.st_gid != SHARING.gid):
        return
    for path in [state_dir, *(state_dir / name for name in os.listdir(state_dir))]:
        try:
            here = os.lstat(path)
            if here.st_uid != os.geteuid() or stat.S_ISLNK(here.st_mode):
                continue
            if path == state_dir or (stat.S_ISDIR(here.st_mode) and path.name in ("routes", "cache")):
                _share(path, SHARING.dir_mode)
                inside: Iterable[os.DirEntry[str]] = [] if path == state_dir else os.scandir(path)
                for entry in inside:
                    if (
                        entry.is_file(follow_symlinks=False)
                        and entry.stat(follow_symlinks=False).st_uid == os.geteuid()
                    ):
                        _share(Path(entry.path), SHARING.file_mode)
            elif stat.S_ISREG(here.st_mode):
                _share(path, SHARING.file_mode)
        except OSError:
            continue  # (best effort, as `_share` is for the group: the mode is what guards)
