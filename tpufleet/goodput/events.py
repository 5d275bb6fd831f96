"""The native goodput event schema (version 1) and its readers (JSONL and CSV).

One record per line (JSONL) or row (CSV, columns named like the keys). Three record types:

* ``{"type": "job", "job": ID, "accelerator": "tpu-v4", "chips": 256, "topology": "4x8x8",
  "phase": "training|serving|bulk_inference", "framework": "jax", "priority": "batch",
  "ideal_step_s": 1.2}``: job metadata; instead of ``ideal_step_s``, ``flops_per_step`` and
  ``peak_flops_per_chip`` (ideal step = flops / (peak x chips)).
* ``{"type": "capacity", "time": T, "accelerator": "tpu-v4", "chips": 4096}``: fleet capacity from T on.
* ``{"type": "event", "job": ID, "time": T, "event": NAME, ...}`` with NAME one of EVENT_NAMES; ``step`` for
  ``step_start``, ``checkpoint_start/end`` (the step saved) and ``restore_end``; ``chips`` for ``allocation``
  (how many of the job's chips are allocated from T on); ``label`` for ``custom_badput_start/end``.

T is ISO 8601 UTC (``2026-01-05T10:00:00Z``) or POSIX seconds. A first record ``{"type": "schema",
"version": 1}`` is optional.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tpufleet.errors import BadInput

SCHEMA_VERSION = 1
PHASES = ("training", "serving", "bulk_inference")
EVENT_NAMES = (
    "submitted",
    "allocation",
    "job_start",
    "job_end",
    "tpu_init_start",
    "tpu_init_end",
    "training_prep_start",
    "training_prep_end",
    "compile_start",
    "compile_end",
    "step_start",
    "data_loading_start",
    "data_loading_end",
    "checkpoint_start",
    "checkpoint_end",
    "restore_start",
    "restore_end",
    "custom_badput_start",
    "custom_badput_end",
    "failure",
    "preemption",
    "eviction",
)
CODE = {name: i for i, name in enumerate(EVENT_NAMES)}
DISRUPTIONS = ("failure", "preemption", "eviction")

EventRecord = tuple[float, int, int, int, str]  # (time, event code, step, chips, label); -1 / "" where absent


class BadRecord(BadInput):
    def __init__(self, file: str, line: int, field_name: str, value: object, problem: str) -> None:
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        super().__init__(f"{file}:{line}: field {field_name}: {problem} (value {shown})")


@dataclass
class Job:
    id: str
    accelerator: str = "unknown"
    chips: int = 1
    topology: str = ""
    phase: str = "training"
    framework: str = "unknown"
    priority: str = ""
    ideal_step_s: float | None = None


@dataclass
class Log:
    jobs: dict[str, Job] = field(default_factory=dict)
    events: dict[str, list[EventRecord]] = field(default_factory=dict)  # job -> (t, code, step, chips, label)
    capacity: list[tuple[float, str, int]] = field(default_factory=list)
    skipped: int = 0
    records: int = 0

    def add_event(self, job: str, t: float, code: int, step: int = -1, chips: int = -1, label: str = "") -> None:
        self.events.setdefault(job, []).append((t, code, step, chips, label))


def parse_time(value: object, file: str, line: int, name: str = "time") -> float:
    if isinstance(value, bool):
        raise BadRecord(file, line, name, value, "not a time")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            pass
        try:
            stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise BadRecord(file, line, name, value, "not an ISO 8601 time or POSIX seconds") from None
        if stamp.tzinfo is None:
            raise BadRecord(file, line, name, value, "time has no zone; use UTC (…Z)")
        return stamp.timestamp()
    raise BadRecord(file, line, name, value, "not a time")


def _int(rec: Mapping[str, Any], key: str, file: str, line: int, required: bool = False, minimum: int = 0) -> int:
    value = rec.get(key)
    if value in (None, ""):
        if required:
            raise BadRecord(file, line, key, None, "is required")
        return -1
    try:
        number = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or (isinstance(value, float) and not value.is_integer()) or number < minimum:
        raise BadRecord(file, line, key, value, f"must be a whole number >= {minimum}")
    return number


def _float(rec: Mapping[str, Any], key: str, file: str, line: int) -> float | None:
    value = rec.get(key)
    if value in (None, ""):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BadRecord(file, line, key, value, "must be a number") from None
    if not number > 0:
        raise BadRecord(file, line, key, value, "must be positive")
    return number


def _str(rec: Mapping[str, Any], key: str, file: str, line: int, default: str = "") -> str:
    value = rec.get(key, default)
    if value in (None, ""):
        return default
    if not isinstance(value, str):
        raise BadRecord(file, line, key, value, "must be a string")
    return value


def add_record(log: Log, rec: object, file: str, line: int) -> None:
    if not isinstance(rec, dict):
        raise BadRecord(file, line, "<record>", rec, "must be an object")
    kind = rec.get("type")
    if kind == "event":
        job = _str(rec, "job", file, line)
        if not job:
            raise BadRecord(file, line, "job", rec.get("job"), "is required")
        name = rec.get("event")
        if name not in CODE:
            raise BadRecord(file, line, "event", name, "unknown event name")
        t = parse_time(rec.get("time"), file, line)
        step = _int(rec, "step", file, line, required=name in ("step_start",))
        chips = _int(rec, "chips", file, line, required=name == "allocation")
        log.add_event(job, t, CODE[name], step, chips, _str(rec, "label", file, line))
    elif kind == "job":
        job = _str(rec, "job", file, line)
        if not job:
            raise BadRecord(file, line, "job", rec.get("job"), "is required")
        phase = _str(rec, "phase", file, line, "training")
        if phase not in PHASES:
            raise BadRecord(file, line, "phase", phase, f"must be one of {', '.join(PHASES)}")
        chips = _int(rec, "chips", file, line, required=True, minimum=1)
        ideal = _float(rec, "ideal_step_s", file, line)
        flops, peak = _float(rec, "flops_per_step", file, line), _float(rec, "peak_flops_per_chip", file, line)
        if ideal is None and flops is not None and peak is not None:
            ideal = flops / (peak * chips)
        log.jobs[job] = Job(
            job,
            _str(rec, "accelerator", file, line, "unknown"),
            chips,
            _str(rec, "topology", file, line),
            phase,
            _str(rec, "framework", file, line, "unknown"),
            _str(rec, "priority", file, line),
            ideal,
        )
    elif kind == "capacity":
        log.capacity.append(
            (
                parse_time(rec.get("time"), file, line),
                _str(rec, "accelerator", file, line, "unknown"),
                _int(rec, "chips", file, line, required=True),
            )
        )
    elif kind == "schema":
        if rec.get("version") != SCHEMA_VERSION:
            raise BadRecord(
                file, line, "version", rec.get("version"), f"this reader knows schema version {SCHEMA_VERSION}"
            )
    else:
        raise BadRecord(file, line, "type", kind, "must be job, event, capacity or schema")
    log.records += 1


def read_native(text: str, file: str, log: Log, skip_bad: bool = False, csv_format: bool = False) -> Log:
    if csv_format:
        rows = csv.DictReader(io.StringIO(text))
        for i, row in enumerate(rows, start=2):
            _add_guarded(log, skip_bad, {k: v for k, v in row.items() if k}, file, i)
        return log
    loads = json.loads
    for i, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = loads(raw)
        except ValueError as exc:
            if skip_bad:
                log.skipped += 1
                continue
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)  # e.g. an over-long integer
            raise BadRecord(file, i, "<line>", raw[:40], f"not valid JSON ({detail})") from None
        _add_guarded(log, skip_bad, rec, file, i)
    return log


def _add_guarded(log: Log, skip_bad: bool, rec: object, file: str, line: int) -> None:
    """add_record, counting a bad record as skipped instead of raising when `skip_bad`."""
    try:
        add_record(log, rec, file, line)
    except BadRecord:
        if not skip_bad:
            raise
        log.skipped += 1
