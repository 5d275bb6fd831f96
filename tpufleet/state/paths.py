"""Paths made usable or refused in one line: `~user` expanded, a symbolic link to nothing named, a state file with
other names (hard links) refused, directories made and removed again."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from tpufleet.errors import BadInput


def expanded(text: str, what: str) -> Path:
    """`text` with a leading `~` or `~user` expanded; a user with no home directory is bad input naming `what`
    (the option, variable or key that gave it), not an internal error.

    >>> str(expanded("/srv/fleet", "--state"))
    '/srv/fleet'
    """
    try:
        return Path(text).expanduser()
    except RuntimeError:  # `~nosuchuser`, or `~` with no HOME and no passwd entry
        raise BadInput(f"bad {what} {text!r}: its ~ names no user with a home directory") from None


def dangling_link(path: Path) -> str | None:
    """Which part of `path` is a symbolic link to nothing (an unmounted volume behind it), said for the operator;
    None when there is none."""
    for part in [*reversed(path.parents), path]:
        if part.is_symlink() and not part.exists():
            said = "which loops" if _loops(part) else "which does not exist"
            return f"{part} is a symbolic link to {os.readlink(part)}, {said}"
    return None


def hard_linked(path: Path | str, links: int) -> BadInput:
    """The refusal of a state file with other names: writing it would change them too."""
    import shlex

    name, copy = shlex.quote(str(path)), shlex.quote(f"{path}.copy")
    return BadInput(
        f"{path} is a hard link ({links} names for one file): writing it would change the file under its other "
        f"names too; give it a copy of its own: cp -p {name} {copy} && mv {copy} {name}"
    )


def missing_dirs(path: Path) -> list[Path]:
    """The directories making `path` would make: it and its missing parents, innermost first."""
    missing = []
    while not os.path.lexists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def remove_empty_dirs(dirs: list[Path]) -> None:
    """Remove the directories, innermost first, as long as each is empty."""
    for path in dirs:
        try:
            os.rmdir(path)
        except OSError:
            return


def _loops(link: Path) -> bool:
    try:
        os.stat(link)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False
