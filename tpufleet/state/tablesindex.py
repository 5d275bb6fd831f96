"""Whether a stored tables file holds the tables the state's index names: read from the file's `meta` member and
the zip's directory alone (and, to count them kept, each member `collective` reads checked whole), for files,
database rows and the tables a writer killed between its state's rename and theirs left under a temporary name."""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpufleet.errors import BadInput, BadStateFile, Refused, TpufleetError
from tpufleet.state.routetables import opened, read_meta
from tpufleet.state.wholetables import READ_CHUNK, file_digest

if TYPE_CHECKING:
    from tpufleet.fleetstate import RouteRecord
    from tpufleet.state.wholetables import WholeTables


# An index entry as `waiting_tables` compares it: when its tables were made, the serial it was committed at, and the
# tables' id (None in entries written before 0.3)
IndexedAs = tuple[str, int, "str | None"]


def _stamp(path: Path) -> tuple[str, int, Any] | None:
    """When and at which serial a tables file was made, and its id (its meta's `made`, `serial` and `tables_id`;
    None: missing, damaged, without the first two, or no regular file: a FIFO planted there is not waited on),
    reading only that member."""
    try:
        with opened(path) as zf:
            meta = read_meta(zf, str(path))
    except (OSError, zipfile.BadZipFile, BadStateFile, BadInput, Refused):
        return None
    made, serial = meta.get("made"), meta.get("serial")
    return (made, serial, meta.get("tables_id")) if isinstance(made, str) and type(serial) is int else None


def tables_of(path: Path) -> str | None:
    """The slice whose tables the file holds (its meta's `slice`), reading only that member; None when it cannot be
    read as tables, names none, or is no regular file."""
    try:
        with opened(path) as zf:
            owner = read_meta(zf, str(path)).get("slice")
    except (OSError, zipfile.BadZipFile, BadStateFile, BadInput, Refused):
        return None
    return owner if isinstance(owner, str) else None


def waiting_tables(path: Path, entry: IndexedAs) -> Path | None:
    """The committed tables of `path` that a writer killed between its state's rename and theirs left under a
    temporary name (see `tpufleet.state.files.write_temp`), or None.

    The index entry (`made`, committed at `serial`, with the tables' id when it records one) names them: a dead
    writer's temp file made then, with that id, at a serial before the commit, and after the tables in place
    (tables are made on a state that already holds the ones before them). A temp made at or after the entry's
    serial is a later command's, killed before its commit."""
    from tpufleet.state.temps import dead_temps

    temps = dead_temps(path)
    if not temps:
        return None
    made, serial, tables_id = entry
    current = _stamp(path)
    for temp in temps:
        stamp = _stamp(temp)
        if (
            stamp is not None
            and stamp[0] == made
            and (tables_id is None or stamp[2] == tables_id)
            and stamp[1] < serial
            and (current is None or current[1] < stamp[1])
        ):
            return temp
    return None


def indexed_as(entry: RouteRecord) -> IndexedAs:
    """What of an index entry names its tables: when made, the serial it was committed at, the tables' id."""
    return (entry.made, entry.serial, entry.tables_id)


def holds_indexed(path: Path, name: str, entry: RouteRecord, whole: WholeTables | None = None) -> bool:
    """Whether the file may hold the tables slice `name`'s index `entry` names: not another slice's copied in by
    hand, nor tables made after or other than those indexed (the ones before them, waiting to be replaced by a
    dead writer's, are), nor a file that cannot be read as tables (`_meta_or_none`): `collective` refuses it. Reads
    the zip's directory and `meta`, and the members through unless `whole` remembers the file's bytes whole."""
    from tpufleet.collectives.tables import not_indexed

    meta = _meta_or_none(lambda: opened(path), str(path), members=True, whole=whole)
    if meta is None:
        return False
    if not_indexed(meta, name, entry) is None:
        return True
    # only then look for a dead writer's tables: a listing of routes/ for every slice made `status` quadratic
    return waiting_tables(path, indexed_as(entry)) is not None and not_indexed(meta, name, entry, True) is None


# Threads reading stored tables files through at once (`files_holding_indexed`): at least two, at most four
TABLE_READERS = max(2, min(4, os.cpu_count() or 1))


def files_holding_indexed(
    place: Callable[[str], Path], indexed: Mapping[str, RouteRecord], whole: WholeTables | None = None
) -> set[str]:
    """Those of the `indexed` slices whose file (at `place(name)`) is a regular file that `holds_indexed` their
    entry. Each is read through unless `whole` knows its bytes whole (`wholetables`): zlib and hashlib let go of
    the interpreter, so the files are read on a few threads at once (sixteen routed TPU7x superpods: 3.3 s -> 1.3 s
    on two cores)."""
    from concurrent.futures import ThreadPoolExecutor

    def held(item: tuple[str, RouteRecord]) -> bool:
        name, entry = item
        return os.path.isfile(path := place(name)) and holds_indexed(path, name, entry, whole)

    items = list(indexed.items())
    if len(items) < 2:
        return {name for name, entry in items if held((name, entry))}
    pool = ThreadPoolExecutor(min(len(items), TABLE_READERS), thread_name_prefix="tables")
    try:
        return {name for (name, _), ok in zip(items, pool.map(held, items), strict=True) if ok}
    finally:  # interrupted (Ctrl-C), the files not yet started are not read
        pool.shutdown(wait=True, cancel_futures=True)


