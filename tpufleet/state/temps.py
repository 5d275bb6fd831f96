"""A writer's temp files beside the file it replaces (`.NAME.PID.RANDOM.tmp`, made by `files.write_temp`): which
files have one, and which were left by a writer killed before its rename, for the next writer to remove."""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

_TEMP = re.compile(r"(\d+)\.[a-z0-9_]+\.tmp", re.ASCII)  # after ".NAME.": PID.RANDOM.tmp (mkstemp's random part)
_TEMP_OF = re.compile(r"\.(.+)\." + _TEMP.pattern, re.ASCII | re.DOTALL)  # the whole ".NAME.PID.RANDOM.tmp"


def temp_owners(directory: Path) -> set[str]:
    """The names of the files in `directory` that have a temp file beside them (a writer's, alive or dead)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return set()
    return {m[1] for name in names if (m := _TEMP_OF.fullmatch(name))}


def dead_temps(path: Path) -> list[Path]:
    """The temp files of `path` whose writer is dead (killed before its rename), oldest name first."""
    prefix, found = f".{path.name}.", []
    try:
        names = sorted(os.listdir(path.parent))
    except OSError:
        return []
    for name in names:
        mine = _TEMP.fullmatch(name[len(prefix) :]) if name.startswith(prefix) else None
        if mine is not None and not alive(int(mine[1])):
            found.append(path.parent / name)
    return found


def remove_stale_temps(path: Path, older_than: float = 0.0) -> list[Path]:
    """Delete the temp files of `path` whose writer is dead (killed before its rename); return them.

    A temp file carries its writer's pid. While that process lives its file is left alone, so this is safe
    without a lock; a writer cannot come back to a file once its pid is gone. (Pids are per machine: the
    directory must not be shared by writers on several machines, which the state lock assumes too; where nothing
    assures it, an output's directory on a shared disk, only files untouched for `older_than` seconds go.)
    """
    prefix, removed = f".{path.name}.", []
    try:
        names = os.listdir(path.parent)
    except OSError:  # missing, or unreadable: then writing the temp file fails and says why
        return []
    for name in names:
        mine = _TEMP.fullmatch(name[len(prefix) :]) if name.startswith(prefix) else None
        if mine is None or alive(int(mine[1])):
            continue
        with contextlib.suppress(OSError):
            if older_than and time.time() - os.lstat(path.parent / name).st_mtime < older_than:
                continue
            os.unlink(path.parent / name)
            removed.append(path.parent / name)
    return removed


def alive(pid: int) -> bool:
    """Whether process `pid` runs (this one included). A number no process has (0, or more than a pid holds: a name
    made to look like a temp file's) is no process: `os.kill` would signal the process group, or overflow."""
    if pid == os.getpid():
        return True
    if not 0 < pid < 1 << 31:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
