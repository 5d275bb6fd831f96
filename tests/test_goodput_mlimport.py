"""The ml-goodput-measurement importer: the package's disruption rule and the six importer defects, each a
hand-checked timeline in fixtures/goodput/ml/ read through the CLI; then ml-goodput-measurement itself
(GoodputCalculator 0.2.3, fed the same entries through an in-memory logger as its own tests do) as an oracle on
generated logs of many shapes, bucket by bucket.

Times in the fixtures are seconds after 2026-01-05T00:00:00Z (B). Where tpufleet deliberately differs from the
package, the test says so and checks tpufleet's figure by hand.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpufleet.ops.goodput import build

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "goodput" / "ml"
B = 1767571200.0  # 2026-01-05T00:00:00Z
ZERO = {
    "tpu_initialization": 0,
    "training_prep": 0,
    "program_startup": 0,
    "data_loading_sync": 0,
    "checkpoint_save": 0,
    "checkpoint_restore": 0,
    "wasted_progress_from_disruption": 0,
    "infrastructure_recovery_from_disruption": 0,
    "custom_badput_events": 0,
    "elastic_slice_down": 0,
    "elastic_scale_up": 0,
    "elastic_reinitialization": 0,
    "other": 0,
}


def job_of(cli: Any, name: str, *extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    r = cli("goodput-report", FIX / name, "--format", "ml-goodput", "-o", "json", *extra, state=False)
    assert r.code == 0, r.err
    (job,) = r.json["jobs"]
    return r.json, job


def test_disruption_is_at_the_last_step_start_before_the_restart(cli):
    # start 100; steps 0..4 at 110..150; dead until the restart at 210; steps 3, 4, 5 again at 220..240; end 250.
    # The package: disruption at 150 (step 4's start), recovery 150..210, wasted 140..150 (step 3, redone).
    _, j = job_of(cli, "restart_after_disruption.jsonl")
    assert j["all_allocated_s"] == 150 and j["productive_s"] == 60  # 110..140 and 220..250
    assert j["badput_s"] == {
        **ZERO,
        "wasted_progress_from_disruption": 10,
        "infrastructure_recovery_from_disruption": 60,
        "other": 20,  # 100..110 and 210..220: nothing logged
    }
    assert j["disruptions"] == 1


def test_a_step_at_the_last_logged_instant_is_not_a_complete_step(cli):
    # steps at 10 (20 s: start-up), 30, 40, 50 and 60, nothing after: step 5 has no end, so it does not pull the
    # mean down (it did: 0 s counted, mean 7.5, start-up 12.5)
    _, j = job_of(cli, "unfinished_last_step.jsonl")
    assert j["all_allocated_s"] == 60 and j["productive_s"] == 40
    assert j["badput_s"] == {**ZERO, "program_startup": 10, "other": 10}


def test_start_up_is_measured_net_of_other_badput(cli):
    # step 1 runs 10..35 (25 s) holding a custom event 12..14 and a save 28..33; steps 2, 3 take 10 s each.
    # Net first step 18 - mean 10 = start-up 8 (10..20 less the custom event's 2 s... placed on free time:
    # 10..12 and 14..20). Raw, it was 25 - 10 = 15. The package nets only the custom event: 13 (see README).
    _, j = job_of(cli, "startup_net_of_badput.jsonl")
    assert j["all_allocated_s"] == 65 and j["productive_s"] == 40
    assert j["badput_s"] == {
        **ZERO,
        "program_startup": 8,
        "checkpoint_save": 5,
        "custom_badput_events": 2,
        "other": 10,
    }


def test_each_checkpoint_entry_is_its_own_interval(cli):
    # saves 24..28 and 28..31, back to back inside step 2 (20..37): 7 s, not 4 + 0 s
    _, j = job_of(cli, "back_to_back_saves.jsonl")
    assert j["badput_s"] == {**ZERO, "checkpoint_save": 7, "other": 10}
    assert j["productive_s"] == 40 and j["all_allocated_s"] == 57


def test_back_to_back_native_pairs_are_each_their_own(tmp_path):
    b = 1767571200
    rows: list[tuple[Any, ...]] = [
        ("job_start", 0),
        ("step_start", 10, 1),
        ("checkpoint_start", 12, 1),
        ("checkpoint_end", 15, 1),
    ]
    rows += [("checkpoint_start", 15, 1), ("checkpoint_end", 18, 1), ("step_start", 20, 2), ("job_end", 30)]
    log = tmp_path / "n.jsonl"
    log.write_text(
        "".join(
            json.dumps(
                {"type": "event", "job": "n", "time": b + r[1], "event": r[0], **({"step": r[2]} if r[2:] else {})}
            )
            + "\n"
            for r in rows
        )
    )
    (j,) = build([log])["jobs"]
    assert j["badput_s"]["checkpoint_save"] == 6 and j["productive_s"] == 14


def test_emergency_restore_is_restore_time(cli):
    # steps 1, 2, 3 at 10, 20, 30; restart at 100 redoing step 3 (so the disruption is at 30: recovery 30..100);
    # an emergency (local) restore 104..110; steps 3, 4 at 110, 120; end 130
    _, j = job_of(cli, "emergency_restore.jsonl")
    assert j["all_allocated_s"] == 130 and j["productive_s"] == 40
    assert j["badput_s"] == {
        **ZERO,
        "checkpoint_restore": 6,
        "infrastructure_recovery_from_disruption": 70,
        "other": 14,  # 0..10 and 100..104
    }


def test_a_cut_step_that_is_not_redone_ends_after_a_median_step(cli):
    # steps 1..5 every 10 s from 10; restart at 200 going on with step 6: step 5 was done, so it ends at
    # min(200, 50 + median 10) = 60 and 60..200 is recovery (it was all productive). The package sees no
    # disruption here (no step number repeats) and counts 50..210 as one productive step: see README.
    _, j = job_of(cli, "restart_not_redone.jsonl")
    assert j["productive_s"] == 70  # 10..60 and 210..230
    assert j["badput_s"] == {**ZERO, "infrastructure_recovery_from_disruption": 140, "other": 20}
    assert j["disruptions"] == 1


def test_an_entry_stamped_outside_the_job_is_counted_not_stretched_over(cli):
    # the save entry (no job_name, dated 1970-01-01T00:00:10Z, as the package's own test writes it) is outside
    # 0..40: it no longer moves the start (demand 1.7e9 s, SG 0.0, 19,724 daily periods)
    report, j = job_of(cli, "stray_1970_entry.jsonl", "--period", "day")
    assert j["demand_s"] == 40 and j["sg"] == 1.0 and j["productive_s"] == 30
    assert j["events_outside_job"] == 2 and report["input"]["events_outside_jobs"] == 2  # its start and end
    assert len(report["periods"]) == 1 and report["fleet"]["window"]["start"] == 1767571200


def test_a_logged_failure_stays_the_more_precise_source():
    # native log: the failure is logged at 00:12:40, ten seconds into step 3 (started 00:12:30): recovery runs
    # from the failure, not from the step start
    (j,) = build([FIX.parent / "disrupted_training.jsonl"])["jobs"]
    assert j["badput_s"]["infrastructure_recovery_from_disruption"] == 60
    assert j["badput_s"]["wasted_progress_from_disruption"] == 10


def test_gcloud_json_array_export_reads_like_the_jsonl(tmp_path):
    entries = [json.loads(x) for x in (FIX / "restart_after_disruption.jsonl").read_text().splitlines()]
    wrapped = [
        {
            "jsonPayload": e,
            "timestamp": "2026-01-05T00:00:00Z",
            "logName": "projects/p/logs/goodput",
            "resource": {"type": "global"},
        }
        for e in entries
    ]
    array = tmp_path / "export.json"
    array.write_text(json.dumps(wrapped, indent=2))
    a = build([FIX / "restart_after_disruption.jsonl"], fmt="ml-goodput")["jobs"]
    b = build([array], fmt="ml-goodput")["jobs"]
    assert a == b


def test_bad_entries_name_file_line_field_and_value(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '[\n  {"job_name": "a", "job_start_time": 1767571200},\n  {"job_name": "a", "step_count": 1,\n'
        '   "step_start_time": "soon"}\n]\n'
    )
    r = cli("goodput-report", bad, "--format", "ml-goodput", state=False)
    assert r.code == 2 and f"{bad}:3: field step_start_time" in r.err and "'soon'" in r.err
    r = cli("goodput-report", bad, "--format", "ml-goodput", "--skip-bad", "-o", "json", state=False)
    assert r.code == 0 and r.json["input"]["skipped"] == 1
    orphan = tmp_path / "two.jsonl"
    orphan.write_text(
        '{"job_name":"a","job_start_time":1767571200}\n{"job_name":"b","job_start_time":1767571200}\n'
        '{"event_type":"save","step":1,"checkpoint_manager_blocking_start_time":1767571201,'
        '"checkpoint_manager_blocking_duration_secs":1}\n'
    )
    r = cli("goodput-report", orphan, "--format", "ml-goodput", state=False)
    assert r.code == 2 and f"{orphan}:3: field job_name" in r.err


# ---- ml-goodput-measurement itself as the oracle -------------------------------------------------------------
try:  # the oracle is optional: without it only the tests that need it are skipped
    package: Any = importlib.import_module("ml_goodput_measurement.src.goodput")
except ImportError:
    package = None
needs_package = pytest.mark.skipif(
    package is None, reason="ml-goodput-measurement is not installed (pip install ml-goodput-measurement==0.2.3)"
)

PACKAGE_BUCKETS = {
    "TPU_INITIALIZATION": "tpu_initialization",
    "TRAINING_PREP": "training_prep",
    "PROGRAM_STARTUP": "program_startup",
    "DATA_LOADING_SYNC": "data_loading_sync",
    "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME": "checkpoint_save",
    "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME": "checkpoint_restore",
    "WASTED_PROGRESS_FROM_DISRUPTION": "wasted_progress_from_disruption",
    "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION": "infrastructure_recovery_from_disruption",
    "OTHER": "other",
}


class _MemoryLogger:
    """The package's tests' mock: entries kept in memory, all returned at the first read."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries

    def read_cloud_logging_entries(self, start_time: Any = None, end_time: Any = None, last_entry_info: Any = None):
        last = dt.datetime.fromtimestamp(1e10, dt.UTC)
        return list(self.entries), (last, "memory")


