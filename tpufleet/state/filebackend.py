"""The state directory as a backend (see store.py for its layout): files, an flock, fsync and renames. A commit
appends and fsyncs the journal line, then renames the new state file into place (the commit point); routing tables
are written under a temporary name first and swapped in, or deleted, only after that rename."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tpufleet.errors import NO_VALUE, BadStateFile, Refused
from tpufleet.heldsignals import stops_held
from tpufleet.journalentry import JournalEntry
from tpufleet.jsontext import MAX_STATE_BYTES
from tpufleet.state import journal
from tpufleet.state.backend import near_state_dir, no_fleet_state, not_a_state_dir
from tpufleet.state.committed import SERIALS, side_file_failed
from tpufleet.state.crashpoints import reached
from tpufleet.state.files import (
    check_subdir,
    ensure_private_dir,
    ensure_private_subdir,
    error_reason,
    install,
    read_state_file,
    safe_child,
    sync_parent,
    write_temp,
)
from tpufleet.state.lock import LOCK, LOCK_INFO, exclusive, lock_lost
from tpufleet.state.paths import missing_dirs, remove_empty_dirs
from tpufleet.state.sidedirs import check_state_dirs, share_with_group, table_names, unlink_tables
from tpufleet.state.wholetables import WholeTables, data_digest

if TYPE_CHECKING:
    from tpufleet.fleetstate import RouteRecord
    from tpufleet.state.routetables import StoredTables
    from tpufleet.state.tablecache import TableCache
    from tpufleet.state.tablesindex import IndexedAs

STATE_FILE = "state.json"
ROUTES_DIR = "routes"
TABLE_SUFFIX = ".npz"  # a slice's tables: routes/NAME.npz


def _stat_key(path: Path) -> tuple[int, int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0, 0)  # missing or unreadable: the load says why
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def _entry_key(entry: os.DirEntry[str]) -> tuple[str, int, int, int, int]:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return (entry.name, 0, 0, 0, 0)  # gone meanwhile: the next request sees it gone
    return (entry.name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class DirectoryBackend:
    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir

    @property
    def where(self) -> str:
        return str(self.dir)

    @property
    def state_path(self) -> Path:
        return self.dir / STATE_FILE

    @property
    def journal_path(self) -> Path:
        return self.dir / journal.JOURNAL

    @property
    def routes_dir(self) -> Path:
        return self.dir / ROUTES_DIR

    @property
    def state_label(self) -> str:
        return str(self.state_path)

    @property
    def damaged_hint(self) -> str:
        from tpufleet.state.schema import DAMAGED_STATE_HINT

        return DAMAGED_STATE_HINT

    @property
    def journal_label(self) -> str:
        return str(self.journal_path)

    def exists(self) -> bool:
        return os.path.lexists(self.state_path)

    def change_key(self) -> tuple[tuple[int, int, int, int], tuple[tuple[str, int, int, int, int], ...]]:
        """The state file's device, inode, mtime and size (a commit renames a new file into place), and the names
        in the routes directory with each one's inode, size, mtime and change time (a table swapped in after the
        commit, a file removed by hand, or another file copied over one, its change time set even when its times
        were copied too): a stat and a listing of tens of names, so what says a table missing is read again."""
        try:
            with os.scandir(self.routes_dir) as entries:
                tables = tuple(sorted(_entry_key(e) for e in entries))
        except OSError:
            tables = ()  # no routes directory (no tables yet), or unreadable: the read of a table says why
        return (_stat_key(self.state_path), tables)

    def no_state(self) -> Refused:
        refused = no_fleet_state(self.dir)
        near = near_state_dir(self.dir)
        return Refused(f"{refused}; did you mean --state {near}?") if near else refused

    def read_state(self) -> bytes:
        path = self.state_path
        try:
            raw = read_state_file(path, MAX_STATE_BYTES)
        except FileNotFoundError:
            raise self.no_state() from None
        except NotADirectoryError:
            raise not_a_state_dir(self.dir) from None
        except OSError as exc:
            raise BadStateFile(str(path), "", NO_VALUE, f"cannot be read: {exc.strerror or exc}") from None
        if len(raw) > MAX_STATE_BYTES:  # read no further than the limit: a huge or sparse file is not read whole
            with contextlib.suppress(OSError):
                raise BadStateFile(
                    str(path), "", os.lstat(path).st_size, f"is over the {MAX_STATE_BYTES}-byte limit of a state file"
                )
        return raw

    def read_journal(self, serial: int) -> journal.Scan:
        return journal.read_scan(self.journal_path, serial)

    def read_journal_back(self, serial: int, enough: journal.Enough) -> journal.Scan:
        return journal.read_back(self.journal_path, serial, enough)

    def table_place(self, name: str) -> Path:
        """The tables' file (the name is checked so it cannot leave the directory; `routes/` must be a real
        directory, not a symlink)."""
        check_subdir(self.routes_dir)
        return safe_child(self.routes_dir, name, TABLE_SUFFIX)

    def stored_tables(self, name: str) -> StoredTables:
        from tpufleet.state.routetables import StoredTables

        return StoredTables(name, self.table_place(name))

    def tables_present(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        from tpufleet.state.tablesindex import files_holding_indexed

        return files_holding_indexed(self.table_place, indexed, WholeTables(self.dir))

    def tables_waiting(self, indexed: Mapping[str, RouteRecord]) -> set[str]:
        from tpufleet.state.routetables import StoredTables
        from tpufleet.state.temps import temp_owners

        by_file = {self.table_place(name).name: name for name in indexed}
        with_temps = {by_file[f] for f in temp_owners(self.routes_dir) if f in by_file}
        return {n for n in with_temps if StoredTables(n, self.table_place(n)).waiting(indexed[n])}

    def table_cache(self) -> TableCache:
        from tpufleet.state.tablecache import TableCache

        return TableCache(self.dir)

    @contextmanager
    def writing(self, timeout: float, command: str, create: bool = True) -> Iterator[DirectoryWriter]:
        """The directory exists (made when `create`), is ours and nobody else can write it; then the lock. The
        files beside the state are swapped in (or their temps discarded) before the lock is released."""
        if not create:  # no directory, no lock files left behind in a new one (other errors: said below)
            try:
                os.lstat(self.dir)
            except FileNotFoundError:
                raise self.no_state() from None
            except OSError:
                pass
            # nor in an empty one: refused as under the lock. One with a lock file waits for it: an `init` under
            # way there holds it, and its state is what this change reads once the lock is released.
            if os.path.isdir(self.dir) and not self.exists() and not os.path.lexists(self.dir / LOCK):
                raise self.no_state()
        if os.path.isfile(self.dir):  # `--state DIR/state.json`: the refusal says what to pass instead
            raise not_a_state_dir(self.dir)
        made = missing_dirs(self.dir)
        share_with_group(self.dir)  # before the directory is opened to the group: its contents too
        ensure_private_dir(self.dir)
        check_state_dirs(self.dir, self.routes_dir)
        emptied = False
        try:
            with exclusive(self.dir, timeout, command) as held:
                writer = DirectoryWriter(self, held)
                try:
                    yield writer
                finally:
                    with stops_held() if writer.committed else contextlib.nullcontext():
                        writer.finish_side_files()
                    # a directory this command made and wrote nothing into (a pull refused or timed out on the
                    # database's lock): its lock files removed while it is held, the directories after
                    emptied = bool(made) and not writer.committed and _lock_files_removed(self.dir)
        finally:
            if emptied:
                remove_empty_dirs(made)


def _lock_files_removed(state_dir: Path) -> bool:
    """Remove the lock files (and an empty `routes/`) of a directory holding nothing else; whether it was so. A
    command waiting for the lock finds its file gone and takes a new one (filelock checks the file it locked)."""
    try:
        names = set(os.listdir(state_dir))
        if names - {LOCK, LOCK_INFO, ROUTES_DIR}:
            return False
        if ROUTES_DIR in names:
            os.rmdir(state_dir / ROUTES_DIR)
        for name in (LOCK_INFO, LOCK):
            (state_dir / name).unlink(missing_ok=True)
    except OSError:
        return False
    return True


class DirectoryWriter:
    def __init__(self, backend: DirectoryBackend, lock_held: Callable[[], bool] = lambda: True) -> None:
        self.backend, self.lock_held = backend, lock_held
        self.committed = False
        self.read_key: tuple[int, int, int, int] | None = None  # the state file as read: the one `commit` replaces
        # Files beside the state that change with it: (final path, durable temp file holding the new content, or
        # None to delete). They are swapped in only after the state's rename, so a failed commit leaves them as
        # they were.
        self.side_files: list[tuple[Path, str | None]] = []
        # temps of tables a writer killed before its commit left (`_uncommitted_temps`): deleted after this commit
        self.leftover_temps: list[Path] = []
        self.tables_written: list[str] = []  # their SHA-256: remembered whole (`wholetables`) once in place

    def exists(self) -> bool:
        return self.backend.exists()

    def read_state(self) -> bytes:
        self.read_key = _stat_key(self.backend.state_path)
        return self.backend.read_state()

    def recover(self, serial: int, replacing: bool = False) -> None:
        journal.recover(self.backend.journal_path, serial, replacing)

    def install_interrupted_tables(self, made: Mapping[str, IndexedAs]) -> list[str]:
        """A writer killed between its state's rename and its tables' leaves the committed tables in a temp file
        (`tablesindex.waiting_tables`): rename them in now (complete and fsynced: written before the commit).
        One killed there by `release` or `init --force` leaves tables its state no longer indexes: delete them (the
        tables of the slice their name gives: another file there, a copy kept under another name, is not ours).
        Other dead temps are left to `remove_stale_temps`. Costs a directory listing. Tables that cannot be renamed
        in (a directory in their place) stay waiting: no writer is stopped by what stands in `routes/`. `routes/`
        itself a symbolic link or a file: BadInput (exit 2) before anything is written, as every reader of tables
        refuses it (a writer that touched no table committed on it)."""
        routes = self.backend.routes_dir
        if not check_subdir(routes):
            return []
        from tpufleet.state.tablesindex import tables_of

        names = os.listdir(routes)
        orphans = [
            n
            for n in names
            if n.endswith(TABLE_SUFFIX)
            and (slice_name := n[: -len(TABLE_SUFFIX)]) not in made
            and tables_of(routes / n) == slice_name  # a copy under another name (a backup) is the operator's
        ]
        for name in orphans:
            with contextlib.suppress(OSError):  # (unreadable: it stays, and names itself if read)
                unlink_tables(routes / name)
        installed = []
        if any(n.endswith(".tmp") for n in names):
            installed = self._install_waiting(made)
            self.leftover_temps = self._uncommitted_temps(made)
        if installed or orphans:
            sync_parent(routes / (orphans[0] if orphans else installed[0] + TABLE_SUFFIX))
        return installed

    def _install_waiting(self, made: Mapping[str, IndexedAs]) -> list[str]:
        from tpufleet.state.tablesindex import waiting_tables

        installed = []
        for name, entry in sorted(made.items()):
            path = self.backend.table_place(name)
            waiting = waiting_tables(path, entry)
            if waiting is None:
                continue
            try:
                os.replace(waiting, path)
            except OSError:  # a directory put where they belong, say: they wait (shown missing), the command goes on
                continue
            installed.append(name)
        return installed

    def _uncommitted_temps(self, made: Mapping[str, IndexedAs]) -> list[Path]:
        """The temps of tables a dead writer made and never committed (no index entry names them); not the waiting
        tables that could not be renamed in."""
        from tpufleet.state.tablesindex import waiting_tables
        from tpufleet.state.temps import dead_temps, temp_owners

        found = []
        for owner in sorted(temp_owners(self.backend.routes_dir)):
            name, path = owner[: -len(TABLE_SUFFIX)], self.backend.routes_dir / owner
            if owner.endswith(TABLE_SUFFIX):
                waiting = waiting_tables(path, made[name]) if name in made else None
                found += [temp for temp in dead_temps(path) if temp != waiting]
        return found

    def journal_serial(self) -> int:
        """After `init` over a lost state file, keep numbering where the journal stopped (`initserial`)."""
        from tpufleet.state.initserial import journal_serial

        return journal_serial(self.backend.journal_path)

    def last_serial(self) -> int:
        try:
            serial = json.loads(read_state_file(self.backend.state_path, MAX_STATE_BYTES))["serial"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return self.journal_serial()
        if type(serial) is not int or serial < 0:
            return self.journal_serial()
        journal.recover(self.backend.journal_path, serial)
        return serial

    def save_tables(self, name: str, data: bytes) -> Path:
        """Written now under a temporary name (so a full disk refuses the command before anything is committed),
        renamed into place only once the state is."""
        ensure_private_subdir(self.backend.routes_dir)
        path = self.backend.table_place(name)
        self.side_files.append((path, write_temp(path, data)))
        self.tables_written.append(data_digest(data))
        return path

    def delete_tables(self, name: str) -> None:
        if check_subdir(self.backend.routes_dir):
            self.side_files.append((self.backend.table_place(name), None))

    def stored_table_names(self) -> list[str]:
        return table_names(self.backend.routes_dir, TABLE_SUFFIX)

    def commit(self, entry: JournalEntry, data: bytes) -> None:
        """Journal line first (durable), then the state file renamed into place. Should anything fail before the
        rename, the line is taken back out and the error names the file; an interrupt just after it lets the
        command finish, committed. (Under the lock nobody else writes: the state read is still the file's.)"""
        path = self.backend.state_path
        if not self.lock_held() or self.read_key not in (None, _stat_key(path)):  # its `.lock` removed meanwhile
            raise lock_lost(self.backend.dir)
        size = journal.append(self.backend.journal_path, entry)
        renamed = None  # what the state file is once renamed: the temp file's identity
        try:
            tmp = write_temp(path, data)
            renamed = _stat_key(Path(tmp))
            install(tmp, path)
        except KeyboardInterrupt:
            if renamed is None or renamed[1] == 0 or _stat_key(path) != renamed:
                journal.rollback(self.backend.journal_path, size)
                raise
        except BaseException:
            journal.rollback(self.backend.journal_path, size)
            raise
        self.committed = True  # the state file is renamed into place: the files beside it follow
        SERIALS.append(entry.serial)  # said so should an interrupt come from here on
        sync_parent(path)

    def finish_side_files(self) -> None:
        """After the state's commit: swap in or delete the files beside it. Without a commit: discard the temps."""
        committed = self.committed
        if committed:
            reached("transaction.before_side_files")
        for path, tmp in self.side_files:
            try:
                if tmp is None:
                    if committed:
                        unlink_tables(path)
                elif committed:
                    os.replace(tmp, path)
                else:
                    os.unlink(tmp)
            except OSError as exc:
                if committed:  # the state is committed: say so, and which file is behind it
                    raise Refused(side_file_failed(path, tmp is None, error_reason(exc))) from None
        if committed and self.side_files:
            sync_parent(self.side_files[0][0])
            WholeTables(self.backend.dir).remember(self.tables_written)  # made whole here, and in place now
        for temp in self.leftover_temps if committed else []:
            with contextlib.suppress(OSError):  # (another's file: it stays)
                unlink_tables(temp)
