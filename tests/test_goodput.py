import gzip
import json
import math
from pathlib import Path

import pytest

import tpufleet
from oracles.synthetic_jobs import demo_log_text, training_job
from tpufleet.ops.goodput import build

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "goodput"


def by_job(report):
    return {j["job"]: j for j in report["jobs"]}


def test_training_job_with_a_disruption_by_hand():
    r = build([FIX / "disrupted_training.jsonl"], by=["accelerator"], period="day")
    j = by_job(r)["train-a"]
    # allocated 00:10:00-00:14:20 = 260 s; init 60, compile 60, steps 1,2 = 10+10 (10 s of step 2 under a
    # checkpoint), step 3 lost to the failure (10), recovery 60, restore 20, steps 3,4 again 10+10
    assert j["all_allocated_s"] == 260 and j["productive_s"] == 40
    assert j["badput_s"] == {
        "tpu_initialization": 60,
        "training_prep": 0,
        "program_startup": 60,
        "data_loading_sync": 0,
        "checkpoint_save": 10,
        "checkpoint_restore": 20,
        "wasted_progress_from_disruption": 10,
        "infrastructure_recovery_from_disruption": 60,
        "custom_badput_events": 0,
        "elastic_slice_down": 0,
        "elastic_scale_up": 0,
        "elastic_reinitialization": 0,
        "other": 0,
    }
    assert j["productive_steps"] == 4 and j["disruptions"] == 1
    assert j["sg"] == round(260 / 860, 6) and j["rg"] == round(40 / 260, 6) and j["pg"] == 0.8
    f = r["fleet"]
    assert f["sg"] == round(256 * 260 / (512 * 860), 6)
    advice = f["checkpoint_advice"]
    assert advice["young_interval_s"] == pytest.approx(math.sqrt(2 * 10 * 260), abs=1e-3)


def test_partial_allocation_serving_and_two_accelerators():
    r = build([FIX / "fleet.jsonl"], by=["accelerator", "phase"])
    jobs = by_job(r)
    w = jobs["waiter"]
    # 10 minutes with 100 of 400 chips is not all-allocated; then 30 s all-allocated
    assert w["all_allocated_s"] == 30 and w["demand_s"] == 630
    assert w["productive_s"] == 25 and w["badput_s"]["data_loading_sync"] == 5
    assert w["pg"] == round(2 * 5 / 25, 6)
    s = jobs["serve"]
    # serving work is not lost to the preemption (no checkpoints to lose): 4 + 6 - 2 custom
    assert s["all_allocated_s"] == 20 and s["productive_s"] == 8
    assert s["badput_s"]["infrastructure_recovery_from_disruption"] == 10
    assert s["badput_s"]["custom_badput_events"] == 2 and s["badput_s"]["wasted_progress_from_disruption"] == 0
    seg = {(x["dimension"], x["value"]): x for x in r["segments"]}
    window = 630
    assert seg[("accelerator", "tpu-v4")]["sg"] == round(400 * 30 / (1000 * window), 6)
    assert seg[("accelerator", "tpu-v5p")]["sg"] == round(50 * 20 / (100 * window), 6)
    assert (
        seg[("accelerator", "tpu-v4")]["sg_basis"] == "capacity" and seg[("phase", "serving")]["sg_basis"] == "demand"
    )
    assert r["fleet"]["sg"] == round((400 * 30 + 50 * 20) / (1100 * window), 6)


def test_every_row_multiplies_and_buckets_add_up(tmp_path):
    native, _ = training_job("j", 1767571200, runs=3, seed=4)  # disruptions, restores, checkpoints
    (tmp_path / "j.jsonl").write_text("\n".join(json.dumps(x) for x in native))
    r = build(
        [FIX / "fleet.jsonl", tmp_path / "j.jsonl"], by=["accelerator", "size", "phase", "framework"], period="day"
    )
    assert {j["job"] for j in r["jobs"]} == {"j", "serve", "waiter"}
    for row in [r["fleet"], *r["segments"], *r["periods"], *r["jobs"]]:
        assert None not in (row["sg"], row["rg"], row["pg"]), row  # every row of these logs has all three
        assert row["mpg"] == pytest.approx(row["sg"] * row["rg"] * row["pg"], abs=2e-6)
    for j in r["jobs"]:
        assert sum(j["badput_s"].values()) + j["productive_s"] == pytest.approx(j["all_allocated_s"], abs=1e-6)


