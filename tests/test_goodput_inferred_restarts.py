"""Restarts with no disruption logged before them: each is placed from the steps of its own run, never by a pass
over every step of the job once per restart (`goodput-report` on 1 M events with 10,000 such restarts took 6.1 s of CPU)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from tpufleet.goodput.events import CODE
from tpufleet.goodput.steps import Events, inferred


class _CountedRuns(np.ndarray):
    """The steps' run numbers, counting the comparisons made over all of them at once."""

    whole = 0
    passes = 0

    def __eq__(self, other: Any) -> Any:
        if self.size == _CountedRuns.whole:
            _CountedRuns.passes += 1
        return super().__eq__(other)

    __hash__ = None


def test_each_unlogged_restart_is_placed_without_a_pass_over_every_step():
    restarts, per_run = 200, 3
    t, code, step = [], [], []
    for r in range(restarts):
        t.append(10.0 * r)
        code.append(CODE["job_start"])
        step.append(-1)
        for k in range(1, per_run + 1):  # one step a second; the numbers go on (no work redone)
            t.append(10.0 * r + k)
            code.append(CODE["step_start"])
            step.append(r * per_run + k)
    ev = Events(np.array(t), np.array(code, dtype=np.int64), np.array(step, dtype=np.int64), np.full(len(t), -1))
    sel = ev.code == CODE["step_start"]
    st, sn = ev.t[sel], ev.step[sel]
    runs = np.searchsorted(ev.t[ev.code == CODE["job_start"]], st, side="right").view(_CountedRuns)
    _CountedRuns.whole, _CountedRuns.passes = len(st), 0

    disrupted, restarted = inferred(ev, st, sn, runs)

    # the disruption one median step (1 s) after each run's last step, the restart where it was logged
    assert disrupted.tolist() == [10.0 * r + per_run + 1 for r in range(restarts - 1)]
    assert restarted.tolist() == [10.0 * r for r in range(1, restarts)]
    assert _CountedRuns.passes <= 1


def test_a_run_restoring_an_older_checkpoint_wastes_the_earlier_runs_steps_after_it(cli, tmp_path):
    # run 1 steps 0..9 (10..100); run 2 from step 5 (its steps 5..7, 210..230); run 3 restores step 3, an older
    # checkpoint (the latest unreadable): steps 3..12 (310..400), end 410. Run 1's steps 3 and 4 are done again by
    # run 3, so their work is lost as run 2's is: 13 steps of progress, not 15.
    lines = [{"type": "job", "job": "r", "accelerator": "tpu-v4", "chips": 8, "ideal_step_s": 10}]

    def ev(t: float, name: str, **extra: int) -> None:
        lines.append({"type": "event", "job": "r", "time": t, "event": name, **extra})

    ev(0, "allocation", chips=8)
    for start, first, count in ((0, 0, 10), (200, 5, 3), (300, 3, 10)):
        ev(start, "job_start")
        for k in range(count):
            ev(start + 10 + 10 * k, "step_start", step=first + k)
    ev(410, "job_end")
    log = tmp_path / "older.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    assert j["productive_steps"] == 13
    assert j["productive_s"] == 130  # run 1's steps 0..2 (30 s) and run 3's (100 s)
    # run 1's steps 3..8 (60 s; step 9 is where the disruption is put) and run 2's steps 5 and 6 (20 s)
    assert j["badput_s"]["wasted_progress_from_disruption"] == 80
