"""A job that ended and is started again later holds nothing in between: the gap from its `job_end` to its next
`job_start`, with no allocation logged in it, is neither all-allocated time (SG) nor `other` badput (RG), whichever
reader reads the log (standard, msgspec, Arrow columns, CSV, ml-goodput, a Dask cluster).

Hand-computed: 8 chips, steps of 10 s; run 1 from B to B+20 (steps 1, 2), run 2 from B+120 to B+140 (steps 3, 4).
All-allocated 40 s of a 140 s demand: SG 40/140 = 0.285714, RG 1, PG 1 (ideal 10 s x 4 steps / 40 s).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tpufleet.goodput import columnar, fastread
from tpufleet.ops.goodput import build
from tpufleet.state import goodputpool

B = 1767571200.0
JOB = {"type": "job", "job": "a", "accelerator": "tpu-v4", "chips": 8, "phase": "training", "ideal_step_s": 10}
Run = tuple[str, float, int]  # (event, seconds after B, its step or chips; 0 for none)
RUNS: list[Run] = [("job_start", 0, 0), ("step_start", 0, 1), ("step_start", 10, 2), ("job_end", 20, 0)]
RUNS += [("job_start", 120, 0), ("step_start", 120, 3), ("step_start", 130, 4), ("job_end", 140, 0)]


def native(runs: list[Run]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [JOB]
    for name, at, value in runs:
        rec: dict[str, Any] = {"type": "event", "job": "a", "time": B + at, "event": name}
        if name == "step_start":
            rec["step"] = value
        if name == "allocation":
            rec["chips"] = value
        out.append(rec)
    return out


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def the_job(rep: dict[str, Any]) -> dict[str, Any]:
    (j,) = rep["jobs"]
    return j


def assert_gap_held_nothing(j: dict[str, Any]) -> None:
    assert j["all_allocated_s"] == 40.0 and j["demand_s"] == 140.0
    assert j["badput_s"]["other"] == 0.0 and j["productive_s"] == 40.0
    assert (j["sg"], j["rg"], j["pg"], j["mpg"]) == (0.285714, 1.0, 1.0, 0.285714)


def test_the_gap_between_an_end_and_the_next_start_is_not_allocated(tmp_path):
    rep = build([write_jsonl(tmp_path / "a.jsonl", native(RUNS))])
    assert_gap_held_nothing(the_job(rep))
    fleet = rep["fleet"]  # capacity: the busiest moment's 8 chips over B..B+140
    assert (fleet["all_allocated_chip_s"], fleet["capacity_chip_s"], fleet["sg"]) == (320.0, 1120.0, 0.285714)
    assert fleet["badput_chip_s"]["other"] == 0.0


@pytest.mark.parametrize("reader", ["standard", "msgspec", "columns"])
def test_every_native_reader_gives_the_same_figures(tmp_path, reader):
    if reader == "msgspec" and not fastread.available():
        pytest.skip("msgspec is not installed")
    if reader == "columns" and not columnar.available():
        pytest.skip("PyArrow is not installed")
    path = write_jsonl(tmp_path / "a.jsonl", native(RUNS))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputpool, "PARALLEL_MIN_BYTES", 1 << 62)
        if reader != "msgspec":
            mp.setattr(fastread, "_DECODER", None)
        if reader == "standard":
            mp.setattr(columnar, "pa", None)
        assert_gap_held_nothing(the_job(build([path])))


def test_a_csv_log_gives_the_same_figures(tmp_path):
    records = native(RUNS)
    keys = sorted({k for r in records for k in r})
    path = tmp_path / "a.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, keys)
        writer.writeheader()
        writer.writerows(records)
    assert_gap_held_nothing(the_job(build([path])))


def test_an_ml_goodput_log_gives_the_same_gap(tmp_path):
    entries: list[dict[str, Any]] = [{"job_name": "a", "job_metadata": {"chips": 8, "ideal_step_s": 10}}]
    for name, at, step in RUNS:
        if name == "step_start":
            entries.append({"job_name": "a", "step_count": step, "step_start_time": B + at})
        else:
            entries.append({"job_name": "a", f"{name}_time": B + at})
    j = the_job(build([write_jsonl(tmp_path / "ml.jsonl", entries)], fmt="ml-goodput"))
    assert (j["all_allocated_s"], j["badput_s"]["other"], j["productive_s"]) == (40.0, 0.0, 40.0)


def test_an_allocation_logged_in_the_gap_holds_from_it(tmp_path):
    # allocated at B (all 8 chips), released by the end at B+20, allocated again at B+100: held 100..120 as well
    runs = [("allocation", 0, 8), *RUNS[:4], ("allocation", 100, 8), *RUNS[4:]]
    j = the_job(build([write_jsonl(tmp_path / "a.jsonl", native(runs))]))
    assert (j["all_allocated_s"], j["badput_s"]["other"], j["productive_s"]) == (60.0, 20.0, 40.0)
    # the same allocations but none in the gap: the end released the chips until the next start
    runs = [("allocation", 0, 8), *RUNS]
    j = the_job(build([write_jsonl(tmp_path / "b.jsonl", native(runs))]))
    assert (j["all_allocated_s"], j["badput_s"]["other"]) == (40.0, 0.0)


def test_a_window_over_the_gap_alone_holds_nothing(tmp_path):
    j = the_job(build([write_jsonl(tmp_path / "a.jsonl", native(RUNS))], since=B + 30, until=B + 110))
    assert j["all_allocated_s"] == 0.0 and j["demand_s"] == 80.0 and j["sg"] == 0.0


def test_a_cluster_gives_the_same_figures(tmp_path):
    pytest.importorskip("distributed", reason="Dask is an optional extra: no cluster here")
    path = write_jsonl(tmp_path / "a.jsonl", native(RUNS))
    assert_gap_held_nothing(the_job(build([path], workers=1)))


def test_steps_after_an_end_with_no_start_after_it_are_still_held(tmp_path):
    # no `job_start` follows the end at 20 s: no gap, the steps after it (to the last end at 40 s) count as before
    runs: list[Run] = [*RUNS[:4], ("step_start", 20, 3), ("step_start", 30, 4), ("job_end", 40, 0)]
    j = the_job(build([write_jsonl(tmp_path / "a.jsonl", native(runs))]))
    assert (j["all_allocated_s"], j["productive_s"], j["productive_steps"]) == (40.0, 40.0, 4)


def test_a_job_that_starts_at_until_or_ends_at_since_is_not_in_the_report(tmp_path):
    """A job starting at the very moment of --until (or ending at --since) has no time in the window, yet it was
    counted among the report's jobs with no figures (SG null, demand 0): two jobs back to back, a window that ends
    (or starts) where the second begins, holds the one job that ran in it, as a window ending before it would."""
    second = [{**JOB, "job": "b"}] + [
        {**r, "job": "b", "time": r["time"] + 20} for r in native(RUNS[:4])[1:]
    ]  # b runs B+20..B+40, a B..B+20
    log = write_jsonl(tmp_path / "ab.jsonl", native(RUNS[:4]) + second)
    for since, until, ran in ((None, B + 20, "a"), (B + 20, None, "b")):
        rep = build([log], since=since, until=until)
        assert [j["job"] for j in rep["jobs"]] == [ran] and rep["fleet"]["jobs"] == 1, (since, until)
        assert the_job(rep)["sg"] == 1.0 and the_job(rep)["demand_s"] == 20.0
    assert [j["job"] for j in build([log], until=B + 20.5)["jobs"]] == ["a", "b"]  # half a second of b: it is in
