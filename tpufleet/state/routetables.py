"""A slice's stored routing tables (``routes/SLICE.npz``), read for the collective cost model.

Only the members a model needs are decompressed: ``meta``, ``port`` and ``neighbors`` when the tables are read,
``hops`` the first time a model asks for them (all-to-all and sparse tables). The core builds and checks the
`Tables` from the members (`tpufleet.collectives.tables.stored`); everything wrong with the file is a
`BadStateFile` naming it. `routes` reads every member the router needs to weigh the tables again
(`routing_members`).
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tpufleet.collectives.tables import Tables, stored
from tpufleet.errors import NO_VALUE, BadInput, BadStateFile, Refused

if TYPE_CHECKING:
    from tpufleet.fleetstate import RouteRecord
    from tpufleet.routing.reuse import StoredRoutes
    from tpufleet.state.backend import TablesSource

__all__ = ["FileTables", "StoredTables", "load", "load_bytes", "opened", "read_meta", "routing_members"]


META_BYTES = 1 << 20  # the `meta` member: a few hundred characters of JSON


def _member(zf: zipfile.ZipFile, name: str, file: str, most: int) -> Any:
    """The member `name`, refused (BadStateFile) when its header claims more than `most` bytes of data."""
    import numpy as np

    try:
        info = zf.getinfo(name + ".npy")
        with zf.open(info) as fh:
            _claims_no_more_than(fh, info.file_size, most, name, file)
        with zf.open(info) as fh:
            return np.lib.format.read_array(fh, allow_pickle=False)
    except KeyError:
        raise BadStateFile(file, name, NO_VALUE, "is missing from the routing tables") from None
    except (OSError, ValueError, EOFError, zlib.error, zipfile.BadZipFile) as exc:  # zlib.error: a damaged stream
        raise BadStateFile(file, name, NO_VALUE, f"cannot be read: {exc}") from None


def _claims_no_more_than(fh: IO[bytes], size: int, most: int, name: str, file: str) -> None:
    """Refuse a member whose .npy header claims more data than its `size` bytes hold, or more than `most`, before anything is allocated: a
    forged shape of 2**21 x 2**21 was a 4 TiB allocation (MemoryError, an internal error), and so was a forged
    shape over a compressed run of zeros as long as it claims (4 GiB in a 4 MB file). Only the header versions
    numpy writes for tables, 1.0 and 2.0, are read: another's shape is not checked here."""
    from tpufleet.state.tablecache import npy_header

    header = npy_header(fh)
    if header is None:
        raise BadStateFile(file, name, NO_VALUE, "is not a .npy array of version 1.0 or 2.0, as tables are written")
    shape, _fortran, dtype = header
    claimed = math.prod(shape) * dtype.itemsize
    if claimed > size - fh.tell():
        raise BadStateFile(file, name, list(shape), f"claims {claimed} bytes of data, the member holds {size} in all")
    if claimed > most:
        raise BadStateFile(
            file, name, list(shape), f"claims {claimed} bytes of data, more than tables of its shape hold ({most})"
        )


def _largest_member(meta: dict[str, Any]) -> int:
    """The most bytes a member of these tables holds: the hop counts, n x n of int16 (neighbours and date lines
    are n x 6), for the n chips of the slice the meta names (of the largest slice if it names none: `stored`
    then refuses the shape)."""
    from tpufleet.constants import MAX_SLICE_CHIPS

    try:
        chips = math.prod(int(side) for side in str(meta["shape"]).split("x"))
    except (KeyError, ValueError):
        chips = MAX_SLICE_CHIPS
    chips = min(max(chips, 1), MAX_SLICE_CHIPS)
    return 2 * chips * chips + 64 * chips + 4096


def max_file_bytes() -> int:
    """The most bytes a tables file may hold: its four members at most, each no larger than the largest slice's
    (`_largest_member`). A larger file (a sparse one planted there, say) is refused unread."""
    return 4 * _largest_member({})


