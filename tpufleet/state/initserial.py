"""Where `init` numbers from over a directory without a (readable) state file: the serial the journal stopped at.

A journal whose last line is an `init` with no state behind it is what an `init` killed after its journal line
leaves (`journal.after_fsync`): its fleet was never committed, so that line is dropped as every writer drops a
crash's line beyond the state, and the new `init` takes its serial. An `init --force` that retired faults keeps its
line (those faults' records are in it only).
"""

from __future__ import annotations

from pathlib import Path

from tpufleet.journalentry import JournalEntry
from tpufleet.state import journal


def journal_serial(path: Path) -> int:
    """The serial the journal stopped at, past a dead `init`'s line, which is dropped (with a torn last line)."""
    entries = journal.read(path, 1 << 62)
    serial = max((e.serial for e in entries), default=0)
    if entries and entries[-1].serial == serial and _dead_init(entries[-1]):
        serial -= 1
    journal.recover(path, serial)
    return serial


def _dead_init(entry: JournalEntry) -> bool:
    """An `init`'s line that holds nothing but its own fleet's creation."""
    return entry.new_fleet and not entry.moved_faults
