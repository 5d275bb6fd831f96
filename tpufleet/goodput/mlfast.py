"""ml-goodput-measurement JSONL entries read with msgspec's typed decoder and added as columns (pure; used when
msgspec is installed; `tpufleet.state.goodputlogs` tries it first on every JSONL log, checked to be UTF-8).

The standard importer (`mlgoodput.read`) spends most of its time in Python per entry. Here the entries are
decoded in C into typed records, CHUNK_LINES at a time (the times as floats, NaN where absent), each chunk is
turned into columns and freed, the checks run on the numpy columns, and only checkpoint-logger and
``job_metadata`` entries (about one in a hundred) go through the standard code, entry by entry. Step entries
(nearly all of a log) are decoded with their three fields only; the others again whole. The result is exactly the standard importer's: whenever the file holds anything these checks
do not cover (a bad value, a ``jsonPayload`` wrapper, custom badput or elastic entries, an entry without
``job_name``, an escape, a blank or very long line, line breaks other than ``\\n``), `read` returns False
having added nothing, and the caller reads the file the standard way, which names the problem (file, line,
field, value) or accepts it as before.
"""

from __future__ import annotations

import math
from itertools import chain, repeat
from operator import attrgetter, is_not
from typing import TYPE_CHECKING, Any

from tpufleet.goodput import mlbatch
from tpufleet.goodput.events import MAX_STEP, Log
from tpufleet.goodput.fastread import _append, _odd_breaks
from tpufleet.goodput.mlbatch import STEP_SLOT, TIMES, Columns
from tpufleet.goodput.mlgoodput import INTERVALS
from tpufleet.goodput.times import MAX_TIME, SMALLEST_TIME, BadRecord

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Ints = npt.NDArray[np.int64]

try:
    import msgspec  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # optional: the standard importer gives the same answers, several times slower
    msgspec = None  # type: ignore[assignment]

__all__ = ["available", "read"]

# Entries are short (the package's longest is ~400 bytes): a longer line, which might hold what msgspec skips
# and the standard decoder refuses (a number of 4,300 digits, deep nesting), is read the standard way.
MAX_FAST_LINE = 4000
# The standard decoder refuses nesting where Python's recursion guard stops it (about 950 levels, less on a deeper
# stack), msgspec a little deeper: a line that might nest that deep (more openers than this) is read the standard
# way, so both readers say the same of it.
MAX_OPENERS = 256
# an entry's times, then its step number (exact as a float: MAX_STEP < 2^53), read in one call
_FIELDS = attrgetter(*(key for key, _ in TIMES), "step_count")
_JOB_NAME = attrgetter("job_name")
_STEP_START = attrgetter("step_start_time")
_STEP_COUNT = attrgetter("step_count")
_NAN = math.nan
_ABSENT = -2  # step_count's default (not validated by the decoder): no step number

if msgspec is not None:
    _U: Any = msgspec.UNSET

    class _Entry(msgspec.Struct, gc=False):  # no cycles: the collector skips them
        """An entry's fields the importer reads; a time absent is NaN (JSON has none), a wrong type refused."""

        job_name: str | msgspec.UnsetType = _U
        job_start_time: float = _NAN
        job_end_time: float = _NAN
        step_count: int = _ABSENT
        step_start_time: float = _NAN
        tpu_init_start_time: float = _NAN
        tpu_init_end_time: float = _NAN
        training_prep_start_time: float = _NAN
        training_prep_end_time: float = _NAN
        data_loading_start_time: float = _NAN
        data_loading_end_time: float = _NAN
        event_type: Any = _U  # checkpoint-logger entries: judged by the standard importer, entry by entry
        step: Any = _U
        checkpoint_manager_blocking_start_time: Any = _U
        checkpoint_manager_start_time: Any = _U
        checkpoint_manager_blocking_duration_secs: Any = _U
        checkpoint_manager_duration_secs: Any = _U
        job_metadata: Any = _U
        # keys only the standard importer reads (a wrapper, custom badput, elastic waits and counts): present
        # with any value, the decoder refuses the file (typed "never"), which is then read the standard way
        jsonPayload: msgspec.UnsetType = _U
        custom_badput_event_type: msgspec.UnsetType = _U
        custom_badput_event_start_time: msgspec.UnsetType = _U
        custom_badput_event_end_time: msgspec.UnsetType = _U
        elastic_wait_start_time: msgspec.UnsetType = _U
        elastic_wait_end_time: msgspec.UnsetType = _U
        elastic_wait_event_type: msgspec.UnsetType = _U
        elastic_reinit_start_time: msgspec.UnsetType = _U
        elastic_reinit_end_time: msgspec.UnsetType = _U
        elastic_slice_counts_timestamp: msgspec.UnsetType = _U

    class _Step(msgspec.Struct, gc=False):
        """A step entry's fields (typed as in _Entry); any other key is skipped."""

        job_name: str | msgspec.UnsetType = _U
        step_count: int = _ABSENT
        step_start_time: float = _NAN

    _DECODER: Any = msgspec.json.Decoder(_Entry)
    _STEPS: Any = msgspec.json.Decoder(_Step)
