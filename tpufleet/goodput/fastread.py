"""Native JSON lines a piece at a time with msgspec's typed decoder (pure; used when msgspec is installed).

The standard reader (`events.read_native_lines`) spends most of its time in Python per line. Here a whole piece
of lines is decoded in C into typed records, plain events are checked and grouped by job with numpy, and only
job, capacity and schema records go through `events.add_record`. The result is exactly the standard reader's:
whenever a piece holds anything the fast checks do not cover (a time given as text, a number out of range, a
wrong type, an unknown event, a blank or oddly terminated line, bytes that are not UTF-8, ...), `read_piece`
returns False having added nothing, and the caller reads that piece the standard way, which finds and names the
problem (file, line, field, value) or accepts it as before.
"""

from __future__ import annotations

from typing import Any

from tpufleet.goodput.events import (
    CODE,
    MAX_CHIPS,
    MAX_STEP,
    MAX_TEXT,
    MAX_TIME,
    MIN_TIME,
    EventColumns,
    Log,
    add_record,
)

try:
    import msgspec  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # optional: the standard reader gives the same answers, several times slower
    msgspec = None  # type: ignore[assignment]


# Line breaks other than \n that str.splitlines() honours: a piece holding one is read the standard way so that
# line numbers stay the standard reader's. \x0b, \x0c and \x1c-\x1e need no scan: JSON allows them neither
# between values nor raw in strings, so the decoder refuses such a piece anyway; \r, U+0085, U+2028 and U+2029
# it allows (\r as white space, the others in strings). Each test is a memchr-speed scan (a regex was 10x slower).
def _odd_breaks(piece: bytes) -> bool:
    return (
        b"\r" in piece
        or b"\xc2\x85" in piece
        or (b"\xe2\x80" in piece and (b"\xe2\x80\xa8" in piece or b"\xe2\x80\xa9" in piece))
    )


if msgspec is not None:
    from typing import Annotated, Literal

    from tpufleet.goodput.events import EVENT_NAMES

    _Name = Literal[tuple(n for n in EVENT_NAMES if n != "slice_counts")]  # type: ignore[valid-type]

    class _Event(msgspec.Struct, tag="event", tag_field="type", gc=False):  # no cycles: the collector skips them
        """A plain event, fully checked by the decoder; defaults are not validated, so -1 means absent."""

        job: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]
        time: Annotated[float, msgspec.Meta(ge=MIN_TIME, le=MAX_TIME)]
        event: _Name  # type: ignore[valid-type]
        step: Annotated[int, msgspec.Meta(ge=0, le=MAX_STEP)] = -1
        chips: Annotated[int, msgspec.Meta(ge=0, le=MAX_CHIPS)] = -1
        label: Annotated[str, msgspec.Meta(max_length=MAX_TEXT)] = ""

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

    class _Capacity(msgspec.Struct, tag="capacity", tag_field="type", gc=False):
        time: Any = _U
        accelerator: Any = _U
        chips: Any = _U

    class _Schema(msgspec.Struct, tag="schema", tag_field="type", gc=False):
        version: Any = _U

    _DECODER: Any = msgspec.json.Decoder(_Event | _Job | _Capacity | _Schema)
    _EVENT: Any = _Event
else:
    _DECODER = _EVENT = None


def available() -> bool:
    return _DECODER is not None


def lines_in(piece: bytes) -> int:
    """How many lines the standard reader counts in a piece that passed `read_piece` (no odd breaks)."""
    return piece.count(b"\n") + (0 if piece.endswith(b"\n") or not piece else 1)


def read_piece(piece: bytes, first_line: int, file: str, log: Log) -> int:
    """Add the records of a piece of whole lines and return its number of lines; 0 (nothing added) if it must
    be read the standard way."""
    if _DECODER is None or _odd_breaks(piece):
        return 0
    try:
        records = _DECODER.decode_lines(piece)
    except (msgspec.DecodeError, RecursionError):
        return 0
    lines = lines_in(piece)
    if len(records) != lines:  # a blank line: numbering would drift
        return 0
    events = [r for r in records if type(r) is _EVENT]
    batch = _checked(events, b'"label"' in piece)
    if batch is None:
        return 0
    if len(events) < len(records):
        scratch = _others(records, first_line, file)
        if scratch is None:
            return 0
        log.jobs.update(scratch.jobs)
        log.capacity += scratch.capacity
        log.records += scratch.records
    _append(log, *batch)
    log.records += len(events)
    return lines


def _others(records: list[Any], first_line: int, file: str) -> Log | None:
    """Job, capacity and schema records judged by `add_record` into a scratch Log; None if any is bad."""
    from tpufleet.errors import BadInput

    scratch = Log()
    try:
        for i, r in enumerate(records):
            if type(r) is not _EVENT:
                fields = {k: v for k in r.__struct_fields__ if (v := getattr(r, k)) is not msgspec.UNSET}
                add_record(scratch, {"type": r.__struct_config__.tag, **fields}, file, first_line + i)
    except (BadInput, ValueError):
        return None
    return scratch


Checked = tuple[list[str], Any, Any, Any, Any, dict[int, str]]


def _checked(recs: list[Any], any_label: bool) -> Checked | None:
    """Columns of the event records; None if one lacks a field its event needs (the standard reader says so)."""
    import numpy as np

    jobs = [r.job for r in recs]
    t = np.array([r.time for r in recs], dtype=np.float64)
    code = np.array([_CODE[r.event] for r in recs], dtype=np.int64)
    step = np.array([r.step for r in recs], dtype=np.int64)
    chips = np.array([r.chips for r in recs], dtype=np.int64)
    if (((code == _STEP_START) & (step < 0)) | ((code == _ALLOCATION) & (chips < 0))).any():
        return None
    labels = {i: r.label for i, r in enumerate(recs) if r.label} if any_label else {}
    return jobs, t, code, step, chips, labels


_CODE, _STEP_START, _ALLOCATION = CODE, CODE["step_start"], CODE["allocation"]


def _append(log: Log, jobs: list[str], t: Any, code: Any, step: Any, chips: Any, labels: dict[int, str]) -> None:
    """Append each job's events in log order (the order the accounting keeps at equal times)."""
    import numpy as np

    ids = {j: k for k, j in enumerate(dict.fromkeys(jobs))}
    if len(ids) == 1:
        order, bounds = np.arange(len(jobs)), np.array([0, len(jobs)])
    else:
        job_id = np.fromiter(map(ids.__getitem__, jobs), dtype=np.int64, count=len(jobs))
        order = np.argsort(job_id, kind="stable")
        bounds = np.searchsorted(job_id[order], np.arange(len(ids) + 1))
    for job, k in ids.items():
        take = order[bounds[k] : bounds[k + 1]]
        columns = log.events.get(job)
        if columns is None:
            columns = log.events[job] = EventColumns()
        if labels:
            base = len(columns)
            columns.labels.update({base + n: labels[i] for n, i in enumerate(take.tolist()) if i in labels})
        columns.t.frombytes(t[take].tobytes())
        columns.code.frombytes(code[take].astype(np.int8).tobytes())
        columns.step.frombytes(step[take].tobytes())
        columns.chips.frombytes(chips[take].tobytes())