def package_figures(entries: list[dict[str, Any]]) -> tuple[float, dict[str, float]]:
    """(productive seconds, {tpufleet bucket: seconds}) by GoodputCalculator over the entries."""
    with tempfile.TemporaryDirectory() as cache:
        calc = package.GoodputCalculator("j", "l", cloud_logger=_MemoryLogger(entries), cache_dir=cache)
        calc.get_job_goodput(include_badput_breakdown=True)  # fills the cache, computes OTHER
        info = calc._goodput_cache.get_goodput_info()
    out: dict[str, float] = {}
    for kind, value in info.total_unproductive_time.items():
        if kind.name == "CUSTOM_BADPUT_EVENTS":
            out["custom_badput_events"] = sum(value.values())
        elif kind.name in PACKAGE_BUCKETS:
            out[PACKAGE_BUCKETS[kind.name]] = float(value)
    return float(info.total_productive_time), out


@st.composite
def package_logs(draw: Any) -> list[dict[str, Any]]:
    """Logs the recorder writes for a run of runs: init, prep, one data load, steps (some slow), custom events and
    saves inside steps that are kept, a restore after each restart, which redoes at least the last step."""
    t, step, saved, out = 1767571200.0, 1, 0, []
    runs = draw(st.integers(1, 4))
    for r in range(runs):
        out.append({"job_name": "j", "job_start_time": t})
        for key in ("tpu_init", "training_prep", "data_loading"):
            t += draw(st.sampled_from([0.0, 1.5, 4.0]))
            out.append({"job_name": "j", f"{key}_start_time": t})
            t += draw(st.sampled_from([1.0, 2.0, 7.0]))
            out.append({"job_name": "j", f"{key}_end_time": t})
        if r:
            d = draw(st.sampled_from([1.0, 3.0]))
            out.append(
                {
                    "event_type": "restore",
                    "step": saved,
                    "directory": "gs://b/c",
                    "checkpoint_manager_start_time": t,
                    "checkpoint_manager_duration_secs": d,
                    "checkpointer_duration_secs": d,
                }
            )
            t += d
        count = draw(st.integers(2, 9))
        last_run = r == runs - 1
        keep = count if last_run else draw(st.integers(1, count - 1))  # steps before the redone ones
        for k in range(count):
            out.append({"job_name": "j", "step_count": step, "step_start_time": t})
            span = draw(st.sampled_from([2.0, 3.0, 3.0, 9.0]))
            inside = k < keep - 1 or (last_run and k < count - 1)  # a kept step with a successor in this run
            if inside and k and draw(st.booleans()):
                out.append(
                    {"job_name": "j", "custom_badput_event_type": "eval", "custom_badput_event_start_time": t + 0.5}
                )
                out.append(
                    {"job_name": "j", "custom_badput_event_type": "eval", "custom_badput_event_end_time": t + 1.0}
                )
            if inside and k and draw(st.booleans()):
                out.append(
                    {
                        "event_type": "save",
                        "step": step,
                        "directory": "gs://b/c",
                        "checkpoint_manager_blocking_start_time": t + 1.25,
                        "checkpoint_manager_blocking_duration_secs": 0.5,
                        "checkpointer_blocking_duration_secs": 0.5,
                        "wait_for_prev_duration_secs": 0.0,
                        "get_old_steps_duration_secs": 0.0,
                    }
                )
                saved = step
            t += span
            step += 1
        if not last_run:
            t += draw(st.sampled_from([5.0, 60.0]))  # dead time after the last step start's span
            step = step - (count - keep)  # redo from the first step after the kept ones
    out.append({"job_name": "j", "job_end_time": t})
    return out


