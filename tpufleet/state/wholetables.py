"""The tables files known whole, remembered by the SHA-256 digest of all their bytes in the state directory's
``cache/whole-tables``, so that `status`, `show slices`, `explain`, `report`, `metrics` and `serve` need not read an
unchanged file's members to their end (the zip's CRC-32: 0.15-0.2 s of CPU for a TPU7x superpod's tables, two thirds
of it in zlib) on every command.

The command that writes tables (`routes`, a reroute, `apply-maintenance`...) remembers their digest once they are
in place, after its commit, as every file beside the state changes; a command that only reads writes nothing (tables
from before, never remembered, are read through as ever). Whether the members' data is whole is a property of the
file's bytes alone, so it is remembered by them, never by the file's name, size, times or inode: a file is hashed
whole each time (about 6 ms for a superpod's 7.9 MB), and bytes damaged since, however the damage kept the file's
size and times, hash otherwise and are read through again. As the repair cache, the list is never needed and never
trusted beyond that: one that cannot be read, lacks our header line or sits in a `cache/` others may write is
empty; a line that is no digest is skipped; any failure to write it is ignored (a read-only state directory).
Written to a temp file and renamed into place, at most MAX_DIGESTS digests, the oldest going first. (Whoever may
write the state directory may also write a digest there; the directory's owner check guards that, as for the state
itself.)
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from tpufleet.errors import BadInput, Refused

WHOLE_FILE = "whole-tables"  # in the state directory's `cache/` (tablecache.CACHE_DIR)
MAGIC = "TPUFLEET-WHOLE-TABLES-1"  # bumped when what a read through checks changes: older digests then read again
MAX_DIGESTS = 4096  # 65 bytes each: a fleet's every slice, at most 266 KB
_DIGEST = re.compile(r"[0-9a-f]{64}")
READ_CHUNK = 1 << 20  # bytes read at a time when a tables file is hashed or its members read through


def data_digest(data: bytes) -> str:
    """The SHA-256 of tables written (`file_digest` of the file they make)."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def file_digest(fh: IO[bytes]) -> str:
    """The SHA-256 of every byte of the open file, read from its start (the descriptor the zip reads: the same
    bytes); hashlib lets go of the interpreter, so files are hashed on several threads at once."""
    import hashlib

    digest = hashlib.sha256()
    fh.seek(0)
    while chunk := fh.read(READ_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


class WholeTables:
    """The digests of the tables files of one state directory known whole (`known`, read when made)."""

    def __init__(self, state_dir: Path) -> None:
        from tpufleet.state.tablecache import CACHE_DIR

        self.state_dir = state_dir
        self.dir = state_dir / CACHE_DIR
        self.known: dict[str, None] = self._read()  # in the order remembered, the oldest first

    def _read(self) -> dict[str, None]:
        from tpufleet.state.files import check_subdir, read_state_file
        from tpufleet.state.sidedirs import private

        try:
            if not check_subdir(self.dir) or not private(self.dir):  # others may write it: it proves nothing
                return {}
            text = read_state_file(self.dir / WHOLE_FILE, 65 * (MAX_DIGESTS + 1)).decode("ascii")
        except (OSError, ValueError, BadInput, Refused):
            return {}
        lines = text.splitlines()
        if not lines or lines[0] != MAGIC:
            return {}
        return {line: None for line in lines[1 : MAX_DIGESTS + 1] if _DIGEST.fullmatch(line)}

    def holds(self, digest: str) -> bool:
        """Whether a file of these bytes is known whole."""
        return digest in self.known

    def remember(self, digests: Sequence[str]) -> None:
        """Files of these bytes were written whole and are in place: the list is written with them last (nothing
        when all are known); errors are ignored."""
        new = [digest for digest in dict.fromkeys(digests) if digest not in self.known]
        if not new:
            return
        kept = [*self.known, *new][-MAX_DIGESTS:]
        self._write("".join(f"{line}\n" for line in [MAGIC, *kept]).encode("ascii"))
        self.known = dict.fromkeys(kept)

    def _write(self, data: bytes) -> None:
        from tpufleet.state.files import check_state_dir, ensure_private_subdir

        with contextlib.suppress(OSError, ValueError, BadInput, Refused):
            check_state_dir(self.state_dir)
            ensure_private_subdir(self.dir)
            fd, tmp = tempfile.mkstemp(prefix=f".{WHOLE_FILE}.", suffix=".tmp", dir=self.dir)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, self.dir / WHOLE_FILE)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
