"""Where a fleet state is kept: the storage seam beneath `Store`.

`Store` owns the protocol (lock, load, validate, decode, journal, serial + 1, the very checks a load makes on the
bytes about to be written); a backend only keeps bytes: the state document, the journal's lines, the routing
tables and the repair cache. Two backends: a state directory (`filebackend.DirectoryBackend`) and a PostgreSQL
database (`pgbackend.PostgresBackend`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Protocol

from tpufleet.errors import BadInput, Refused

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.collectives.tables import Tables
    from tpufleet.fleetstate import RouteRecord
    from tpufleet.journalentry import JournalEntry
    from tpufleet.state.journal import Enough, Scan
    from tpufleet.state.tablesindex import IndexedAs


def no_fleet_state(where: object) -> Refused:
    """The refusal of a command that needs a fleet where there is none: the same words on either backend; a
    directory behind a symbolic link to nothing (an unmounted volume) is named so, not a fleet to `init`."""
    from tpufleet.state.paths import dangling_link

    if isinstance(where, Path) and (dangling := dangling_link(where)) is not None:
        return Refused(f"no fleet state in {where}: {dangling}")
    return Refused(f"no fleet state in {where} (run `tpufleet init` or pass --state DIR|URL)")


# The files of a state directory that an operator may give as --state in its place.
_STATE_FILES = ("state.json", "journal.jsonl")


def not_a_state_dir(path: Path) -> BadInput:
    """The refusal of a --state that is a file, saying what to pass instead: the state's directory when it is one of
    a state's files (`--state DIR/state.json`), else a directory or a database URL."""
    if path.name in _STATE_FILES or path.name.startswith(tuple(f"{name}." for name in _STATE_FILES)):
        import shlex

        shown = shlex.quote(str(path.parent))  # as the shell takes it back: `--state 'my fleet'`
        fix = f"it is a file of the state in {str(path.parent)!r}: pass that directory (--state {shown})"
    else:
        fix = "pass the directory init made (--state DIR) or a postgresql:// URL"  # described: no `tpufleet init`
    return BadInput(f"state directory {str(path)!r} is not a directory; {fix}")


NEAR_DIRS_READ = 10_000  # names beside a --state with no fleet compared with it, at most


def near_state_dir(path: Path) -> str | None:
    """A directory beside `path` (which holds no fleet) of a close name that holds one (`~/tpufleet-stat` for
    `~/tpufleet-state`), as --state would name it; else None."""
    import os
    import shlex

    from tpufleet.text import closest

    try:
        with os.scandir(path.parent) as entries:
            names = [e.name for _, e in zip(range(NEAR_DIRS_READ), entries, strict=False) if e.is_dir()]
    except OSError:
        return None
    near = closest(path.name, [n for n in names if n != path.name], cutoff=0.8)
    if near is None or not os.path.isfile(path.parent / near / "state.json"):
        return None
    return shlex.quote(str(path.parent / near))


class TablesSource(Protocol):
    """A slice's stored routing tables, read only when a use case asks."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> Path:
        """Where they are kept, for the report (`routes/NAME.npz` in a database)."""
        ...

    def read(self) -> Tables | None: ...

    def waiting(self, entry: RouteRecord) -> bool:
        """Whether the tables `entry` indexes still wait under a temporary name (a writer killed after its commit)."""
        ...


class ChoiceCache(Protocol):
    """The repair cache (`tpufleet.routing.memo.ChoiceCache`, plus `flush` once the command committed)."""

    def get(self, key: str) -> npt.NDArray[np.int8] | None: ...

    def put(self, key: str, choices: npt.NDArray[np.int8]) -> None: ...

    def flush(self) -> None: ...


class Writer(Protocol):
    """One locked write: what `Store.transaction` and `Store.creation` need while they hold the lock."""

    def exists(self) -> bool:
        """Whether a state document is there (a damaged one included)."""
        ...

    def read_state(self) -> bytes:
        """The state document's bytes (Refused when there is none)."""
        ...

    def recover(self, serial: int, replacing: bool = False) -> None:
        """Drop what a crashed writer left beyond `serial` (journal lines the state never reached); `replacing`: the
        history is about to be replaced by a pull's, which drops whatever lies beyond (see `journal.recover`)."""
        ...

    def install_interrupted_tables(self, made: Mapping[str, IndexedAs]) -> list[str]:
        """Finish what a writer killed after its commit left undone: the tables its state indexes (`made`: slice ->
        the index's `made`, serial and tables' id) that still wait under a temporary name; the slices so installed."""
        ...

    def journal_serial(self) -> int:
        """The journal's last serial (0 when empty): where `init` over a lost state continues."""
        ...

    def last_serial(self) -> int:
        """The serial to continue from when replacing a state that may be damaged."""
        ...

    def save_tables(self, name: str, data: bytes) -> PurePath:
        """Stage a slice's routing tables, to be kept only if the state commits; their place."""
        ...

    def delete_tables(self, name: str) -> None:
        """Stage the deletion of a slice's routing tables, done only if the state commits."""
        ...

    def stored_table_names(self) -> list[str]:
        """The names of every slice's tables kept, indexed or not: what `init --force` over a damaged state, whose
        index cannot be read, deletes."""
        ...

    def commit(self, entry: JournalEntry, data: bytes) -> None:
        """Journal `entry` and install `data` as the state, atomically; the staged tables follow. Refused when
        another writer committed since this one read the state (the serial checked), with nothing written."""
        ...


class Backend(Protocol):
    @property
    def where(self) -> str:
        """What messages name: the directory, or the database's URL without its password."""
        ...

    @property
    def state_label(self) -> str:
        """The state document, as a validation error names it."""
        ...

    @property
    def damaged_hint(self) -> str:
        """The ways out of a damaged state document, said after what is wrong with it."""
        ...

    @property
    def journal_label(self) -> str:
        """The journal, as a warning about its damaged lines names it."""
        ...

    def exists(self) -> bool: ...

    def read_state(self) -> bytes:
        """The state document's bytes (Refused when there is none); no lock needed."""
        ...

    def change_key(self) -> Hashable:
        """A value that changes with every commit and when a routing table is removed by hand, much cheaper to ask
        than `read_state` (a server asks it per request); no lock needed."""
        ...

    def read_journal(self, serial: int) -> Scan:
        """The journal read against the state's `serial` (`journal.scan`)."""
        ...

    def read_journal_back(self, serial: int, enough: Enough) -> Scan:
        """The journal's committed entries, read from its end until `enough` (`journal.read_back`)."""
        ...

    def writing(self, timeout: float, command: str, create: bool = True) -> AbstractContextManager[Writer]:
        """Take the exclusive lock (LockTimeout after `timeout` seconds, naming the holder) for one write.
        `create`: the state's place may be made (`init`, a pull into a directory); else a place holding no state is
        refused as it is, with nothing made there (a mistyped --state)."""
        ...

    def table_place(self, name: str) -> PurePath:
        """Where a slice's routing tables are kept (the name checked); `routes/NAME.npz` in a database."""
        ...

    def stored_tables(self, name: str) -> TablesSource: ...

    def tables_present(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        """Those of the `indexed` slices whose tables are kept (a file removed by hand is not, nor one replaced by
        another slice's, nor one that cannot be read as tables), reading no more than the zip's directory and `meta`."""
        ...

    def tables_waiting(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        """Those of the `indexed` slices whose tables still wait under a temporary name (`TablesSource.waiting`),
        looking at the kept tables' place once, not once a slice."""
        ...

    def table_cache(self) -> ChoiceCache: ...
