"""The append-only journal: one JSON object per line, one line per state serial.

Write-ahead: the line for serial N is appended and fsynced before the state file with serial N is renamed into
place. A crash between the two leaves a line the state never reached; readers ignore lines beyond the state's
serial and the next writer truncates them (under the lock), so journal and state always agree.

A crash test can stop `append` at ``journal.before_write``, ``journal.before_fsync`` and ``journal.after_fsync``
(see crashpoints.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tpufleet.state.crashpoints import reached

JOURNAL = "journal.jsonl"

Entry = dict[str, Any]


def append(path: Path, entry: Entry) -> None:
    """Append one line and fsync it. Call under the lock, before the state with this serial is saved."""
    line = memoryview((json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        reached("journal.before_write")
        while line:  # a regular file takes it in one write; loop anyway rather than assume it
            line = line[os.write(fd, line) :]
        reached("journal.before_fsync")
        os.fsync(fd)
        reached("journal.after_fsync")
    finally:
        os.close(fd)


def _committed_prefix(raw: bytes, serial: int) -> tuple[list[Entry], int]:
    """Entries with serial <= `serial` from the start of the file, and the byte length they span."""
    entries: list[Entry] = []
    end = pos = 0
    for line in raw.split(b"\n")[:-1]:  # the last piece has no newline: a torn write or empty
        pos += len(line) + 1
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or entry.get("serial", serial + 1) > serial:
                break
        except ValueError:
            break
        entries.append(entry)
        end = pos
    return entries, end


def read(path: Path, serial: int) -> list[Entry]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    return _committed_prefix(raw, serial)[0]


def recover(path: Path, serial: int) -> None:
    """Drop any tail the state never committed (a torn line or a line beyond `serial`). Call under the lock."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with open(path, "rb") as fh:
        fh.seek(max(0, size - 65536))
        tail = fh.read()
    last = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        if tail.endswith(b"\n") and json.loads(last).get("serial") == serial:
            return
    except (ValueError, AttributeError):
        pass
    _, end = _committed_prefix(path.read_bytes(), serial)
    os.truncate(path, end)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
