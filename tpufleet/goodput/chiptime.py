"""Chip-seconds over many windows (periods) at once: the capacity's integrals and the jobs' running sums (pure).

The report's period and window rows need, for every window, the capacity's chip-seconds and the jobs' chip-seconds
all-allocated, productive, ideal and by badput bucket. This module computes them for all windows in a few numpy
calls, and bit for bit as adding job after job in each window gives them; `metrics` turns them into the report's
rows. It is apart from `metrics` because it is about how the sums are computed (arrays, batches, summation order),
not what the report holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpufleet.goodput.compiledaccount import by_slices as compiled_by_slices
from tpufleet.goodput.events import CapacityRecord
from tpufleet.goodput.jobaccount import BUCKETS, LABEL, PRODUCTIVE, JobAccount

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Times = npt.NDArray[np.float64]
    Ints = npt.NDArray[np.int64]
    Intervals = tuple[Times, Times, Ints]  # a job's elementary intervals: starts, ends, label codes

Capacity = list[CapacityRecord]  # (from time, accelerator, chips, where it is said) steps

# the running sums of a period or window over the jobs: chip-seconds all-allocated, productive, ideal and
# productive of the jobs with program data (PG's), then of each badput bucket
TERMS = ("all_allocated", "productive", "ideal", "productive_with_pg", *BUCKETS)
_PAIRWISE_FROM = 8  # numpy's sum adds this many numbers or more pairwise (fewer one by one)
# The period (and window) rows are computed for all periods at once, and bit for bit as adding job after job in
# each period gives them: the report's figures do not depend on how they are computed.
_DENSE = 1024  # intervals a period from which a job is taken period by period, as slices (faster then; measured)
_BATCH = 1 << 18  # intervals accounted at once in the periods: bounds the memory of their pieces


class CapacitySteps:
    """The capacity step functions, sorted once per accelerator, for integrals over many windows (periods)."""

    def __init__(self, capacity: Capacity, excluded: list[tuple[float, float]] | None = None) -> None:
        self.excluded = excluded or []  # spans that count nowhere: not in capacity either
        self.steps: dict[str, list[tuple[float, int]]] = {}
        for t, acc, chips, _where in capacity:
            self.steps.setdefault(acc, []).append((t, chips))
        for steps in self.steps.values():
            steps.sort()
        self.arrays = {acc: _step_arrays(steps) for acc, steps in self.steps.items()}  # (times, chips)

    def integral(self, accelerator: str | None, t0: float, t1: float) -> float:
        """Chip-seconds over [t0, t1] outside the excluded spans."""
        import numpy as np

        return float(self.integrals(accelerator, np.array([t0], dtype=float), np.array([t1], dtype=float))[0])

    def integrals(self, accelerator: str | None, t0: Times, t1: Times) -> Times:
        """Chip-seconds over each window [t0[k], t1[k]] outside the excluded spans, at least 0."""
        import numpy as np

        total = self._integrals(accelerator, t0, t1)
        for a, b in self.excluded:
            cut = np.flatnonzero((t0 < b) & (t1 > a))
            total[cut] -= self._integrals(accelerator, np.maximum(t0[cut], a), np.minimum(t1[cut], b))
        return np.where(total > 0.0, total, 0.0)

    def _integrals(self, accelerator: str | None, t0: Times, t1: Times) -> Times:
        """Chip-seconds over each window: each step holds until the next one (the last until the window's end).
        Each window's steps are added one by one, accelerator by accelerator, as a running sum would."""
        import numpy as np

        windows, amounts = [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
        for acc in sorted(self.steps) if accelerator is None else [accelerator]:
            times, chips = self.arrays.get(acc) or _step_arrays([])
            first = np.maximum(np.searchsorted(times, t0, side="right") - 1, 0)  # earlier steps end before t0
            window, step = _ranges(first, np.searchsorted(times, t1, side="left"))  # steps from t1 on add nothing
            lo = np.maximum(times[step], t0[window])
            hi = np.minimum(np.append(times[1:], np.inf)[step], t1[window])
            held = hi > lo
            windows.append(window[held])
            amounts.append(chips[step[held]] * (hi - lo)[held])
        return _added(np.concatenate(windows), np.concatenate(amounts), len(t0))


def _step_arrays(steps: list[tuple[float, int]]) -> tuple[Times, Times]:
    """The times and chips of capacity steps as arrays (chips as the floats they multiply as)."""
    import numpy as np

    return np.array([t for t, _ in steps], dtype=float), np.array([float(c) for _, c in steps])


def _added(cells: Ints, values: Times, count: int) -> Times:
    """values[i] added into cells[i] of `count` zeros, one by one in array order: each cell as a running sum."""
    import numpy as np

    return np.bincount(cells, weights=values, minlength=count).astype(np.float64, copy=False)


def _ranges(first: Ints, stop: Ints) -> tuple[Ints, Ints]:
    """The pairs (i, j) for each j in first[i] .. stop[i] - 1, in order of i, then j: as two arrays."""
    import numpy as np

    counts = np.maximum(stop - first, 0)
    owner = np.repeat(np.arange(len(first)), counts)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, first[owner] + offset


def capacity_chip_s(
    capacity: Capacity, accelerator: str | None, t0: float, t1: float, excluded: list[tuple[float, float]] | None = None
) -> float:
    """Integral of the capacity step function(s) over [t0, t1], the excluded spans left out."""
    return CapacitySteps(capacity, excluded).integral(accelerator, t0, t1)


def _intervals(a: JobAccount) -> Intervals | None:
    if a.starts is None or a.ends is None or a.labels is None or not len(a.ends):
        return None
    return a.starts, a.ends, a.labels


class _Part:
    """Jobs accounted together in the windows (periods), in job order: a job with _DENSE intervals a window or
    more window by window (a few calls of numpy a window), the others all at once (a few calls of numpy a part).
    Each (job, window) gives a row: its seconds all-allocated and by label."""

    def __init__(self, lo: Times, hi: Times) -> None:
        self.lo, self.hi = lo, hi
        self.jobs: list[JobAccount] = []
        self.dense: list[tuple[Ints, Ints, Times, Times]] = []  # (job, window, seconds, by label) rows
        self.sparse: list[tuple[int, Intervals, int, int]] = []  # (job, intervals, first window, window after)
        self.given: list[tuple[Ints, Ints, Times]] = []  # (job, window, TERMS) rows made apart
        self.size = 0  # intervals

    def add(self, a: JobAccount, own: Intervals, first: int, stop: int) -> None:
        """The job `a` (its intervals `own`) in the windows first .. stop - 1, those it reaches into."""
        import numpy as np

        job = len(self.jobs)
        self.jobs.append(a)
        self.size += len(own[1])
        if len(own[1]) >= _DENSE * (stop - first):
            windows = np.arange(first, stop)
            self.dense.append(
                (np.full(len(windows), job), windows, *_by_slices(own, self.lo[windows], self.hi[windows]))
            )
        else:
            self.sparse.append((job, own, first, stop))

    def add_given(self, a: JobAccount, windows: Ints, terms: Times) -> None:
        """The job `a` by its TERMS in `windows`, made apart (`job_window_terms`)."""
        import numpy as np

        self.given.append((np.full(len(windows), len(self.jobs)), windows, terms))
        self.jobs.append(a)
        self.size += len(windows)

    def rows(self) -> list[tuple[Ints, Ints, Times]]:
        """The part's (job, window, TERMS) rows, each job's in window order."""
        import numpy as np

        rows = [*self.dense, _by_pieces(self.sparse, self.lo, self.hi)] if self.sparse else self.dense
        if not rows:
            return self.given
        job, window, seconds, by_label = (np.concatenate(column) for column in zip(*rows, strict=True))
        return [(job, window, _scaled(self.jobs, job, seconds, by_label)), *self.given]

    def added_to(self, sums: Times) -> Times:
        """`sums` (TERMS by window) with the part's jobs added one after the other, in job order."""
        import numpy as np

        rows = self.rows()
        if not rows:
            return sums
        job, window, terms = (np.concatenate(column) for column in zip(*rows, strict=True))
        order = np.argsort(job, kind="stable")  # job order (each job's rows are in window order already)
        return _with_terms(sums, window[order], terms[order])


def _by_slices(own: Intervals, lo: Times, hi: Times) -> tuple[Times, Times]:
    """A job's seconds in each window [lo[k], hi[k]], all and by label, each window's intervals a slice."""
    import numpy as np

    compiled = compiled_by_slices(own, lo, hi, len(BUCKETS) + 1)
    if compiled is not None:
        return compiled
    starts, ends, labels = own
    seconds, by_label = np.zeros(len(lo)), np.zeros((len(lo), len(BUCKETS) + 1))
    for k in range(len(lo)):
        first, last = np.searchsorted(ends, lo[k], side="right"), np.searchsorted(starts, hi[k], side="left")
        inside = np.clip(np.minimum(ends[first:last], hi[k]) - np.maximum(starts[first:last], lo[k]), 0, None)
        seconds[k] = inside.sum()
        by_label[k] = np.bincount(labels[first:last], weights=inside, minlength=len(BUCKETS) + 1)
    return seconds, by_label


def _by_pieces(sparse: list[tuple[int, Intervals, int, int]], lo: Times, hi: Times) -> tuple[Ints, Ints, Times, Times]:
    """The jobs' (job, window, seconds, seconds by label) rows, in job, then window order, all at once."""
    import numpy as np

    owner, window, labels, inside = _pieces(sparse, lo, hi)
    starting = np.diff(owner * len(lo) + window, prepend=-1) != 0  # the first piece of each (job, window)
    row, first = np.cumsum(starting) - 1, np.flatnonzero(starting)
    width = len(BUCKETS) + 1
    by_label = _added(row * width + labels, inside, len(first) * width).reshape(-1, width)
    job = np.array([job for job, _, _, _ in sparse], dtype=np.int64)[owner[first]]
    return job, window[first], _sums(inside, first), by_label


def _pieces(sparse: list[tuple[int, Intervals, int, int]], lo: Times, hi: Times) -> tuple[Ints, Ints, Ints, Times]:
    """The pieces of the jobs' intervals inside the windows each reaches into, ordered by job, then window, then
    time: (job (an index into `sparse`), window, label, seconds)."""
    import numpy as np

    starts, ends, labels = (np.concatenate(column) for column in zip(*(own for _, own, _, _ in sparse), strict=True))
    owner = np.repeat(np.arange(len(sparse)), [len(own[1]) for _, own, _, _ in sparse])
    reach = np.array([(first, stop) for _, _, first, stop in sparse], dtype=np.int64)
    first = np.maximum(np.searchsorted(hi, starts, side="right"), reach[owner, 0])
    stop = np.minimum(np.searchsorted(lo, ends, side="left"), reach[owner, 1])
    interval, window = _ranges(first, stop)  # in job, interval, window order
    job = owner[interval]
    key = job * len(lo) + window
    if len(key) > 1 and bool((key[1:] < key[:-1]).any()):  # only if a job's intervals overlapped: never made so
        order = np.argsort(key, kind="stable")
        job, window, interval = job[order], window[order], interval[order]
    inside = np.minimum(ends[interval], hi[window]) - np.maximum(starts[interval], lo[window])
    return job, window, labels[interval], np.clip(inside, 0, None)


def _sums(values: Times, first: Ints) -> Times:
    """The sum of each run values[first[i]:first[i + 1]] (the last to the end), bit for bit numpy's sum of the
    run: numpy adds fewer than _PAIRWISE_FROM numbers one by one, as bincount does, and more pairwise."""
    import numpy as np

    lengths = np.diff(np.append(first, len(values)))
    out = _added(np.repeat(np.arange(len(first)), lengths), values, len(first))
    for i in np.flatnonzero(lengths >= _PAIRWISE_FROM).tolist():
        out[i] = values[first[i] : first[i] + lengths[i]].sum()
    return out


def _scaled(jobs: list[JobAccount], of: Ints, seconds: Times, by_label: Times) -> Times:
    """The TERMS of (job, window) rows (`of`: the job of each) from their seconds, all and by label."""
    import numpy as np

    has_pg = [a.ideal_s is not None and a.productive_s > 0 for a in jobs]
    ideal = np.array([float(a.ideal_s or 0.0) if pg else 0.0 for a, pg in zip(jobs, has_pg, strict=True)])[of]
    productive_s = np.array([float(a.productive_s) if pg else 1.0 for a, pg in zip(jobs, has_pg, strict=True)])[of]
    chips, pg = np.array([float(a.job.chips) for a in jobs])[of], np.array(has_pg, dtype=bool)[of]
    productive = by_label[:, PRODUCTIVE] * chips
    terms = np.empty((len(of), len(TERMS)))
    terms[:, 0] = seconds * chips
    terms[:, 1] = productive
    terms[:, 2] = np.where(pg, productive * ideal / productive_s, 0.0)  # as (seconds x chips) x ideal / productive
    terms[:, 3] = np.where(pg, productive, 0.0)
    terms[:, 4:] = by_label[:, [LABEL[name] for name in BUCKETS]] * chips[:, None]
    return terms


def _with_terms(sums: Times, windows: Ints, terms: Times) -> Times:
    """The sums with terms[i] added to the sums of windows[i], one after the other: bincount adds in array order,
    each window's sums so far first (0 + x is x)."""
    import numpy as np

    count, width = sums.shape
    cells = (np.append(np.arange(count), windows)[:, None] * width + np.arange(width)).ravel()
    return _added(cells, np.concatenate([sums, terms]).ravel(), count * width).reshape(count, width)


def window_sums(accounts: list[JobAccount], lo: Times, hi: Times, grid: Times | None = None) -> Times:
    """TERMS of each window [lo[k], hi[k]] (lo and hi ascending), each a running sum over the jobs that reach
    into it (their end after its start, their start before its end), in job order, as adding job after job gives
    it; about _BATCH intervals at a time (the memory stays bounded however long the log). A job's `window_terms`,
    made apart, stand for its intervals: `grid` gives each window's period start (uncut by the report's span)."""
    import bisect

    import numpy as np

    lo_s, hi_s = lo.tolist(), hi.tolist()
    sums, part = np.zeros((len(lo), len(TERMS))), _Part(lo, hi)
    for a in accounts:
        if a.window_terms is not None:
            part.add_given(a, *_on_grid(a.window_terms, grid))
            continue
        own = _intervals(a)
        first, stop = bisect.bisect_right(hi_s, a.start), bisect.bisect_left(lo_s, a.end)
        if own is not None and first < stop:
            part.add(a, own, first, stop)
        if part.size >= _BATCH:
            sums, part = part.added_to(sums), _Part(lo, hi)
    return part.added_to(sums)


def job_window_terms(a: JobAccount, lo: Times, hi: Times) -> tuple[Times, Times]:
    """What `window_sums` adds of the job `a` alone over the windows [lo[k], hi[k]] (a period grid covering its
    span, lo and hi ascending): the start of each window it adds to, and its TERMS there. Its intervals lie in the
    report's span, so a window cut at the span's ends gives it the same pieces as the whole period."""
    import bisect

    import numpy as np

    own, part = _intervals(a), _Part(lo, hi)
    first, stop = bisect.bisect_right(hi.tolist(), a.start), bisect.bisect_left(lo.tolist(), a.end)
    if own is None or first >= stop:
        return np.zeros(0), np.zeros((0, len(TERMS)))
    part.add(a, own, first, stop)
    _job, window, terms = part.rows()[0]
    return lo[window], terms


def _on_grid(given: tuple[Times, Times], grid: Times | None) -> tuple[Ints, Times]:
    """A job's `window_terms` as (window, TERMS) rows of the windows whose period starts are `grid`; a row of a
    period the grid lacks adds nothing (a job of no length at the span's very end), and is left out."""
    import numpy as np

    if grid is None:
        raise ValueError("window_terms are made for --period rows only")
    starts, terms = given
    at = np.minimum(np.searchsorted(grid, starts), max(len(grid) - 1, 0))
    keep = grid[at] == starts if len(grid) else np.zeros(len(starts), dtype=bool)
    return at[keep], terms[keep]


def rounded(values: Times) -> list[list[float]]:
    """round(x, 3) of each value, as lists; Python rounds only the fractional ones (a whole number is its own
    rounding, and most of a period's figures are 0)."""
    import numpy as np

    out: list[list[float]] = values.tolist()
    for i, j in np.argwhere(values != np.floor(values)).tolist():
        out[i][j] = round(out[i][j], 3)
    return out
