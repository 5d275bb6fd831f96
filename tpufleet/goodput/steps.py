"""Steps, restarts and covered time for the accounting in `tpufleet.goodput.timeline` (pure, numpy).

* `inferred`: where a restart with no logged disruption puts the disruption (ml-goodput-measurement's rule);
* `steps_of`: each step's end, its run, whether its work survived and whether it is complete (has a next step in
  the same run): only complete steps measure start-up;
* `startup`: the first step's excess over the others, net of the time higher labels take.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tpufleet.goodput.compiledaccount import (
    checkpoint_rule,
    compiled_startup,
    group_by_kind,
    not_done_again,
    searchsorted,
)
from tpufleet.goodput.compiledaccount import first_after as compiled_first_after
from tpufleet.goodput.compiledaccount import step_ends as compiled_step_ends
from tpufleet.goodput.events import CODE, DISRUPTIONS, EventColumns, EventRecord, Job

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Times = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]


def first_after(times: Times, points: Times, inclusive: bool = False) -> Times:
    """For each point, the first time in sorted `times` after it (>= with inclusive), or +inf."""
    import numpy as np

    found = compiled_first_after(times, points, inclusive)
    if found is not None:
        return found
    side: Literal["left", "right"] = "left" if inclusive else "right"
    idx = searchsorted(times, points, side)
    padded = np.append(times, np.inf)
    return padded[np.minimum(idx, len(times))]


@dataclass
class Events:
    """One job's events as sorted columns (time, then log order at equal times)."""

    t: Times
    code: Ints
    step: Ints
    chips: Ints

    def at(self, name: str) -> Times:
        """The times of the events of one kind, in order."""
        times: Times = self.t[self.where(name)]
        return times

    def where(self, name: str) -> Ints:
        """The positions of the events of one kind, in order."""
        order, edges = self._by_kind
        code = CODE[name]
        found: Ints = order[edges[code] : edges[code + 1]]
        return found

    @functools.cached_property
    def _by_kind(self) -> tuple[Ints, Ints]:
        """The events' positions grouped by kind (in order within one), and where each kind's begin: one stable
        sort of the codes as bytes (numpy sorts them by radix), where comparing the whole column with each kind
        the accounting asks for cost a millisecond a job of 20,000 events."""
        import numpy as np

        grouped = group_by_kind(self.code, len(CODE))
        if grouped is not None:
            return grouped
        order: Ints = np.argsort(self.code.astype(np.int8), kind="stable")  # (codes are < len(CODE) <= 127)
        edges = np.zeros(len(CODE) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.code, minlength=len(CODE))[: len(CODE)], out=edges[1:])
        return order, edges

    def keep(self, mask: npt.NDArray[np.bool_]) -> Events:
        return Events(self.t[mask], self.code[mask], self.step[mask], self.chips[mask])

    def without_repeats(self) -> tuple[Events, int]:
        """The events without those that repeat the one before them exactly (time, kind, step and chips), and
        how many were dropped: a line a log shipper wrote twice is one event (a step so repeated counted twice in
        the goodput, a zero-length step pulled start-up's baseline down). Only the one before: the same event
        again after others at that instant may be the log's own (a step redone after a restart in no time)."""
        import numpy as np

        repeat = self.t[1:] == self.t[:-1]
        if not repeat.any():
            return self, 0
        for column in (self.code, self.step, self.chips):
            repeat &= column[1:] == column[:-1]
        if not repeat.any():
            return self, 0
        keep = np.concatenate([[True], ~repeat])
        return self.keep(keep), int(np.count_nonzero(repeat))


def columns(
    records: Sequence[EventRecord] | EventColumns, since: float | None = None, until: float | None = None
) -> Events:
    """Sorted columns of the events inside [since, until] (all when not given)."""
    import numpy as np

    if isinstance(records, EventColumns):
        t = np.frombuffer(records.t, dtype=np.float64)
        code = np.frombuffer(records.code, dtype=np.int8).astype(np.int64)
        step, chips = np.frombuffer(records.step, dtype=np.int64), np.frombuffer(records.chips, dtype=np.int64)
    else:
        arr = np.array([(r[0], r[1], r[2], r[3]) for r in records], dtype=np.float64).reshape(-1, 4)
        t, code, step, chips = (
            arr[:, 0],
            arr[:, 1].astype(np.int64),
            arr[:, 2].astype(np.int64),
            arr[:, 3].astype(np.int64),
        )
    if since is not None or until is not None:
        keep = (t >= (-np.inf if since is None else since)) & (t <= (np.inf if until is None else until))
        t, code, step, chips = t[keep], code[keep], step[keep], chips[keep]
    if len(t) < 2 or bool((t[1:] >= t[:-1]).all()):  # logs are mostly in time order already: no sort
        return Events(t.copy(), code, step.copy(), chips.copy())
    order = np.argsort(t, kind="stable")
    return Events(t[order], code[order], step[order], chips[order])


