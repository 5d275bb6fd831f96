"""Rolling windows and exclusions, by hand, on fixtures/goodput/disrupted_training.jsonl (train-a, 256 of a
512-chip fleet, submitted 00:00:00, allocated 00:10:00 .. 00:14:20; failure 00:12:40, restart 00:13:40, restore
until 00:14:00, steps 3 and 4 until the end at 00:14:20; ideal step 8 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "goodput"
LOG = FIX / "disrupted_training.jsonl"
T = 1767571200  # 2026-01-05T00:00:00Z


def test_an_excluded_window_counts_nowhere(cli, tmp_path):
    exclude = tmp_path / "maintenance.json"
    exclude.write_text(json.dumps([{"start": "2026-01-05T00:12:40Z", "end": T + 820, "reason": "OCS swap"}]))
    r = cli("goodput-report", LOG, "--exclude", exclude, "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    # the minute of recovery is gone: 260 - 60 s all-allocated, 860 - 60 s of demand, nothing else moves
    assert j["all_allocated_s"] == 200 and j["demand_s"] == 800 and j["productive_s"] == 40
    assert j["badput_s"]["infrastructure_recovery_from_disruption"] == 0
    assert j["badput_s"]["wasted_progress_from_disruption"] == 10 and j["badput_s"]["checkpoint_restore"] == 20
    assert j["sg"] == 0.25 and j["rg"] == 0.2
    f = r.json["fleet"]
    assert f["capacity_chip_s"] == 512 * 800 and f["sg"] == 0.125 and f["excluded_chip_s"] == 256 * 60
    assert r.json["exclusions"] == [{"start": T + 760, "end": T + 820, "reason": "OCS swap"}]


def test_rolling_windows_are_the_last_part_of_the_data(cli):
    r = cli("goodput-report", LOG, "--window", "1m,1h", "-o", "json", state=False)
    assert r.code == 0, r.err
    last_minute, hour = r.json["windows"]
    # 00:13:20 .. 00:14:20: recovery 20 s, restore 20 s, steps 20 s; all 256 chips of 512 held
    assert last_minute["window"] == "1m" and last_minute["start"] == T + 800 and last_minute["end"] == T + 860
    assert last_minute["sg"] == 0.5 and last_minute["rg"] == round(20 / 60, 6) and last_minute["pg"] == 0.8
    assert last_minute["badput_chip_s"]["checkpoint_restore"] == 256 * 20
    assert last_minute["mpg"] == round(0.5 * round(20 / 60, 6) * 0.8, 6)
    # a window longer than the data is all of it
    assert hour["start"] == T and hour["rg"] == r.json["fleet"]["rg"] and hour["sg"] == r.json["fleet"]["sg"]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--window", "6x"], "--window"),
        (["--window", "0h"], "--window"),
        (["--window", "1h,,2h"], "--window"),
        (["--window", "1h,1h"], "--window: '1h' is given twice"),
        (["--window", "6h,1d,6h"], "--window: '6h' is given twice"),
        (["--window", "1h,60m"], "--window: '60m' is the window '1h' again"),
    ],
)
def test_bad_windows_exit_2(cli, args, needle):
    r = cli("goodput-report", LOG, *args, state=False)
    assert r.code == 2 and needle in r.err and len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "content, needle",
    [
        ('{"start": 1}', "must be a JSON list"),
        ('[{"start": "soon", "end": 5}]', ":1: field start"),
        ('[{"start": 10, "end": 20}, {"start": 30, "end": 20}]', ":2: field end"),
        ('[{"start": 10, "end": 20, "reason": 7}]', ":1: field reason"),
        ('[{"start": 10, "end": 20, "reason": "x", "bogus": 1}]', ":1: field bogus: unknown key"),
        ('[{"start": 10, "end": 20}, {"start": 30, "end": 40, "Reason": "x"}]', ":2: field Reason: unknown key"),
        ('[{"start": 10, "end": 20, "a\\nb": 1}]', ":1: field 'a\\nb': unknown key"),
        ("[1", "not valid JSON"),
    ],
)
def test_bad_exclusion_files_exit_2_naming_the_entry(cli, tmp_path, content, needle):
    bad = tmp_path / "x.json"
    bad.write_text(content)
    r = cli("goodput-report", LOG, "--exclude", bad, state=False)
    assert r.code == 2 and str(bad) in r.err and needle in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1, r.err


def test_since_mid_run_charges_the_run_from_since(cli):
    # --since 00:12:05, inside the first run (the job starts 00:10:00) and inside step 1 (00:12:00 .. 00:12:10):
    # the part starts at --since, in the state the job was in (step 1), nothing is taken for stray
    r = cli("goodput-report", LOG, "--since", "2026-01-05T00:12:05Z", "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    assert j["events_outside_job"] == 0
    # 00:12:05 .. 00:14:20 = 135 s, all chips held (the allocation at 00:10:00 still counts): the last 5 s of
    # step 1, step 2 (20 s, 10 of them under the save), step 3 lost (10), recovery 60, restore 20, steps 3 and 4
    assert j["all_allocated_s"] == 135 and j["productive_s"] == 35
    assert j["badput_s"]["checkpoint_save"] == 10 and j["badput_s"]["infrastructure_recovery_from_disruption"] == 60
    assert j["badput_s"]["wasted_progress_from_disruption"] == 10 and j["badput_s"]["checkpoint_restore"] == 20
    # the same span as the last 135 s of the whole log's timeline
    (last,) = cli("goodput-report", LOG, "--window", "135s", "-o", "json", state=False).json["windows"]
    f = r.json["fleet"]
    assert (f["all_allocated_chip_s"], f["productive_chip_s"]) == (last["all_allocated_chip_s"], 256 * 35)
    assert (f["sg"], f["rg"], f["pg"]) == (last["sg"], last["rg"], last["pg"]) == (0.5, round(35 / 135, 6), 0.8)
