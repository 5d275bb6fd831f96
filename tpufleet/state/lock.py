"""The exclusive state lock, with a note of who holds it so a waiting runbook can say whom it waited for.

flock-based (via `filelock`): the kernel drops the lock when its holder dies, even by SIGKILL, so a crashed
runbook never wedges the fleet.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tpufleet.errors import LockTimeout


def _holder(info_path: Path) -> str:
    try:
        info = json.loads(info_path.read_text())
        return f"pid {info['pid']} ({info['command']}, since {info['started']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "an unknown process"


@contextmanager
def exclusive(state_dir: Path, timeout: float, command: str) -> Iterator[None]:
    from filelock import FileLock, Timeout

    lock_path, info_path = state_dir / ".lock", state_dir / ".lock.info"
    lock = FileLock(str(lock_path), timeout=timeout, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        raise LockTimeout(
            f"state {state_dir} is locked by {_holder(info_path)}; gave up after {timeout:g}s (see --lock-timeout)"
        ) from None
    try:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        payload = json.dumps({"pid": os.getpid(), "command": command, "started": started})
        fd = os.open(info_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(payload)
        yield
    finally:
        lock.release()


def command_line() -> str:
    return " ".join(["tpufleet", *sys.argv[1:]]) if sys.argv else "tpufleet"