def _median_step(st: Times, run: Ints, r: int) -> float | None:
    """The median step time of run `r` (its steps are one stretch of `st`: `run` never decreases)."""
    import numpy as np

    lo, hi = np.searchsorted(run, [r, r + 1], side="left").tolist()
    return float(np.median(np.diff(st[lo:hi]))) if hi - lo >= 2 else None


def inferred(ev: Events, st: Times, sn: Ints, run: Ints) -> tuple[Times, Times]:
    """Restarts after steps with no disruption or end logged since the last step: (disruption, restart) times.
    Every restart is looked at in one pass over the arrays; only those with nothing logged are placed one by one."""
    import numpy as np

    restarts = ev.at("job_start")[1:]
    marks = np.sort(np.concatenate([ev.at("job_end"), ev.at("drain"), *(ev.at(d) for d in DISRUPTIONS)]))
    last = np.searchsorted(st, restarts, side="left") - 1  # the last step before each restart
    before = st[np.maximum(last, 0)] if len(st) else np.zeros(len(restarts))
    runs = np.arange(1, len(restarts) + 1)
    stepped = (last >= 0) & (run[np.maximum(last, 0)] == runs) if len(st) else np.zeros(len(restarts), dtype=bool)
    # a disruption or end logged between the run's last step and the restart is the more precise source
    logged = np.searchsorted(marks, before, side="left") < np.searchsorted(marks, restarts, side="right")
    out_d, out_r = [], []
    for i in np.flatnonzero(stepped & ~logged).tolist():
        r_t, s_t, k, at = restarts[i], before[i], i + 1, int(last[i])
        redone = at + 1 < len(st) and sn[at + 1] <= sn[at]
        median = None if redone else _median_step(st, run, k)
        out_d.append(s_t if median is None else min(r_t, s_t + median))
        out_r.append(r_t)
    return np.array(out_d, dtype=np.float64), np.array(out_r, dtype=np.float64)


@dataclass
class Steps:
    st: Times
    sn: Ints
    end: Times
    run: Ints
    productive: npt.NDArray[np.bool_]
    complete: npt.NDArray[np.bool_]


def steps_of(job: Job, ev: Events, disrupt: Times, explicit: Times, stops: Times, end: float) -> Steps:
    """Steps, where each ends, and whether its work survived. `disrupt`: the disruptions (and planned stops), where
    a step logged at that very time ends at once."""
    import numpy as np

    sel = ev.where("step_start")
    st, sn = ev.t[sel], ev.step[sel]
    restarts = ev.at("job_start")
    step_end, run, complete = _ends_and_runs(st, stops, disrupt, end, restarts)
    productive = np.ones(len(st), dtype=bool)
    if job.phase == "training" and len(st):
        if not not_done_again(sn, productive):
            productive &= sn < _done_again_from(sn)
        saves_t, saves_step = ev.at("checkpoint_end"), ev.step[ev.where("checkpoint_end")]
        if len(saves_t) and len(explicit):
            # (sorted: an end logged before a later restart is the run's end, which a search of the two joined
            # unsorted could miss, ending the run at that restart instead, after the disruption)
            run_ends = np.sort(np.concatenate([restarts, ev.at("job_end")]))
            marks = (restarts, run_ends, explicit)
            if checkpoint_rule((st, sn, run), marks, (saves_t, saves_step), productive):
                return Steps(st, sn, step_end, run, productive, complete)
            run_start = np.append([-np.inf], restarts)[run]
            cut = first_after(explicit, st)
            ks = np.flatnonzero(cut < first_after(run_ends, st))
            # one group per (run, disruption) pair: few, whatever the number of steps
            key = run[ks] * (len(explicit) + 1) + np.searchsorted(explicit, cut[ks])
            groups, first, which = np.unique(key, return_index=True, return_inverse=True)
            by_group = np.argsort(which.ravel(), kind="stable")  # each group's rows together, in order
            bounds = np.searchsorted(which.ravel()[by_group], np.arange(len(groups) + 1))
            for g in range(len(groups)):
                k = ks[first[g]]
                ok = (saves_t >= run_start[k]) & (saves_t <= cut[k])
                saved = saves_step[ok].max() if ok.any() else -1
                mine = ks[by_group[bounds[g] : bounds[g + 1]]]
                productive[mine] &= sn[mine] <= saved
    return Steps(st, sn, step_end, run, productive, complete)


