"""Importer for the log entries of Google's ml-goodput-measurement package (0.2.3).

Two layouts are read: one entry payload per line (JSONL; a ``{"jsonPayload": {...}}`` wrapper is accepted), and
the JSON *array* of Cloud Logging entries that ``gcloud logging read ... --format=json`` writes (each element's
``jsonPayload`` is the payload; ``timestamp``, ``logName`` and ``resource`` are not needed). Entries are keyed by
``job_name``. Keys read: ``job_start_time``, ``job_end_time``, ``step_count`` + ``step_start_time``,
``tpu_init_start_time``/``_end_time``, ``training_prep_start_time``/``_end_time``,
``data_loading_start_time``/``_end_time``, ``custom_badput_event_type`` + ``custom_badput_event_start_time``/
``_end_time``, and checkpoint-logger entries (``event_type`` ``save``, ``restore`` or ``emergency_restore``
with ``step``, ``checkpoint_manager_blocking_start_time`` / ``checkpoint_manager_start_time`` and the matching
``..._duration_secs``; each entry is its own interval). A checkpoint-logger entry without ``job_name`` (the
package's own tests write them so) belongs to the file's job when the file names exactly one. Times are POSIX
seconds.

The package records no disruption events: a ``job_start_time`` after steps is a restart, and the accounting
(`tpufleet.goodput.timeline`) places the disruption by the package's rule. Every data-loading interval is counted,
not only one per start. An optional tpufleet extension entry ``{"job_name": ..., "job_metadata": {"accelerator",
"chips", "phase", "framework", "topology", "ideal_step_s"}}`` supplies what the package does not log; without it
a job counts as 1 chip of accelerator ``unknown``, all of its time from the first start to the end all-allocated.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from tpufleet.constants import DAY
from tpufleet.errors import NO_VALUE, shown
from tpufleet.goodput.eventlines import log_lines
from tpufleet.goodput.eventrecords import add_record, add_slice_counts
from tpufleet.goodput.events import CODE, MAX_LINE_BYTES, MAX_STEP, MAX_TEXT, Log
from tpufleet.goodput.times import BadRecord, in_range
from tpufleet.jsontext import parse_json_line

# The phase boundaries an entry may carry: its time key, and the event it is.
PHASE_TIMES = (
    ("tpu_init_start_time", "tpu_init_start"),
    ("tpu_init_end_time", "tpu_init_end"),
    ("training_prep_start_time", "training_prep_start"),
    ("training_prep_end_time", "training_prep_end"),
    ("data_loading_start_time", "data_loading_start"),
    ("data_loading_end_time", "data_loading_end"),
)
# The keys of an interval an entry may hold whole (its start and its end): an end before its start is refused.
INTERVALS = (
    ("job_start_time", "job_end_time"),
    ("tpu_init_start_time", "tpu_init_end_time"),
    ("training_prep_start_time", "training_prep_end_time"),
    ("data_loading_start_time", "data_loading_end_time"),
    ("custom_badput_event_start_time", "custom_badput_event_end_time"),
    ("elastic_wait_start_time", "elastic_wait_end_time"),
    ("elastic_reinit_start_time", "elastic_reinit_end_time"),
)
CHECKPOINT_OPERATIONS = ("save", "restore", "emergency_restore")
MAX_DURATION_S = 365 * DAY  # a checkpoint operation's duration: at most a year
Pending = tuple[float, int, int, str]  # (time, event code, step, label): an entry's events, added once all check


def _num(payload: Mapping[str, Any], key: str, file: str, line: int) -> float:
    value = payload.get(key, NO_VALUE)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRecord(file, line, key, value, "must be POSIX seconds")
    return in_range(value, value, file, line, key)


def _duration(payload: Mapping[str, Any], key: str, file: str, line: int) -> float:
    value = payload.get(key, NO_VALUE)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_DURATION_S:
        raise BadRecord(file, line, key, value, "must be seconds from 0 to a year")
    return float(value)


def _step(payload: Mapping[str, Any], key: str, file: str, line: int, default: int | None = None) -> int:
    value = payload.get(key, NO_VALUE)
    if default is not None and (value is None or isinstance(value, bool) or not isinstance(value, int)):
        return default  # a checkpoint entry without a usable step number: saved step unknown
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STEP:
        raise BadRecord(file, line, key, value, f"must be a whole number from 0 to {MAX_STEP:,}")
    return value


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _array_items(text: str, file: str) -> Iterator[tuple[int, Any]]:
    """(line, element) of a JSON array, decoded one element at a time (its line is where it starts); elements
    apart by one comma, and nothing but white space after the array."""
    pos, line = _skip_space(text, text.index("[") + 1, 1 + _line_breaks(text, 0, text.index("[")))
    if text[pos : pos + 1] == "]":
        _after_array(text, pos + 1, line, file)
        return
    while True:
        if pos >= len(text):
            raise BadRecord(file, line, "<array>", NO_VALUE, "not valid JSON (the array is not closed)")
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            raise BadRecord(file, line, "<entry>", text[pos : pos + 40], f"not valid JSON ({exc})") from None
        yield line, value
        pos, line = _skip_space(text, end, line + _line_breaks(text, pos, end))
        if text[pos : pos + 1] == "]":
            _after_array(text, pos + 1, line, file)
            return
        if text[pos : pos + 1] != ",":
            if pos >= len(text):
                raise BadRecord(file, line, "<array>", NO_VALUE, "not valid JSON (the array is not closed)")
            raise BadRecord(file, line, "<array>", text[pos : pos + 40], "not valid JSON (a comma or ] expected)")
        pos, line = _skip_space(text, pos + 1, line)


def _line_breaks(text: str, start: int, end: int) -> int:
    """How many lines end in text[start:end]: at a line feed, CR LF or a lone CR, as JSONL lines end (the range
    never parts a CR LF: it starts at a value, or the text's start, and ends at a value's end or its "[")."""
    return text.count("\n", start, end) + text.count("\r", start, end) - text.count("\r\n", start, end)


def _skip_space(text: str, pos: int, line: int) -> tuple[int, int]:
    """The position of the next character that is not JSON white space, and its line."""
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        line += text[pos] == "\n" or (text[pos] == "\r" and text[pos + 1 : pos + 2] != "\n")
        pos += 1
    return pos, line


def _after_array(text: str, pos: int, line: int, file: str) -> None:
    """Refuse anything but white space after the array's end (a second array, or lines appended to the file)."""
    pos, line = _skip_space(text, pos, line)
    if pos < len(text):
        raise BadRecord(file, line, "<array>", text[pos : pos + 40], "not valid JSON (content after the array)")