def ours(entries: list[dict[str, Any]], tmp: Path) -> dict[str, Any]:
    log = tmp / "ml.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    (j,) = build([log], fmt="ml-goodput")["jobs"]
    return j


def _startup_is_comparable(entries: list[dict[str, Any]]) -> bool:
    # the package nets only custom events out of steps before measuring start-up; tpufleet also nets saves
    return not any(e.get("event_type") == "save" for e in entries)


@needs_package
@settings(max_examples=120, derandomize=True, deadline=None)
@given(package_logs())
def test_buckets_agree_with_ml_goodput_measurement(entries):
    with tempfile.TemporaryDirectory() as tmp:
        j = ours(entries, Path(tmp))
    productive, theirs = package_figures(entries)
    mine = j["badput_s"]
    for bucket in (
        "tpu_initialization",
        "training_prep",
        "checkpoint_save",
        "wasted_progress_from_disruption",
        "infrastructure_recovery_from_disruption",
        "custom_badput_events",
    ):
        assert mine[bucket] == pytest.approx(theirs.get(bucket, 0.0), abs=1e-3), bucket
    # data loading aside: with one load per start, the package still counts a restart's load twice when the
    # load after the next restart ends before that restart is detected (at its first repeated step); what it
    # adds there it takes from OTHER, so the two together agree
    # Restores: the package averages repeated restores of one step (two restarts from the same checkpoint
    # cost it one restore); tpufleet counts each. OTHER takes up the difference too.
    restores = [e["checkpoint_manager_duration_secs"] for e in entries if e.get("event_type") == "restore"]
    assert mine["checkpoint_restore"] == pytest.approx(sum(restores), abs=1e-6)
    if len({e["step"] for e in entries if e.get("event_type") == "restore"}) == len(restores):
        assert mine["checkpoint_restore"] == pytest.approx(theirs["checkpoint_restore"], abs=1e-3)
    shared = ("data_loading_sync", "other", "checkpoint_restore")
    assert sum(mine[b] for b in shared) == pytest.approx(sum(theirs[b] for b in shared), abs=1e-3)
    assert mine["data_loading_sync"] <= theirs["data_loading_sync"] + 1e-9
    # the same step time is split between productive and start-up; the split itself differs where saves sit
    # inside steps (tpufleet nets them out of the steps it compares)
    assert j["productive_s"] + mine["program_startup"] == pytest.approx(
        productive + theirs["program_startup"], abs=1e-3
    )
    if _startup_is_comparable(entries):
        assert j["productive_s"] == pytest.approx(productive, abs=1e-3)
    assert j["disruptions"] == sum(1 for e in entries if "job_start_time" in e) - 1


