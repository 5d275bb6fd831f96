"""Synthetic training jobs, written both as native events and as ml-goodput-measurement entries (pure).

Used by the tests (the two readers must agree) and by the benchmark; `make demo` reads a log made with it once
and shipped as package data (tpufleet/data/demo-goodput.jsonl.gz, see `write_demo_log`).
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

Entry = dict[str, Any]


def training_job(
    job: str,
    start: float,
    runs: int = 3,
    steps_per_run: int = 22,
    step_s: float = 10.0,
    checkpoint_every: int = 5,
    seed: int = 0,
    chips: int = 256,
    accelerator: str = "tpu-v4",
    ideal_step_s: float | None = 8.0,
    data_loading_every: int = 4,
    recovery_s: float = 0.0,
) -> tuple[list[dict], list[dict]]:
    """(native records, ml-goodput entries) for one job: `runs` runs, each but the last ended by a failure
    `recovery_s` before the restart (ml-goodput-measurement logs only the restart, so compare with 0)."""
    rng = random.Random(seed)
    native: list[Entry] = [
        {
            "type": "job",
            "job": job,
            "accelerator": accelerator,
            "chips": chips,
            "phase": "training",
            "framework": "jax",
            "ideal_step_s": ideal_step_s,
        }
    ]
    ml: list[Entry] = [
        {
            "job_name": job,
            "job_metadata": {
                "accelerator": accelerator,
                "chips": chips,
                "phase": "training",
                "framework": "jax",
                "ideal_step_s": ideal_step_s,
            },
        }
    ]
    t = start
    step = 1

    def ev(name: str, when: float, **kw: object) -> None:
        native.append({"type": "event", "job": job, "time": round(when, 3), "event": name, **kw})

    for r in range(runs):
        ev("job_start", t)
        ml.append({"job_name": job, "job_start_time": round(t, 3)})
        for a, b, key in (
            ("tpu_init_start", "tpu_init_end", "tpu_init"),
            ("training_prep_start", "training_prep_end", "training_prep"),
        ):
            d = round(rng.uniform(20, 60), 3)
            ev(a, t)
            ev(b, t + d)
            ml.append({"job_name": job, f"{key}_start_time": round(t, 3)})
            ml.append({"job_name": job, f"{key}_end_time": round(t + d, 3)})
            t += d
        if r:
            d = round(rng.uniform(5, 15), 3)
            ev("restore_start", t)
            ev("restore_end", t + d, step=step - 1)
            ml.append(
                {
                    "job_name": job,
                    "event_type": "restore",
                    "step": step - 1,
                    "checkpoint_manager_start_time": round(t, 3),
                    "checkpoint_manager_duration_secs": d,
                }
            )
            t += d
        last_saved = step - 1
        for k in range(steps_per_run):
            first = k == 0
            ev("step_start", t, step=step)
            ml.append({"job_name": job, "step_count": step, "step_start_time": round(t, 3)})
            span = step_s * (3.0 if first else rng.uniform(0.9, 1.1))  # the first step of a run also compiles
            if data_loading_every and k % data_loading_every == 1:
                d = round(rng.uniform(0.5, 2.0), 3)
                ev("data_loading_start", t + 0.5)
                ev("data_loading_end", t + 0.5 + d)
                ml.append({"job_name": job, "data_loading_start_time": round(t + 0.5, 3)})
                ml.append({"job_name": job, "data_loading_end_time": round(t + 0.5 + d, 3)})
            t = round(t + span, 3)
            if checkpoint_every and step % checkpoint_every == 0:
                d = round(rng.uniform(1, 4), 3)
                ev("checkpoint_start", t, step=step)
                ev("checkpoint_end", t + d, step=step)
                ml.append(
                    {
                        "job_name": job,
                        "event_type": "save",
                        "step": step,
                        "directory": "gs://bucket/ckpt",
                        "checkpoint_manager_blocking_start_time": round(t, 3),
                        "checkpoint_manager_blocking_duration_secs": d,
                    }
                )
                t = round(t + d, 3)
                last_saved = step
            step += 1
        if r < runs - 1:
            t += rng.uniform(30, 120)  # wasted work after the last checkpoint, then the failure
            ev("failure", t)
            t += recovery_s  # ml-goodput-measurement cannot see this: keep 0 when comparing the two
            step = last_saved + 1
    ev("job_end", t)
    ml.append({"job_name": job, "job_end_time": round(t, 3)})
    return native, ml


DEMO_START = 1767571200.0  # 2026-01-05T00:00:00Z


def demo_log() -> list[Entry]:
    """A few days of synthetic jobs on two accelerator types, with failures and restarts (`make demo`)."""
    lines: list[Entry] = [
        {"type": "capacity", "time": DEMO_START, "accelerator": "tpu-v4", "chips": 4096},
        {"type": "capacity", "time": DEMO_START, "accelerator": "tpu-v5p", "chips": 4096},  # its 2,048-chip job fits
    ]
    for k in range(12):
        native, _ = training_job(
            f"train-{k:02d}",
            DEMO_START + k * 20000,
            runs=1 + k % 4,
            steps_per_run=410,
            seed=k,
            chips=(64, 256, 512, 2048)[k % 4],
            accelerator=("tpu-v4", "tpu-v5p")[k % 3 == 0],
            step_s=30.0,
            checkpoint_every=50,
            ideal_step_s=(18.0, 21.0, 24.0)[k % 3],
            recovery_s=600.0,
        )
        lines += native
    return lines


def demo_log_text() -> str:
    return "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in demo_log())


def write_demo_log(path: Path) -> None:
    """Regenerate the demo's job log (gzip: 1.7 MB of JSON lines, 150 KB packed), from the repository root:
    ``PYTHONPATH=tests python -c 'import oracles.synthetic_jobs as s, pathlib;
    s.write_demo_log(pathlib.Path("tpufleet/data/demo-goodput.jsonl.gz"))'``."""
    path.write_bytes(gzip.compress(demo_log_text().encode(), compresslevel=9, mtime=0))
