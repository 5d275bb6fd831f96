"""The last committed state, loaded once per serial and shared by every request until the next commit.

Reads never take the write lock: a commit renames a complete state file into place (a database commits the state
row in one transaction), so a load sees the old serial or the new one, never half of one. Each request asks the
store's change key (a stat of `state.json`; on a database, the state row's serial: one small query) and stats the
goodput logs, if any; a change (a commit) means a new snapshot, loaded by one request while the others wait for
it. On a database the reads have a connection of their own, apart from the one the alert intake writes with. The
documents a snapshot answers are made once from it, through the read use cases of `tpufleet.ops` run on a store
pinned to it: every document of one serial comes from the same state.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tpufleet.errors import Unavailable
from tpufleet.fleetstate import FleetState
from tpufleet.journalentry import JournalEntry
from tpufleet.state.store import Store

Key = tuple[Hashable, ...]


class PinnedStore(Store):
    """A store whose `load` answers one state already loaded, and whose journal stops at its serial: the read use
    cases (`tpufleet.ops.views`, `ops.faults.listing`) run on it unchanged."""

    def __init__(self, store: Store, state: FleetState) -> None:
        super().__init__(store.backend, store.lock_timeout)
        self.state = state
        self._journal: list[JournalEntry] | None = None

    def load(self) -> FleetState:
        return self.state

    def journal(self, serial: int | None = None) -> list[JournalEntry]:
        if serial is not None and serial != self.state.serial:
            return super().journal(serial)
        if self._journal is None:
            self._journal = super().journal(self.state.serial)
        return self._journal

    def _serial(self, serial: int | None) -> int:
        return self.state.serial if serial is None else serial


@dataclass
class Snapshot:
    """One committed serial, and the documents made from it so far (by name)."""

    key: Key
    store: PinnedStore
    extras: dict[str, Any] = field(default_factory=dict)  # e.g. the goodput report of the logs at this key
    _docs: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def serial(self) -> int:
        return self.store.state.serial

    def cached(self, name: str, build: Callable[[], Any]) -> Any:
        """The document `name` of this serial, made by `build` the first time it is asked for."""
        with self._lock:
            if name not in self._docs:
                self._docs[name] = build()
            return self._docs[name]


def _stat_key(path: Path) -> tuple[int, int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0, 0)  # missing: the load says why
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


class Source:
    """The current snapshot of a fleet state (and of the goodput logs given to `serve --goodput`). `store` is the
    one writes go through; reads go through `reads`, on a connection of their own for a database."""

    def __init__(self, store: Store, watched: Sequence[Path] = (), extras: Callable[[], dict[str, Any]] | None = None):
        self.store, self.watched, self.make_extras = store, list(watched), extras
        self.reads = store.reader()
        self._current: Snapshot | None = None
        self._lock = threading.Lock()

    def current(self) -> Snapshot:
        """The snapshot of the state as committed now (loaded, validated) — the same object until the next commit.
        A database connection found lost is opened again once (a server restarted since the last request)."""
        try:
            return self._snapshot_now()
        except Unavailable:
            return self._snapshot_now()

    def _snapshot_now(self) -> Snapshot:
        key = (self.reads.change_key(), *(_stat_key(p) for p in self.watched))
        with self._lock:
            snap = self._current
            if snap is None or snap.key != key:
                state = self.reads.load()
                snap = Snapshot(key, PinnedStore(self.reads, state), self.make_extras() if self.make_extras else {})
                self._current = snap
            return snap