else:
    _DECODER = _STEPS = None


def available() -> bool:
    return _DECODER is not None


def read(data: bytes, file: str, log: Log) -> bool:
    """Add the JSONL entries of one file (UTF-8: the caller has checked) to `log` and return True; False
    (nothing added) if the file must be read the standard way (`mlgoodput.read`)."""
    if _DECODER is None or not _plain_text(data):
        return False
    starts = _line_starts(data)
    if starts is None:
        return False
    try:
        columns = _columns(data, starts)
        staged = None if columns is None else mlbatch.staged(columns, file, log.step_profiles)
    except (msgspec.DecodeError, RecursionError, BadRecord, ValueError, OverflowError):  # a number beyond int64
        return False
    if staged is None or _over_job_limit(log, staged[0].jobs):
        return False
    batch, metadata = staged
    for job in batch.jobs:
        log.name_job(job)
    for job_record in metadata:
        log.add_job(job_record)
    _append(log, mlbatch.with_events(batch))
    log.records += len(starts) - 1
    return True


def _plain_text(data: bytes) -> bool:
    """No escapes (the keys are then as written), and not a JSON array (nor a byte-order mark: every line must
    start an object)."""
    # (the other breaks str.splitlines() honours, \x0b \x0c \x1c-\x1e, are control bytes: the decoder refuses them)
    return not (b"\\" in data or data[:1] != b"{")


def _line_starts(data: bytes) -> Ints | None:
    """Where each line starts, and the end: when each line starts and ends an object and none is blank or longer
    than MAX_FAST_LINE; else None. (Then the decoder's one value a line is the standard importer's one entry a line.)"""
    import numpy as np

    if not data or _odd_breaks(data):
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = _line_feeds(buf)
    if data[-1:] != b"\n":
        ends = np.append(ends, len(data))
    starts: Ints = np.concatenate(([0], ends + 1)).astype(np.int64)
    lengths = np.diff(starts) - 1
    if lengths.max() > MAX_FAST_LINE or starts[-2] >= len(data):
        return None
    for row in np.flatnonzero(lengths > 2 * MAX_OPENERS).tolist():  # few or none: the package's are short
        line = data[starts[row] : starts[row + 1]]
        if line.count(b"[") + line.count(b"{") > MAX_OPENERS:
            return None
    if not (buf[starts[:-1]] == ord("{")).all() or not (buf[ends - 1] == ord("}")).all():
        return None  # each line one object: an entry over two lines and two on another would even out in a count
    starts[-1] = len(data)
    return starts


def _line_feeds(buf: Any) -> Ints:
    """Where the line feeds are, looked for a MiB at a time: a mask of the whole log at once cost its size again in
    fresh memory, whose first touch was most of the search (0.3 s for an 80 MB log, against 0.05 s)."""
    import numpy as np

    step = 1 << 20
    found = [np.flatnonzero(buf[at : at + step] == ord("\n")) + at for at in range(0, len(buf), step)]
    feeds: Ints = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
    return feeds


