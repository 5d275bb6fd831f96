"""The checkpoint advice's current interval is the time between checkpoints while the job runs: a gap that holds
a disruption and the restart also holds the time the job was down or queued, which is not the interval it
checkpoints at (it read 4,280 s for a simulated fleet checkpointing every 3,600 s of compute)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

T = 1767571200  # 2026-01-05T00:00:00Z


def event(t: float, name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "event", "job": "train", "time": T + t, "event": name, **extra}


def run_of(start: float, first_step: int, saves: int) -> list[dict[str, Any]]:
    """A run from `start`: a step a minute, a 10 s checkpoint save every 600 s, `saves` of them."""
    out = [event(start, "job_start")]
    for k in range(saves * 10):
        t = start + 60 * k
        out.append(event(t, "step_start", step=first_step + k))
        if k % 10 == 9:
            out += [
                event(t + 50, "checkpoint_start", step=first_step + k),
                event(t + 60, "checkpoint_end", step=first_step + k),
            ]
    return out


def test_gap_across_a_failure_and_a_long_wait_is_not_a_checkpoint_interval(cli, tmp_path: Path) -> None:
    job = {"type": "job", "job": "train", "accelerator": "tpu-v4", "chips": 64, "phase": "training", "ideal_step_s": 30}
    first = run_of(0, 1, 3)  # saves at 590, 1190, 1790; fails at 1850 during step 31
    second = run_of(20_000, 31, 3)  # back 5 hours later, redoing step 31
    lines = [job, event(0, "submitted"), event(0, "allocation", chips=64), *first, event(1850, "failure")]
    lines += [event(1850, "allocation", chips=0), event(20_000, "allocation", chips=64), *second]
    lines += [event(21_800, "job_end"), event(21_800, "allocation", chips=0)]
    log = tmp_path / "train.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["fleet"]["checkpoint_advice"]["current_interval_s"] == 600.0
    assert report["jobs"][0]["checkpoint_advice"]["current_interval_s"] == 600.0


def test_simulated_fleet_reports_the_interval_it_checkpoints_at(cli, tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    r = cli(
        "simulate-fleet", "--days", "7", "--seed", "5", "--fault-scale", "20", "--out", out, "-o", "json", state=False
    )
    assert r.code == 0, r.err
    r = cli("goodput-report", out, "-o", "json", state=False)
    assert r.code == 0, r.err
    advice = json.loads(r.out)["fleet"]["checkpoint_advice"]
    # 60 minutes of compute and a 60 s blocking write between checkpoint starts (a drain's early save aside)
    assert 3300 <= advice["current_interval_s"] <= 3700
