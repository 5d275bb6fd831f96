"""goodput-report defects of the second review (/tmp/h_serve: H1-H3, M4, M5), each pinned: a fleet ratio over
accelerators without a capacity (H1), an interval of an ml-goodput entry that ends before it starts (H2), a
capacity smaller than the chips the jobs hold (H3), Dask's worker log on a bad record (M4), and job records that
disagree, or are missing (M5). Each refusal is exit 2 with one line naming file, line, field and value, the same
whichever reader (line by line, msgspec's, Arrow's columns, the ml-goodput columns, a Dask cluster) reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tpufleet.errors import BadInput
from tpufleet.goodput import columnar, fastread, mlfast
from tpufleet.ops.goodput import build
from tpufleet.state import goodputlogs

B = 1767571200.0  # 2026-01-05T00:00:00Z


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def job(name: str, chips: int = 8, accelerator: str = "tpu-v4", **more: Any) -> dict[str, Any]:
    return {"type": "job", "job": name, "accelerator": accelerator, "chips": chips, "ideal_step_s": 5, **more}


def ran(name: str, start: float, end: float, chips: int | None = 8) -> list[dict[str, Any]]:
    """A job holding `chips` (no allocation event when None) from `start`, stepping every 10 s, ending at `end`."""
    rows = (
        [] if chips is None else [{"type": "event", "job": name, "time": start, "event": "allocation", "chips": chips}]
    )
    rows.append({"type": "event", "job": name, "time": start, "event": "job_start"})
    t, step = start, 1
    while t < end:
        rows.append({"type": "event", "job": name, "time": t, "event": "step_start", "step": step})
        t, step = t + 10, step + 1
    rows.append({"type": "event", "job": name, "time": end, "event": "job_end"})
    return rows


def capacity(chips: int, time: float = B, accelerator: str = "tpu-v4") -> dict[str, Any]:
    return {"type": "capacity", "time": time, "accelerator": accelerator, "chips": chips}


READERS = ("lines", "msgspec", "columns")


def by_reader(paths: list[Path], reader: str, fmt: str = "native", **options: Any) -> Any:
    """The report, or ("error", message), with only one of the native readers on (or the ml-goodput columns, for
    "msgspec", off for "lines"); pieces of 512 bytes, so a file is many pieces."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputlogs, "CHUNK_BYTES", 512)
        mp.setattr(goodputlogs, "PARALLEL_MIN_BYTES", 1 << 62)
        if reader != "msgspec":
            mp.setattr(fastread, "_DECODER", None)
            mp.setattr(mlfast, "_DECODER", None)
        if reader != "columns":
            mp.setattr(columnar, "pa", None)
        try:
            return build(paths, fmt, by=["accelerator"], period="day", **options)
        except BadInput as exc:
            return ("error", str(exc))


def same_by_every_reader(paths: list[Path], fmt: str = "native", **options: Any) -> Any:
    """What each reader gives, checked to be one answer."""
    answers = [by_reader(paths, reader, fmt, **options) for reader in READERS]
    assert answers[1] == answers[0] and answers[2] == answers[0]
    return answers[0]


def refused(cli: Any, *args: Any) -> str:
    """The one line of a refused report (exit 2)."""
    r = cli("goodput-report", *[str(a) for a in args], state=False)
    assert r.code == 2, (r.code, r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1, r.err
    return r.err.strip()


# ---- M5: job records that disagree, events without a record ------------------------------------------------------
def test_two_records_of_one_job_that_disagree_are_refused_naming_both(cli, tmp_path):
    small = write(tmp_path / "small.jsonl", [job("A", 8)])
    big = write(tmp_path / "big.jsonl", [job("A", 16)])
    events = write(tmp_path / "events.jsonl", ran("A", B, B + 40))
    for first, second in ((small, big), (big, small)):  # the order of the logs no longer decides the chips
        err = refused(cli, first, events, second)
        old, new = (8, 16) if first is small else (16, 8)
        assert err == (
            f"tpufleet: error: {second}:1: field chips: the record of job 'A' at {first}:1 says {old} (value {new})"
        )
    assert refused(cli, small, events, big, "--skip-bad").endswith(f"at {small}:1 says 8 (value 16)")


def test_the_first_disagreement_in_the_log_is_named_by_every_reader(tmp_path):
    rows = [job("A", 8), *ran("A", B, B + 300), job("B", 8, framework="jax"), *ran("B", B, B + 300)]
    b_line = len(rows) - len(ran("B", B, B + 300))
    rows += [job("A", 8), job("B", 8, framework="pax"), job("A", 8, accelerator="tpu-v5p")]  # B's comes first
    path = write(tmp_path / "log.jsonl", rows)
    expected = f"{path}:{len(rows) - 1}: field framework: the record of job 'B' at {path}:{b_line} says 'jax'"
    assert same_by_every_reader([path]) == ("error", expected + " (value 'pax')")


def test_a_record_repeated_alike_is_one_record(tmp_path):
    one = write(tmp_path / "one.jsonl", [job("A"), *ran("A", B, B + 40)])
    two = write(tmp_path / "two.jsonl", [job("A"), *ran("A", B, B + 40), job("A")])
    a, b = same_by_every_reader([one]), same_by_every_reader([two])
    assert a["jobs"] == b["jobs"] and a["fleet"] == b["fleet"]


def test_ml_goodput_metadata_that_disagrees_is_refused_by_both_readers(tmp_path):
    meta = {"job_name": "j", "job_metadata": {"chips": 8, "accelerator": "tpu-v5p", "ideal_step_s": 0.5}}
    other = {"job_name": "j", "job_metadata": {"chips": 4, "accelerator": "tpu-v5p", "ideal_step_s": 0.5}}
    steps = [{"job_name": "j", "job_start_time": B}] + [
        {"job_name": "j", "step_count": k, "step_start_time": B + k} for k in range(1, 30)
    ]
    path = tmp_path / "ml.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [meta, *steps, other]))
    kind, message = same_by_every_reader([path], "ml-goodput")
    assert (kind, message) == (
        "error",
        f"{path}:{len(steps) + 2}: field chips: the record of job 'j' at {path}:1 says 8 (value 4)",
    )


def test_events_without_a_job_record_take_the_chips_of_their_largest_allocation(cli, tmp_path):
    path = write(tmp_path / "events.jsonl", ran("A", B, B + 50, chips=8))
    r = cli("goodput-report", path, "-o", "json", state=False)
    assert r.code == 0, r.err
    rep = r.json
    assert rep["jobs"][0]["chips"] == 8 and rep["fleet"]["all_allocated_chip_s"] == 8 * 50  # was 1 chip: 50
    assert rep["input"]["jobs_without_record"] == ["A"]
    assert "tpufleet: note: no job record for 'A': each counted as accelerator 'unknown'" in r.err
    plain = write(tmp_path / "plain.jsonl", ran("B", B, B + 50, chips=None))  # no allocation: 1 chip, as before
    assert same_by_every_reader([plain])["jobs"][0]["chips"] == 1
    recorded = write(tmp_path / "recorded.jsonl", [job("A", 8), *ran("A", B, B + 50, chips=8)])
    r = cli("goodput-report", recorded, "-o", "json", state=False)
    assert r.json["input"]["jobs_without_record"] == [] and "no job record" not in r.err
