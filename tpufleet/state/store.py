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
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tpufleet.errors import BadStateFile, Refused
from tpufleet.state import journal
from tpufleet.state.files import atomic_write, ensure_private_dir
from tpufleet.state.lock import command_line, exclusive
from tpufleet.state.schema import SCHEMA_VERSION, validate

STATE_FILE = "state.json"
DEFAULT_LOCK_TIMEOUT = 30.0


def resolve_state_dir(option: str | os.PathLike | None) -> Path:
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
    """A mutable copy of the state; set `summary` to commit it (left None, nothing is written)."""

    doc: dict
    summary: str | None = None
    details: dict = field(default_factory=dict)


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

    def load(self) -> dict:
        """Read and validate the current state (no lock needed: saves are atomic renames)."""
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

    def journal(self, serial: int | None = None) -> list[dict]:
        if serial is None:
            serial = self.load()["serial"]
        return journal.read(self.journal_path, serial)

    @contextmanager
    def transaction(self, command: str | None = None, create: bool = False, replace: bool = False):
        """Lock, load the freshest state, let the caller change it, then commit atomically with serial + 1.

        With `create`, a missing state starts as None (for `init`); with `replace`, an existing one is not even
        read (for `init --force` over a damaged file). An exception inside leaves files untouched.
        """
        ensure_private_dir(self.dir)
        command = command or command_line()
        with exclusive(self.dir, self.lock_timeout, command):
            if replace:
                doc, serial = None, self._last_serial()
            elif self.exists():
                doc = self.load()
                journal.recover(self.journal_path, doc["serial"])
                serial = doc["serial"]
            elif create:
                doc, serial = None, self._journal_serial()
            else:
                self.load()  # raises the "no fleet state" refusal
            tx = Transaction(doc)  # type: ignore[arg-type]
            yield tx
            if tx.summary is None:
                return
            new = tx.doc
            new["serial"] = serial + 1
            new["schema_version"] = SCHEMA_VERSION
            validate(new, str(self.state_path))
            entry = {
                "serial": new["serial"],
                "time": utc_now(),
                "user": _user(),
                "pid": os.getpid(),
                "command": command,
                "summary": tx.summary,
            }
            if tx.details:
                entry["details"] = tx.details
            journal.append(self.journal_path, entry)
            atomic_write(self.state_path, json.dumps(new, indent=1, sort_keys=True).encode() + b"\n")

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


def new_state_doc(fleet_doc: dict) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "serial": 0,
        "created": utc_now(),
        "next_fault": 1,
        "fleet": fleet_doc,
        "faults": [],
        "slices": {},
        "ocs": {},
        "routes": {},
    }
