"""The last committed state, loaded once per serial and shared by every request until the next commit.

Reads never take the write lock: a commit renames a complete state file into place (a database commits the state
row in one transaction), so a load sees the old serial or the new one, never half of one. Each request asks the
store's change key (a stat of `state.json` and the names in `routes/`; on a database, the state row's serial and the
tables' count: one small query); a change (a commit, or a routing table removed by hand) means a new snapshot, loaded by one request while the others wait for it. On a database the reads have a
connection of their own, apart from the one the alert intake writes with. The documents a snapshot answers are
made once from it, through the read use cases of `tpufleet.ops` run on a store pinned to it: every document of one
serial comes from the same state.

The goodput logs of `serve --goodput` are apart from the state: only `/metrics` asks for them (`Source.extras`),
which stats them and reads them again only when one of them changed (its inode, size or modification time), under
a lock of their own. A commit does not read them again, and a request for a state document never waits on a read
of them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpufleet.errors import Unavailable
from tpufleet.fleetstate import FleetState
from tpufleet.journalentry import JournalEntry
from tpufleet.state.store import Store

if TYPE_CHECKING:
    from tpufleet.fleetparts import RouteRecord

Key = tuple[Hashable, ...]


class PinnedStore(Store):
    """A store whose `load` answers one state already loaded, and whose journal stops at its serial: the read use
    cases (`tpufleet.ops.views`, `ops.faults.listing`) run on it unchanged."""

    def __init__(self, store: Store, state: FleetState) -> None:
        super().__init__(store.backend, store.lock_timeout)
        self.state = state
        self._journal: list[JournalEntry] | None = None
        self._kept: dict[str, bool] = {}  # whether each indexed slice's stored tables are kept, once read
        self._kept_turn = threading.Lock()

    def tables_present(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        """As the store answers, each of the state's own index entries read once for the snapshot: every document
        of it checked every file through again (on a database, read each row's tail), which on sixteen routed
        superpods is seconds a document; entries of another state are read as asked."""
        own = {name: entry for name, entry in indexed.items() if entry is self.state.routes.get(name)}
        with self._kept_turn:  # one reads, another asking meanwhile waits for it
            unread = {name: entry for name, entry in own.items() if name not in self._kept}
            if unread:
                found = super().tables_present(unread)
                self._kept.update({name: name in found for name in unread})
            kept = {name for name in own if self._kept[name]}
        others = {name: entry for name, entry in indexed.items() if name not in own}
        return kept | (super().tables_present(others) if others else set())

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


@dataclass(frozen=True)
class Extras:
    """What was made of the watched logs (e.g. the goodput report), and the stat of the logs it was made at."""

    key: Key = ()
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class Snapshot:
    """One committed serial, and the documents made from it so far (by name)."""

    key: Key
    store: PinnedStore
    _docs: dict[str, tuple[Hashable, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)  # the dicts' own, never held while building
    _turns: dict[str, threading.Lock] = field(default_factory=dict)  # one a document: its makers take turns

    @property
    def serial(self) -> int:
        return self.store.state.serial

    def cached(self, name: str, build: Callable[[], Any], version: Hashable = None) -> Any:
        """The document `name` of this serial, made by `build` the first time it is asked for. A document that
        also depends on something else gives its `version` (the logs' key, say): another version makes it again,
        in place of the one kept. Only the requests for the same document wait for it to be made: a long one (the
        journal of a long history) holds up no other (the scrape of /metrics)."""
        with self._lock:
            turn = self._turns.setdefault(name, threading.Lock())
        with turn:
            with self._lock:
                held = self._docs.get(name)
            if held is None or held[0] != version:
                held = (version, build())
                with self._lock:
                    self._docs[name] = held
            return held[1]


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
        self._lock = threading.Lock()  # the state's snapshot
        self._extras: Extras | None = None  # (None: not read yet)
        self._extras_lock = threading.Lock()  # the logs' read: never held with the state's

    def current(self) -> Snapshot:
        """The snapshot of the state as committed now (loaded, validated) — the same object until the next commit.
        A database connection found lost is opened again once (a server restarted since the last request)."""
        try:
            return self._snapshot_now()
        except Unavailable:
            return self._snapshot_now()

    def _snapshot_now(self) -> Snapshot:
        key = (self.reads.change_key(),)
        with self._lock:
            snap = self._current
            if snap is None or snap.key != key:
                snap = Snapshot(key, PinnedStore(self.reads, self.reads.load()))
                self._current = snap
            return snap

    def extras(self) -> Extras:
        """What `make_extras` made of the watched logs as they are now: made again only when one of them changed
        since (its inode, size or modification time; the stat is taken before the read, so a change during it is
        read next time), by one request while the others asking for it wait. The state's lock is not held."""
        if self.make_extras is None:
            return Extras()
        key = tuple(_stat_key(p) for p in self.watched)
        with self._extras_lock:
            if self._extras is None or self._extras.key != key:
                self._extras = Extras(key, self.make_extras())
            return self._extras
