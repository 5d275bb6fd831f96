"""The append-only journal: one JSON object per line, one line per state serial.

Write-ahead: the line for serial N is appended and fsynced before the state file with serial N is renamed into
place. A crash between the two leaves a line the state never reached; readers ignore lines beyond the state's
serial and the next writer drops them (under the lock), so journal and state always agree. A commit that fails
before its rename (a full disk, ``ulimit -f``, a read-only file system) takes its line back out (`rollback`).

The committed history is never cut: a damaged line (blank, not JSON, no serial) before the line of the state's
serial is kept and reported (`scan` gives its line number), and reading goes on past it. Recovery drops only what
follows the last committed line: lines with a serial beyond the state's, and a torn last line (no newline). A
damaged line there is kept as well (nothing says it was not committed) and reported. A torn last line is a write the
state never reached only while the good lines reach the state's serial: when they stop short of it, the torn line
is committed history damaged after its commit (a disk's damage or a hand's), so it is read like any other line
(an entry if it still is one, else reported), and recovery ends it with a newline instead of cutting it off. A
journal with no good line at all (emptied or rotated by hand) says nothing of its torn line: it is dropped.

A crash test can stop `append` at ``journal.before_write``, ``journal.before_fsync`` and ``journal.after_fsync``
(see crashpoints.py).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from tpufleet.errors import BadInput, BadStateFile
from tpufleet.journalentry import MOVED_FAULTS, JournalEntry
from tpufleet.jsontext import MAX_DEPTH, nested_deeper_than
from tpufleet.state import journalfile, records
from tpufleet.state.crashpoints import reached
from tpufleet.state.delta import in_fleet_order
from tpufleet.state.files import atomic_write, io_error, open_state_file, write_all
from tpufleet.state.journalfile import MAX_LINE_BYTES, Line
from tpufleet.state.lock import shown_command

JOURNAL = "journal.jsonl"
_TAIL = 65536  # the first block read back from the journal's end (its last line; a tail's first lines)

__all__ = [
    "JOURNAL",
    "MAX_LINE_BYTES",
    "MOVED_FAULTS",
    "JournalEntry",
    "append",
    "damaged_lines",
    "encode",
    "last",
    "read",
    "read_back",
    "recover",
    "rollback",
    "scan",
    "scan_back",
    "scan_lines",
]


def encode(entry: JournalEntry) -> bytes:
    """The entry's journal line, without its newline (the same bytes in a state directory and a database)."""
    return json.dumps(records.journal_doc(entry), sort_keys=True, separators=(",", ":")).encode()


