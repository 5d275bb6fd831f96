"""Native JSON lines a piece at a time with msgspec's typed decoder (pure; used when msgspec is installed).

The standard reader (`eventlines.read_native_lines`) spends most of its time in Python per line. Here a whole piece
of lines is decoded in C into typed records, plain events are checked and grouped by job with numpy, and only
job, capacity and schema records go through `eventrecords.add_record`. The result is exactly the standard reader's:
whenever a piece holds anything the fast checks do not cover (a time given as text, a number out of range, a
wrong type, an unknown event, a blank or oddly terminated line, bytes that are not UTF-8, ...), `read_piece`
returns False having added nothing, and the caller reads that piece the standard way, which finds and names the
problem (file, line, field, value) or accepts it as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from tpufleet.goodput.eventrecords import add_record
from tpufleet.goodput.events import (
    CODE,
    MAX_CHIPS,
    MAX_STEP,
    MAX_TEXT,
    Job,
    Log,
    record_of,
)
from tpufleet.goodput.times import MAX_TIME, SMALLEST_TIME

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tpufleet.collectives.profile import Profile

try:
    import msgspec  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # optional: the standard reader gives the same answers, several times slower
    msgspec = None  # type: ignore[assignment]


# Line breaks other than \n that str.splitlines() honours: a piece holding one is read the standard way so that
# line numbers stay the standard reader's. \x0b, \x0c and \x1c-\x1e need no scan: JSON allows them neither
# between values nor raw in strings, so the decoder refuses such a piece anyway; \r, U+0085, U+2028 and U+2029
# it allows (\r as white space, the others in strings). Each test is a memchr-speed scan (a regex was 10x slower).
def _odd_breaks(piece: bytes) -> bool:
    # (a two-byte search is ten times slower than memchr: the lead byte is looked for first; ASCII logs have none)
    return (
        b"\r" in piece
        or (b"\xc2" in piece and b"\xc2\x85" in piece)
        or (b"\xe2" in piece and (b"\xe2\x80\xa8" in piece or b"\xe2\x80\xa9" in piece))
    )


if msgspec is not None:
    from typing import Annotated, Literal

    from tpufleet.goodput.events import EVENT_NAMES

    _Name = Literal[tuple(n for n in EVENT_NAMES if n != "slice_counts")]  # type: ignore[valid-type]

    class _Event(msgspec.Struct, tag="event", tag_field="type", gc=False):  # no cycles: the collector skips them
        """A plain event, fully checked by the decoder; defaults are not validated, so -1 means absent."""

        job: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]
        time: Annotated[float, msgspec.Meta(ge=SMALLEST_TIME, le=MAX_TIME)]  # 0.0: the standard reader
        event: _Name  # type: ignore[valid-type]
        step: Annotated[int, msgspec.Meta(ge=0, le=MAX_STEP)] = -1
        chips: Annotated[int, msgspec.Meta(ge=0, le=MAX_CHIPS)] = -1
        label: Annotated[str, msgspec.Meta(max_length=MAX_TEXT)] = ""
        slice: msgspec.UnsetType = msgspec.UNSET  # per-slice events, however the key is written: refused here

    # The other records keep, untyped, every field `add_record` reads (UNSET: absent), for it to judge as usual.
    _U: Any = msgspec.UNSET

    class _Job(msgspec.Struct, tag="job", tag_field="type", gc=False):
        job: Any = _U
        accelerator: Any = _U
        chips: Any = _U
        topology: Any = _U
        phase: Any = _U
        framework: Any = _U
        priority: Any = _U
        ideal_step_s: Any = _U
        flops_per_step: Any = _U
        peak_flops_per_chip: Any = _U
        model_flops_per_step: Any = _U
        gradient_bytes: Any = _U
        slices: Any = _U

    class _Capacity(msgspec.Struct, tag="capacity", tag_field="type", gc=False):
        time: Any = _U
        accelerator: Any = _U
        chips: Any = _U

    class _Schema(msgspec.Struct, tag="schema", tag_field="type", gc=False):
        version: Any = _U

    _DECODER: Any = msgspec.json.Decoder(_Event | _Job | _Capacity | _Schema)
    _EVENT: Any = _Event
    _IS_OTHER: dict[type, int] = {_Event: 0, _Job: 1, _Capacity: 1, _Schema: 1}
else:
    _DECODER = _EVENT = None
    _IS_OTHER = {}


def available() -> bool:
    return _DECODER is not None


def flat_lines(piece: bytes) -> int | None:
    r"""How many lines the standard reader counts in the piece, when each is one flat JSON object in UTF-8 (the
    shape of every native record: no array, no object in it, no brace in a string) and holds no integer of more
    digits than Python parses; else None, and the piece is read the standard way.

    The decoders here take what the standard reader refuses, naming its line: two values on one line, a value
    over two lines, a blank line (any of these can even out another in a count of records), a byte-order mark
    before a line's object, bytes that are not UTF-8 or nesting as deep as Python's recursion guard in a value
    they skip. The braces and line ends alone, in order, must read ``{}`` a line (one pass that drops every
    other byte).

    >>> flat_lines(b'{"a":1}\n{"b":"x"}\n'), flat_lines(b'{"a":1}{"b":2}\n\n'), flat_lines(b'{"a":{"b":1}}')
    (2, None, None)
    """
    if b"[" in piece:
        return None
    shape = piece.translate(None, _NOT_SHAPE)
    lines, tail = divmod(len(shape), 3)
    if shape[: 3 * lines] != _SHAPE * lines or shape[3 * lines :] not in (b"", b"{}"):
        return None
    if not piece.isascii() and not (_BOM not in piece and _utf8(piece)):
        return None
    return None if _long_digits(piece) else lines + (tail > 0)


_SHAPE = b"{}\n"
_NOT_SHAPE = bytes(b for b in range(256) if b not in _SHAPE)
_BOM = b"\xef\xbb\xbf"


def _utf8(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Batch(NamedTuple):
    """A piece's plain events as columns in job order (log order within a job): job k's rows are
    bounds[k]:bounds[k + 1]. Ordered where decoded, so a worker process sends nothing more."""

    jobs: list[str]  # distinct, first seen first
    bounds: Any
    t: Any
    code: Any
    step: Any
    chips: Any
    labels: dict[int, str]  # row (in job order) -> label, for the few rows with one


def read_piece(piece: bytes, first_line: int, file: str, log: Log) -> int:
    """Add the records of a piece of whole lines and return its number of lines; 0 (nothing added) if it must
    be read the standard way."""
    decoded = decode_piece(piece)
    return 0 if decoded is None else add_decoded(decoded, first_line, file, log)


class Decoded(NamedTuple):
    """A piece decoded, before anything is judged that needs its place in the file (picklable: a worker
    process may decode it)."""

    lines: int
    batch: Batch
    others: list[tuple[int, str, dict[str, Any]]]  # (row in the piece, record type, its fields) of the rest


def decode_piece(piece: bytes) -> Decoded | None:
    """A piece of whole lines decoded and its plain events checked; None if it must be read the standard way."""
    if _DECODER is None or _odd_breaks(piece) or b'"slice"' in piece:  # per-slice events: the standard reader
        return None
    lines = flat_lines(piece)
    if lines is None:
        return None
    try:
        records = _DECODER.decode_lines(piece)
    except (msgspec.DecodeError, RecursionError):
        return None
    if len(records) != lines:
        return None
    events, others = _split(records)
    del records
    batch = _checked(events, b'"label"' in piece or b"\\" in piece)  # (a key may be written with escapes)
    if batch is None:
        return None
    rest = [(i, r.__struct_config__.tag, _fields(r)) for i, r in others]
    return Decoded(lines, batch, rest)


def _long_digits(piece: bytes) -> bool:
    """Whether the piece may hold a run of more digits than Python's int parses (`sys.get_int_max_str_digits`).

    Such a run covers two places `step` apart on the grid of multiples of `step` (half the limit), with only
    digits between them: only those grid neighbours are looked at (a slice each, which stops at its first other
    byte). A run of half the limit is flagged too, and read the standard way.

    >>> _long_digits(b'{"x":1' + b"0" * 4300 + b"}"), _long_digits(b'{"x":1' + b"0" * 2000 + b"}")
    (True, False)
    """
    import sys

    import numpy as np

    limit = sys.get_int_max_str_digits()
    step = limit // 2
    if not limit or len(piece) <= limit:
        return False
    grid = np.frombuffer(piece, dtype=np.uint8)[::step]
    digit = (grid >= ord("0")) & (grid <= ord("9"))
    pairs = np.flatnonzero(digit[:-1] & digit[1:]).tolist()
    return any(piece[a * step : (a + 1) * step + 1].isdigit() for a in pairs)


def _fields(r: Any) -> dict[str, Any]:
    return {k: v for k in r.__struct_fields__ if (v := getattr(r, k)) is not msgspec.UNSET}


def add_decoded(decoded: Decoded, first_line: int, file: str, log: Log) -> int:
    """Add a decoded piece starting at `first_line` and return its number of lines; 0 (nothing added) if one of
    its other records is bad or disagrees with a job record read before (the standard reader then names the
    problem)."""
    if decoded.others:
        scratch = _others(decoded.others, first_line, file, log.step_profiles)
        if scratch is None or any(_disagrees(log, job) for job in scratch.jobs.values()):
            return 0
        if _over_job_limit(log, decoded.batch.jobs, scratch.jobs):
            return 0  # the standard reader stops at the line of the job too many
        if _beyond_records(log, decoded.batch, scratch.jobs):
            return 0
        for job in scratch.jobs.values():
            log.add_job(job)
        log.capacity += scratch.capacity
        log.records += scratch.records
    elif _over_job_limit(log, decoded.batch.jobs, {}) or _beyond_records(log, decoded.batch, {}):
        return 0
    _append(log, decoded.batch)
    log.records += len(decoded.batch.t)
    return decoded.lines


def _disagrees(log: Log, job: Job) -> bool:
    """Whether a job record disagrees with the log's record of the job (`Log.add_job` would refuse it)."""
    known = log.jobs.get(job.id)
    return known is not None and job.id not in log.unrecorded and known != job


