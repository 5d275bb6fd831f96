"""An event logged twice in a row is one event: a log with lines repeated (a shipper's retry) gives the same
goodput as the log itself (a repeated step counted twice took PG and MPG above 1), and the report counts what it
dropped; one log given twice is refused. The same event again after others at its instant is the log's own (the
simulator's zero-length restarts redo a step at the instant of the eviction): kept."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

GOODPUT = Path(__file__).parent.parent / "fixtures" / "goodput"
NATIVE = sorted(p for p in GOODPUT.glob("*.jsonl"))
ML = sorted((GOODPUT / "ml").glob("*.jsonl"))


def _figures(report: dict[str, Any]) -> tuple[Any, Any]:
    """Everything the accounting says, without the input counters."""
    jobs = [{k: v for k, v in j.items() if k != "events_repeated"} for j in report["jobs"]]
    return report["fleet"], jobs


def _report(cli: Any, *args: Any) -> dict[str, Any]:
    r = cli("goodput-report", *args, "-o", "json")
    assert r.code == 0, r.err
    return r.json


@pytest.mark.parametrize(("fmt", "log"), [("native", p) for p in NATIVE] + [("ml-goodput", p) for p in ML],
                         ids=[p.name for p in NATIVE] + [f"ml-{p.name}" for p in ML])  # fmt: skip
def test_a_log_with_lines_repeated_is_the_log(cli, tmp_path, fmt, log):
    once = _report(cli, "--format", fmt, log)
    lines = log.read_text().splitlines()
    events = [i for i, line in enumerate(lines) if '"event"' in line or '"step_start_time"' in line]
    again = set(random.Random(log.name).sample(events, min(3, len(events))))
    repeated = tmp_path / log.name
    repeated.write_text("\n".join(x for i, line in enumerate(lines) for x in [line] * (2 if i in again else 1)) + "\n")
    three = _report(cli, "--format", fmt, repeated)
    assert _figures(three) == _figures(once)
    assert three["input"]["events_repeated"] == len(again) > 0
    assert once["input"]["events_repeated"] == 0


def test_one_log_given_twice_is_refused(cli, tmp_path):
    log = NATIVE[0]
    link = tmp_path / "same.jsonl"
    link.symlink_to(log)
    for args in ([log, log], [log, link]):
        r = cli("goodput-report", *args)
        assert r.code == 2 and "given twice" in r.err and len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.parametrize("how", ["copy", "gzip", "stdin"])
def test_one_log_under_another_name_is_refused(cli, tmp_path, monkeypatch, how):
    """A copy, its gzip or the same bytes on standard input: two logs' events at one instant interleave, so the
    repeats are not adjacent and a step would count twice (PG 0.375 where the log alone gives 0.3125)."""
    import gzip
    import io
    import sys

    log = NATIVE[0]
    other = tmp_path / ("copy.jsonl.gz" if how == "gzip" else "copy.jsonl")
    other.write_bytes(gzip.compress(log.read_bytes()) if how == "gzip" else log.read_bytes())
    if how == "stdin":
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log.read_bytes())))
        other = Path("-")
    r = cli("goodput-report", other, log)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    shown = "<stdin>" if how == "stdin" else str(other)
    assert f"{log} holds the same bytes as {shown}" in r.err


def test_logs_that_hold_no_record_are_not_copies(cli, tmp_path):
    """An idle hour's rotated logs (a CSV header alone) are alike byte for byte and count nothing: both are read."""
    idle = [tmp_path / f"h{i}.csv" for i in range(2)]
    for path in idle:
        path.write_text("type,job,time,event,step,chips\n")
    r = cli("goodput-report", NATIVE[0], *idle, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["fleet"] == cli("goodput-report", NATIVE[0], "-o", "json").json["fleet"]


def test_logs_that_differ_are_both_read(cli, tmp_path):
    log = NATIVE[0]
    other = tmp_path / "other.jsonl"
    other.write_bytes(log.read_bytes().replace(b'"job":"', b'"job":"other-'))
    assert cli("goodput-report", log, other).code == 0


def test_a_repeated_step_is_not_a_second_step(cli, tmp_path):
    lines = [
        '{"type":"capacity","time":"2026-01-05T00:00:00Z","accelerator":"tpu-v4","chips":8}',
        '{"type":"job","job":"j1","accelerator":"tpu-v4","chips":4,"phase":"training","ideal_step_s":10}',
        *(
            f'{{"type":"event","job":"j1","time":"2026-01-05T00:00:00Z","event":"{e}"{extra}}}'
            for e, extra in (("submitted", ""), ("allocation", ',"chips":4'), ("job_start", ""))
        ),
        *(
            f'{{"type":"event","job":"j1","time":"2026-01-05T00:00:{10 * i:02d}Z","event":"step_start","step":{i + 1}}}'
            for i in range(3)
        ),
        '{"type":"event","job":"j1","time":"2026-01-05T00:00:50Z","event":"job_end"}',
    ]
    log = tmp_path / "a.jsonl"
    log.write_text("\n".join([*lines, lines[6]]) + "\n")  # step 2 logged twice
    d = _report(cli, log)
    [job] = d["jobs"]
    # by hand: 3 steps of 10 s ideal in 50 s on 4 of 8 chips
    assert (job["productive_steps"], job["events_repeated"]) == (3, 1)
    assert {k: d["fleet"][k] for k in ("sg", "rg", "pg", "mpg")} == {"sg": 0.5, "rg": 1.0, "pg": 0.6, "mpg": 0.3}


def test_a_line_that_is_not_utf8_is_named_and_skipped_with_skip_bad(cli, tmp_path):
    log = tmp_path / "bin.jsonl"
    log.write_bytes(NATIVE[0].read_bytes() + b"\xff\xfe{}\n")
    lines = NATIVE[0].read_bytes().count(b"\n") + 1
    r = cli("goodput-report", log)
    assert r.code == 2 and f"bin.jsonl:{lines}: field <line>: not UTF-8 text" in r.err, r.err
    once = _report(cli, NATIVE[0])
    skipped = _report(cli, log, "--skip-bad")
    assert skipped["input"]["skipped"] == 1 and _figures(skipped) == _figures(once)