def append(path: Path, entry: JournalEntry) -> int:
    """Append one line and fsync it; the journal's size before it (for `rollback`).

    Call under the lock, before the state with this serial is saved. If the line cannot be written whole and made
    durable, it is taken back out and Refused is raised naming the journal: the commit must not go on.
    """
    line = encode(entry) + b"\n"
    try:
        fd = open_state_file(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    except OSError as exc:
        raise io_error("write", path, exc) from None
    try:
        try:
            start = os.fstat(fd).st_size
        except OSError as exc:
            raise io_error("write", path, exc) from None
        try:
            reached("journal.before_write")
            write_all(fd, line)
            reached("journal.before_fsync")
            os.fsync(fd)
            reached("journal.after_fsync")
        except BaseException as exc:  # an interrupt (Ctrl-C, SIGTERM) too: the commit it belonged to is not made
            with contextlib.suppress(OSError):  # no half line left behind (recovery would drop it anyway)
                os.ftruncate(fd, start)
                os.fsync(fd)
            if isinstance(exc, OSError):
                raise io_error("write", path, exc) from None
            raise
    finally:
        os.close(fd)
    return start


def rollback(path: Path, size: int) -> None:
    """Take back the line `append` wrote (the state save after it failed). Best effort: should this fail too,
    the line is beyond the state's serial and the next writer's recovery drops it."""
    with contextlib.suppress(OSError, BadInput):
        fd = open_state_file(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)


def entry_of(line: bytes) -> JournalEntry | None:
    """A journal entry, or None for a damaged line (not JSON, nested deeper than any input tpufleet reads, or not an
    entry: see `JournalEntry.from_doc`). Deep nesting would reach the JSON and YAML writers of `history` and
    `show journal`, whose recursion it exceeds."""
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and nested_deeper_than(line.decode(errors="replace"), MAX_DEPTH):
        return None
    try:
        entry = JournalEntry.from_doc(json.loads(line))
    except (ValueError, RecursionError):
        return None
    if entry is not None and (shown := shown_command(entry.command)) != entry.command:
        entry = replace(entry, command=shown)  # written before commands were recorded so (a password, a lone byte)
    if entry is not None and entry.delta is not None:  # the line's keys are sorted as text, not as the fleet counts
        entry = replace(entry, delta=in_fleet_order(entry.delta))
    return entry


@dataclass
class Scan:
    """The journal read against a state serial."""

    entries: list[JournalEntry] = field(
        default_factory=list
    )  # committed entries (serial <= the state's), in file order
    damaged: list[int] = field(default_factory=list)  # line numbers (from 1) of damaged or out-of-place lines
    committed_end: int = 0  # bytes up to the end of the last committed line (its newline counted, if missing)
    kept: list[tuple[int, int]] = field(default_factory=list)  # damaged lines after it (from, to): kept by recovery
    newline_missing: bool = False  # a torn last line that is committed history: recovery ends it
    beyond: list[int] = field(default_factory=list)  # serials of the entries after the committed range
    high: int = 0  # the highest serial of the committed entries read (kept when `entries` is cut to a tail)

    def keep(self) -> list[tuple[int, int]]:
        """The pieces of the journal `recover` leaves (of the bytes read, followed by the newline
        `newline_missing` says it lacks), adjacent ones joined."""
        out: list[tuple[int, int]] = []
        for low, high in [(0, self.committed_end), *self.kept]:
            if out and out[-1][1] == low:
                out[-1] = (out[-1][0], high)
            elif high > low:
                out.append((low, high))
        return out

    def wanted(self, raw: bytes) -> bytes:
        """The journal `recover` leaves of `raw` (the bytes this scan read)."""
        whole = raw + b"\n" if self.newline_missing else raw
        return b"".join(whole[low:high] for low, high in self.keep())


def scan(raw: bytes, serial: int) -> Scan:
    """`scan_lines` of the journal's bytes."""
    return scan_lines(journalfile.split(raw), serial)


def scan_lines(lines: Iterable[Line], serial: int) -> Scan:
    """Read every line: the committed entries, the damaged lines, and what recovery may drop.

    The committed range ends with the last line whose serial is at most `serial`. Inside it, a line that is not
    an entry, or whose serial is beyond `serial`, is damage (reported, kept, skipped). After it, entries beyond
    `serial` are uncommitted and a last piece without a newline is a torn write: both are silently ignored, and
    dropped by `recover`; a damaged line there is reported and kept. A last piece without a newline after good
    lines that stop short of `serial` is a committed line, read as one (`Scan.newline_missing`). A line longer
    than any commit writes is damaged (its bytes are not read into memory).
    """
    read = [(line.start, line.end, line.newline, _parse_line(line)) for line in lines]
    torn = read.pop() if read and not read[-1][2] else None
    last = _last_committed([entry for *_, entry in read], serial)
    out = Scan()
    reached_serial = read[last][3] if last >= 0 else None
    # (no good line at all: a journal emptied or rotated, then a crash in an append; nothing says it was committed)
    if torn is not None and reached_serial is not None and reached_serial.serial < serial:
        read.append((torn[0], torn[1] + 1, True, torn[3]))  # good lines stop short of the state's: it was committed
        last = _last_committed([entry for *_, entry in read], serial)
        out.newline_missing = True
    for i, (start, end, _, entry) in enumerate(read):
        if i <= last:
            if entry is not None and entry.serial <= serial:
                out.entries.append(entry)
            else:
                out.damaged.append(i + 1)
            out.committed_end = end
        elif entry is None:  # (an entry after the last committed one is beyond the state: recovery drops it)
            out.damaged.append(i + 1)
            out.kept.append((start, end))
        else:
            out.beyond.append(entry.serial)
    out.high = max((e.serial for e in out.entries), default=0)
    return out


def _parse_line(line: Line) -> JournalEntry | None:
    return None if line.text is None else entry_of(line.text)


def _last_committed(parsed: list[JournalEntry | None], serial: int) -> int:
    """The index of the last entry at or below `serial` (-1 for none)."""
    for i in range(len(parsed) - 1, -1, -1):
        entry = parsed[i]
        if entry is not None and entry.serial <= serial:
            return i
    return -1


@contextlib.contextmanager
def _opened(path: Path, flags: int, action: str) -> Iterator[tuple[int, int] | None]:
    """The journal's descriptor and size (None when there is none); an OS error names it."""
    try:
        fd = open_state_file(path, flags)
    except FileNotFoundError:
        yield None
        return
    except OSError as exc:
        raise io_error(action, path, exc) from None
    try:
        yield fd, os.fstat(fd).st_size
    except OSError as exc:
        raise io_error(action, path, exc) from None
    finally:
        os.close(fd)


def read_scan(path: Path, serial: int) -> Scan:
    with _opened(path, os.O_RDONLY, "read") as opened:
        return Scan() if opened is None else scan_lines(journalfile.lines(*opened, drop_nul=True), serial)


Enough = Callable[[list[JournalEntry]], bool]  # whether the committed entries read so far (file order) suffice


def scan_back(raw: bytes, serial: int, enough: Enough, whole: bool) -> Scan | None:
    """`scan` of the journal's last lines `raw` (whole lines; `whole`: the journal's start included): None when
    the entries it holds are not `enough` and more lines precede it.

    Scanning a suffix holding the last committed entry reads its lines exactly as scanning the whole journal does
    (see `scan`); `damaged` is numbered from the suffix's first line.
    """
    return _enough(scan(raw, serial), enough, whole)


def _enough(found: Scan, enough: Enough, whole: bool) -> Scan | None:
    if not whole and not (found.entries and enough(found.entries)):
        return None
    return found


def last(count: int) -> Enough:
    """Enough once `count` entries are read."""
    return lambda entries: len(entries) >= count


def whole_from_first(entries: list[JournalEntry]) -> bool:
    """Whether the entries read hold every serial from the first one read to the highest: a line copied by hand
    or left out of order, read first, must not stop a reading back that has yet to reach the serials before it
    (where a serial is missing, a damaged line, the reading goes on to the journal's start)."""
    low, high = entries[0].serial, max(e.serial for e in entries)
    return len({e.serial for e in entries if e.serial >= low}) == high - low + 1


def read_back(path: Path, serial: int, enough: Enough) -> Scan:
    """The journal's committed entries read backwards from its end, until they are `enough` (or the journal is
    read whole), so that the latest changes of years of history cost what they show. `damaged` names the damaged
    lines among those read only, numbered from the journal's first line. Nothing is written (the `committed_end`
    is not the file's)."""
    with _opened(path, os.O_RDONLY, "read") as opened:
        if opened is None:
            return Scan()
        fd, size = opened
        read: list[Line] = []
        block = _TAIL
        for line in journalfile.lines_back(fd, size, drop_nul=True):
            if line.start < size - block:  # the lines read are the last `block` bytes' whole lines: enough?
                found = _enough(scan_lines(reversed(read), serial), enough, whole=False) if read else None
                if found is not None:
                    if found.damaged:
                        before = journalfile.newlines_before(fd, read[-1].start)
                        found.damaged = [n + before for n in found.damaged]
                    return found
                while line.start < size - block:
                    block *= 2
            read.append(line)
        return scan_lines(reversed(read), serial)


def read(path: Path, serial: int) -> list[JournalEntry]:
    """The committed entries: every good line up to the state's `serial`, past any damaged one."""
    return read_scan(path, serial).entries


def damaged_lines(path: Path, serial: int) -> list[int]:
    """Line numbers (from 1) of the journal's damaged lines (see `scan`); empty for a sound journal."""
    return read_scan(path, serial).damaged


def recover(path: Path, serial: int, replacing: bool = False) -> None:
    """Drop what the state never committed: lines beyond `serial` after the last committed one, a torn last line.

    `replacing`: the journal is about to be replaced by another history (`state pull`), so more entries beyond
    `serial` than a crash leaves are dropped too (an earlier pull killed between its journal and its state).

    Call under the lock. Lines inside the committed range are never removed, damaged or not (see `scan`). The
    journal is read in bounded pieces (see journalfile.py): a tail of gigabytes of NULs is a torn line.
    """
    with _opened(path, os.O_RDWR, "write") as opened:
        if opened is None:
            return
        fd, size = opened
        if size == 0 or _ends_committed(fd, size, serial):
            return  # the common case: the journal ends with a committed line
        found = scan_lines(journalfile.lines(fd, size, drop_nul=True), serial)
        if not replacing:  # (a pull replaces the whole history with the source's, once this one is its start)
            _refuse_lost_history(path, serial, found.beyond)
        keep = found.keep()
        if len(keep) > 1:  # damaged lines kept after the committed ones, entries between them dropped
            atomic_write(path, journalfile.copier(fd, size, keep))
        else:
            _resize(fd, path, size, keep[0][1] if keep else 0)


def _ends_committed(fd: int, size: int, serial: int) -> bool:
    """Whether the journal's last line is a committed entry (then recovery has nothing to drop)."""
    if os.pread(fd, 1, size - 1) != b"\n":
        return False
    line = _last_line(fd, size)
    entry = None if line is None else entry_of(line)
    return entry is not None and entry.serial <= serial


def _last_line(fd: int, size: int) -> bytes | None:
    """The journal's last line (its newline at `size` - 1), read back from its end in growing blocks: a long line
    a commit wrote (a large `import k8s` delta) costs its own bytes, not the whole journal's scan. None for a line
    no commit writes, longer than `MAX_LINE_BYTES` or holding a NUL (a zero-filled tail, not read through)."""
    end = low = size - 1
    parts: list[bytes] = []
    block = _TAIL
    while low > 0 and end - low <= MAX_LINE_BYTES:
        start = max(0, low - block)
        chunk = os.pread(fd, low - start, start)
        if len(chunk) < low - start:
            return None  # cut shorter while being read: the full scan sees what is left
        cut = chunk.rfind(b"\n")
        piece = chunk[cut + 1 :]
        if b"\0" in piece:
            return None
        parts.append(piece)
        if cut >= 0:
            break
        low, block = start, min(2 * block, journalfile.PIECE)
    line = b"".join(reversed(parts))
    return line if len(line) <= MAX_LINE_BYTES else None


def _refuse_lost_history(path: Path, serial: int, beyond: list[int]) -> None:
    """BadStateFile when the journal holds more entries beyond the state's serial than a crash leaves (one: the
    change being committed): the state file is older than its journal (put back from a backup, say), and dropping
    them would lose committed history and hand their serials and fault ids out again."""
    if len(beyond) > 1:
        raise BadStateFile(
            str(path),
            "serial",
            max(beyond),
            f"{len(beyond)} entries are beyond the state's serial {serial}, where a crash leaves at most one: the "
            "state file is older than its journal (restored from a backup?); nothing was changed. Put back the state "
            "file of the journal's last serial, or move the journal aside to start a new history",
        )


def _resize(fd: int, path: Path, size: int, wanted: int) -> None:
    """Cut the journal to `wanted` bytes, or end its committed torn line with the newline it lacks (`wanted` is
    `size` + 1)."""
    if wanted == size:
        return  # nothing to drop
    try:
        if wanted < size:
            os.ftruncate(fd, wanted)
        else:
            os.pwrite(fd, b"\n", size)
        os.fsync(fd)
    except OSError as exc:
        raise io_error("write", path, exc) from None
