"""The goodput benchmark's generated native logs are input `goodput-report` accepts: the fleet's capacity record
holds every job at once (at 10 M events, 500 jobs, the jobs held 65,920 chips against the record's 65,536 and the
benchmark stopped on the report's own error, exit 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tpufleet.ops.goodput import build

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_goodput


def test_the_benchmarks_capacity_record_holds_every_job_at_once(tmp_path):
    paths = bench_goodput.write_native(tmp_path, events=300, files=2, per_job=1)  # 300 short jobs
    records = [json.loads(line) for path in paths for line in path.read_text().splitlines()]
    (capacity,) = [r for r in records if r["type"] == "capacity"]
    assert capacity["chips"] >= sum(r["chips"] for r in records if r["type"] == "job")
    report = build(paths, by=["accelerator"], period="day")
    assert len(report["jobs"]) == 300 and report["fleet"]["capacity_basis"] == "events"
