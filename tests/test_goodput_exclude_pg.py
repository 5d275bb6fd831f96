"""A step begun before an excluded span was counted whole beside only the productive time outside the span: PG
(and MPG) above 1 (`PG 2.0000` for a job whose whole run is at 1.0). An exclusion, as `--since`/`--until` do, now
gives the part the whole run's PG."""

from __future__ import annotations

import json

import pytest

LOG = "\n".join(
    json.dumps(r)
    for r in (
        {"type": "job", "job": "p", "accelerator": "tpu-v4", "chips": 64, "ideal_step_s": 600},
        {"type": "capacity", "time": "2026-01-05T00:00:00Z", "accelerator": "tpu-v4", "chips": 64},
        {"type": "event", "job": "p", "time": "2026-01-05T00:00:00Z", "event": "job_start"},
        {"type": "event", "job": "p", "time": "2026-01-05T00:00:00Z", "event": "step_start", "step": 1},
        {"type": "event", "job": "p", "time": "2026-01-05T00:10:00Z", "event": "step_start", "step": 2},
        {"type": "event", "job": "p", "time": "2026-01-05T00:20:00Z", "event": "job_end"},
    )
)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "pg.jsonl").write_text(LOG + "\n")
    spans = [{"start": "2026-01-05T00:05:00Z", "end": "2026-01-05T00:20:00Z", "reason": "maintenance"}]
    (tmp_path / "ex.json").write_text(json.dumps(spans))
    return tmp_path


def _pg(cli, *args) -> tuple[float, float, float]:
    r = cli("goodput-report", *args, "--period", "day", "-o", "json")
    assert r.code == 0, r.err
    d = r.json
    return d["fleet"]["pg"], d["jobs"][0]["pg"], d["periods"][0]["pg"]


def test_pg_with_an_exclusion_is_the_whole_runs(cli, files):
    whole = _pg(cli, files / "pg.jsonl")
    excluded = _pg(cli, files / "pg.jsonl", "--exclude", files / "ex.json")
    cut = _pg(cli, files / "pg.jsonl", "--until", "2026-01-05T00:05:00Z")
    assert whole == (1.0, 1.0, 1.0)
    assert excluded == pytest.approx(whole) and cut == pytest.approx(whole)