def test_native_and_ml_goodput_entries_give_the_same_answer(tmp_path):
    native, ml = training_job("llm-7b", 1767571200, runs=4, seed=2)
    (tmp_path / "n.jsonl").write_text("\n".join(json.dumps(x) for x in native))
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps({"jsonPayload": x}) for x in ml))
    a = by_job(build([tmp_path / "n.jsonl"]))["llm-7b"]
    b = by_job(build([tmp_path / "m.jsonl"], fmt="ml-goodput"))["llm-7b"]
    assert a["productive_s"] == b["productive_s"] > 0
    # the native log says when each failure happened; the package's log only that the job restarted, so its
    # disruption is placed at the last step start (or after a median step when that step is not redone): the
    # same lost time, split differently between wasted progress and recovery
    lost = ("wasted_progress_from_disruption", "infrastructure_recovery_from_disruption")
    assert {k: v for k, v in a["badput_s"].items() if k not in lost} == {
        k: v for k, v in b["badput_s"].items() if k not in lost
    }
    assert sum(a["badput_s"][k] for k in lost) == pytest.approx(sum(b["badput_s"][k] for k in lost), abs=1e-6)
    assert b["badput_s"]["infrastructure_recovery_from_disruption"] > 0 == a["badput_s"][lost[1]]
    assert a["badput_s"]["wasted_progress_from_disruption"] > 0 and a["badput_s"]["program_startup"] > 0
    assert a["badput_s"]["data_loading_sync"] > 0  # every data-loading interval, not one per start
    assert a["disruptions"] == b["disruptions"] == 3 and b["disruptions_inferred"] == 3


def test_periods_split_a_job_across_midnight(tmp_path):
    native, _ = training_job("night", 1767571200 + 86400 - 600, runs=2, seed=1)
    (tmp_path / "n.jsonl").write_text("\n".join(json.dumps(x) for x in native))
    r = build([tmp_path / "n.jsonl"], period="day")
    assert len(r["periods"]) == 2
    total = sum(p["productive_chip_s"] for p in r["periods"])
    assert total == pytest.approx(r["fleet"]["productive_chip_s"], abs=1e-3)


def test_cli_outputs_and_escaping(cli, tmp_path):
    html_file = tmp_path / "r.html"
    r = cli("goodput-report", FIX / "fleet.jsonl", "--period", "day", "-o", "html", "--out", html_file, state=False)
    assert r.code == 0, r.err
    page = html_file.read_text()
    assert "MPG" in page and "<script src" not in page.lower()  # inline script only (see test_goodput_html.py)
    evil = tmp_path / "evil.jsonl"
    evil.write_text((FIX / "fleet.jsonl").read_text().replace('"serve"', '"<script>alert(1)</script>"'))
    assert cli("goodput-report", evil, "-o", "html", "--out", html_file, state=False).code == 0
    page = html_file.read_text()
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    j = cli("goodput-report", FIX / "fleet.jsonl", "-o", "json", state=False).json
    assert set(j) >= {"fleet", "segments", "periods", "jobs"} and set(j["fleet"]) >= {"sg", "rg", "pg", "mpg"}
    assert set(j["jobs"][0]) >= {
        "job",
        "sg",
        "rg",
        "pg",
        "mpg",
        "productive_s",
        "all_allocated_s",
        "badput_s",
        "disruptions",
    }
    csv_text = cli("goodput-report", FIX / "fleet.jsonl", "-o", "csv", state=False).out
    assert csv_text.splitlines()[0].startswith("scope,key,sg,rg,pg,mpg")
    md = cli("goodput-report", FIX / "fleet.jsonl", "-o", "md", state=False).out
    assert md.startswith("# ML Productivity Goodput") and "| fleet" in md
    table = cli("goodput-report", FIX / "fleet.jsonl", state=False).out
    assert "fleet  SG" in table