class _Found:
    """The columns as they are gathered, chunk by chunk."""

    def __init__(self, n: int, keys: list[str]) -> None:
        import numpy as np

        self.index: dict[Any, int] = {}
        self.jobs = np.empty(n, dtype=np.int64)
        self.rows: list[list[Ints]] = [[] for _ in TIMES]
        self.seconds: list[list[Any]] = [[] for _ in TIMES]
        self.steps: list[Ints] = []
        self.special: list[tuple[int, Any]] = []
        self.keys = keys  # the special keys the file holds
        self.mostly_steps = True  # until a chunk is not: the rest of the file is then decoded whole

    def add_names(self, names: list[Any], lo: int) -> None:
        """The jobs of entries lo.. (their names, in order)."""
        import numpy as np

        hi = lo + len(names)
        if names.count(names[0]) == len(names):  # a chunk of one job (the usual log): no lookup an entry
            self.jobs[lo:hi] = self.index.setdefault(names[0], len(self.index))
            return
        for name in dict.fromkeys(names):
            self.index.setdefault(name, len(self.index))
        self.jobs[lo:hi] = np.fromiter(map(self.index.__getitem__, names), dtype=np.int64, count=hi - lo)

    def add_times(self, k: int, rows: Ints, seconds: Any, steps: Ints | None = None) -> None:
        """The entries at `rows` give time key k these times (and, for the step start, these step numbers)."""
        if len(rows):
            self.rows[k].append(rows)
            self.seconds[k].append(seconds)
            if steps is not None:
                self.steps.append(steps)

    def add_entries(self, entries: list[Any], rows: Ints) -> None:
        """Every time and step number, and the special entries, of decoded entries (at `rows` of the file)."""
        import numpy as np

        # every time and step number of every entry in one pass (a tuple an entry): [entry, key]
        width = len(TIMES) + 1
        block = np.fromiter(chain.from_iterable(map(_FIELDS, entries)), np.float64, count=width * len(entries))
        block = block.reshape(len(entries), width)
        for k in range(len(TIMES)):
            column = block[:, k]
            mine = np.flatnonzero(~np.isnan(column))
            steps = _step_numbers(block[mine, len(TIMES)]) if k == STEP_SLOT else None
            self.add_times(k, rows[mine], column[mine], steps)
        for key in self.keys:
            given = np.fromiter(map(is_not, map(attrgetter(key), entries), repeat(_U)), dtype=bool, count=len(entries))
            self.special += [(int(rows[i]), entries[i]) for i in np.flatnonzero(given).tolist()]

    def columns(self) -> Columns | None:
        """The columns; None if a time is out of range, an entry's interval ends before it starts or a step
        number is bad."""
        import numpy as np

        times = [
            (np.concatenate(r), np.concatenate(t)) if r else (np.zeros(0, np.int64), np.zeros(0))
            for r, t in zip(self.rows, self.seconds, strict=True)
        ]
        for _rows, t in times:
            if not ((t == 0) | ((t >= SMALLEST_TIME) & (t <= MAX_TIME))).all():
                return None
        if any(_reversed(times[start], times[end]) for start, end in _INTERVALS):
            return None
        step = np.concatenate(self.steps) if self.steps else np.zeros(0, np.int64)
        if ((step < 0) | (step > MAX_STEP)).any():
            return None
        special = sorted(dict(self.special).items())  # an entry with both keys once, in order
        return Columns(self.jobs, list(self.index), times, step, special)


def _step_numbers(given: Any) -> Ints:
    """Step numbers as integers, those out of range (2**63 does not fit int64: cast, it warned on stderr) as -1,
    which `columns` refuses as it refuses a negative one."""
    import numpy as np

    return np.where((given >= 0) & (given <= MAX_STEP), given, -1).astype(np.int64)