def _beyond_records(log: Log, batch: Batch, records: dict[str, Job]) -> bool:
    """Whether an allocation of the piece gives a job more chips than its record (read before, or in the piece),
    or a record of the piece is below allocations read before it: the standard reader judges such a piece line by
    line (which of the two comes first says which is refused)."""
    import numpy as np

    rows = np.flatnonzero(np.asarray(batch.code) == _ALLOCATION)
    if len(rows):
        owners = np.searchsorted(np.asarray(batch.bounds), rows, side="right") - 1
        for k, chips in zip(owners.tolist(), np.asarray(batch.chips)[rows].tolist(), strict=True):
            job = batch.jobs[k]
            known = records.get(job) or record_of(log, job)
            if known is not None and chips > known.chips:
                return True
    return any(record_of(log, job.id) is None and log.allocated_beyond(job) is not None for job in records.values())


def _over_job_limit(log: Log, event_jobs: list[str], record_jobs: dict[str, Any]) -> bool:
    """Whether adding a piece's jobs would take the log past its job limit."""
    if not log.job_limit:
        return False
    new_events = sum(1 for j in event_jobs if j not in log.events)
    new_records = sum(1 for j in record_jobs if j not in log.jobs)
    return len(log.events) + new_events > log.job_limit or len(log.jobs) + new_records > log.job_limit


