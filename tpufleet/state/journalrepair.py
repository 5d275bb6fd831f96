"""A pull's repair of a directory's damaged journal lines, and keeping a damaged file beside what replaces it.

A directory whose journal has damaged lines (not an entry: garbage, cut short) where the database has good lines,
and whose every line that reads is the database's line at that place, holds the database's history with lines
damaged: the pull replaces its journal with the database's, keeping the damaged one beside it as
`journal.jsonl.damaged-SERIAL`, as it keeps a damaged state file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tpufleet.errors import Refused
from tpufleet.state import journal
from tpufleet.state.files import io_error, sync_parent


def repairable(held: Sequence[bytes | None], source: list[bytes]) -> bool:
    """Whether the directory's journal lines `held` are the start of `source` but for damaged lines, each at a
    place where `source` has a good line (and at least one such line: else there is nothing to repair). None: a
    line longer than any commit writes (damaged)."""
    if len(held) > len(source) or held == source[: len(held)]:
        return False
    return all(
        mine == theirs or ((mine is None or journal.entry_of(mine) is None) and journal.entry_of(theirs) is not None)
        for mine, theirs in zip(held, source, strict=False)
    )


def keep_beside(path: Path, serial: int, where: str) -> str:
    """Keep the file at `path` beside it, under a name of its own (`NAME.damaged-SERIAL`), before it is replaced:
    a second name for the same file, nothing copied (and none more when a pull killed before its state file kept
    it already)."""
    for n in range(1000):
        kept = path.with_name(f"{path.name}.damaged-{serial}" + (f".{n}" if n else ""))
        try:
            os.link(path, kept, follow_symlinks=False)
        except FileExistsError:
            if os.path.samefile(path, kept):  # kept by a pull killed before its state file
                return str(kept)
            continue
        except OSError as exc:
            raise io_error("keep", kept, exc) from None
        sync_parent(kept)
        return str(kept)
    raise Refused(f"{where} holds 1000 damaged {path.name} files kept already; nothing was moved")
