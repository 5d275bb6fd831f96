"""The chips the jobs hold over time, per accelerator, against the capacity (pure): the busiest moment's chips
(the capacity when no other is given), and the check that no capacity step is smaller than the chips held while it
is in force. More chips held than exist is input that contradicts itself: it made SG above 1 (2.0, 2.5) and MPG
above 1, reported as figures.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from tpufleet.errors import BadInput, shown
from tpufleet.goodput.events import CapacityRecord
from tpufleet.goodput.jobaccount import JobAccount

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tpufleet.goodput.chiptime import Capacity

    Times = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]

__all__ = ["CAPACITY_OPTION", "check", "held_runs", "peak"]

CAPACITY_OPTION = "--capacity"  # where a capacity step given on the command line is said to come from


def held(accounts: list[JobAccount], accelerator: str, whole: bool = False) -> tuple[Times, Ints] | None:
    """The all-allocated chips of the jobs on `accelerator` as a step function: the times it changes at and the
    chips held from each on (0 after the last); None if those jobs hold none. In the part of the log reported,
    or with `whole` over the whole log (each job's `whole_held`)."""
    import numpy as np

    ends: list[Times] = []
    starts: list[Times] = []
    ups: list[Ints] = []
    for a in accounts:
        runs = _held_runs(a, whole)
        if a.job.accelerator == accelerator and runs is not None:
            run_starts, run_ends = runs
            ends.append(run_ends)
            starts.append(run_starts)
            ups.append(np.full(len(run_starts), a.job.chips))
    if not starts:
        return None
    t = np.concatenate(ends + starts)  # ends first: a stable sort keeps them before starts at the same instant
    up = np.concatenate(ups)
    d = np.concatenate([-up, up])
    order = np.argsort(t, kind="stable")
    t, level = t[order], np.cumsum(d[order])
    last = np.append(t[1:] != t[:-1], True)  # the level after every change at an instant
    return t[last], level[last]


def _held_runs(a: JobAccount, whole: bool) -> tuple[Times, Times] | None:
    """The job's all-allocated time as runs (joined already in `whole_held`); None if it holds none."""
    if whole and a.whole_held is not None:
        return a.whole_held if len(a.whole_held[0]) else None
    if not whole and a.part_held is not None:
        return a.part_held if len(a.part_held[0]) else None
    if a.starts is None or a.ends is None or not len(a.starts):
        return None
    return _runs(a.starts, a.ends)


def held_runs(a: JobAccount) -> tuple[Times, Times]:
    """The job's all-allocated runs in the part reported, from its intervals (none without them): what `check`
    reads of a job, made where it is accounted (its `part_held`)."""
    import numpy as np

    if a.starts is None or a.ends is None or not len(a.starts):
        return np.zeros(0), np.zeros(0)
    return _runs(a.starts, a.ends)


def _runs(starts: Times, ends: Times) -> tuple[Times, Times]:
    """A job's time-ordered intervals with the touching ones joined: a job's all-allocated time comes as about one
    interval a step (a million for a million events), nearly all end to end."""
    import numpy as np

    if bool((starts[1:] < ends[:-1]).any()):  # overlapping or out of order: left as they are (counted as held)
        return starts, ends
    new_run = np.flatnonzero(starts[1:] != ends[:-1]) + 1
    return starts[np.r_[0, new_run]], ends[np.r_[new_run - 1, len(ends) - 1]]


def peak(accounts: list[JobAccount], t0: float) -> Capacity:
    """Without a capacity given: the busiest moment's all-allocated chips per accelerator, from `t0`. The whole
    log's busiest moment (the capacity is the fleet's, whatever part of the log is reported: --since/--until gave
    a part's own busiest moment, not the capacity a --window or --period row over the same span has), so
    `accounts` are every job's, those outside the part too."""
    out: Capacity = []
    for acc in sorted({a.job.accelerator for a in accounts}):
        steps = held(accounts, acc, whole=True)
        if steps is not None:
            out.append((t0, acc, int(steps[1].max()), "peak-allocation"))
    return out


def check(accounts: list[JobAccount], capacity: Capacity) -> None:
    """BadInput naming the first capacity step (its record's file:line, or the option) smaller than the chips
    the jobs hold while it is in force, or the first record of an accelerator whose jobs hold chips before it.
    The capacity is a step function as `chiptime.CapacitySteps` integrates it: none before the first step, each
    step until the next (at equal times, the last in (time, chips) order)."""
    import numpy as np

    for acc in sorted({step[1] for step in capacity}):
        chips = held(accounts, acc)
        if chips is None:
            continue
        steps = sorted(step for step in capacity if step[1] == acc)
        step_t = np.array([s[0] for s in steps], dtype=float)
        at = np.union1d(chips[0], step_t)  # every instant either function changes at
        j = np.searchsorted(chips[0], at, side="right") - 1
        level = np.where(j >= 0, chips[1][np.maximum(j, 0)], 0)
        k = np.searchsorted(step_t, at, side="right") - 1
        given = np.where(k >= 0, np.array([s[2] for s in steps])[np.maximum(k, 0)], 0)
        over = np.flatnonzero(level > given)
        if len(over):
            i = int(over[0])
            raise _short(steps[int(k[i])] if k[i] >= 0 else None, steps[0], int(level[i]), float(at[i]))


def _short(step: CapacityRecord | None, first: CapacityRecord, held: int, t: float) -> BadInput:
    """The message of a capacity `step` smaller than the `held` chips at `t` (None: before the `first` step)."""
    when = _iso(t)
    acc = first[1]
    if step is None:
        return BadInput(
            f"{first[3]}: field time: the jobs hold {held:,} {acc} chips at {when}, before this first {acc} "
            f"capacity record (value {_iso(first[0])})"
        )
    if step[3] == CAPACITY_OPTION:
        return BadInput(
            f"bad option {CAPACITY_OPTION}: {shown(f'{acc}={step[2]}')}: fewer chips than the {held:,} the jobs hold "
            f"at {when}"
        )
    return BadInput(
        f"{step[3]}: field chips: fewer than the {held:,} {acc} chips the jobs hold at {when} (value {step[2]})"
    )


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat().replace("+00:00", "Z")
