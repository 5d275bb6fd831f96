"""An ml-goodput-measurement file's entries, read as columns (`mlfast`), turned into events as the standard
importer (`mlgoodput.read`) adds them: each entry's events in its key order, a job's entries in file order,
checkpoint-logger entries without a job name adopted by the file's only job, ``job_metadata`` entries as job
records (pure)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

from tpufleet.goodput.eventrecords import add_record
from tpufleet.goodput.events import CODE, MAX_TEXT, Job, Log
from tpufleet.goodput.fastread import Batch
from tpufleet.goodput.mlgoodput import PHASE_TIMES

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np
    import numpy.typing as npt

    from tpufleet.collectives.profile import Profile

    Ints = npt.NDArray[np.int64]

try:
    import msgspec  # type: ignore[import-not-found, unused-ignore]

    _U: Any = msgspec.UNSET
except ImportError:  # only `mlfast` calls here, and only when msgspec is installed
    _U = None

__all__ = ["CHECKPOINT_KEYS", "STEP_SLOT", "TIMES", "Columns", "staged", "with_events"]

# The time keys in the order an entry's events are added (`mlgoodput._entry`), then its checkpoint pair.
TIMES = (
    ("job_start_time", "job_start"),
    ("job_end_time", "job_end"),
    ("step_start_time", "step_start"),
    *PHASE_TIMES,
)
STEP_SLOT = 2
CHECKPOINT_KEYS = (
    "step",
    "checkpoint_manager_blocking_start_time",
    "checkpoint_manager_start_time",
    "checkpoint_manager_blocking_duration_secs",
    "checkpoint_manager_duration_secs",
)


class Columns(NamedTuple):
    """A file's entries as columns: each entry's job (an index into `names`, first seen first; UNSET among
    them for an entry without one), per time key its entries and times, the step numbers of the step starts,
    and the checkpoint-logger and ``job_metadata`` entries themselves (few)."""

    job: Ints
    names: list[Any]
    times: list[tuple[Ints, Any]]
    steps: Ints
    special: list[tuple[int, Any]]


def staged(c: Columns, file: str, profiles: Mapping[str, Profile]) -> tuple[Batch, list[Job]] | None:
    """Every entry's events as a Batch in job order (entry order within a job, each entry's in the importer's
    order, checkpoint entries without a job name last: the importer adopts them once the file is read), and the
    job records of the ``job_metadata`` entries in order; None if one fails a check. The events are placed
    straight where they go (an entry's few in its key order), with no sort."""
    import numpy as np

    n = len(c.job)
    adopted = _adopted(c)
    if adopted is None:
        return None
    job, names, final = adopted
    metadata: list[Job] = []
    found: Found = []
    for k, ((rows, seconds), (_key, name)) in enumerate(zip(c.times, TIMES, strict=True)):
        numbers = c.steps if k == STEP_SLOT else np.full(len(rows), -1, dtype=np.int64)
        found.append((rows, seconds, np.full(len(rows), CODE[name], dtype=np.int8), numbers))
    if c.special:
        jobs = [names[j] for j in job[[i for i, _ in c.special]].tolist()]
        checkpoints = _special(c.special, jobs, file, metadata, profiles)
        if checkpoints is None:
            return None
        found += checkpoints
    rank = np.empty(n, dtype=np.int64)
    rank[final] = np.arange(n)
    counts = np.zeros(n, dtype=np.int64)
    for where, *_ in found:
        counts[rank[where]] += 1
    offsets = np.concatenate(([0], np.cumsum(counts)))
    total = int(offsets[-1])
    t, code, step = np.empty(total), np.empty(total, dtype=np.int8), np.empty(total, dtype=np.int64)
    filled = offsets[:-1].copy()
    for where, seconds, codes, numbers in found:  # in key order: each entry's events in the importer's order
        at = filled[rank[where]]
        t[at], code[at], step[at] = seconds, codes, numbers
        filled[rank[where]] += 1
    per_job = np.concatenate(([0], np.cumsum(np.bincount(job, minlength=len(names)))))
    batch = Batch(names, offsets[per_job], t, code, step, np.full(total, -1, dtype=np.int64), {})
    return batch, metadata


Found = list[tuple[Any, Any, Any, Any]]  # per key: (entry rows, times, event codes, step numbers)


def _adopted(c: Columns) -> tuple[Ints, list[str], Ints] | None:
    """Each entry's job (an index into the names), the names (first seen first), and the order the entries'
    events are added in (by job; a checkpoint entry without a job name is the file's only job's, added last,
    as the importer adopts it); None if a name is missing or too long, or an entry cannot be adopted."""
    import numpy as np

    if _U not in c.names:
        if "" in c.names or max(map(len, c.names)) > MAX_TEXT:
            return None
        final = np.arange(len(c.job)) if len(c.names) == 1 else np.argsort(c.job, kind="stable")
        return c.job, c.names, final
    unset = c.names.index(_U)
    orphans = np.flatnonzero(c.job == unset)
    named = [x for x in c.names if x is not _U]
    kinds = dict(c.special)
    if len(named) != 1 or not named[0] or len(named[0]) > MAX_TEXT:
        return None  # not adopted: the importer's error
    if any(kinds.get(i) is None or kinds[i].event_type in (_U, None) for i in orphans.tolist()):
        return None  # an entry without a name that is not a checkpoint entry: the importer's error
    final = np.concatenate((np.flatnonzero(c.job != unset), orphans))
    return np.zeros(len(c.job), dtype=np.int64), named, final


def with_events(b: Batch) -> Batch:
    """The batch without the jobs it holds no event of (an entry may add none: the job is known, not stepped)."""
    import numpy as np

    keep = np.diff(b.bounds) > 0
    if keep.all():
        return b
    bounds = np.append(b.bounds[:-1][keep], b.bounds[-1])
    return b._replace(jobs=[j for j, k in zip(b.jobs, keep.tolist(), strict=True) if k], bounds=bounds)


def _special(
    entries: list[tuple[int, Any]], jobs: list[str], file: str, metadata: list[Job], profiles: Mapping[str, Profile]
) -> Found | None:
    """Checkpoint-logger entries' two events (start, end) and the job records of ``job_metadata`` entries, each
    judged by the standard importer; None if one is adopted or has times beside its metadata (the standard
    reader's to judge), or is bad (BadRecord raised)."""
    import numpy as np

    from tpufleet.goodput.mlgoodput import CHECKPOINT_OPERATIONS, _checkpoint

    pairs: list[tuple[int, float, int, int, float, int]] = []
    for (i, e), job in zip(entries, jobs, strict=True):
        meta, kind = e.job_metadata, e.event_type
        if meta is not _U:
            if not isinstance(meta, dict) or not _only_metadata(e) or e.job_name is _U:
                return None
            scratch = Log(step_profiles=profiles)
            add_record(scratch, {**meta, "type": "job", "job": job}, file, i + 1)  # (row i is line i + 1)
            metadata.append(scratch.jobs[job])
            continue
        if kind is _U or kind is None or kind not in CHECKPOINT_OPERATIONS:
            continue
        fields = {k: v for k in CHECKPOINT_KEYS if (v := getattr(e, k)) is not _U}
        (start, a, number, _), (end, b, _, _) = _checkpoint(fields, str(kind), file, 0)
        pairs.append((i, start, a, number, end, b))
    if not pairs:
        return []
    where = np.array([p[0] for p in pairs], dtype=np.int64)
    numbers = np.array([p[3] for p in pairs], dtype=np.int64)
    return [
        (where, np.array([p[1] for p in pairs]), np.array([p[2] for p in pairs], dtype=np.int8), numbers),
        (where, np.array([p[4] for p in pairs]), np.array([p[5] for p in pairs], dtype=np.int8), numbers),
    ]


def _only_metadata(e: Any) -> bool:
    """A ``job_metadata`` entry with no time: the standard importer adds no event for it."""
    return all(math.isnan(getattr(e, key)) for key, _ in TIMES)
