"""--since/--until: a report of part of the log gives, for its span, the whole log's timeline clipped to
[since, until], the figures the rolling windows (--window) give for the same span. A job running when the window
opens is charged from `since` in the state it was in, and a step cut by an edge counts in PG as a window counts it:
by its productive time inside."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpufleet.errors import BadInput
from tpufleet.goodput import capacityfit, chiptime, metrics, pipeline
from tpufleet.ops.goodput import build
from tpufleet.state import goodputlogs

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "goodput"
T = 1767571200  # 2026-01-05T00:00:00Z
FIGURES = ("all_allocated_chip_s", "productive_chip_s", "sg", "rg", "pg")


def event(job: str, t: float, name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "event", "job": job, "time": t, "event": name, **extra}


def steady_log(path: Path, starts: tuple[int, ...] = tuple(range(0, 100, 10)), ideal: int | None = 8) -> Path:
    """A 4-chip job of an 8-chip fleet stepping at T + `starts` (by default every 10 s) to its end 10 s after the
    last (ideal step 8 s: PG 0.8)."""
    job: dict[str, Any] = {"type": "job", "job": "j", "accelerator": "tpu-v4", "chips": 4}
    lines = [
        {"type": "capacity", "time": T, "accelerator": "tpu-v4", "chips": 8},
        job if ideal is None else {**job, "ideal_step_s": ideal},
        event("j", T, "allocation", chips=4),
        event("j", T, "job_start"),
        *(event("j", T + t, "step_start", step=k + 1) for k, t in enumerate(starts)),
        event("j", T + starts[-1] + 10, "job_end"),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def fleet(cli: Any, *args: Any) -> dict[str, Any]:
    r = cli("goodput-report", *args, "-o", "json", state=False)
    assert r.code == 0, r.err
    fleet: dict[str, Any] = r.json["fleet"]
    return fleet


def last(cli: Any, log: Path, window: str) -> dict[str, Any]:
    r = cli("goodput-report", log, "--window", window, "-o", "json", state=False)
    assert r.code == 0, r.err
    (row,) = r.json["windows"]
    return dict(row)


def test_a_job_running_when_since_opens_is_charged_from_since(cli, tmp_path):
    log = steady_log(tmp_path / "t1.jsonl")
    part = fleet(cli, log, "--since", "2026-01-05T00:00:25Z")
    # 4 chips x 75 s (00:00:25 .. 00:01:40), all of it stepping: the first 5 s are step 3's, logged at 00:00:20
    assert part["all_allocated_chip_s"] == 300 and part["productive_chip_s"] == 300
    assert part["capacity_chip_s"] == 8 * 75 and part["sg"] == 0.5 and part["rg"] == 1 and part["pg"] == 0.8
    window = last(cli, log, "75s")
    assert [part[k] for k in FIGURES] == [window[k] for k in FIGURES]


def test_since_and_until_cutting_steps_count_them_as_a_window_does(cli, tmp_path):
    log = steady_log(tmp_path / "t1.jsonl")
    # 00:00:25 .. 00:01:12 cuts step 3 (00:00:20 .. 00:00:30) and step 8 (00:01:10 .. 00:01:20): 47 s of the 100 s
    # of steps, so 4.7 of the 10 steps, ideal 4.7 x 8 s: PG 0.8 (the 5 steps starting inside, 5 x 8 / 47, 0.851)
    part = fleet(cli, log, "--since", "2026-01-05T00:00:25Z", "--until", "2026-01-05T00:01:12Z")
    assert part["all_allocated_chip_s"] == 4 * 47 and part["productive_chip_s"] == 4 * 47
    assert part["sg"] == 0.5 and part["rg"] == 1 and part["pg"] == 0.8


def test_since_inside_the_recovery_of_the_disrupted_fixture(cli):
    # disrupted_training.jsonl (train-a, 256 of 512 chips): from 00:12:35 to the end at 00:14:20 (105 s) the job
    # is in step 3 (lost with the failure at 00:12:40: 5 s), recovery to the restart at 00:13:40 (60 s), restore
    # (20 s) and steps 3 and 4 (20 s)
    log = FIX / "disrupted_training.jsonl"
    part = fleet(cli, log, "--since", "2026-01-05T00:12:35Z")
    assert part["all_allocated_chip_s"] == 256 * 105 == 26880 and part["productive_chip_s"] == 256 * 20
    assert part["sg"] == 0.5 and part["rg"] == round(20 / 105, 6) and part["pg"] == 0.8
    assert part["badput_chip_s"]["wasted_progress_from_disruption"] == 256 * 5
    assert part["badput_chip_s"]["infrastructure_recovery_from_disruption"] == 256 * 60
    assert part["badput_chip_s"]["checkpoint_restore"] == 256 * 20
    window = last(cli, log, "105s")
    assert [part[k] for k in FIGURES] == [window[k] for k in FIGURES]
    assert part["badput_chip_s"] == window["badput_chip_s"]


def test_a_job_with_no_event_inside_the_window_is_charged_for_it(cli, tmp_path):
    # the job steps every 10 s; 00:00:41 .. 00:00:49 holds no event of it, and it ran all of it
    log = steady_log(tmp_path / "t1.jsonl")
    part = fleet(cli, log, "--since", "2026-01-05T00:00:41Z", "--until", "2026-01-05T00:00:49Z")
    assert part["jobs"] == 1 and part["all_allocated_chip_s"] == 4 * 8 and part["rg"] == 1 and part["pg"] == 0.8


def test_the_estimated_ideal_is_the_whole_runs_and_the_step_health_the_parts(cli, tmp_path):
    # six steps of 10 s, two of 12 s from 00:01:00, a last one from 00:01:24 to the job's end at 00:01:34: the
    # whole run's empirical ideal is 10 s (median 10, no deviation); the part's steps alone would make it 12 s
    log = steady_log(tmp_path / "t1.jsonl", (0, 10, 20, 30, 40, 50, 60, 72, 84), ideal=None)
    r = cli("goodput-report", log, "--since", "2026-01-05T00:01:00Z", "-o", "json", state=False)
    assert r.code == 0, r.err
    (job,) = r.json["jobs"]
    # the steps at 00:01:00 and 00:01:12 are timed (12 s each; the last has no next step), against the run's ideal
    assert job["step_time"]["steps_timed"] == 2 and job["step_time"]["empirical_ideal_s"] == 10
    assert job["step_time"]["trailing_slowdown"] == 1.2
    # PG: 9 steps x 10 s over the run's 94 s of steps, in the part as in the last 34 s window (not 12 / 12 = 1)
    assert job["pg_basis"] == "estimated" and job["pg"] == round(90 / 94, 6)
    assert r.json["fleet"]["pg"] == last(cli, log, "34s")["pg"] == round(90 / 94, 6)


def random_log(seed: int) -> tuple[list[dict[str, Any]], int, int]:
    """A small native log of a few jobs (integer times): runs of steps with data loading, checkpoints, custom
    badput, chips lost for a while, failures or restarts with no disruption logged; some jobs with no ideal step
    (PG estimated), some with no job_end. With the first and last instants of its events."""
    rng = random.Random(seed)
    jobs = rng.randint(1, 3)
    chips = [rng.choice([4, 8, 16]) for _ in range(jobs)]
    lines: list[dict[str, Any]] = [{"type": "capacity", "time": T, "accelerator": "tpu-v4", "chips": sum(chips)}]
    for j in range(jobs):
        name = f"j{j}"
        ideal = rng.choice([None, 6, 8])
        lines.append({"type": "job", "job": name, "accelerator": "tpu-v4", "chips": chips[j]})
        if ideal is not None:
            lines[-1]["ideal_step_s"] = ideal
        lines += job_events(rng, name, chips[j], T + rng.randint(0, 60))
    times = [line["time"] for line in lines if line["type"] == "event"]
    return lines, min(times), max(times)


def job_events(rng: random.Random, name: str, chips: int, t: int) -> list[dict[str, Any]]:
    out = [event(name, t, "submitted")]
    t += rng.randint(0, 20)
    out += [event(name, t, "allocation", chips=chips)]
    step, saved = 1, 0
    for run in range(rng.randint(1, 3)):
        if run:
            gap = rng.randint(0, 30)
            if rng.random() < 0.6:
                out.append(event(name, t, rng.choice(["failure", "preemption", "eviction"])))
            t += gap
            step = rng.randint(saved + 1, step)  # the restart redoes the steps after the last save, or some of them
        out.append(event(name, t, "job_start"))
        for pair in (("tpu_init_start", "tpu_init_end"), ("restore_start", "restore_end")):
            if rng.random() < 0.5:
                d = rng.randint(1, 15)
                out += [event(name, t, pair[0]), event(name, t + d, pair[1], step=saved)]
                t += d
        for _ in range(rng.randint(1, 8)):
            out.append(event(name, t, "step_start", step=step))
            d = rng.randint(2, 14)
            if rng.random() < 0.3:
                out += [event(name, t, "data_loading_start"), event(name, t + rng.randint(1, d), "data_loading_end")]
            if rng.random() < 0.15:
                lo = rng.randint(0, d - 1)
                out += [
                    event(name, t + lo, "allocation", chips=chips // 2),
                    event(name, t + d, "allocation", chips=chips),
                ]
            if rng.random() < 0.1:
                out += [event(name, t, "custom_badput_start", label="x"), event(name, t + 1, "custom_badput_end")]
            t += d
            if rng.random() < 0.25:
                w = rng.randint(1, 6)
                out += [event(name, t, "checkpoint_start", step=step), event(name, t + w, "checkpoint_end", step=step)]
                t, saved = t + w, step
            step += 1
    if rng.random() < 0.8:
        out.append(event(name, t, "job_end"))
    return out


def clipped_whole_log(path: Path, since: float, until: float) -> dict[str, Any]:
    """The rolling windows' figures for [since, until] over the whole log's timeline, within the time the data
    spans (as a window or period row never reaches past it)."""
    log = goodputlogs.load([path], "native", False)
    accounts = pipeline.account_log(log, None, None, [], False)
    steps = chiptime.CapacitySteps(list(log.capacity))
    first, last = pipeline.data_span(accounts, list(log.capacity))
    since, until = max(since, first), max(min(until, last), max(since, first))
    (row,) = metrics.windows_rows(accounts, steps, since, until, [("part", until - since)])
    return dict(row)


@settings(max_examples=40, derandomize=True, deadline=None)
@given(st.integers(0, 10**6), st.floats(0, 1), st.floats(0, 1))
def test_since_until_is_the_whole_timeline_clipped(tmp_path_factory, seed, a, b):
    lines, first, end = random_log(seed)
    path = tmp_path_factory.mktemp("logs") / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    since = first - 5 + round(a * (end - first + 10))
    until = since + 1 + round(b * (end + 5 - since))
    expected = clipped_whole_log(path, since, until)
    try:
        part = build([path], since=since, until=until)["fleet"]
    except BadInput as refused:  # no job ran in the window (it lies before or after them all)
        assert "no job events in the input inside --since/--until" in str(refused)
        assert expected["all_allocated_chip_s"] == 0 and until >= since
        return
    for key in ("all_allocated_chip_s", "productive_chip_s", "sg", "rg"):
        assert part[key] == expected[key], key
    assert part["badput_chip_s"] == expected["badput_chip_s"]
    assert (part["pg"] is None) == (expected["pg"] is None)
    assert part["pg"] == pytest.approx(expected["pg"], abs=1.5e-6)  # (the same sum, added in another order)


@pytest.mark.parametrize("seed", range(6))
def test_since_to_the_end_is_the_last_window(cli, tmp_path, seed):
    lines, first, end = random_log(seed)
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    seconds = 1 + (end - first) * 2 // 3
    part = fleet(cli, path, "--since", end - seconds)
    window = last(cli, path, f"{seconds}s")
    assert part["window"] == {"start": window["start"], "end": window["end"]} == {"start": end - seconds, "end": end}
    assert [part[k] for k in FIGURES[:4]] == [window[k] for k in FIGURES[:4]]
    assert part["badput_chip_s"] == window["badput_chip_s"]
    assert part["pg"] == pytest.approx(window["pg"], abs=1.5e-6)


def test_the_checkpoint_advice_times_the_saves_it_counts(cli, tmp_path):
    # saves 15..17 (2 s) and 35..39 (4 s), a failure at 45: from --since 16 the one save that starts inside is
    # counted and timed (4 s); the save ended inside but started before it was counted with no time (2.0 s)
    timeline: list[tuple[Any, ...]] = [
        ("job_start", 0),
        *(("step_start", t, k + 1) for k, t in enumerate(range(0, 50, 10))),
        ("checkpoint_start", 15, 2),
        ("checkpoint_end", 17, 2),
        ("checkpoint_start", 35, 4),
        ("checkpoint_end", 39, 4),
        ("failure", 45),
        ("job_start", 50),
        ("step_start", 50, 5),
        ("job_end", 70),
    ]
    lines = [{"type": "job", "job": "j", "accelerator": "tpu-v4", "chips": 4, "ideal_step_s": 1}]
    lines += [
        event("j", T + r[1], r[0], **({"step": r[2]} if r[2:] else {})) for r in sorted(timeline, key=lambda r: r[1])
    ]
    log = tmp_path / "saves.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert fleet(cli, log)["checkpoint_advice"]["checkpoint_write_s"] == 3.0
    assert fleet(cli, log, "--since", str(T + 16))["checkpoint_advice"]["checkpoint_write_s"] == 4.0


def peak_before_the_span(path: Path) -> Path:
    """No capacity records: a 16-chip job at T + 0..10 (the logs' busiest moment), an 8-chip one at T + 20..60."""
    lines: list[dict[str, Any]] = [
        {"type": "job", "job": "a", "accelerator": "tpu-v4", "chips": 16},
        event("a", T, "job_start"),
        event("a", T + 10, "job_end"),
        {"type": "job", "job": "b", "accelerator": "tpu-v4", "chips": 8},
        event("b", T + 20, "job_start"),
        event("b", T + 60, "job_end"),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_since_until_without_capacity_records_has_the_whole_logs_busiest_moment(cli, tmp_path):
    """The estimated capacity is the whole logs' busiest moment, as a --window or --period row over the span has
    it: --since/--until took the span's own (8 chips, SG 1.0 where the 30 s window row says 0.5)."""
    log = peak_before_the_span(tmp_path / "peak.jsonl")
    part = fleet(cli, log, "--since", T + 30, "--until", T + 60)
    assert part["capacity_basis"] == "peak-allocation" and part["capacity_chip_s"] == 16 * 30 and part["sg"] == 0.5
    window = last(cli, log, "30s")
    assert (window["start"], window["end"]) == (T + 30, T + 60)
    assert [part[k] for k in FIGURES] == [window[k] for k in FIGURES]
    r = cli("goodput-report", log, "--period", "day", "-o", "json", state=False)
    (day,) = r.json["periods"]
    whole = fleet(cli, log, "--since", day["start"], "--until", day["end"])
    assert [whole[k] for k in FIGURES] == [day[k] for k in FIGURES] and whole["sg"] == 0.5


@pytest.mark.parametrize("seed", range(6))
def test_since_without_capacity_records_is_the_last_window(cli, tmp_path, seed):
    """Random logs without capacity records, part of the time excluded: --since to the end gives the last
    window's figures, the capacity being the whole logs' busiest moment in both."""
    lines, first, end = random_log(seed)
    lines = [line for line in lines if line["type"] != "capacity"]
    lines += [{"type": "job", "job": "early", "accelerator": "tpu-v4", "chips": 64}]
    lines += [event("early", first - 30, "job_start"), event("early", first - 20, "job_end")]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    excluded = tmp_path / "maintenance.json"
    excluded.write_text(json.dumps([{"start": first - 28, "end": first - 25}, {"start": first + 5, "end": first + 9}]))
    seconds = 1 + (end - first) * 2 // 3
    part = fleet(cli, path, "--since", end - seconds, "--exclude", excluded)
    r = cli("goodput-report", path, "--window", f"{seconds}s", "--exclude", excluded, "-o", "json", state=False)
    (window,) = r.json["windows"]
    assert part["capacity_basis"] == "peak-allocation" and part["capacity_chip_s"] == 64 * seconds
    assert [part[k] for k in FIGURES[:4]] == [window[k] for k in FIGURES[:4]]
    assert part["pg"] == pytest.approx(window["pg"], abs=1.5e-6)


@pytest.mark.parametrize("seed", range(12))
def test_the_whole_logs_busiest_moment_is_the_allocated_timelines(tmp_path, seed):
    """Each job's whole-log allocation (kept for the busiest moment) is the all-allocated time its account labels
    over the whole log: the same chips at every instant, exclusions out (allocations dropping, restarts; or no
    allocation logged and nothing excluded, held from the first start)."""
    lines, first, end = random_log(seed)
    spans = [(float(first + 3), float(first + 11)), (float(end - 9), float(end - 4))]
    if seed % 2:
        lines, spans = [line for line in lines if line.get("event") != "allocation"], []
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    accounts = pipeline.account_log(goodputlogs.load([path], "native", False), None, None, spans, False)
    for a in accounts:
        assert a.whole_held is not None and a.starts is not None and a.ends is not None
        whole, labelled = capacityfit.held([a], "tpu-v4", whole=True), capacityfit.held([a], "tpu-v4")
        assert (whole is None) == (labelled is None)
        if whole is not None and labelled is not None:
            assert [x.tolist() for x in whole] == [x.tolist() for x in labelled]
    steps = capacityfit.held(accounts, "tpu-v4")
    assert steps is not None
    assert capacityfit.peak(accounts, first) == [(first, "tpu-v4", int(steps[1].max()), "peak-allocation")]


def test_an_idle_span_between_the_logs_first_and_last_times_is_sg_0_as_its_period_row(tmp_path):
    """The fleet's capacity was recorded a day before its first job: --since/--until over that idle day was
    refused ("its capacity records span no time there") while the day's --period row gave SG 0."""
    day = 86400
    lines = [
        {"type": "capacity", "time": T, "accelerator": "tpu-v4", "chips": 8},
        {"type": "job", "job": "j", "accelerator": "tpu-v4", "chips": 4, "ideal_step_s": 8},
        event("j", T + day + 60, "submitted"),
        event("j", T + day + 60, "job_start"),
        *(event("j", T + day + 60 + 10 * k, "step_start", step=k) for k in range(5)),
        event("j", T + day + 120, "job_end"),
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (idle_day, _busy_day) = build([path], period="day")["periods"]
    part = build([path], since=T, until=T + day)["fleet"]
    assert part["sg"] == idle_day["sg"] == 0.0 and part["jobs"] == 0
    assert part["capacity_chip_s"] == 8 * day and part["window"] == {"start": T, "end": T + day}
    with pytest.raises(BadInput, match="inside --since/--until, and the logs span no time there"):
        build([path], since=T - 2 * day, until=T - day)


DAY_START = 1767571200.0  # 2026-01-05T00:00:00Z


def test_a_span_reaching_past_the_logs_is_their_part_of_it(cli, tmp_path):
    B = DAY_START
    # 16 chips recorded at B, one 8-chip job from B to B + 1 h: SG 0.5 whatever span of the day is asked for, as
    # the day's --period row has it (the logs say nothing of the other 23 hours: charged, SG was 0.5 / 24)
    log = tmp_path / "a.jsonl"
    log.write_text(
        f'{{"type":"capacity","time":{B},"accelerator":"tpu-v4","chips":16}}\n'
        '{"type":"job","job":"a","accelerator":"tpu-v4","chips":8,"phase":"training"}\n'
        f'{{"type":"event","job":"a","time":{B},"event":"job_start"}}\n'
        f'{{"type":"event","job":"a","time":{B + 3600},"event":"job_end"}}\n'
    )
    day = ("--since", "2026-01-05T00:00:00Z", "--until", "2026-01-06T00:00:00Z")
    r = cli("goodput-report", log, *day, "--period", "day", "-o", "json", state=False)
    assert r.code == 0, r.err
    fleet, (row,) = r.json["fleet"], r.json["periods"]
    assert fleet["window"] == {"start": B, "end": B + 3600} and fleet["capacity_chip_s"] == 16 * 3600
    assert fleet["sg"] == row["sg"] == 0.5
    early = cli("goodput-report", log, "--since", str(B - 7200), "--until", str(B + 1800), "-o", "json", state=False)
    assert early.code == 0 and early.json["fleet"]["window"] == {"start": B, "end": B + 1800}
    assert early.json["fleet"]["sg"] == 0.5


def test_a_span_meeting_the_logs_at_one_instant_is_refused_as_one_past_them(tmp_path):
    """--since at the logs' last time (or --until at their first) met the jobs at one instant: the report listed
    every job with no figure at all, exit 0, while a --since one second later was refused (exit 2)."""
    path = steady_log(tmp_path / "log.jsonl")  # T .. T + 100
    for since, until in ((T + 100, None), (None, T), (T + 100, T + 200), (T - 50, T)):
        with pytest.raises(BadInput, match="inside --since/--until, and the logs span no time there"):
            build([path], since=since, until=until)
    assert build([path], since=T + 99)["fleet"]["jobs"] == 1  # a second of the logs is a report
