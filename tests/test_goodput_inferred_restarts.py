"""Restarts with no disruption logged before them: each is placed from the steps of its own run, never by a pass
over every step of the job once per restart (`goodput-report` on 1 M events with 10,000 such restarts took 6.1 s of CPU)."""

from __future__ import annotations

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
