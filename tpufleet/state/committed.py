"""The serials this process has committed, for the shell to say whether a command changed the state when its
output cannot be written afterwards (a full disk): the change stands, or there was none.

A command runs in one process, but in-process callers (the tests) run several: `tpufleet.cli.main` empties the
list before each command."""

from __future__ import annotations

SERIALS: list[int] = []
