"""The fleet state: load (validated), and serialized, journaled, atomic transactions, on a state directory or a
PostgreSQL database (``--state postgresql://...``: pgbackend.py; the seam is backend.py).

Layout of a state directory::

    state.json       fleet, faults, slices, OCS cross-connects, route-table index; carries `serial`
    journal.jsonl    one line per committed serial (write-ahead, see journal.py)
    routes/          binary routing tables (.npz), named after their slice
    cache/           wild-first repair choices by fault pattern (tablecache.py): disposable, checked when read
    .lock, .lock.info  the exclusive lock and who holds it
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TypeVar

from tpufleet.errors import BadInput, BadStateFile, Refused
from tpufleet.fleetstate import Change, FleetState, RouteRecord
from tpufleet.journalentry import JournalEntry, fault_numbers_used
from tpufleet.jsontext import dumps_indented
from tpufleet.model import Fleet
from tpufleet.state import codec, committed, dburl, inputfiles, journal, journalfile, records
from tpufleet.state.backend import Backend, ChoiceCache, TablesSource, Writer
from tpufleet.state.delta import delta
from tpufleet.state.filebackend import ROUTES_DIR, DirectoryBackend
from tpufleet.state.files import safe_child
from tpufleet.state.journal import Enough, Scan, last
from tpufleet.state.lock import command_line, login_name
from tpufleet.state.paths import expanded
from tpufleet.state.schema import SCHEMA_VERSION, checked_state
from tpufleet.text import printable
from tpufleet.timeparse import STAMP_FORMAT

T = TypeVar("T")

DATABASE_SCHEMES = ("postgresql://", "postgres://")
DEFAULT_LOCK_TIMEOUT = 30.0
# Cleared faults kept in state.json (the most recent); older ones live only in the journal (`faults --all`).
CLEARED_FAULTS_KEPT = 128


def is_database_url(location: str) -> bool:
    """Whether `--state` names a PostgreSQL database (``postgresql://...``) rather than a directory."""
    return location.lower().startswith(DATABASE_SCHEMES)


# A state named '-' made a directory so named, where every other file option refuses '-' it does not read as
# standard input (a directory so named is still ./-).
NOT_STANDARD_INPUT = (
    "'-' is not standard input here; name a directory or a postgresql:// URL (for a directory so named: ./-)"
)


def resolve_state_dir(option: str | os.PathLike[str] | None) -> Path | str:
    """--state DIR|URL, else $TPUFLEET_STATE, else ./.tpufleet: a directory (a Path), or a database URL (as typed).

    None means "not given"; an empty string is given and wrong (BadInput): it would otherwise mean the current
    directory, or silently the default. (Pass the option as the string typed: `Path("")` is already `.`.)
    """
    if option is not None:
        text = os.fspath(option)
        if text == "":
            raise BadInput("bad option --state: the directory is empty ('')")
        if text == "-":
            raise BadInput(f"bad option --state '-': {NOT_STANDARD_INPUT}")
        return _location(text, "option --state")
    env = os.environ.get("TPUFLEET_STATE")
    if env is not None:
        if env == "":
            raise BadInput("bad environment variable TPUFLEET_STATE: it is set but empty; unset it or name a directory")
        if env == "-":
            raise BadInput(f"bad environment variable TPUFLEET_STATE '-': {NOT_STANDARD_INPUT}")
        return _location(env, "environment variable TPUFLEET_STATE")
    return Path(".tpufleet")


def _location(text: str, given_as: str) -> Path | str:
    if "\x00" in text:
        raise BadInput(f"bad {given_as} {text!r}: it holds a NUL character")
    if is_database_url(text):
        return text
    if dburl.is_mistyped_url(text):
        raise BadInput(
            f"bad {given_as} {printable(dburl.redacted(text))!r}: it is no postgresql:// URL "
            f"({dburl.WRITE_A_URL} for a directory so named)"
        )
    other = dburl.other_scheme(text)
    if other:  # its password never shown
        raise BadInput(f"bad {given_as}: a {other}:// URL; give a directory or a postgresql:// URL")
    return expanded(text, given_as)


def utc_now() -> str:
    return time.strftime(STAMP_FORMAT, time.gmtime())


@dataclass
class Transaction:
    """The freshly loaded state, for the use case to change; `commit` marks it to be written."""

    state: FleetState
    writer: Writer  # the backend's side of this write (staged routing tables)
    change: Change | None = None
    # `init --force`: what the state being replaced held (counts; {"damaged": True} when it could not be read), for
    # the use case to say and journal
    replaced: dict[str, int | bool] | None = None
    # `init --force`: the replaced state's fault records, moved into the journal (`faults --all`, `suspects`)
    retired_faults: tuple[dict[str, Any], ...] = ()

    def commit(self, change: Change | None) -> None:
        """Write the state when the block ends (None: the use case changed nothing; nothing is written)."""
        self.change = change


def replaced_counts(doc: dict[str, Any]) -> dict[str, int]:
    """What a state document holds, counted: what `init --force` drops (all zero for an unreadable one)."""
    return {
        "pods": len(doc.get("fleet", {}).get("pods", [])),
        "slices": len(doc.get("slices", {})),
        "jobs": len(doc.get("jobs", {})),
        "open_faults": sum(1 for f in doc.get("faults", []) if f.get("cleared") is None),
        "cross_connects": sum(len(pairs) for pairs in doc.get("ocs", {}).values()),
        "route_tables": len(doc.get("routes", {})),
    }


def _retired(doc: dict[str, Any], now: str) -> tuple[dict[str, Any], ...]:
    """The fault records of a state `init --force` replaces (checked, or empty), as its journal line keeps them:
    a fault still open ends with the fleet that had it, at `now`."""
    return tuple({**f, "cleared": f.get("cleared") or now} for f in doc.get("faults", []))


def _moved(entries: list[JournalEntry]) -> list[dict[str, Any]]:
    return [f for entry in entries for f in entry.moved_faults]


def _encoded(doc: dict[str, Any], file: str) -> bytes:
    """The state file's bytes; a non-finite number (which JSON cannot carry) is refused naming its field."""
    try:
        return dumps_indented(doc, 1, sort_keys=True).encode() + b"\n"
    except ValueError:
        unsaveable(lambda: inputfiles.check_finite(doc, file))
        raise


def _check_journal_line(entry: JournalEntry) -> None:
    """Refuse a journal line longer than readers take for a line (they read a longer one as damage)."""
    size = len(journal.encode(entry))
    if size > journalfile.MAX_LINE_BYTES:
        raise BadInput(
            f"refused: this change's journal line would be {size} bytes, over the {journalfile.MAX_LINE_BYTES}-byte "
            "limit of a journal line; nothing changed"
        )


def unsaveable(check: Callable[[], T]) -> T:
    """Run a check of the state about to be written; its failure becomes a refusal that says nothing changed."""
    try:
        return check()
    except BadStateFile as exc:
        raise BadInput(f"refused: the state after this command would not load again ({exc}); nothing changed") from None


class Store:
    """A fleet state: a state directory (a path) or a PostgreSQL database (a ``postgresql://`` URL), or any
    `Backend`. The protocol is the same for all of them; only the storage differs."""

    def __init__(self, state: Path | str | Backend, lock_timeout: float = DEFAULT_LOCK_TIMEOUT):
        if isinstance(state, str) and is_database_url(state):
            from tpufleet.state.pgbackend import PostgresBackend

            self.backend: Backend = PostgresBackend(state)
        elif isinstance(state, (str, os.PathLike)):
            self.backend = DirectoryBackend(Path(state))
        else:
            self.backend = state
        self.lock_timeout = lock_timeout

    # ---- what commands show and where they read ----------------------------------------------------------------

    @property
    def where(self) -> str:
        """The state directory, or the database's URL without its password: what messages name."""
        return self.backend.where

    @property
    def journal_label(self) -> str:
        """The journal, as a warning about its damaged lines names it."""
        return self.backend.journal_label

    def _directory(self) -> DirectoryBackend:
        if not isinstance(self.backend, DirectoryBackend):
            raise BadInput(f"the fleet state {self.where} is not a state directory; this needs one")
        return self.backend

    @property
    def dir(self) -> Path:
        return self._directory().dir

    @property
    def state_path(self) -> Path:
        return self._directory().state_path

    @property
    def journal_path(self) -> Path:
        return self._directory().journal_path

    @property
    def routes_dir(self) -> PurePath:
        return PurePath(ROUTES_DIR) if not isinstance(self.backend, DirectoryBackend) else self.backend.routes_dir

    def exists(self) -> bool:
        return self.backend.exists()

    def change_key(self) -> Hashable:
        """A value that changes with every commit and with a routing table removed by hand, cheap to ask (a stat of
        state.json and the names in routes/; the state row's serial and the tables' count in a database): how a
        long-running reader (`tpufleet serve`) notices a commit. No lock taken."""
        return self.backend.change_key()

    def reader(self) -> Store:
        """A store on the same state for reads beside this one's writes: the same one for a directory; one with a
        connection of its own for a database (never inside this store's write transaction)."""
        reopen = getattr(self.backend, "reopened", None)
        return Store(reopen(), self.lock_timeout) if reopen is not None else self

    def load(self) -> FleetState:
        """Read and validate the current state (no lock needed: saves are atomic)."""
        return codec.decode(self._load_doc())

    def _load_doc(self) -> dict[str, Any]:
        return checked_state(self.backend.read_state(), self.backend.state_label, self.backend.damaged_hint)

    def _serial(self, serial: int | None) -> int:
        """The serial a journal is read against: the state's unless given."""
        return self._load_doc()["serial"] if serial is None else serial

    def journal(self, serial: int | None = None) -> list[JournalEntry]:
        """The committed journal entries, up to the state's serial; a damaged line is skipped (see
        `journal_damage`), never the end of the history."""
        return self.journal_scan(serial).entries

    def journal_scan(self, serial: int | None = None) -> Scan:
        """The committed journal entries and the damaged lines' numbers, in one reading."""
        return self.backend.read_journal(self._serial(serial))

    def journal_tail(self, count: int, serial: int | None = None) -> Scan:
        """The last `count` committed journal entries, read from the journal's end (damaged lines among those
        read only): the latest changes of a long history without reading it whole."""
        found = self.journal_back(last(count), serial)
        found.entries = found.entries[-count:]
        return found

    def journal_back(self, enough: Enough, serial: int | None = None) -> Scan:
        """The committed journal entries read backwards from the journal's end until they are `enough` (see
        `journal.read_back`)."""
        return self.backend.read_journal_back(self._serial(serial), enough)

    def moved_faults(self) -> list[dict[str, Any]]:
        """The records of cleared faults that commits moved out of state.json into the journal, oldest first."""
        return _moved(self.journal())

    def fault_history(self, serial: int | None = None) -> tuple[list[dict[str, Any]], Scan]:
        """`moved_faults` and the reading of the journal they come from (its damaged lines, gaps: faults it lacks)."""
        found = self.journal_scan(serial)
        return _moved(found.entries), found

    def journal_damage(self, serial: int | None = None) -> list[int]:
        """Line numbers (from 1) of the journal lines `journal` skipped as damaged: blank, not JSON, no serial, or
        a serial beyond the state's among the committed lines. Empty for a sound journal."""
        return self.journal_scan(serial).damaged

    # ---- routing tables and the repair cache -------------------------------------------------------------------

    def table_path(self, name: str) -> PurePath:
        """Where a slice's routing tables live (the name is checked so it cannot leave the directory; `routes/`
        must be a real directory, not a symlink). In a database: `routes/NAME.npz`, the name of its row."""
        return self.backend.table_place(name)

    def check_name(self, name: str) -> None:
        """Refuse a slice name that cannot name its routing tables (BadInput), before any work."""
        if isinstance(self.backend, DirectoryBackend):
            safe_child(self.backend.dir, name)
        else:
            self.backend.table_place(name)

    def check_tables_place(self, name: str) -> None:
        """Refuse (BadInput) a symbolic link where the slice's tables belong, before any work (a database has none)."""
        if isinstance(self.backend, DirectoryBackend):
            from tpufleet.state.routetables import refuse_linked

            refuse_linked(name, self.backend.table_place(name))

    def linked_tables(self, names: Iterable[str]) -> dict[str, str]:
        """Those of the slices `names` with a symbolic link where their tables belong, by name: the link's path."""
        if not isinstance(self.backend, DirectoryBackend):
            return {}
        places = {name: self.backend.table_place(name) for name in names}
        return {name: str(path) for name, path in places.items() if os.path.islink(path)}

    def stored_tables(self, name: str) -> TablesSource:
        """A slice's stored routing tables, read when a use case asks (None from `read` when there are none)."""
        return self.backend.stored_tables(name)

    def tables_present(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        """Those of the `indexed` slices whose routing tables are kept (a file removed by hand is not, nor one
        replaced by another slice's, holding other tables than indexed or that cannot be read as tables), reading no
        more than the zip's directory and `meta` (none indexed: nothing read, nor the readers imported)."""
        return self.backend.tables_present(indexed) if indexed else set()

    def tables_waiting(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        """Those of the `indexed` slices whose tables a writer killed after its commit left waiting under a
        temporary name (`TablesSource.waiting`), looking at the tables' place once (none indexed: not at all)."""
        return self.backend.tables_waiting(indexed) if indexed else set()

    def table_cache(self) -> ChoiceCache:
        """The repair cache (wild-first choices by fault pattern): written by `flush` once a command committed."""
        return self.backend.table_cache()

    def save_tables(self, tx: Transaction, name: str, data: bytes) -> PurePath:
        """Store a slice's routing tables with the transaction that indexes them: staged now (in a directory,
        written under a temporary name, so a full disk refuses the command before anything is committed), kept
        only once the state is committed."""
        return tx.writer.save_tables(name, data)

    def delete_tables(self, tx: Transaction, name: str) -> None:
        """Delete a slice's stored tables once the transaction that drops them from the index is committed."""
        tx.writer.delete_tables(name)

    # ---- writing -------------------------------------------------------------------------------------------------

    @contextmanager
    def transaction(self, command: str | None = None, timeout: float | None = None) -> Iterator[Transaction]:
        """Lock, load the freshest state, let the caller change it, then commit atomically with serial + 1.

        An exception inside, or no `commit`, leaves the state untouched. `timeout`: how long to wait for the lock,
        if not the store's `lock_timeout` (what a caller that already waited has left of it).
        """
        command = command or command_line()
        from tpufleet.state.tablesindex import indexed_as

        with self.backend.writing(self.lock_timeout if timeout is None else timeout, command, create=False) as writer:
            before = checked_state(writer.read_state(), self.backend.state_label, self.backend.damaged_hint)
            state = codec.decode(before)
            writer.recover(state.serial)
            writer.install_interrupted_tables({name: indexed_as(r) for name, r in state.routes.items()})
            tx = Transaction(state, writer)
            yield tx
            if tx.change is not None:
                self._commit(writer, tx.state, tx.change, state.serial, command, before)

    @contextmanager
    def creation(self, fleet: Fleet, replace: bool = False, command: str | None = None) -> Iterator[Transaction]:
        """`init`: a new state for `fleet`. Refused if one exists, unless `replace` (which does not even read a
        damaged one). The serial continues where the old state or the journal stopped."""
        command = command or command_line()
        with self.backend.writing(self.lock_timeout, command) as writer:
            exists = writer.exists()
            if exists and not replace:
                writer.read_state()  # a directory or a FIFO where the state belongs is refused as such (--force is)
                raise Refused(f"a fleet state already exists in {self.where}; use --force to replace it")
            serial = writer.last_serial() if exists else writer.journal_serial()
            read = self._replaced_doc(writer) if exists else {}
            before = read or {}
            now = utc_now()
            tx = Transaction(FleetState(fleet, serial=serial, created=now), writer)
            tx.state.next_fault = self._next_fault_after(writer, serial, before)
            if exists:
                tx.replaced = replaced_counts(before) if read is not None else {"damaged": True}
                tx.retired_faults = _retired(before, now)
                # the old slices' tables go with them, after the commit: a damaged state's, whose index cannot be
                # read, are every table kept
                for name in before.get("routes", {}) if read is not None else writer.stored_table_names():
                    with contextlib.suppress(BadInput):  # a damaged state's odd name: nothing of ours to delete
                        writer.delete_tables(name)
            yield tx
            if tx.change is not None:
                self._commit(writer, tx.state, tx.change, serial, command, before, tx.retired_faults)

    def _next_fault_after(self, writer: Writer, serial: int, before: dict[str, Any]) -> int:
        """The fault numbers continue, as the serial does, past every fault the replaced state or the journal
        names: a new fault must not share an id with an old one in the history (`faults --all`, `suspects`)."""
        if serial == 0:
            return 1
        used = fault_numbers_used(self.backend.read_journal(serial).entries)
        return max(used + 1, int(before.get("next_fault", 1)))

    def _replaced_doc(self, writer: Writer) -> dict[str, Any] | None:
        """The state `init --force` replaces, for its journal delta (None when it cannot be read)."""
        try:
            return checked_state(writer.read_state(), self.backend.state_label)
        except (BadInput, Refused):  # damaged or unreadable: the delta then lists only what the new state has
            return None

    def _commit(
        self,
        writer: Writer,
        state: FleetState,
        change: Change,
        serial: int,
        command: str,
        before: dict[str, Any],
        retired: tuple[dict[str, Any], ...] = (),
    ) -> None:
        """Serial + 1, the journal entry, and the backend's atomic commit of both.

        The bytes to be written are first put through the very checks a load makes (`checked_state`): a change
        that the next command would refuse to load is refused now, with nothing written."""
        state.serial = serial + 1
        moved = state.prune_cleared(CLEARED_FAULTS_KEPT)
        doc = codec.encode(state)
        doc["schema_version"] = SCHEMA_VERSION
        label = self.backend.state_label
        data = _encoded(doc, label)
        doc = unsaveable(lambda: checked_state(data, label))
        entry = JournalEntry(
            state.serial,
            utc_now(),
            login_name(),
            command,
            change.summary,
            pid=os.getpid(),
            details=change.details or None,
            delta=delta(before, doc),
            moved_faults=(*retired, *(records.fault_doc(f) for f in moved)),
        )
        _check_journal_line(entry)
        writer.commit(entry, data)
        if committed.SERIALS[-1:] != [state.serial]:  # a writer may say so at its own commit point
            committed.SERIALS.append(state.serial)