# The intervals an entry may hold whole, as indices into TIMES (`mlgoodput._in_order` refuses them reversed).
_KEYS = [key for key, _ in TIMES]
_INTERVALS = [(_KEYS.index(a), _KEYS.index(b)) for a, b in INTERVALS if a in _KEYS and b in _KEYS]


def _reversed(starts: tuple[Ints, Any], ends: tuple[Ints, Any]) -> bool:
    """Whether an entry holding both an interval's start and its end (rows and times of each) ends it first."""
    import numpy as np

    _both, first, then = np.intersect1d(starts[0], ends[0], assume_unique=True, return_indices=True)
    return bool((ends[1][then] < starts[1][first]).any())


def _columns(data: bytes, starts: Ints) -> Columns | None:
    """The entries decoded CHUNK_LINES at a time (their records freed chunk by chunk: the peak is a chunk's);
    None if a time is out of range, a step number bad, or a line holds two values."""
    import numpy as np

    n = len(starts) - 1
    found = _Found(n, [k for k in ("event_type", "job_metadata") if f'"{k}"'.encode() in data])
    for lo in range(0, n, CHUNK_LINES):
        hi = min(n, lo + CHUNK_LINES)
        piece = data[starts[lo] : starts[hi]]
        if found.mostly_steps and _add_stepped(found, piece, starts[lo : hi + 1] - starts[lo], lo):
            continue
        entries = _DECODER.decode_lines(piece)
        if len(entries) != hi - lo:
            return None
        found.add_names(list(map(_JOB_NAME, entries)), lo)
        found.add_entries(entries, np.arange(lo, hi))
    return found.columns()


def _add_stepped(found: _Found, piece: bytes, ends: Ints, lo: int) -> bool:
    """Add a chunk of mostly step entries the quick way and return True; False (nothing added) if the chunk
    must be decoded whole. Every entry is decoded with only its name, step number and step start; those
    without a step start (few) are decoded again whole. The quick decode is exact for an entry with a step
    start when it holds nothing else: its quotes (a key, a name: two each; no escapes) are counted to know."""
    import numpy as np

    try:
        entries = _STEPS.decode_lines(piece)
    except (msgspec.DecodeError, RecursionError):
        return False
    n = len(entries)
    if n != len(ends) - 1:
        return False
    start = np.fromiter(map(_STEP_START, entries), np.float64, count=n)
    stepped = ~np.isnan(start)
    other = np.flatnonzero(~stepped)
    if len(other) > OTHER_SHARE_LIMIT * n:
        found.mostly_steps = False
        return False
    names = list(map(_JOB_NAME, entries))
    count = np.fromiter(map(_STEP_COUNT, entries), np.int64, count=n)[stepped]
    rest = b"".join([piece[ends[i] : ends[i + 1]] for i in other.tolist()])
    unnamed = names.count(_U) - sum(1 for i in other.tolist() if names[i] is _U)
    quotes = 2 * len(count) + 4 * (len(count) - unnamed) + 2 * int((count != _ABSENT).sum())
    if piece.count(b'"') - rest.count(b'"') != quotes:
        return False  # a step entry holds another key or value: the whole chunk is decoded
    others = _DECODER.decode_lines(rest) if rest else []
    if len(others) != len(other):
        return False
    found.add_names(names, lo)
    found.add_times(STEP_SLOT, np.flatnonzero(stepped) + lo, start[stepped], count)
    if others:
        found.add_entries(others, other + lo)
    return True


CHUNK_LINES = 1 << 16  # entries decoded at a time
# A chunk is decoded the quick way (`_add_stepped`) when at most this share of its entries are not step starts
# (those are decoded twice); from the first chunk that has more, the rest of the file is decoded whole.
OTHER_SHARE_LIMIT = 0.25


def _over_job_limit(log: Log, jobs: list[str]) -> bool:
    if not log.job_limit:
        return False
    new_records = sum(1 for j in jobs if j not in log.jobs)
    new_events = sum(1 for j in jobs if j not in log.events)
    return len(log.jobs) + new_records > log.job_limit or len(log.events) + new_events > log.job_limit
