"""A slice's stored routing tables (``routes/SLICE.npz``), read for the collective cost model.

Only the members a model needs are decompressed: ``meta``, ``port`` and ``neighbors`` when the tables are read,
``hops`` the first time a model asks for them (all-to-all and sparse tables). The core builds and checks the
`Tables` from the members (`tpufleet.collectives.tables.stored`); everything wrong with the file is a
`BadStateFile` naming it.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpufleet.collectives.tables import Tables, stored
from tpufleet.errors import BadStateFile, Refused

__all__ = ["StoredTables", "load", "load_bytes"]


def _member(zf: zipfile.ZipFile, name: str, file: str) -> Any:
    import numpy as np

    try:
        with zf.open(name + ".npy") as fh:
            return np.lib.format.read_array(fh, allow_pickle=False)
    except KeyError:
        raise BadStateFile(file, name, None, "is missing from the routing tables") from None
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise BadStateFile(file, name, None, f"cannot be read: {exc}") from None


def _hops_reader(open_zip: Callable[[], zipfile.ZipFile], file: str, port_shape: tuple[int, ...]) -> Any:
    """Reads the `hops` member when first called (BadStateFile if it does not match `port`)."""

    def read_hops() -> Any:
        with open_zip() as zf:
            hops = _member(zf, "hops", file)
        if hops.shape != port_shape:
            raise BadStateFile(file, "hops", list(hops.shape), f"does not match port {list(port_shape)}")
        return hops

    return read_hops


def _load(open_zip: Callable[[], zipfile.ZipFile], file: str) -> Tables:
    try:
        zf = open_zip()
    except (OSError, zipfile.BadZipFile) as exc:
        raise BadStateFile(file, "", None, f"cannot be read as routing tables: {exc}") from None
    with zf:
        meta = json.loads(str(_member(zf, "meta", file)))
        port = _member(zf, "port", file)
        nbr = _member(zf, "neighbors", file)
    return stored(meta, port, nbr, file, _hops_reader(open_zip, file, port.shape))


def load(path: Path) -> Tables:
    """A slice's stored tables (only `port`, `neighbors` and `meta` are read); BadStateFile if damaged."""
    return _load(lambda: zipfile.ZipFile(path), str(path))


def load_bytes(data: bytes, file: str) -> Tables:
    """The same, from the file's bytes (a database row); `file` names them in an error."""
    import io

    return _load(lambda: zipfile.ZipFile(io.BytesIO(data)), file)


@dataclass(frozen=True)
class StoredTables:
    """Where a slice's tables are kept, read only when a use case asks (`read`)."""

    name: str
    path: Path

    def read(self) -> Tables | None:
        """The tables, or None when none are stored; Refused when the directory cannot be looked into."""
        try:
            found = self.path.exists()
        except OSError as exc:  # e.g. a group member and a routes/ directory still private to its owner
            raise Refused(
                f"cannot read the routing tables of {self.name!r} ({self.path}): {exc.strerror or exc}"
            ) from None
        return load(self.path) if found else None