def read(text: str, file: str, log: Log, skip_bad: bool = False) -> Log:
    """Add the entries of one file to `log`; with `skip_bad`, a malformed entry is skipped whole and counted.

    In a JSON array, an element that is not valid JSON ends the reading with an error even with `skip_bad`:
    where the next element starts cannot be known."""
    orphans: list[tuple[int, dict[str, Any]]] = []  # checkpoint entries without job_name
    names: set[str] = set()
    if text.lstrip()[:1] == "[":
        for i, payload in _array_items(text, file):
            _guarded(payload, None, file, i, log, skip_bad, orphans, names)
    else:
        for i, raw in enumerate(log_lines(text), start=1):
            if raw.strip():
                _guarded(None, raw, file, i, log, skip_bad, orphans, names)
    _adopt(orphans, names, file, log, skip_bad)
    return log


def _guarded(
    payload: Any,
    raw: str | None,
    file: str,
    line: int,
    log: Log,
    skip_bad: bool,
    orphans: list[tuple[int, dict[str, Any]]],
    names: set[str],
) -> None:
    """One entry (decoded from `raw` when given), counted as skipped instead of raising when `skip_bad`."""
    try:
        if raw is not None:
            if len(raw) > MAX_LINE_BYTES:  # refused before decoding: Python objects cost up to ~26x the text
                raise BadRecord(
                    file, line, "<line>", raw[:40], f"longer than the {MAX_LINE_BYTES:,} characters allowed for a line"
                )
            try:
                payload = parse_json_line(raw)  # times and durations are range-checked below
            except ValueError as exc:
                raise BadRecord(file, line, "<line>", raw[:40], str(exc)) from None
        if isinstance(payload, dict) and isinstance(payload.get("jsonPayload"), dict):
            payload = payload["jsonPayload"]
        if isinstance(payload, dict) and "job_name" not in payload and payload.get("event_type") is not None:
            orphans.append((line, payload))
            return
        names.add(_entry(payload, file, line, log))
    except BadRecord:
        if not skip_bad:
            raise
        log.skipped += 1


def _adopt(orphans: list[tuple[int, dict[str, Any]]], names: set[str], file: str, log: Log, skip_bad: bool) -> None:
    """Checkpoint entries without a job name go to the file's only job."""
    for i, payload in orphans:
        try:
            if len(names) != 1:
                raise BadRecord(
                    file, i, "job_name", NO_VALUE, "is required (the file names more or fewer than one job)"
                )
            _entry({**payload, "job_name": next(iter(names))}, file, i, log)
        except BadRecord:
            if not skip_bad:
                raise
            log.skipped += 1


def _checkpoint(payload: Mapping[str, Any], kind: str, file: str, line: int) -> list[Pending]:
    step = _step(payload, "step", file, line, default=-1)
    start_key = next(
        (k for k in ("checkpoint_manager_blocking_start_time", "checkpoint_manager_start_time") if k in payload), None
    )
    dur_key = next(
        (k for k in ("checkpoint_manager_blocking_duration_secs", "checkpoint_manager_duration_secs") if k in payload),
        None,
    )
    if start_key is None or dur_key is None:
        raise BadRecord(
            file,
            line,
            "checkpoint_manager_blocking_start_time",
            NO_VALUE,
            f"a {kind} entry needs a start time and a duration",
        )
    start, duration = _num(payload, start_key, file, line), _duration(payload, dur_key, file, line)
    end = in_range(start + duration, start + duration, file, line, dur_key)
    a, b = ("checkpoint_start", "checkpoint_end") if kind == "save" else ("restore_start", "restore_end")
    return [(start, CODE[a], step, ""), (end, CODE[b], step, "")]  # adjacent: the pair is this entry's own


