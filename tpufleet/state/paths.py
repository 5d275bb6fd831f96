"""Paths an operator names, made usable or refused in one line: `~user` expanded, a symbolic link to nothing named."""

from __future__ import annotations

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
            return f"{part} is a symbolic link to {os.readlink(part)}, which does not exist"
    return None


def hard_linked(path: Path | str, links: int) -> BadInput:
    """The refusal of a state file with other names: writing it would change them too."""
    import shlex

    name, copy = shlex.quote(str(path)), shlex.quote(f"{path}.copy")
    return BadInput(
        f"{path} is a hard link ({links} names for one file): writing it would change the file under its other "
        f"names too; give it a copy of its own: cp -p {name} {copy} && mv {copy} {name}"
    )
