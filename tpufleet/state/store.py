"""The state directory: load (validated), and serialized, journaled, atomic transactions.

Layout of a state directory::

    state.json       fleet, faults, slices, OCS cross-connects, route-table index; carries `serial`
    journal.jsonl    one line per committed serial (write-ahead, see journal.py)
    routes/          binary routing tables (.npz), named after their slice
    .lock, .lock.info  the exclusive lock and who holds it
"""

from __future__ import annotations

import getpass
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpufleet.errors import BadStateFile, Refused
from tpufleet.fleetstate import Change, FleetState
from tpufleet.model import Fleet
from tpufleet.state import codec, journal
from tpufleet.state.files import atomic_write, ensure_private_dir, safe_child
from tpufleet.state.lock import command_line, exclusive
from tpufleet.state.schema import SCHEMA_VERSION, validate

STATE_FILE = "state.json"
ROUTES_DIR = "routes"
DEFAULT_LOCK_TIMEOUT = 30.0


def resolve_state_dir(option: str | os.PathLike[str] | None) -> Path:
    """--state DIR, else $TPUFLEET_STATE, else ./.tpufleet."""
    chosen = option or os.environ.get("TPUFLEET_STATE") or ".tpufleet"
    return Path(chosen).expanduser()


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

    def commit(self, change: Change | None) -> None:
        """Write the state when the block ends (None: the use case changed nothing; nothing is written)."""
        self.change = change


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
        return self.state_path.exists()

    @property
    def routes_dir(self) -> Path:
        return self.dir / ROUTES_DIR

    def load(self) -> FleetState:
        """Read and validate the current state (no lock needed: saves are atomic renames)."""
        return codec.decode(self._load_doc())

    def _load_doc(self) -> dict[str, Any]:
        path = self.state_path
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise Refused(f"no fleet state in {self.dir} (run `tpufleet init` or pass --state DIR)") from None
        except OSError as exc:
            raise BadStateFile(str(path), "", None, f"cannot be read: {exc.strerror}") from None
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadStateFile(str(path), "", raw[:40].decode("utf-8", "replace"), f"not valid JSON ({exc})") from None
        return validate(doc, str(path))

    def journal(self, serial: int | None = None) -> list[dict[str, Any]]:
        if serial is None:
            serial = self._load_doc()["serial"]
        return journal.read(self.journal_path, serial)

    def table_path(self, name: str) -> Path:
        """Where a slice's routing tables live (the name is checked so it cannot leave the directory)."""
        return safe_child(self.routes_dir, name, ".npz")

    def save_tables(self, name: str, data: bytes) -> Path:
        """Store a slice's routing tables; call inside the transaction that indexes them."""
        ensure_private_dir(self.routes_dir)
        path = self.table_path(name)
        atomic_write(path, data)
        return path

    def delete_tables(self, name: str) -> None:
        path = self.table_path(name)
        if path.exists():
            path.unlink()

    @contextmanager
    def transaction(self, command: str | None = None) -> Iterator[Transaction]:
        """Lock, load the freshest state, let the caller change it, then commit atomically with serial + 1.

        An exception inside, or no `commit`, leaves the files untouched.
        """
        ensure_private_dir(self.dir)
        command = command or command_line()
        with exclusive(self.dir, self.lock_timeout, command):
            state = self.load()
            journal.recover(self.journal_path, state.serial)
            tx = Transaction(state)
            yield tx
            if tx.change is not None:
                self._commit(tx.state, tx.change, state.serial, command)

    @contextmanager
    def creation(self, fleet: Fleet, replace: bool = False, command: str | None = None) -> Iterator[Transaction]:
        """`init`: a new state for `fleet`. Refused if one exists, unless `replace` (which does not even read a
        damaged one). The serial continues where the old state or the journal stopped."""
        ensure_private_dir(self.dir)
        command = command or command_line()
        with exclusive(self.dir, self.lock_timeout, command):
            if self.exists() and not replace:
                raise Refused(f"a fleet state already exists in {self.dir}; use --force to replace it")
            serial = self._last_serial() if self.exists() else self._journal_serial()
            tx = Transaction(FleetState(fleet, serial=serial, created=utc_now()))
            yield tx
            if tx.change is not None:
                self._commit(tx.state, tx.change, serial, command)

    def _commit(self, state: FleetState, change: Change, serial: int, command: str) -> None:
        state.serial = serial + 1
        doc = codec.encode(state)
        doc["schema_version"] = SCHEMA_VERSION
        validate(doc, str(self.state_path))
        entry: dict[str, Any] = {
            "serial": state.serial,
            "time": utc_now(),
            "user": _user(),
            "pid": os.getpid(),
            "command": command,
            "summary": change.summary,
        }
        if change.details:
            entry["details"] = change.details
        journal.append(self.journal_path, entry)
        atomic_write(self.state_path, json.dumps(doc, indent=1, sort_keys=True).encode() + b"\n")

    def _journal_serial(self) -> int:
        """After `init` over a lost state file, keep numbering where the journal stopped."""
        entries = journal.read(self.journal_path, 1 << 62)
        serial = entries[-1]["serial"] if entries else 0
        journal.recover(self.journal_path, serial)
        return serial

    def _last_serial(self) -> int:
        """The serial to continue from when replacing a state that may be damaged."""
        try:
            serial = int(json.loads(self.state_path.read_bytes())["serial"])
            journal.recover(self.journal_path, serial)
            return serial
        except (OSError, ValueError, KeyError, TypeError):
            return self._journal_serial()