def _custom(payload: Mapping[str, Any], file: str, line: int) -> list[Pending]:
    kind = payload.get("custom_badput_event_type", "")
    label = kind if isinstance(kind, str) else str(kind) if isinstance(kind, (int, float)) else ""
    if len(label) > MAX_TEXT:
        raise BadRecord(file, line, "custom_badput_event_type", label, f"longer than {MAX_TEXT} characters")
    out = []
    for key, name in (
        ("custom_badput_event_start_time", "custom_badput_start"),
        ("custom_badput_event_end_time", "custom_badput_end"),
    ):
        if key in payload:
            out.append((_num(payload, key, file, line), CODE[name], -1, label))
    return out


def _entry(payload: object, file: str, line: int, log: Log) -> str:
    """One entry: checked whole, then added (a bad entry adds nothing); its job name."""
    if not isinstance(payload, dict):
        raise BadRecord(file, line, "<entry>", payload, "must be an object")
    job = payload.get("job_name", NO_VALUE)
    if not isinstance(job, str) or not job or len(job) > MAX_TEXT:
        raise BadRecord(file, line, "job_name", job, f"is required: a string of at most {MAX_TEXT} characters")
    if "job_metadata" in payload:
        meta = payload["job_metadata"]
        if not isinstance(meta, dict):
            raise BadRecord(file, line, "job_metadata", meta, "must be an object")
        add_record(log, {**meta, "type": "job", "job": job}, file, line)  # checks all, then adds
        return job
    pending: list[Pending] = []
    if "job_start_time" in payload:
        pending.append((_num(payload, "job_start_time", file, line), CODE["job_start"], -1, ""))
    if "job_end_time" in payload:
        pending.append((_num(payload, "job_end_time", file, line), CODE["job_end"], -1, ""))
    if "step_start_time" in payload:
        step = _step(payload, "step_count", file, line)
        pending.append((_num(payload, "step_start_time", file, line), CODE["step_start"], step, ""))
    for key, name in PHASE_TIMES:
        if key in payload:
            pending.append((_num(payload, key, file, line), CODE[name], -1, ""))
    if "custom_badput_event_start_time" in payload or "custom_badput_event_end_time" in payload:
        pending += _custom(payload, file, line)
    kind = payload.get("event_type")
    if kind in CHECKPOINT_OPERATIONS:
        pending += _checkpoint(payload, str(kind), file, line)
    pending += _elastic(payload, file, line)
    counts = None
    if "elastic_slice_counts_timestamp" in payload:
        t = _num(payload, "elastic_slice_counts_timestamp", file, line)
        counts = (t, {k: payload[k] for k in ("active_slices", "available_slices", "total_slices") if k in payload})
        add_slice_counts(Log(), job, t, counts[1], file, line)  # checked before anything is added
    _in_order(payload, file, line)
    # every field is good: add the entry
    log.records += 1
    log.name_job(job)
    for t, code, step_no, label in pending:
        log.add_event(job, t, code, step_no, label=label)
    if counts is not None:
        add_slice_counts(log, job, counts[0], counts[1], file, line)
    return job


def _in_order(payload: Mapping[str, Any], file: str, line: int) -> None:
    """Refuse an interval whose end, in the same entry, is before its start (its times already checked): the end
    was dropped and the interval ran to the job's end, badput charged with exit 0."""
    for start, end in INTERVALS:
        if start in payload and end in payload and payload[end] < payload[start]:
            raise BadRecord(file, line, end, payload[end], f"before its start, {start} {shown(payload[start])}")


def _elastic(payload: Mapping[str, Any], file: str, line: int) -> list[Pending]:
    """Elastic waits (slice down, or scale up when the event type says so) and reinitialisations."""
    out = []
    if "elastic_wait_start_time" in payload or "elastic_wait_end_time" in payload:
        kind = payload.get("elastic_wait_event_type", "unknown")
        if not isinstance(kind, str) or len(kind) > MAX_TEXT:
            raise BadRecord(file, line, "elastic_wait_event_type", kind, f"must be a string of at most {MAX_TEXT}")
        name = "elastic_scale_up" if "scale_up" in kind.lower() else "elastic_slice_down"  # the package's rule
        for key, end in (("elastic_wait_start_time", "_start"), ("elastic_wait_end_time", "_end")):
            if key in payload:
                out.append((_num(payload, key, file, line), CODE[name + end], -1, kind))
    for key, name in (
        ("elastic_reinit_start_time", "elastic_reinit_start"),
        ("elastic_reinit_end_time", "elastic_reinit_end"),
    ):
        if key in payload:
            out.append((_num(payload, key, file, line), CODE[name], -1, ""))
    return out