@needs_package
def test_the_fixtures_agree_with_the_package_where_documented():
    """The hand-checked fixtures through the package: equal where tpufleet follows it."""
    for name in ("restart_after_disruption.jsonl", "back_to_back_saves.jsonl", "emergency_restore.jsonl"):
        entries = [json.loads(x) for x in (FIX / name).read_text().splitlines()]
        entries = [{k: v for k, v in e.items() if k != "job_name"} | {"job_name": "j"} for e in entries]
        (j,) = build([FIX / name], fmt="ml-goodput")["jobs"]
        productive, theirs = package_figures(entries)
        assert j["productive_s"] == pytest.approx(productive), name
        for bucket, value in theirs.items():
            assert j["badput_s"][bucket] == pytest.approx(value), (name, bucket)


def test_elastic_slice_down_and_reinitialisation_by_hand(cli):
    # 4 slices stepping from 0; init 0..10, prep 10..15; steps 1..5 every 10 s from 20; slices down at 70 (3 of 4
    # available, none stepping) until 100; elastic reinitialisation 100..130 (holding init 100..110 and prep
    # 110..120, counted once, as reinitialisation, as the package does); steps 6..8 on 3 slices every 12 s from
    # 130; end 166
    _, j = job_of(cli, "elastic_slice_down.jsonl")
    assert j["all_allocated_s"] == 166 and j["productive_s"] == 86  # 20..70 and 130..166
    assert j["badput_s"] == {
        **ZERO,
        "tpu_initialization": 10,
        "training_prep": 5,
        "elastic_slice_down": 30,
        "elastic_reinitialization": 30,
        "other": 5,  # 15..20
    }
    # time-weighted: stepping 4/4 for 70 s, 0 for 60 s, 3/4 for 36 s; available 4/4, 3/4, 3/4
    assert j["slices"] == {
        "stepping_slice_efficiency": round(97 / 166, 6),
        "available_slice_efficiency": round(142 / 166, 6),
    }


