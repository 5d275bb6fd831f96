"""The state directory: load (validated), and serialized, journaled, atomic transactions.

Layout of a state directory::

    state.json       fleet, faults, slices, OCS cross-connects, route-table index; carries `serial`
    journal.jsonl    one line per committed serial (write-ahead, see journal.py)
    routes/          binary routing tables (.npz), named after their slice
    cache/           wild-first repair choices by fault pattern (tablecache.py): disposable, checked when read
    .lock, .lock.info  the exclusive lock and who holds it
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tpufleet.errors import BadInput, BadStateFile, Refused
from tpufleet.fleetstate import Change, FleetState
from tpufleet.journalentry import JournalEntry
from tpufleet.model import Fleet
from tpufleet.state import codec, inputfiles, journal
from tpufleet.state.crashpoints import reached
from tpufleet.state.delta import delta
from tpufleet.state.files import (
    check_state_dir,
    check_subdir,
    ensure_private_dir,
    ensure_private_subdir,
    install,
    io_error,
    read_state_file,
    safe_child,
    sync_parent,
    write_temp,
)
from tpufleet.state.lock import command_line, exclusive
from tpufleet.state.schema import SCHEMA_VERSION, validate

T = TypeVar("T")

STATE_FILE = "state.json"
ROUTES_DIR = "routes"
DEFAULT_LOCK_TIMEOUT = 30.0
# Cleared faults kept in state.json (the most recent); older ones live only in the journal (`faults --all`).
CLEARED_FAULTS_KEPT = 128


def resolve_state_dir(option: str | os.PathLike[str] | None) -> Path:
    """--state DIR, else $TPUFLEET_STATE, else ./.tpufleet.

    None means "not given"; an empty string is given and wrong (BadInput): it would otherwise mean the current
    directory, or silently the default. (Pass the option as the string typed: `Path("")` is already `.`.)
    """
    if option is not None:
        text = os.fspath(option)
        if text == "":
            raise BadInput("bad option --state: the directory is empty ('')")
        return Path(text).expanduser()
    env = os.environ.get("TPUFLEET_STATE")
    if env is not None:
        if env == "":
            raise BadInput("bad environment variable TPUFLEET_STATE: it is set but empty; unset it or name a directory")
        return Path(env).expanduser()
    return Path(".tpufleet")


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


@dataclass
class Transaction:
    """The freshly loaded state, for the use case to change; `commit` marks it to be written."""

    state: FleetState
    change: Change | None = None
    # Files beside the state that change with it: (final path, durable temp file holding the new content, or
    # None to delete). They are swapped in only after the state's rename, so a failed commit leaves them as
    # they were.
    side_files: list[tuple[Path, str | None]] = field(default_factory=list)
    # `init --force`: what the state being replaced held (counts), for the use case to say and journal
    replaced: dict[str, int] | None = None

    def commit(self, change: Change | None) -> None:
        """Write the state when the block ends (None: the use case changed nothing; nothing is written)."""
        self.change = change


def checked_state(raw: bytes, file: str) -> dict[str, Any]:
    """The state document in `raw`, with every check a load makes: the size limit, strict UTF-8, JSON without NaN
    or Infinity, numbers written as integers where the schema wants integers, the schema, cross-references."""
    if len(raw) > inputfiles.MAX_STATE_BYTES:
        raise BadStateFile(file, "", len(raw), f"is over the {inputfiles.MAX_STATE_BYTES}-byte limit of a state file")
    # Nesting is bounded by the decoder's own recursion guard (the pre-scan `load_json` makes costs more than the
    # parse on a big state).
    try:
        doc = inputfiles.parse_json_state(inputfiles.decode_utf8(raw, file))
    except inputfiles.JsonProblem as exc:
        raise BadStateFile(file, "", exc.value, exc.problem) from None
    return validate(doc, file)


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


def _encoded(doc: dict[str, Any], file: str) -> bytes:
    """The state file's bytes; a non-finite number (which JSON cannot carry) is refused naming its field."""
    try:
        return json.dumps(doc, indent=1, sort_keys=True, allow_nan=False).encode() + b"\n"
    except ValueError:
        unsaveable(lambda: inputfiles.check_finite(doc, file))
        raise


