"""Slice efficiency was counted from a job's submission, so an hour queued (already SG's) counted as no slice
stepping: a job that logged 2 of 2 slices throughout showed 0.5. It is counted from when the job first holds chips
or starts, as ml-goodput-measurement counts from the job's start."""

from __future__ import annotations

import json


def _log(submitted: str | None) -> str:
    records = [{"type": "job", "job": "m", "accelerator": "tpu-v4", "chips": 256, "slices": 2, "ideal_step_s": 60}]
    if submitted:
        records.append({"type": "event", "job": "m", "time": submitted, "event": "submitted"})
    at = "2026-01-05T01:00:00Z"
    records += [
        {"type": "event", "job": "m", "time": at, "event": "allocation", "chips": 256},
        {
            "type": "event",
            "job": "m",
            "time": at,
            "event": "slice_counts",
            "active_slices": 2,
            "available_slices": 2,
            "total_slices": 2,
        },
        {"type": "event", "job": "m", "time": at, "event": "job_start"},
        {"type": "event", "job": "m", "time": at, "event": "step_start", "step": 1},
        {
            "type": "event",
            "job": "m",
            "time": "2026-01-05T01:30:00Z",
            "event": "slice_counts",
            "active_slices": 1,
            "available_slices": 2,
            "total_slices": 2,
        },
        {"type": "event", "job": "m", "time": "2026-01-05T02:00:00Z", "event": "job_end"},
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def _slices(cli, tmp_path, submitted):
    log = tmp_path / "m.jsonl"
    log.write_text(_log(submitted))
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    return r.json["jobs"][0]


def test_time_queued_is_not_counted_as_slices_lost(cli, tmp_path):
    queued = _slices(cli, tmp_path, "2026-01-05T00:00:00Z")
    placed = _slices(cli, tmp_path, None)
    # 2 of 2 stepping for 30 minutes, 1 of 2 for 30: 0.75; 2 of 2 available throughout
    assert (
        queued["slices"] == placed["slices"] == {"stepping_slice_efficiency": 0.75, "available_slice_efficiency": 1.0}
    )
    assert queued["sg"] < placed["sg"]  # the hour queued is still SG's
