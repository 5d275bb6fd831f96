"""The serials this process has committed, for the shell to say whether a command changed the state when its
output cannot be written afterwards (a full disk): the change stands, or there was none.

A command runs in one process, but in-process callers (the tests) run several: `tpufleet.cli.main` empties the
list before each command."""

from __future__ import annotations

SERIALS: list[int] = []


def side_file_failed(path: object, deleting: bool, reason: str) -> str:
    """The message for a file beside the state (routing tables) that could not be swapped in or deleted after the
    state's commit: the change stands, so it says so (lest the command be run again, a second commit, or be taken
    for undone) and that the next command that changes the state tries again."""
    done = f"its change is committed as serial {SERIALS[-1]}" if SERIALS else "the state's change is committed"
    then = "deletes them" if deleting else "renames them in"
    return (
        f"cannot {'delete' if deleting else 'write'} {path}: {reason} ({done}: `tpufleet history` shows it; the "
        f"next command that changes the state {then})"
    )
