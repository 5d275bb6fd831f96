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

import json
from collections.abc import Mapping
from typing import Any

from tpufleet.goodput.events import CODE, BadRecord, Job, Log, add_record

_PAIRS = (
    ("tpu_init_start_time", "tpu_init_start"),
    ("tpu_init_end_time", "tpu_init_end"),
    ("training_prep_start_time", "training_prep_start"),
    ("training_prep_end_time", "training_prep_end"),
    ("data_loading_start_time", "data_loading_start"),
    ("data_loading_end_time", "data_loading_end"),
)


def _num(payload: Mapping[str, Any], key: str, file: str, line: int) -> float:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRecord(file, line, key, value, "must be POSIX seconds")
    return float(value)


def read(text: str, file: str, log: Log, skip_bad: bool = False) -> Log:
    started: dict[str, bool] = {}
    stepped: dict[str, bool] = {}
    for i, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            payload = json.loads(raw)
            if isinstance(payload, dict) and isinstance(payload.get("jsonPayload"), dict):
                payload = payload["jsonPayload"]
            _entry(payload, file, i, log, started, stepped)
        except ValueError as exc:
            if skip_bad:
                log.skipped += 1
                continue
            if isinstance(exc, BadRecord):
                raise
            raise BadRecord(file, i, "<line>", raw[:40], f"not valid JSON ({exc})") from None
    return log


def _entry(payload: object, file: str, line: int, log: Log, started: dict[str, bool], stepped: dict[str, bool]) -> None:
    if not isinstance(payload, dict):
        raise BadRecord(file, line, "<entry>", payload, "must be an object")
    job = payload.get("job_name")
    if not isinstance(job, str) or not job:
        raise BadRecord(file, line, "job_name", job, "is required")
    log.records += 1
    if "job_metadata" in payload:
        meta = payload["job_metadata"]
        if not isinstance(meta, dict):
            raise BadRecord(file, line, "job_metadata", meta, "must be an object")
        add_record(log, {"type": "job", "job": job, **meta}, file, line)
        return
    log.jobs.setdefault(job, Job(job))
    if "job_start_time" in payload:
        t = _num(payload, "job_start_time", file, line)
        if started.get(job) and stepped.get(job):
            log.add_event(job, t, CODE["failure"])
        started[job], stepped[job] = True, False
        log.add_event(job, t, CODE["job_start"])
    if "job_end_time" in payload:
        log.add_event(job, _num(payload, "job_end_time", file, line), CODE["job_end"])
    if "step_start_time" in payload:
        step = payload.get("step_count")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise BadRecord(file, line, "step_count", step, "must be a whole number >= 0")
        log.add_event(job, _num(payload, "step_start_time", file, line), CODE["step_start"], step)
        stepped[job] = True
    for key, name in _PAIRS:
        if key in payload:
            log.add_event(job, _num(payload, key, file, line), CODE[name])
    if "custom_badput_event_start_time" in payload or "custom_badput_event_end_time" in payload:
        label = str(payload.get("custom_badput_event_type", ""))
        for key, name in (
            ("custom_badput_event_start_time", "custom_badput_start"),
            ("custom_badput_event_end_time", "custom_badput_end"),
        ):
            if key in payload:
                log.add_event(job, _num(payload, key, file, line), CODE[name], label=label)
    kind = payload.get("event_type")
    if kind in ("save", "restore"):
        step = payload.get("step")
        step = int(step) if isinstance(step, int) and not isinstance(step, bool) else -1
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
        start, duration = _num(payload, start_key, file, line), _num(payload, dur_key, file, line)
        a, b = ("checkpoint_start", "checkpoint_end") if kind == "save" else ("restore_start", "restore_end")
        log.add_event(job, start, CODE[a], step)
        log.add_event(job, start + duration, CODE[b], step)
