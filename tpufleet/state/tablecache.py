"""The state directory's ``cache/``: wild-first choices by key (`tpufleet.routing.memo`), so that the same fault
pattern on the same slice shape is searched once, not again by `inject-fault --dry-run`, `inject-fault` and
`routes` in turn.

A cache is never needed and never trusted: an entry that cannot be read, lacks our header, fails its SHA-256
digest (of its key and content: a torn, corrupted or renamed file), is not a plain int8 array or does not pass
the router's own check is a miss, and any failure to write one is ignored (a read-only state directory
included). New entries are only held until the command commits a change (`flush`): a dry run, or a command that
is refused, leaves the state directory's contents exactly as they were (reading an entry refreshes its
modification time, its place in the least-recently-used order). Entries are written to a temp file and renamed into
place (no fsync: a torn entry after a power cut is just a miss), and at most MAX_ENTRIES / MAX_BYTES are kept,
the least recently used going first.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tpufleet.constants import HOUR
from tpufleet.errors import BadInput, Refused

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

CACHE_DIR = "cache"
MAX_ENTRIES = 16
MAX_BYTES = 64 << 20  # one 16x16x16 OCS pattern is 0.8 MB
STALE_TEMP_SECONDS = HOUR  # a temp file this old belongs to a writer that died
_ENTRY = re.compile(r"[0-9a-f]{40}\.npy")
MAGIC = b"TPUFLEET-CHOICES-1\n"
DIGEST_BYTES = 32


def _digest(key: str, body: bytes) -> bytes:
    """SHA-256 of the key and the array: a torn, corrupted or renamed entry is a miss. (Whoever may write the
    state directory may also write a matching digest; the directory's owner check guards that, as for the state.)"""
    import hashlib

    return hashlib.sha256(key.encode() + b"\0" + body).digest()


def _checked(key: str, data: bytes) -> bytes | None:
    """The array's bytes when the entry carries our header and a digest that matches its key and content."""
    head = len(MAGIC) + DIGEST_BYTES
    if len(data) < head or not data.startswith(MAGIC):
        return None
    body = data[head:]
    return body if data[len(MAGIC) : head] == _digest(key, body) else None


def npy_header(fh: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]] | None:
    """(shape, Fortran order, dtype) from a .npy stream's header, the stream left at the data; None for header
    versions other than 1.0 and 2.0 (the ones numpy writes). Read before any array is allocated, so a forged shape
    is judged against the bytes that follow it."""
    import numpy as np

    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fh)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(fh)
    return None


def _int8_vector(body: bytes) -> npt.NDArray[np.int8] | None:
    """The .npy body as a 1-D int8 array, judged from its header before anything is allocated: a header whose
    shape claims more elements than the bytes that follow it (a forged 2**42) is a miss, not a 4 TiB allocation."""
    import io

    import numpy as np

    fh = io.BytesIO(body)
    header = npy_header(fh)
    if header is None:
        return None
    shape, fortran, dtype = header
    data = body[fh.tell() :]
    if dtype != np.dtype(np.int8) or fortran or len(shape) != 1 or shape[0] != len(data):
        return None
    return np.frombuffer(data, dtype=np.int8).copy()


def entry_bytes(key: str, choices: npt.NDArray[np.int8]) -> bytes | None:
    """An entry as stored: our header, the SHA-256 digest of key and array, the .npy array (None: over MAX_BYTES)."""
    import io

    import numpy as np

    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(choices, dtype=np.int8), allow_pickle=False)
    if buf.tell() > MAX_BYTES:
        return None
    body = buf.getvalue()
    return MAGIC + _digest(key, body) + body


class TableCache:
    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir / CACHE_DIR
        self.pending: dict[str, npt.NDArray[np.int8]] = {}

    def _path(self, key: str) -> Path:
        if not _ENTRY.fullmatch(key + ".npy"):
            raise ValueError(f"bad cache key {key!r}")
        return self.dir / f"{key}.npy"

    def get(self, key: str) -> npt.NDArray[np.int8] | None:

        from tpufleet.state.files import check_subdir, read_state_file
        from tpufleet.state.sidedirs import private

        try:
            path = self._path(key)
            if not check_subdir(self.dir):  # a real directory (never a symlink out of the state), or no cache
                return None
            if not private(self.dir):  # others may write it: an entry there proves nothing (writers refuse it)
                return None
            if os.lstat(path).st_size > MAX_BYTES + len(MAGIC) + DIGEST_BYTES:
                return None
            data = read_state_file(path)  # a regular file, never through a symlink
            body = _checked(key, data)
            if body is None:  # torn, flipped, renamed from another key, or not ours
                return None
            choices = _int8_vector(body)
        except (OSError, ValueError, MemoryError, BadInput, Refused):
            return None
        if choices is None:
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used (a reader who may not set times still uses the entry)
        return choices

    def put(self, key: str, choices: npt.NDArray[np.int8]) -> None:
        """Hold a new entry until `flush`."""
        self.pending[key] = choices

    def flush(self) -> None:
        """Write the held entries (after the command committed its change); errors are ignored."""
        for key, choices in self.pending.items():
            self._write(key, choices)
        self.pending.clear()

    def _write(self, key: str, choices: npt.NDArray[np.int8]) -> None:
        from tpufleet.state.files import check_state_dir, ensure_private_subdir

        data = entry_bytes(key, choices)
        if data is None:
            return
        with contextlib.suppress(OSError, ValueError, BadInput, Refused):
            check_state_dir(self.dir.parent)
            ensure_private_subdir(self.dir)
            path = self._path(key)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=self.dir)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            self._trim()

    def _trim(self) -> None:
        """Keep the most recently used entries within MAX_ENTRIES and MAX_BYTES; stray temp files of writers that
        died go too."""
        entries = []
        for entry in os.scandir(self.dir):
            st = entry.stat(follow_symlinks=False)
            if _ENTRY.fullmatch(entry.name):
                entries.append((st.st_mtime, st.st_size, entry.path))
            elif entry.name.endswith(".tmp") and st.st_mtime < _now() - STALE_TEMP_SECONDS:
                _remove(entry.path)
        entries.sort(reverse=True)
        total = 0
        for i, (_mtime, size, path) in enumerate(entries):
            total += size
            if i >= MAX_ENTRIES or total > MAX_BYTES:
                _remove(path)


def _remove(path: str) -> None:
    """Delete a cache file; one that cannot be (a directory put there under its name) stays, and the others still
    go: one such name stopped every trim, and the cache grew without bound."""
    with contextlib.suppress(OSError):
        os.unlink(path)


def _now() -> float:
    import time

    return time.time()
