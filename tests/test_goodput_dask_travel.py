"""goodput-report on a Dask cluster hands back each job's account without its intervals when the report reads
only what is made of them on the worker (the capacity check's runs, the --period rows' sums): the serial report,
byte for byte, for every option that decides what travels."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="Dask is an optional extra (make sweep-deps installs it): no cluster here")

from test_goodput_fastpath import B, _job_lines

from tpufleet.errors import BadInput
from tpufleet.goodput import pipeline
from tpufleet.ops import goodputparts
from tpufleet.ops.goodput import build


@pytest.fixture(scope="module")
def scheduler():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def days_of_logs(directory: Path, files: int = 3, jobs: int = 12) -> list[Path]:
    """Jobs over nine days (some across a midnight, one across a Monday's) dealt into `files` logs; every fourth
    job's records split over two logs (accounted where the report is made, the others on the workers)."""
    rng = random.Random(3)
    chunks: list[list[str]] = [
        [json.dumps({"type": "capacity", "time": B - 3600, "accelerator": "tpu-v4", "chips": 4096})]
    ]
    chunks += [[] for _ in range(files - 1)]
    for k in range(jobs):
        lines = _job_lines(rng, f"j{k:02d}", B + k * 61_000.0 - 60.0)
        lo, hi = sorted({k % files, (k + 1) % files})
        if k % 4:
            chunks[k % files] += lines
        else:
            chunks[lo] += lines[: len(lines) // 2]
            chunks[hi] += lines[len(lines) // 2 :]
    paths = [directory / f"part{i}.jsonl" for i in range(files)]
    for path, chunk in zip(paths, chunks, strict=True):
        path.write_text("\n".join(chunk) + "\n")
    return paths


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return days_of_logs(tmp_path_factory.mktemp("logs"))


def test_every_period_part_and_capacity_gives_the_serial_report(logs, scheduler, tmp_path):
    whole = build(logs, period="day")
    assert len(whole["periods"]) >= 8 and len(build(logs, period="week")["periods"]) == 3
    t0, t1 = whole["fleet"]["window"]["start"], whole["fleet"]["window"]["end"]
    given = [(acc, 10**6) for acc in sorted({j["accelerator"] for j in whole["jobs"]})]
    parts = [(None, None), (t0 + (t1 - t0) / 3, None), (None, t1 - (t1 - t0) / 3), (t0 + 3600.0, t1 - 3600.0)]
    excluded = tmp_path / "maintenance.json"  # across a midnight (job j00), and inside a day (j05)
    excluded.write_text(json.dumps([{"start": B - 30, "end": B + 30}, {"start": B + 305_000, "end": B + 305_040}]))
    assert build(logs, exclude=excluded)["fleet"]["excluded_chip_s"] > 0
    grid = itertools.product([None, "day", "week"], parts, [None, given], [None, excluded])
    for period, (since, until), capacity, exclude in grid:
        options = {"period": period, "since": since, "until": until, "capacity": capacity, "exclude": exclude}
        options["by"] = ["accelerator"]
        serial = build(logs, **options)
        assert json.dumps(build(logs, **options, cluster=scheduler)) == json.dumps(serial), options
    for extra in ({"windows": [("6h", 6 * 3600.0)]}, {"keep_timelines": 3}):  # these keep the intervals
        serial = build(logs, period="day", **extra)
        assert json.dumps(build(logs, period="day", **extra, cluster=scheduler)) == json.dumps(serial), extra


def test_a_capacity_smaller_than_the_chips_held_is_refused_as_serially(logs, scheduler):
    whole = build(logs)
    acc = whole["jobs"][0]["accelerator"]
    with pytest.raises(BadInput) as serial:
        build(logs, capacity=[(acc, 1)], period="day")
    with pytest.raises(BadInput) as on_cluster:
        build(logs, capacity=[(acc, 1)], period="day", cluster=scheduler)
    assert str(on_cluster.value) == str(serial.value)


def test_the_accounts_travel_without_their_intervals(logs, scheduler):
    spans: list[tuple[float, float]] = []
    for windows, timelines, kept in ((False, False, False), (True, False, True), (False, True, True)):
        accounts = goodputparts.summarize_part(str(logs[0]), "native", False, None, None, spans, timelines, "day",
                                               windows)[3]  # fmt: skip
        in_part = [a for a in accounts if a.in_part]
        assert in_part and all((a.starts is not None) == kept for a in in_part)
        assert all((a.window_terms is not None) == (not kept) for a in in_part)
    assert B > 0 and pipeline.travelling([], "day") == []
