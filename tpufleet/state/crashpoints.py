"""Named points in the write protocol where a test can kill the process, to prove crash safety deterministically.

`reached(name)` does nothing unless the environment variable ``TPUFLEET_CRASH_AT`` names that point: then the
process sends itself SIGKILL right there (no cleanup, no flush, no `finally`: as a power cut would leave it,
minus the page cache). ``TPUFLEET_CRASH_AT=NAME:N`` kills at the N-th time the point is reached (from 1).
Unset, the cost is one environment lookup per call. ``TPUFLEET_CRASH_SIGNAL=TERM`` (or HUP, INT) sends that
signal instead of SIGKILL: the stop an operator's `kill`, `timeout` or a closed terminal sends, which the command
is to clean up after.

The points, in the order a commit reaches them (`Store` appends the journal line, then replaces the state file
through `files.write_temp`, `files.install` and `files.sync_parent`, the three steps of `files.atomic_write`):

=================================  ================================================================
``journal.before_write``           journal.append: the line is not written yet
``journal.before_fsync``           journal.append: the line is written (page cache), not fsynced
``journal.after_fsync``            journal.append: the line is durable
``atomic_write.before_fsync``      files.atomic_write: the temp file is written, not fsynced
``atomic_write.before_rename``     files.atomic_write: the temp file is durable, not renamed over the target
``atomic_write.before_dir_fsync``  files.atomic_write: renamed (the new file is visible), directory not fsynced
``transaction.before_side_files``  Store.transaction: the state is committed; the files beside it (routing
                                   tables) are not yet swapped in or deleted
=================================  ================================================================

Outside the commit protocol: ``sweep.after_point`` (a sweep's finished point file is written,
tpufleet/state/sweepstore.py), for the resume tests.

>>> reached("journal.before_write")  # no TPUFLEET_CRASH_AT in the environment: nothing happens
"""

from __future__ import annotations

import os
import signal

ENV = "TPUFLEET_CRASH_AT"
SIGNAL_ENV = "TPUFLEET_CRASH_SIGNAL"

POINTS = (
    "journal.before_write",
    "journal.before_fsync",
    "journal.after_fsync",
    "atomic_write.before_fsync",
    "atomic_write.before_rename",
    "atomic_write.before_dir_fsync",
    "transaction.before_side_files",
)

_seen: dict[str, int] = {}


def reached(name: str) -> None:
    """Kill this process with SIGKILL (or ``$TPUFLEET_CRASH_SIGNAL``) if ``$TPUFLEET_CRASH_AT`` is `name` (or `name:N`
    and this is the N-th time)."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    target, _, nth = spec.partition(":")
    if target != name:
        return
    count = _seen[name] = _seen.get(name, 0) + 1
    if count == (int(nth) if nth else 1):
        named = signal.Signals.__members__.get(f"SIG{os.environ.get(SIGNAL_ENV, 'KILL')}")
        os.kill(os.getpid(), named or signal.SIGKILL)  # a name no signal has: the crash, as without it