def _split(records: list[Any]) -> tuple[list[Any], list[tuple[int, Any]]]:
    """The plain events, and the other records (few: job, capacity, schema) with their index in the piece.
    Only C loops run over all the records (a piece holds about 100,000): a byte per record, 1 for the others,
    found by memchr."""
    flags = bytes(map(_IS_OTHER.__getitem__, map(type, records)))
    at: list[int] = []
    i = flags.find(1)
    while i >= 0:
        at.append(i)
        i = flags.find(1, i + 1)
    if not at:
        return records, []
    events: list[Any] = []
    done = 0
    for i in at:
        events += records[done:i]
        done = i + 1
    events += records[done:]
    return events, [(i, records[i]) for i in at]


def _others(
    others: list[tuple[int, str, dict[str, Any]]], first_line: int, file: str, profiles: Mapping[str, Profile]
) -> Log | None:
    """Job, capacity and schema records judged by `add_record` into a scratch Log; None if any is bad."""
    from tpufleet.errors import BadInput

    scratch = Log(step_profiles=profiles)
    try:
        for i, kind, fields in others:
            add_record(scratch, {"type": kind, **fields}, file, first_line + i)
    except (BadInput, ValueError):
        return None
    return scratch


def _checked(recs: list[Any], any_label: bool) -> Batch | None:
    """Columns of the event records; None if one lacks a field its event needs (the standard reader says so).
    Each column is one list comprehension and one conversion: no Python statement runs per record."""
    import numpy as np

    t = np.array([r.time for r in recs], dtype=np.float64)
    code = np.array(list(map(_CODE.__getitem__, [r.event for r in recs])), dtype=np.int8)
    step = np.array([r.step for r in recs], dtype=np.int64)
    chips = np.array([r.chips for r in recs], dtype=np.int64)
    if (((code == _STEP_START) & (step < 0)) | ((code == _ALLOCATION) & (chips < 0))).any():
        return None
    jobs, order, bounds = _grouped([r.job for r in recs])
    labels: dict[int, str] = {}
    if any_label:
        row = {i: n for n, i in enumerate(order.tolist())} if order is not None else None
        labels = {i if row is None else row[i]: r.label for i, r in enumerate(recs) if r.label}
    if order is not None:
        t, code, step, chips = t[order], code[order], step[order], chips[order]
    return Batch(jobs, bounds, t, code, step, chips, labels)