def test_an_elastic_job_resuming_from_an_earlier_step_wastes_the_steps_it_does_again(cli, tmp_path):
    # the slice-down fixture, but after its reinitialisation the job resumes from its checkpoint of step 3 with
    # no restart logged: steps 4..8 every 12 s from 130, end 190. Steps 4 and 5 of the first pass (50..70) are
    # done again: wasted (they were productive, 10 productive steps where the job made 8)
    kept = [
        entry
        for entry in map(json.loads, (FIX / "elastic_slice_down.jsonl").read_text().splitlines())
        if entry.get("step_count") not in (6, 7, 8) and "job_end_time" not in entry
    ]
    again = [{"job_name": "elastic", "step_count": 4 + k, "step_start_time": B + 130 + 12 * k} for k in range(5)]
    log = tmp_path / "resumed.jsonl"
    entries = [*kept, *again, {"job_name": "elastic", "job_end_time": B + 190}]
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    r = cli("goodput-report", log, "--format", "ml-goodput", "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    assert j["all_allocated_s"] == 190 and j["productive_s"] == 90 and j["productive_steps"] == 8
    assert j["badput_s"] == {
        **ZERO,
        "tpu_initialization": 10,
        "training_prep": 5,
        "wasted_progress_from_disruption": 20,
        "elastic_slice_down": 30,
        "elastic_reinitialization": 30,
        "other": 5,
    }


@needs_package
def test_elastic_buckets_agree_with_the_packages_elastic_calculator():
    goodput_elastic = importlib.import_module("ml_goodput_measurement.src.goodput_elastic")

    entries = [json.loads(x) for x in (FIX / "elastic_slice_down.jsonl").read_text().splitlines()]
    with tempfile.TemporaryDirectory() as cache:
        calc = goodput_elastic.ElasticGoodputCalculator("j", "l", cloud_logger=_MemoryLogger(entries), cache_dir=cache)
        calc.get_job_goodput(include_badput_breakdown=True)
        info = calc._goodput_cache.get_goodput_info()
        details = calc.get_job_goodput_details()
    theirs = {k.name: v for k, v in info.total_unproductive_time.items()}
    (j,) = build([FIX / "elastic_slice_down.jsonl"], fmt="ml-goodput")["jobs"]
    assert j["badput_s"]["elastic_slice_down"] == theirs["ELASTIC_SLICE_DOWN"] == 30
    assert j["badput_s"]["elastic_reinitialization"] == theirs["ELASTIC_REINITIALIZATION"] == 30
    assert j["badput_s"]["tpu_initialization"] == theirs["TPU_INITIALIZATION"] == 10
    assert j["badput_s"]["training_prep"] == theirs["TRAINING_PREP"] == 5
    assert j["slices"]["stepping_slice_efficiency"] == pytest.approx(details["stepping_slice_efficiency"], abs=1e-6)
    assert j["slices"]["available_slice_efficiency"] == pytest.approx(details["available_slice_efficiency"], abs=1e-6)
    # where they part: the package also counts step 5's whole span (60..130) as productive, on top of the 60 s of
    # wait and reinitialisation inside it; tpufleet gives each instant one label
    assert info.total_productive_time == 86 + 60


KEYS = [
    "job_start_time",
    "job_end_time",
    "step_start_time",
    "step_count",
    "tpu_init_start_time",
    "data_loading_end_time",
    "custom_badput_event_type",
    "custom_badput_event_start_time",
    "event_type",
    "step",
    "checkpoint_manager_start_time",
    "checkpoint_manager_duration_secs",
    "active_slices",
    "total_slices",
    "available_slices",
    "elastic_slice_counts_timestamp",
    "elastic_wait_event_type",
    "elastic_wait_start_time",
    "elastic_reinit_end_time",
    "job_metadata",
]
VALUES = st.one_of(
    st.sampled_from([0, 1, -1, 3, 1767571200.0, 1767571260.5, 1e300, "x", "scale_up", "emergency_restore", "save"]),
    st.sampled_from([None, True, [], {}, {"chips": 0}, {"chips": 4, "phase": "training"}, 10**30]),
)


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # `cli` keeps no state between examples
)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=5).map(lambda d: {"job_name": "j", **d}),
        min_size=1,
        max_size=12,
    ),
    st.booleans(),
    st.booleans(),
)
def test_any_entries_exit_0_or_2_never_70(cli, entries, as_array, skip_bad):
    """Hostile or odd entries (wrong types, huge numbers, elastic and checkpoint fields mixed): a report or one
    line naming file, line and field; never an internal error."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.json"
        text = json.dumps(entries) if as_array else "".join(json.dumps(e) + "\n" for e in entries)
        log.write_text(text)
        args = ["goodput-report", log, "--format", "ml-goodput", "-o", "json", "--window", "1h"]
        r = cli(*args, *(["--skip-bad"] if skip_bad else []), state=False)
        code, err = r.code, r.err
    assert code in (0, 2), err
    if code == 2:
        assert (len(err.strip().splitlines()) == 1 and str(log) in err) or "no job events" in err