# The end of a stored tables file that holds its `meta` (written last, a few hundred bytes deflated) and the zip's
# directory: what a database reads of a row to tell whose tables it holds, not the tables themselves.
TAIL_BYTES = 1 << 16


def tail_holds_indexed(
    tail: bytes, size: int, whole: Callable[[], bytes | None], file: str, name: str, entry: RouteRecord
) -> bool:
    """`holds_indexed` for tables kept as bytes (a database row of `size` bytes), from their last bytes (`tail`):
    the zip's directory and `meta` are at the end. Tables whose `meta` the tail does not hold are read whole
    (`whole`; None: the row is gone meanwhile); bytes that cannot be read as tables do not hold them."""
    import io

    from tpufleet.collectives.tables import not_indexed

    # a zip read from its tail takes the bytes before it for data prepended to the archive: its members' places
    # are counted from the tail, and only `meta` is read
    meta = _meta_or_none(lambda: zipfile.ZipFile(io.BytesIO(tail)), file)
    if meta is None and len(tail) < size:
        data = whole()
        if data is None:
            return False
        meta = _meta_or_none(lambda: zipfile.ZipFile(io.BytesIO(data)), file)
    return meta is not None and not_indexed(meta, name, entry) is None


def not_held(data: bytes, file: str, name: str, entry: RouteRecord) -> str | None:
    """Why a tables file's bytes are not the tables slice `name`'s index `entry` names (`not_indexed`, or they
    cannot be read as tables: `_meta_or_none`), or None when they are."""
    import io

    from tpufleet.collectives.tables import not_indexed

    meta = _meta_or_none(lambda: zipfile.ZipFile(io.BytesIO(data)), file, members=True)
    return "cannot be read as routing tables" if meta is None else not_indexed(meta, name, entry)


# The members `collective` reads (`hops` for all-to-all and sparse tables): a zip whose directory lacks one is
# refused by it, so its tables are not counted as kept
_READ_MEMBERS = ("meta", "port", "neighbors", "hops")


def _meta_or_none(
    open_zip: Callable[[], zipfile.ZipFile], file: str, members: bool = False, whole: WholeTables | None = None
) -> dict[str, Any] | None:
    """The tables' `meta`, or None when they cannot be read as tables: not a zip (damaged, cut short), not a regular
    file (a symlink is not followed), a member `collective` reads missing from the zip's directory, or a `meta`
    that does not read. Reads the zip's directory and `meta`; with `members`, also the header and data of every
    other member `collective` reads (`_members_sound`), without keeping it: the data not when `whole` remembers
    the digest of the file's bytes (`wholetables`), which are hashed whole from the descriptor the zip reads."""
    try:
        with open_zip() as zf:
            if not {f"{member}.npy" for member in _READ_MEMBERS} <= set(zf.namelist()):
                return None
            meta = read_meta(zf, file)
            if not members:
                return meta
            # hashed only when some file is known whole (tables never remembered are read through, unhashed)
            known = whole is not None and whole.known and zf.fp is not None and whole.holds(file_digest(zf.fp))
            return meta if _members_sound(zf, meta, through=not known) else None
    except (OSError, ValueError, EOFError, zlib.error, zipfile.BadZipFile, TpufleetError):
        return None


# What `collective` takes each member it reads to be (`collectives.tables.stored`, `_hops_reader`), for n chips: its
# dtype (i: any integer; "": any) and shape
_MEMBER_FORMS: dict[str, tuple[str, Callable[[int], tuple[int, ...]]]] = {
    "port": ("int8", lambda n: (n, n)),
    "neighbors": ("i", lambda n: (n, 6)),
    "hops": ("", lambda n: (n, n)),
}


def _members_sound(zf: zipfile.ZipFile, meta: dict[str, Any], through: bool = True) -> bool:
    """Whether the members `collective` reads besides `meta` hold arrays of the form it takes for the slice `meta`
    names (their .npy header: dtype and shape) and their data is whole: read to the end in pieces, none kept,
    so the zip's CRC-32 of each is checked (bytes damaged inside a member's data, which the directory and `meta`
    never show); not `through`, the headers only (the same bytes were read through before). Raises (OSError,
    zlib.error, BadZipFile) on damage the caller counts as unreadable."""
    import numpy as np

    from tpufleet.state.tablecache import npy_header

    try:
        chips = math.prod(int(side) for side in str(meta["shape"]).split("x"))
    except (KeyError, ValueError):
        return False
    for name, (kind, shape_of) in _MEMBER_FORMS.items():
        with zf.open(f"{name}.npy") as fh:
            header = npy_header(fh)
            if header is None:
                return False
            shape, _fortran, dtype = header
            form = kind == "" or (np.issubdtype(dtype, np.integer) if kind == "i" else dtype == np.dtype(kind))
            if not form or tuple(shape) != shape_of(chips):
                return False
            while through and fh.read(READ_CHUNK):  # the CRC is checked at the member's end
                pass
    return True
