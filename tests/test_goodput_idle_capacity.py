"""SG counts the capacity a fleet holds while no job runs: a report spans the data from its first time to its last,
capacity records included, and a simulated run spans the whole run (its log holds the capacity as the run starts
and as it ends). Before, the span ran from the first job's first event to the last job's last, so a fleet idle
before and after its only job reported SG 1.0."""

from __future__ import annotations

import json

import pytest

DAY = 86400.0


def _log(tmp_path, *, capacity_at: str, since: str | None = None) -> list[str]:
    lines = [
        f'{{"type":"capacity","time":"{capacity_at}","accelerator":"tpu-v4","chips":8}}',
        '{"type":"job","job":"j","accelerator":"tpu-v4","chips":8,"phase":"training","ideal_step_s":10}',
        *(
            f'{{"type":"event","job":"j","time":"2026-01-05T{t}Z","event":"{e}"{x}}}'
            for t, e, x in (
                ("01:00:00", "submitted", ""),
                ("01:00:00", "allocation", ',"chips":8'),
                ("01:00:00", "job_start", ""),
                ("01:00:00", "step_start", ',"step":1'),
                ("02:00:00", "job_end", ""),
            )
        ),
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return [str(path), *(["--since", since] if since else [])]


def test_idle_capacity_before_the_first_job_counts(cli, tmp_path):
    """Capacity of 8 chips from 00:00, one 8-chip job from 01:00 to 02:00: SG 0.5 (hand), as `--since 00:00`."""
    plain = cli("goodput-report", *_log(tmp_path, capacity_at="2026-01-05T00:00:00Z"), "-o", "json", state=False)
    since = cli(
        "goodput-report",
        *_log(tmp_path, capacity_at="2026-01-05T00:00:00Z", since="2026-01-05T00:00:00Z"),
        "-o",
        "json",
        state=False,
    )
    assert plain.code == since.code == 0, (plain.err, since.err)
    fleet = plain.json["fleet"]
    assert fleet["sg"] == pytest.approx(0.5)
    assert (fleet["all_allocated_chip_s"], fleet["capacity_chip_s"]) == (8 * 3600, 8 * 7200)
    assert since.json["fleet"]["sg"] == fleet["sg"]


def test_capacity_records_that_capacity_overrides_do_not_set_the_span(cli, tmp_path):
    """With --capacity the log's records are not the capacity: the span is the jobs' (SG 1.0 over 01:00-02:00)."""
    args = _log(tmp_path, capacity_at="2026-01-05T00:00:00Z")
    r = cli("goodput-report", *args, "--capacity", "tpu-v4=8", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["fleet"]["capacity_basis"] == "flag" and r.json["fleet"]["sg"] == pytest.approx(1.0)


def test_capacity_recorded_as_the_job_starts_keeps_the_jobs_span(cli, tmp_path):
    r = cli("goodput-report", *_log(tmp_path, capacity_at="2026-01-05T01:00:00Z"), "-o", "json", state=False)
    assert r.code == 0 and r.json["fleet"]["sg"] == pytest.approx(1.0)


def test_a_simulated_fleet_idle_most_of_the_run_has_a_low_sg(cli, tmp_path):
    """One 1-hour job on a 4,096-chip pod over a 0.2-day run: SG is its chip-time over the run's capacity, and
    reading the run's log back gives the same figures."""
    workload = tmp_path / "wl.yaml"
    workload.write_text("schema_version: 1\njobs: [{id: a, shape: 16x16x16, duration_hours: 1, phase: training}]\n")
    out = tmp_path / "events.jsonl"
    args = ("--days", "0.2", "--workload", workload, "--out", out, "-o", "json")
    run = cli("simulate-fleet", *args, state=False)
    assert run.code == 0, run.err
    report = cli("goodput-report", out, "-o", "json", state=False)
    assert report.code == 0, report.err
    fleet = report.json["fleet"]
    assert fleet["capacity_chip_s"] == pytest.approx(4096 * 0.2 * DAY)
    assert 0 < fleet["all_allocated_chip_s"] < fleet["capacity_chip_s"] / 3
    assert (
        run.json["sg"]
        == fleet["sg"]
        == pytest.approx(fleet["all_allocated_chip_s"] / fleet["capacity_chip_s"], abs=1e-6)
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["time"] for r in records if r["type"] == "capacity"] == [
        records[0]["time"],
        records[0]["time"] + 0.2 * DAY,
    ]


def test_a_run_no_job_arrived_in_stood_idle():
    """SG 0 (not unknown), and so MPG 0: a sweep's mean then counts the run."""
    from tpufleet.simulation.summary import goodput

    held = [{"type": "capacity", "time": t, "accelerator": "tpu-v4", "chips": 64} for t in (0.0, DAY)]
    fleet = goodput(held)["fleet"]
    assert fleet["sg"] == 0.0 and fleet["rg"] is None and fleet["mpg"] == 0.0