def test_malformed_input_names_file_line_field_and_value(cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = (FIX / "fleet.jsonl").read_text().splitlines()
    lines.insert(5, '{"type":"event","job":"waiter","time":"yesterday","event":"step_start","step":9}')
    lines.insert(7, "{not json")
    bad.write_text("\n".join(lines))
    r = cli("goodput-report", bad, state=False)
    assert r.code == 2 and f"{bad}:6: field time" in r.err and "'yesterday'" in r.err
    r = cli("goodput-report", bad, "--skip-bad", "-o", "json", state=False)
    assert r.code == 0 and r.json["input"]["skipped"] == 2
    csv_file = tmp_path / "e.csv"
    csv_file.write_text("type,job,time,event,step,chips\nevent,a,2026-01-05T00:00:00Z,step_start,x,\n")
    r = cli("goodput-report", csv_file, state=False)
    assert r.code == 2 and ":2: field step" in r.err
    assert cli("goodput-report", FIX / "fleet.jsonl", "--by", "colour", state=False).code == 2


def test_capacity_from_the_fleet_inventory(fleet, tmp_path):
    native, _ = training_job("j", 1767571200, runs=1, seed=3)
    log = tmp_path / "j.jsonl"
    log.write_text("\n".join(json.dumps(x) for x in native))
    r = fleet("goodput-report", log, "--capacity", "state", "-o", "json")
    assert r.code == 0, r.err
    f = r.json["fleet"]
    assert f["capacity_basis"] == "flag"
    window = f["window"]["end"] - f["window"]["start"]
    assert f["capacity_chip_s"] == pytest.approx(4096 * window)
    assert fleet("goodput-report", log, "--capacity", "tpu-v4=lots").code == 2


def test_the_demo_log_shipped_is_the_one_the_builder_makes():
    shipped = Path(tpufleet.__file__).parent / "data" / "demo-goodput.jsonl.gz"  # `make demo` unpacks it
    assert shipped.stat().st_size < 300_000
    assert gzip.decompress(shipped.read_bytes()).decode() == demo_log_text()


def test_a_multislice_job_record_and_the_slices_dimension(cli, tmp_path):
    """A native job record may say how many slices the job has: `--by slices` then splits multislice jobs from
    the others, and a bad count exits 2 naming file, line and field."""
    lines: list[dict[str, object]] = [
        {"type": "job", "job": "m", "chips": 256, "slices": 2, "ideal_step_s": 1.0},
        {"type": "job", "job": "s", "chips": 128, "ideal_step_s": 1.0},
    ]
    for job in ("m", "s"):
        lines.append(
            {"type": "event", "job": job, "time": 100.0, "event": "allocation", "chips": 256 if job == "m" else 128}
        )
        lines.append({"type": "event", "job": job, "time": 100.0, "event": "job_start"})
        lines += [{"type": "event", "job": job, "time": 110.0 + k, "event": "step_start", "step": k} for k in range(5)]
        lines.append({"type": "event", "job": job, "time": 120.0, "event": "job_end"})
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", str(log), "--by", "slices", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert [(s["value"], s["jobs"]) for s in r.json["segments"]] == [("multislice", 1), ("single-slice", 1)]
    assert {j["job"]: j["job_slices"] for j in r.json["jobs"]} == {"m": 2, "s": 1}
    lines[0]["slices"] = 0
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", str(log), "-o", "json", state=False)
    assert r.code == 2 and f"{log}:1: field slices: must be a whole number from 1" in r.err


def test_per_slice_allocations_make_the_jobs(cli, tmp_path):
    """A 2-slice job whose allocations come per slice (`slice` on each): the report is the one of the same job
    logged with its total chips; it is all-allocated only while both slices are held."""

    def log_of(allocations):
        lines = [{"type": "job", "job": "m", "chips": 256, "slices": 2, "ideal_step_s": 1.0}]
        lines += allocations
        lines.append({"type": "event", "job": "m", "time": 100.0, "event": "job_start"})
        lines += [
            {"type": "event", "job": "m", "time": 112.0 + 4 * k, "event": "step_start", "step": k} for k in range(20)
        ]
        lines.append({"type": "event", "job": "m", "time": 150.0, "event": "failure", "slice": 1})
        lines.append({"type": "event", "job": "m", "time": 160.0, "event": "job_start"})
        lines.append({"type": "event", "job": "m", "time": 200.0, "event": "job_end"})
        return "".join(json.dumps(x) + "\n" for x in lines)

    def alloc(t, chips, part=None):
        return {"type": "event", "job": "m", "time": t, "event": "allocation", "chips": chips,
                **({} if part is None else {"slice": part})}  # fmt: skip

    # Out of time order on purpose: the slices' allocations are folded in time order.
    per_slice = [alloc(110.0, 128, 1), alloc(100.0, 128, 0), alloc(160.0, 128, 1), alloc(150.0, 0, 1)]
    total = [alloc(100.0, 128), alloc(110.0, 256), alloc(150.0, 128), alloc(160.0, 256)]
    reports = []
    for name, allocations in (("slices", per_slice), ("total", total)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(log_of(allocations))
        r = cli("goodput-report", str(path), "-o", "json", state=False)
        assert r.code == 0, r.err
        reports.append(r.json)
    (a,), (b,) = reports[0]["jobs"], reports[1]["jobs"]
    assert a == b and a["job_slices"] == 2
    assert a["all_allocated_s"] == 80.0  # 110-150 and 160-200: both slices held
    assert reports[0]["fleet"] == reports[1]["fleet"]


def test_a_submission_logged_after_the_job_started_does_not_take_sg_above_1(cli, tmp_path):
    # the scheduler's clock 5 s ahead of the job's: `submitted` at 105, chips held and the job started at 100,
    # end at 200. Demand ran from 105 (95 s) against 100 s all-allocated: SG 1.05 for the job and its segments.
    log = tmp_path / "skew.jsonl"
    lines = [
        {"type": "job", "job": "k", "accelerator": "tpu-v4", "chips": 8, "ideal_step_s": 10},
        {"type": "event", "job": "k", "time": 100, "event": "allocation", "chips": 8},
        {"type": "event", "job": "k", "time": 100, "event": "job_start"},
        {"type": "event", "job": "k", "time": 105, "event": "submitted"},
        *({"type": "event", "job": "k", "time": 110 + 10 * n, "event": "step_start", "step": n} for n in range(9)),
        {"type": "event", "job": "k", "time": 200, "event": "job_end"},
    ]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    assert j["demand_s"] == 100 and j["all_allocated_s"] == 100 and j["sg"] == 1.0
    assert all(s["sg"] <= 1 for s in r.json["segments"])


@pytest.mark.parametrize("phase", ["serving", "training"])
def test_a_step_stopped_at_the_instant_it_starts_is_not_a_productive_step(cli, tmp_path, phase):
    # ideal 10 s; five runs each of two 10-s steps, then a step logged at the instant of a failure (it did no
    # work), a restart 5 s later going on from the next step. 10 steps in 100 s: PG 1.0 (it counted 15: 1.5).
    lines: list[dict[str, object]] = [
        {"type": "job", "job": "s", "accelerator": "tpu-v4", "chips": 8, "phase": phase, "ideal_step_s": 10}
    ]

    def ev(t: float, name: str, **extra: int) -> None:
        lines.append({"type": "event", "job": "s", "time": t, "event": name, **extra})

    ev(0, "allocation", chips=8)
    ev(0, "job_start")
    t, step = 10, 0
    for _ in range(5):
        for _ in range(2):
            ev(t, "step_start", step=step)
            step, t = step + 1, t + 10
        ev(t, "step_start", step=step)
        ev(t, "failure")
        step, t = step + 1, t + 5
        ev(t, "job_start")
        t += 5
    ev(t, "job_end")
    # steps logged at one instant by a coarse clock each have a next step: they are steps
    coarse = [{"type": "event", "job": "c", "time": 1000, "event": "job_start"}]
    coarse += [{"type": "event", "job": "c", "time": 1001 + k // 2, "event": "step_start", "step": k} for k in range(6)]
    coarse.append({"type": "event", "job": "c", "time": 1004, "event": "job_end"})
    log = tmp_path / "zero.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines + coarse))
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    jobs = by_job(r.json)
    assert jobs["s"]["productive_steps"] == 10 and jobs["s"]["productive_s"] == 100 and jobs["s"]["pg"] == 1.0
    assert jobs["c"]["productive_steps"] == 6


def test_a_failure_after_a_run_ended_cleanly_loses_none_of_its_steps(cli, tmp_path):
    # a run saves step 1, ends at 40 (job_end), a failure is logged at 45 while the job is down, and a restart at 50
    # goes on from step 4: steps 2 and 3 were not lost (the run had ended), all five steps are productive. The end
    # and the restarts were searched joined unsorted, the end missed: steps 2 and 3 were counted lost to the failure.
    lines: list[dict[str, object]] = [
        {"type": "job", "job": "e", "accelerator": "tpu-v4", "chips": 8, "phase": "training", "ideal_step_s": 10}
    ]

    def ev(t: float, name: str, **extra: int) -> None:
        lines.append({"type": "event", "job": "e", "time": t, "event": name, **extra})

    ev(0, "allocation", chips=8)
    ev(0, "job_start")
    for k, t in enumerate((10, 20, 30), start=1):
        ev(t, "step_start", step=k)
    ev(15, "checkpoint_start", step=1)
    ev(16, "checkpoint_end", step=1)
    ev(40, "job_end")
    ev(45, "failure")
    ev(50, "job_start")
    ev(50, "step_start", step=4)
    ev(60, "step_start", step=5)
    ev(70, "job_end")
    lines.sort(key=lambda x: float(x.get("time", -1)))  # type: ignore[arg-type]
    log = tmp_path / "ended.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    (job,) = r.json["jobs"]
    assert job["productive_steps"] == 5
    assert job["badput_s"].get("wasted_progress_from_disruption", 0) == 0


def test_an_accelerator_without_capacity_is_named_escaped_in_the_table(cli, tmp_path):
    # the headline names the accelerators the capacity leaves out: a name holding a colour (or conceal, ESC[8m)
    # code reached the terminal live, and a newline forged a line of the report
    name = "v\x1b[8m\nfleet  SG 1.0000"
    lines = [
        {"type": "capacity", "time": 0, "accelerator": "tpu-v4", "chips": 64},
        {"type": "job", "job": "x", "accelerator": name, "chips": 8},
        {"type": "event", "job": "x", "time": 0, "event": "job_start"},
        {"type": "event", "job": "x", "time": 20, "event": "job_end"},
    ]
    log = tmp_path / "acc.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", log, state=False)
    assert r.code == 0, r.err
    assert "\x1b" not in r.out
    (headline,) = [line for line in r.out.splitlines() if "capacity:" in line]
    assert "none for v\\x1b[8m\\nfleet  SG 1.0000:" in headline
