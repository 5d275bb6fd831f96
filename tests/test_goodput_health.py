"""Step-time health, by hand: a job whose steps slow down by 30% for an hour (fixtures/goodput/slow_steps.jsonl:
400 steps of 10 s, 277 of 13 s from 00:06:40 (= 3,601 s), 400 of 10 s, then the end at 11,601 s; no ideal step
time logged); and the empirical ideal step time against ml-goodput-measurement's own function."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpufleet.goodput.health import ideal_step

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "goodput"
B = 1767571200


def test_a_thirty_percent_slowdown_for_an_hour_is_found(cli):
    r = cli("goodput-report", FIX / "slow_steps.jsonl", "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    health = j["step_time"]
    # 1,076 timed steps (the last has no successor); 799 of them take 10 s: median 10, MAD 0, ideal 10
    assert health["steps_timed"] == 1076 and health["empirical_ideal_s"] == 10
    assert health["slow_periods"] == [
        {"start": B + 4000, "end": B + 7601, "steps": 277, "mean_step_s": 13.0, "slowdown": 1.3}
    ]
    # the last hour of step times (steps starting from 7,991 s): all 10 s again
    assert health["trailing_mean_s"] == 10 and health["trailing_slowdown"] == 1 and health["trailing_deviation_s"] == 0
    # no program data logged: PG from the empirical ideal, marked so (1,077 productive steps in 11,601 s)
    assert j["pg_basis"] == "estimated" and j["pg"] == round(10 * 1077 / 11601, 6)
    assert r.json["fleet"]["pg_basis"] == "estimated" and r.json["fleet"]["slow_periods"] == 1
    table = cli("goodput-report", FIX / "slow_steps.jsonl", state=False).out
    assert "slow" in table and "1.30x" in table


def test_a_declared_ideal_keeps_pg_declared():
    from tpufleet.ops.goodput import build

    (j,) = build([FIX / "disrupted_training.jsonl"])["jobs"]
    assert j["pg_basis"] == "declared" and j["pg"] == 0.8


try:  # the oracle is optional
    package_utils: Any = importlib.import_module("ml_goodput_measurement.src.goodput_utils")
except ImportError:
    package_utils = None


@pytest.mark.skipif(
    package_utils is None, reason="ml-goodput-measurement is not installed (pip install ml-goodput-measurement==0.2.3)"
)
@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from([0.2, 0.9, 1.0, 2.0, 2.5, 3.0, 3.0, 3.1, 9.0, 40.0]), min_size=1, max_size=40))
def test_empirical_ideal_is_the_packages(durations):
    import numpy as np

    theirs = package_utils.compute_ideal_step_time(list(durations))
    ours = ideal_step(np.array(durations, dtype=np.float64))
    assert (ours is None) == (theirs is None)
    if ours is not None:
        assert ours == pytest.approx(float(theirs), abs=1e-12)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    st.lists(st.sampled_from([0.5, 1.0, 9.0, 10.0, 11.0, 12.0, 13.0, 40.0]), min_size=21, max_size=80),
    st.sampled_from([1, 3, 5, 21]),
    st.sampled_from([9.0, 10.0, 12.0, 13.0]),
)
def test_the_running_count_is_the_rolling_median(values, k, limit):
    """More than half of a window over the limit <=> its median over it (ties at the limit included)."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    from tpufleet.goodput.health import rolling_median_over

    v = np.array(values)
    medians = np.median(sliding_window_view(v, k), axis=1)
    assert (rolling_median_over(v, k, limit) == (medians > limit)).all()


def test_a_last_step_longer_than_the_trailing_window_is_the_window(cli, tmp_path):
    """Twenty steps of 10 s, then one of 10,010 s (over the hour of the trailing window): the window's figures are
    that step's, with nothing on stderr (they were means of nothing: NaN, shown as null, with numpy's warnings)."""
    import json

    t0 = 1767571200.0
    starts = [10.0 * n for n in range(1, 22)] + [210.0 + 10010]  # steps 1..22; step 21 lasts 10,010 s
    entries = [{"job_name": "j", "job_start_time": t0}]
    entries += [{"job_name": "j", "step_count": n, "step_start_time": t0 + s} for n, s in enumerate(starts, 1)]
    entries.append({"job_name": "j", "job_end_time": t0 + 20300})
    log = tmp_path / "long-step.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    r = cli("goodput-report", log, "--format", "ml-goodput", "-o", "json", state=False)
    assert r.code == 0 and r.err == ""
    health = r.json["jobs"][0]["step_time"]
    assert health["steps_timed"] == 21 and health["empirical_ideal_s"] == 10
    assert health["trailing_mean_s"] == 10010 and health["trailing_slowdown"] == 1001
    assert health["trailing_deviation_s"] == 10000


def test_pg_from_an_empirical_ideal_uses_it_unrounded(cli, tmp_path):
    # steps of 1, 2 and 4 s (the last, 2 s, cut by the end, has no time): median 2, MAD 1, so all three count and
    # the ideal is 7/3 s (shown as 2.3333); PG = 7/3 x 4 steps / 9 s = 28/27, not 2.3333 x 4 / 9 = 1.037022
    log = tmp_path / "e.jsonl"
    lines = ['{"type":"job","job":"e","accelerator":"tpu-v4","chips":8,"phase":"training"}']
    lines.append(f'{{"type":"event","job":"e","time":{B},"event":"job_start"}}')
    for step, at in enumerate((0, 1, 3, 7), start=1):
        lines.append(f'{{"type":"event","job":"e","time":{B + at},"event":"step_start","step":{step}}}')
    lines.append(f'{{"type":"event","job":"e","time":{B + 9},"event":"job_end"}}')
    log.write_text("\n".join(lines) + "\n")
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    assert j["step_time"]["empirical_ideal_s"] == 2.3333 and (j["productive_steps"], j["productive_s"]) == (4, 9.0)
    assert j["pg"] == round(28 / 27, 6) == r.json["fleet"]["pg"]