def read_meta(zf: zipfile.ZipFile, file: str) -> dict[str, Any]:
    from tpufleet.jsontext import parse_json

    try:  # tpufleet's JSON guards: nesting, NaN, huge numbers (the standard decoder recursed past the limit)
        meta = parse_json(str(_member(zf, "meta", file, META_BYTES)))
    except ValueError as exc:
        raise BadStateFile(file, "meta", NO_VALUE, f"is not JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise BadStateFile(file, "meta", type(meta).__name__, "is not a JSON object")
    return meta


def _hops_reader(open_zip: Callable[[], zipfile.ZipFile], file: str, port_shape: tuple[int, ...], most: int) -> Any:
    """Reads the `hops` member when first called (BadStateFile if it does not match `port`)."""

    def read_hops() -> Any:
        with open_zip() as zf:
            hops = _member(zf, "hops", file, most)
        if hops.shape != port_shape:
            raise BadStateFile(file, "hops", list(hops.shape), f"does not match port {list(port_shape)}")
        return hops

    return read_hops


@dataclass
class FileTables(Tables):
    """Stored tables that read their other members when asked (`read_members`, in the order named)."""

    read_members: Callable[[Sequence[str]], list[Any]] | None = None


def _members_reader(
    open_zip: Callable[[], zipfile.ZipFile], file: str, most: int
) -> Callable[[Sequence[str]], list[Any]]:
    def read_members(names: Sequence[str]) -> list[Any]:
        with open_zip() as zf:
            return [_member(zf, name, file, most) for name in names]

    return read_members


def _load(open_zip: Callable[[], zipfile.ZipFile], file: str) -> FileTables:
    try:
        zf = open_zip()
    except (OSError, zipfile.BadZipFile) as exc:
        raise BadStateFile(file, "", NO_VALUE, f"cannot be read as routing tables: {exc}") from None
    with zf:
        meta = read_meta(zf, file)
        most = _largest_member(meta)
        port = _member(zf, "port", file, most)
        nbr = _member(zf, "neighbors", file, most)
    tables = stored(meta, port, nbr, file, _hops_reader(open_zip, file, port.shape, most))
    members = {f.name: getattr(tables, f.name) for f in fields(tables)}
    return FileTables(**members, read_members=_members_reader(open_zip, file, most))


def load(path: Path) -> FileTables:
    """A slice's stored tables (only `port`, `neighbors` and `meta` are read); BadStateFile if damaged. Opened as
    every state file is (`files.open_state_file`): a symlink, FIFO or other non-regular file in its place is
    refused, not followed or waited on."""
    return _load(lambda: opened(path), str(path))


class _ZipOfFile(zipfile.ZipFile):
    """A zip archive read from a file object it owns: closing the archive closes the file."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._owned = fh
        try:
            super().__init__(fh)
        except BaseException:
            fh.close()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._owned.close()


def opened(path: Path) -> zipfile.ZipFile:
    """The tables file as a zip archive, read from the one descriptor that was opened as a state file (no symlink
    followed, no FIFO waited on) and found a regular file: nothing can be swapped in between the check and the
    read."""
    import os

    from tpufleet.state.files import io_error, open_state_file

    try:
        fh = os.fdopen(open_state_file(path, os.O_RDONLY), "rb")
    except OSError as exc:
        raise io_error("read", path, exc) from None
    return _ZipOfFile(fh)


def load_bytes(data: bytes, file: str) -> FileTables:
    """The same, from the file's bytes (a database row); `file` names them in an error."""
    import io

    return _load(lambda: zipfile.ZipFile(io.BytesIO(data)), file)


@dataclass(frozen=True)
class StoredTables:
    """Where a slice's tables are kept, read only when a use case asks (`read`)."""

    name: str
    path: Path

    def waiting(self, entry: RouteRecord) -> bool:
        """Whether the tables the index `entry` names still wait under a temporary name."""
        from tpufleet.state.tablesindex import indexed_as, waiting_tables

        return waiting_tables(self.path, indexed_as(entry)) is not None

    def read(self) -> Tables | None:
        """The tables, or None when none are stored; Refused when the directory cannot be looked into."""
        try:
            found = self.path.is_symlink() or self.path.exists()  # a symlink, even a dangling one, is refused
        except OSError as exc:  # e.g. a group member and a routes/ directory still private to its owner
            raise Refused(
                f"cannot read the routing tables of {self.name!r} ({self.path}): {exc.strerror or exc}"
            ) from None
        if found and self.path.is_symlink():
            raise BadInput(linked_tables(self.name, self.path))
        return load(self.path) if found else None


def linked_tables(name: str, path: Path | str) -> str:
    """The refusal of a symbolic link where a slice's tables belong. Unlike the state file or the journal, the
    tables are rewritten whole by `routes`: removing the link loses nothing kept in the state directory. The link
    itself is the operator's to remove (it may be theirs, on purpose): tpufleet neither follows nor removes it."""
    import shlex

    return (
        f"{path} is a symbolic link where the routing tables of {name!r} belong (never followed): remove it "
        f"(rm -- {shlex.quote(str(path))}) and make them again with `tpufleet routes {name}`"
    )


def refuse_linked(name: str, path: Path) -> None:
    """BadInput (`linked_tables`) when a symbolic link stands where the slice's tables belong: `routes` says so
    before any work, not after the tables are made."""
    try:
        linked = path.is_symlink()
    except OSError:  # (a directory it cannot look into: the read says so)
        return
    if linked:
        raise BadInput(linked_tables(name, path))


def routing_members(source: TablesSource) -> StoredRoutes | None:
    """A slice's stored tables with every member `routes` needs to weigh them beside new ones (None when none are
    stored); BadStateFile if damaged, or if the members do not fit each other."""
    from tpufleet.routing.reuse import StoredRoutes

    tables = source.read()
    if tables is None:
        return None
    if not isinstance(tables, FileTables) or tables.read_members is None:
        raise TypeError("stored tables are read by this module")  # a bug: every backend reads them with `_load`
    wild, dest_order, orders = tables.read_members(("wild", "dest_order", "orders"))
    _check_members(str(source.path), tables.n, wild, dest_order, orders)
    return StoredRoutes(tables.meta, tables.port, tables.hop_table(), wild, dest_order, orders, tables.nbr)


def _check_members(file: str, n: int, wild: Any, dest_order: Any, orders: Any) -> None:
    """BadStateFile naming the first member that does not fit the tables' `n` chips or their dimension orders."""
    import numpy as np

    integers = all(np.issubdtype(a.dtype, np.integer) for a in (dest_order, orders))
    orders_fit = integers and orders.ndim == 2 and orders.shape[1:] == (3,) and len(orders) > 0
    checks = (
        ("wild", wild, wild.shape == (n, n) and wild.dtype == np.bool_),
        ("orders", orders, orders_fit and bool((np.sort(orders, axis=1) == (0, 1, 2)).all())),
        (
            "dest_order",
            dest_order,
            integers and dest_order.shape == (n,) and bool(((dest_order >= 0) & (dest_order < len(orders))).all()),
        ),
    )
    for name, value, fits in checks:
        if not fits:
            raise BadStateFile(file, name, list(value.shape), "does not fit the tables' port and dimension orders")
