"""Importer for the log entries of Google's ml-goodput-measurement package.

Each line is one entry payload (as written to Cloud Logging; a ``{"jsonPayload": {...}}`` wrapper is accepted),
keyed by ``job_name``. Keys read: ``job_start_time``, ``job_end_time``, ``step_count`` + ``step_start_time``,
``tpu_init_start_time``/``_end_time``, ``training_prep_start_time``/``_end_time``,
``data_loading_start_time``/``_end_time``, ``custom_badput_event_type`` + ``custom_badput_event_start_time``/
``_end_time``, and checkpoint-logger entries (``event_type`` ``save`` or ``restore`` with ``step``,
``checkpoint_manager_blocking_start_time`` / ``checkpoint_manager_start_time`` and the matching
``..._duration_secs``). Times are POSIX seconds.

The package records no disruption events: a ``job_start_time`` after steps marks a restart, so a disruption is
placed at that restart (as the package does when it charges wasted progress up to the restart). Every data
loading interval is counted, not only one per start. An optional tpufleet extension entry
``{"job_name": ..., "job_metadata": {"accelerator", "chips", "phase", "framework", "topology", "ideal_step_s"}}``
supplies what the package does not log; without it a job counts as 1 chip of accelerator ``unknown``, all of
its time from the first start to the end all-allocated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpufleet.goodput.events import CODE, MAX_STEP, MAX_TEXT, BadRecord, Job, Log, add_record, in_range
from tpufleet.state.inputfiles import parse_json_line

_PAIRS = (
    ("tpu_init_start_time", "tpu_init_start"),
    ("tpu_init_end_time", "tpu_init_end"),
    ("training_prep_start_time", "training_prep_start"),
    ("training_prep_end_time", "training_prep_end"),
    ("data_loading_start_time", "data_loading_start"),
    ("data_loading_end_time", "data_loading_end"),
)
Pending = tuple[float, int, int, str]  # (time, event code, step, label): an entry's events, added once all check


def _num(payload: Mapping[str, Any], key: str, file: str, line: int) -> float:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRecord(file, line, key, value, "must be POSIX seconds")
    return in_range(value, value, file, line, key)


def _duration(payload: Mapping[str, Any], key: str, file: str, line: int) -> float:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 86400 * 365:
        raise BadRecord(file, line, key, value, "must be seconds from 0 to a year")
    return float(value)


def _step(payload: Mapping[str, Any], key: str, file: str, line: int, default: int | None = None) -> int:
    value = payload.get(key)
    if default is not None and (value is None or isinstance(value, bool) or not isinstance(value, int)):
        return default  # a checkpoint entry without a usable step number: saved step unknown
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STEP:
        raise BadRecord(file, line, key, value, f"must be a whole number from 0 to {MAX_STEP:,}")
    return value


def read(text: str, file: str, log: Log, skip_bad: bool = False) -> Log:
    """Add the entries of one file to `log`; with `skip_bad`, a malformed entry is skipped whole and counted."""
    started: dict[str, bool] = {}
    stepped: dict[str, bool] = {}
    for i, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            try:
                payload = parse_json_line(raw)  # times and durations are range-checked below
            except ValueError as exc:
                raise BadRecord(file, i, "<line>", raw[:40], str(exc)) from None
            if isinstance(payload, dict) and isinstance(payload.get("jsonPayload"), dict):
                payload = payload["jsonPayload"]
            _entry(payload, file, i, log, started, stepped)
        except BadRecord:
            if not skip_bad:
                raise
            log.skipped += 1
    return log


def _entry(payload: object, file: str, line: int, log: Log, started: dict[str, bool], stepped: dict[str, bool]) -> None:
    """One entry: checked whole, then added (a bad entry adds nothing)."""
    if not isinstance(payload, dict):
        raise BadRecord(file, line, "<entry>", payload, "must be an object")
    job = payload.get("job_name")
    if not isinstance(job, str) or not job or len(job) > MAX_TEXT:
        raise BadRecord(file, line, "job_name", job, f"is required: a string of at most {MAX_TEXT} characters")
    if "job_metadata" in payload:
        meta = payload["job_metadata"]
        if not isinstance(meta, dict):
            raise BadRecord(file, line, "job_metadata", meta, "must be an object")
        add_record(log, {**meta, "type": "job", "job": job}, file, line)  # checks all, then adds
        return
    pending: list[Pending] = []
    restart = False
    if "job_start_time" in payload:
        t = _num(payload, "job_start_time", file, line)
        restart = bool(started.get(job) and stepped.get(job))
        if restart:
            pending.append((t, CODE["failure"], -1, ""))
        pending.append((t, CODE["job_start"], -1, ""))
    if "job_end_time" in payload:
        pending.append((_num(payload, "job_end_time", file, line), CODE["job_end"], -1, ""))
    has_step = "step_start_time" in payload
    if has_step:
        step = _step(payload, "step_count", file, line)
        pending.append((_num(payload, "step_start_time", file, line), CODE["step_start"], step, ""))
    for key, name in _PAIRS:
        if key in payload:
            pending.append((_num(payload, key, file, line), CODE[name], -1, ""))
    if "custom_badput_event_start_time" in payload or "custom_badput_event_end_time" in payload:
        kind = payload.get("custom_badput_event_type", "")
        label = kind if isinstance(kind, str) else str(kind) if isinstance(kind, (int, float)) else ""
        if len(label) > MAX_TEXT:
            raise BadRecord(file, line, "custom_badput_event_type", label, f"longer than {MAX_TEXT} characters")
        for key, name in (
            ("custom_badput_event_start_time", "custom_badput_start"),
            ("custom_badput_event_end_time", "custom_badput_end"),
        ):
            if key in payload:
                pending.append((_num(payload, key, file, line), CODE[name], -1, label))
    kind = payload.get("event_type")
    if kind in ("save", "restore"):
        step = _step(payload, "step", file, line, default=-1)
        start_key = next(
            (k for k in ("checkpoint_manager_blocking_start_time", "checkpoint_manager_start_time") if k in payload),
            None,
        )
        dur_key = next(
            (
                k
                for k in ("checkpoint_manager_blocking_duration_secs", "checkpoint_manager_duration_secs")
                if k in payload
            ),
            None,
        )
        if start_key is None or dur_key is None:
            raise BadRecord(
                file,
                line,
                "checkpoint_manager_blocking_start_time",
                None,
                f"a {kind} entry needs a start time and a duration",
            )
        start, duration = _num(payload, start_key, file, line), _duration(payload, dur_key, file, line)
        end = in_range(start + duration, start + duration, file, line, dur_key)
        a, b = ("checkpoint_start", "checkpoint_end") if kind == "save" else ("restore_start", "restore_end")
        pending += [(start, CODE[a], step, ""), (end, CODE[b], step, "")]
    # every field is good: add the entry
    log.records += 1
    log.jobs.setdefault(job, Job(job))
    for t, code, step_no, label in pending:
        log.add_event(job, t, code, step_no, label=label)
    if "job_start_time" in payload:
        started[job], stepped[job] = True, False
    if has_step:
        stepped[job] = True