def _grouped(jobs: list[str]) -> tuple[list[str], Any, Any]:
    """The distinct jobs (first seen first), the rows in job order (log order within a job; None: as they are)
    and each job's bounds in that order. Logs mostly come in runs of one job's lines: then one dictionary
    look-up a run."""
    import numpy as np

    n = len(jobs)
    names = np.array(jobs, dtype=object)
    starts = np.flatnonzero(np.concatenate(([True], names[1:] != names[:-1])))
    if len(starts) * 8 <= n:
        return _run_groups(names[starts].tolist(), starts, n)
    # interleaved jobs: a look-up a row
    ids = {j: k for k, j in enumerate(dict.fromkeys(jobs))}
    return _groups(ids, np.fromiter(map(ids.__getitem__, jobs), dtype=np.int64, count=n))


def _run_groups(run_names: list[str], starts: Any, n: int) -> tuple[list[str], Any, Any]:
    """`_grouped` of n rows given as runs: run k (rows starts[k] up to the next start) is run_names[k]'s."""
    import numpy as np

    ids: dict[str, int] = {}
    run_id = [ids.setdefault(j, len(ids)) for j in run_names]
    return _groups(ids, np.repeat(np.array(run_id, dtype=np.int64), np.diff(np.append(starts, n))))


def _groups(ids: dict[str, int], job_id: Any) -> tuple[list[str], Any, Any]:
    import numpy as np

    n = len(job_id)
    if len(ids) == 1:
        return list(ids), None, np.array([0, n])
    order = np.argsort(job_id, kind="stable")
    return list(ids), order, np.searchsorted(job_id[order], np.arange(len(ids) + 1))


def group_runs(run_names: list[str], starts: Any, t: Any, code: Any, step: Any, chips: Any) -> Batch:
    """Event columns in log order, given each run of one job's rows (its first row and the job), as a Batch."""
    jobs, order, bounds = _run_groups(run_names, starts, len(t))
    if order is not None:
        t, code, step, chips = t[order], code[order], step[order], chips[order]
    return Batch(jobs, bounds, t, code, step, chips, {})


_CODE, _STEP_START, _ALLOCATION = CODE, CODE["step_start"], CODE["allocation"]


def _append(log: Log, b: Batch) -> None:
    """Append each job's events in log order (the order the accounting keeps at equal times)."""
    import numpy as np

    for k, job in enumerate(b.jobs):
        lo, hi = int(b.bounds[k]), int(b.bounds[k + 1])
        columns = log.columns(job)
        if b.labels:
            base = len(columns) - lo
            columns.labels.update({base + i: label for i, label in b.labels.items() if lo <= i < hi})
        # each column's rows as bytes with nothing copied (``tobytes`` copied them: 0.07 s at 10 M events)
        for have, given in ((columns.t, b.t), (columns.code, b.code), (columns.step, b.step), (columns.chips, b.chips)):
            have.frombytes(np.ascontiguousarray(given[lo:hi]).data.cast("B"))