def _ends_and_runs(
    st: Times, stops: Times, disrupt: Times, end: float, restarts: Times
) -> tuple[Times, Ints, npt.NDArray[np.bool_]]:
    """Where each step ends (the next step's start, or the first stop after it, disruption at or after it or the
    job's end if sooner), its run (the restarts at or before it), and whether the next step came first."""
    import numpy as np

    found = compiled_step_ends(st, stops, disrupt, end, restarts)
    if found is not None:
        return found
    nxt = np.append(st[1:], np.inf)
    stop = np.minimum(np.minimum(first_after(stops, st), first_after(disrupt, st, inclusive=True)), end)
    run = searchsorted(restarts, st, "right")  # which (re)start each step belongs to
    return np.minimum(nxt, stop), run, nxt <= stop


def _done_again_from(sn: Ints) -> Ints:
    """For each step (in time order), the lowest step number logged after it, or the largest int64: a step at or
    past it was done again, its work lost. Any later step counts: a later run's (even one restoring an older
    checkpoint than the run before it, the latest unreadable), or its own run's going back to a checkpoint (an
    elastic job resuming on fewer slices, with no restart logged)."""
    import numpy as np

    after: Ints = np.append(np.minimum.accumulate(sn[::-1])[::-1][1:], np.iinfo(np.int64).max)
    return after


def _covered(intervals: list[tuple[Times, Times]]) -> tuple[Times, Times, Times]:
    """The union of intervals as disjoint sorted [a, b) with the covered length before each a."""
    import numpy as np

    if not intervals:
        empty = np.zeros(0)
        return empty, empty, empty
    s = np.concatenate([x for x, _ in intervals])
    e = np.concatenate([y for _, y in intervals])
    keep = e > s
    s, e = s[keep], e[keep]
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e) if len(e) else e
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    group = np.cumsum(new) - 1
    a = s[new]
    b = np.zeros(len(a))
    np.maximum.at(b, group, e)
    before = np.concatenate([[0.0], np.cumsum(b - a)[:-1]])
    return a, b, before


def _covered_upto(cov: tuple[Times, Times, Times], x: Times) -> Times:
    import numpy as np

    a, b, before = cov
    if not len(a):
        return np.zeros(len(x))
    k = searchsorted(a, x, "right") - 1
    kk = np.maximum(k, 0)
    inside = np.clip(x - a[kk], 0, b[kk] - a[kk])
    return np.where(k >= 0, before[kk] + inside, 0.0)


def _free_until(cov: tuple[Times, Times, Times], s0: float, amount: float) -> float:
    """The first time e at which [s0, e] holds `amount` seconds not covered by `cov`."""
    import numpy as np

    a, b, _ = cov
    t, left = s0, amount
    first = int(np.searchsorted(b, s0, side="right"))  # the intervals ending by s0 are behind it
    for chunk in range(first, len(a), _CHUNK):  # the answer is mostly a few intervals on: convert a few at a time
        for lo, hi in zip(a[chunk : chunk + _CHUNK].tolist(), b[chunk : chunk + _CHUNK].tolist(), strict=True):
            gap = max(0.0, lo - t)
            if gap >= left:
                return t + left
            left -= gap
            t = max(t, hi)
    return t + left


_CHUNK = 64


def startup(steps: Steps, netted: list[tuple[Times, Times]]) -> list[tuple[float, float]]:
    """The first step's excess over the run's other complete productive steps, all net of `netted`; placed
    on the first step's time that `netted` leaves free."""
    placed = compiled_startup((steps.st, steps.end, steps.run, steps.complete, steps.productive), netted)
    if placed is not None:
        return placed
    cov = _covered(netted)
    net = (steps.end - steps.st) - (_covered_upto(cov, steps.end) - _covered_upto(cov, steps.st))
    out = []
    for lo, hi in _runs(steps.run):
        if hi - lo < 2 or not steps.complete[lo]:
            continue
        rest = slice(lo + 1, hi)
        use = steps.complete[rest] & steps.productive[rest]
        if not use.any():
            continue
        excess = float(net[lo] - net[rest][use].mean())
        if excess > 0:
            s0 = float(steps.st[lo])
            out.append((s0, _free_until(cov, s0, excess)))
    return out


def _runs(run: Ints) -> list[tuple[int, int]]:
    """The [lo, hi) row ranges of equal values in `run` (non-decreasing: steps are in time order)."""
    import numpy as np

    cuts = np.flatnonzero(run[1:] != run[:-1]) + 1
    edges = [0, *cuts.tolist(), len(run)]
    return [(edges[i], edges[i + 1]) for i in range(len(edges) - 1) if edges[i + 1] > edges[i]]