def unsaveable(check: Callable[[], T]) -> T:
    """Run a check of the state about to be written; its failure becomes a refusal that says nothing changed."""
    try:
        return check()
    except BadStateFile as exc:
        raise BadInput(f"refused: the state after this command would not load again ({exc}); nothing changed") from None


class Store:
    def __init__(self, state_dir: Path, lock_timeout: float = DEFAULT_LOCK_TIMEOUT):
        self.dir = Path(state_dir)
        self.lock_timeout = lock_timeout

    @property
    def state_path(self) -> Path:
        return self.dir / STATE_FILE

    @property
    def journal_path(self) -> Path:
        return self.dir / journal.JOURNAL

    def exists(self) -> bool:
        return os.path.lexists(self.state_path)

    @property
    def routes_dir(self) -> Path:
        return self.dir / ROUTES_DIR

    def load(self) -> FleetState:
        """Read and validate the current state (no lock needed: saves are atomic renames)."""
        return codec.decode(self._load_doc())

    def _load_doc(self) -> dict[str, Any]:
        path = self.state_path
        try:
            raw = read_state_file(path)
        except FileNotFoundError:
            raise Refused(f"no fleet state in {self.dir} (run `tpufleet init` or pass --state DIR)") from None
        except NotADirectoryError:
            raise BadInput(f"state directory {str(self.dir)!r} is not a directory") from None
        except OSError as exc:
            raise BadStateFile(str(path), "", None, f"cannot be read: {exc.strerror or exc}") from None
        return checked_state(raw, str(path))

    def journal(self, serial: int | None = None) -> list[JournalEntry]:
        """The committed journal entries, up to the state's serial; a damaged line is skipped (see
        `journal_damage`), never the end of the history."""
        if serial is None:
            serial = self._load_doc()["serial"]
        return journal.read(self.journal_path, serial)

    def moved_faults(self) -> list[dict[str, Any]]:
        """The records of cleared faults that commits moved out of state.json into the journal, oldest first."""
        return [f for entry in self.journal() for f in entry.moved_faults]

    def journal_damage(self, serial: int | None = None) -> list[int]:
        """Line numbers (from 1) of the journal lines `journal` skipped as damaged: blank, not JSON, no serial, or
        a serial beyond the state's among the committed lines. Empty for a sound journal."""
        if serial is None:
            serial = self._load_doc()["serial"]
        return journal.damaged_lines(self.journal_path, serial)

    def table_path(self, name: str) -> Path:
        """Where a slice's routing tables live (the name is checked so it cannot leave the directory; `routes/`
        must be a real directory, not a symlink)."""
        check_subdir(self.routes_dir)
        return safe_child(self.routes_dir, name, ".npz")

    def save_tables(self, tx: Transaction, name: str, data: bytes) -> Path:
        """Store a slice's routing tables with the transaction that indexes them: written now under a temporary
        name (so a full disk refuses the command before anything is committed), renamed into place only once
        the state is."""
        ensure_private_subdir(self.routes_dir)
        path = self.table_path(name)
        tx.side_files.append((path, write_temp(path, data)))
        return path

    def delete_tables(self, tx: Transaction, name: str) -> None:
        """Delete a slice's stored tables once the transaction that drops them from the index is committed."""
        if check_subdir(self.routes_dir):
            tx.side_files.append((self.table_path(name), None))

    def _finish_side_files(self, tx: Transaction, committed: bool) -> None:
        """After the state's commit: swap in or delete the files beside it. Without a commit: discard the temps."""
        if committed:
            reached("transaction.before_side_files")
        for path, tmp in tx.side_files:
            try:
                if tmp is None:
                    if committed:
                        path.unlink(missing_ok=True)
                elif committed:
                    os.replace(tmp, path)
                else:
                    os.unlink(tmp)
            except OSError as exc:
                if committed:  # the state is committed: say which file is behind it
                    raise io_error("delete" if tmp is None else "write", path, exc) from None
        if committed and tx.side_files:
            sync_parent(tx.side_files[0][0])

    def _prepare_write(self) -> None:
        """Before taking the lock to write: the directory exists, is ours, and nobody else can write it."""
        ensure_private_dir(self.dir)
        check_state_dir(self.dir)

    @contextmanager
    def transaction(self, command: str | None = None) -> Iterator[Transaction]:
        """Lock, load the freshest state, let the caller change it, then commit atomically with serial + 1.

        An exception inside, or no `commit`, leaves the files untouched.
        """
        self._prepare_write()
        command = command or command_line()
        with exclusive(self.dir, self.lock_timeout, command):
            before = self._load_doc()
            state = codec.decode(before)
            journal.recover(self.journal_path, state.serial)
            tx = Transaction(state)
            committed = False
            try:
                yield tx
                if tx.change is not None:
                    self._commit(tx.state, tx.change, state.serial, command, before)
                    committed = True  # the state file is renamed into place: the files beside it follow
                    sync_parent(self.state_path)
            finally:
                self._finish_side_files(tx, committed)

    @contextmanager
    def creation(self, fleet: Fleet, replace: bool = False, command: str | None = None) -> Iterator[Transaction]:
        """`init`: a new state for `fleet`. Refused if one exists, unless `replace` (which does not even read a
        damaged one). The serial continues where the old state or the journal stopped."""
        self._prepare_write()
        command = command or command_line()
        with exclusive(self.dir, self.lock_timeout, command):
            if self.exists() and not replace:
                raise Refused(f"a fleet state already exists in {self.dir}; use --force to replace it")
            serial = self._last_serial() if self.exists() else self._journal_serial()
            before = self._replaced_doc() if self.exists() else {}
            tx = Transaction(FleetState(fleet, serial=serial, created=utc_now()))
            if self.exists():
                tx.replaced = replaced_counts(before)
                for name in before.get("routes", {}):  # the old slices' tables go with them, after the commit
                    with contextlib.suppress(BadInput):  # a damaged state's odd name: nothing of ours to delete
                        self.delete_tables(tx, name)
            committed = False
            try:
                yield tx
                if tx.change is not None:
                    self._commit(tx.state, tx.change, serial, command, before)
                    committed = True
                    sync_parent(self.state_path)
            finally:
                self._finish_side_files(tx, committed)

    def _replaced_doc(self) -> dict[str, Any]:
        """The state `init --force` replaces, for its journal delta (empty when it cannot be read)."""
        try:
            return self._load_doc()
        except (BadInput, Refused):  # damaged or unreadable: the delta then lists only what the new state has
            return {}

    def _commit(self, state: FleetState, change: Change, serial: int, command: str, before: dict[str, Any]) -> None:
        """Journal line first (durable), then the state file renamed into place. Should anything fail before the
        rename, the line is taken back out: the files are as they were, and the error names the file.

        The bytes to be written are first put through the very checks a load makes (`checked_state`): a change
        that the next command would refuse to load is refused now, with nothing written."""
        state.serial = serial + 1
        moved = state.prune_cleared(CLEARED_FAULTS_KEPT)
        doc = codec.encode(state)
        doc["schema_version"] = SCHEMA_VERSION
        data = _encoded(doc, str(self.state_path))
        doc = unsaveable(lambda: checked_state(data, str(self.state_path)))
        entry = JournalEntry(
            state.serial,
            utc_now(),
            _user(),
            command,
            change.summary,
            pid=os.getpid(),
            details=change.details or None,
            delta=delta(before, doc),
            moved_faults=tuple(f.record() for f in moved),
        )
        size = journal.append(self.journal_path, entry)
        try:
            install(write_temp(self.state_path, data), self.state_path)
        except BaseException:
            journal.rollback(self.journal_path, size)
            raise

    def _journal_serial(self) -> int:
        """After `init` over a lost state file, keep numbering where the journal stopped."""
        entries = journal.read(self.journal_path, 1 << 62)
        serial = max((e.serial for e in entries), default=0)
        journal.recover(self.journal_path, serial)
        return serial

    def _last_serial(self) -> int:
        """The serial to continue from when replacing a state that may be damaged."""
        try:
            serial = json.loads(read_state_file(self.state_path))["serial"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return self._journal_serial()
        if type(serial) is not int or serial < 0:
            return self._journal_serial()
        journal.recover(self.journal_path, serial)
        return serial
