"""A straightforward per-event implementation of the same accounting as tpufleet/goodput/timeline.py.

It walks the events one at a time with plain Python state. It exists as an independent check of the vectorized
accounting (tests compare the two on random logs) and as the baseline of the goodput benchmark.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from tpufleet.goodput.events import EVENT_NAMES, Job
from tpufleet.goodput.timeline import BUCKETS, PAIRS, PRIORITY

Record = tuple[float, int, int, int, str]  # (time, event code, step, chips, label), as the readers produce them
Span = tuple[float, float]

_START = {s: b for b, (s, _e) in PAIRS.items()}
_END = {e: b for b, (_s, e) in PAIRS.items()}
_STOP = {"job_start", "job_end", "failure", "preemption", "eviction"}
_RESUME = {
    "job_start",
    "tpu_init_start",
    "training_prep_start",
    "compile_start",
    "restore_start",
    "step_start",
    "job_end",
}


def buckets(job: Job, records: Iterable[Record]) -> tuple[float, dict[str, float]]:
    evs = sorted(((r[0], EVENT_NAMES[r[1]], r[2], r[3]) for r in records), key=lambda e: e[0])
    end = max((e[0] for e in evs if e[1] == "job_end"), default=evs[-1][0])
    # pass 1: steps, their runs and survival
    steps: list[list[Any]] = []  # [time, step, run, survives]
    run = 0
    for t, name, step, _ in evs:
        if name == "job_start":
            run += 1
        elif name == "step_start":
            steps.append([t, step, run, True])
    has_saves = any(e[1] == "checkpoint_end" for e in evs)
    for i, (t, n, r, _) in enumerate(steps):
        if job.phase != "training":
            continue
        later = [s for s in steps if s[2] > r]
        if later and n >= later[0][1]:
            steps[i][3] = False
        if has_saves:
            run_start = max((e[0] for e in evs if e[1] == "job_start" and e[0] <= t), default=float("-inf"))
            cut = next((e[0] for e in evs if e[0] > t and e[1] in ("failure", "preemption", "eviction")), None)
            nxt = next((e[0] for e in evs if e[0] > t and e[1] in ("job_start", "job_end")), float("inf"))
            if cut is not None and cut < nxt:
                saved = max((e[2] for e in evs if e[1] == "checkpoint_end" and run_start <= e[0] <= cut), default=-1)
                if n > saved:
                    steps[i][3] = False
    # pass 2: intervals per label
    spans: dict[str, list[Span]] = {name: [] for name in PRIORITY}
    open_since: dict[str, list[float]] = {}
    for t, name, _, _ in evs:
        if name in _STOP:
            for b, starts in open_since.items():
                spans[b] += [(s, t) for s in starts]
            open_since = {}
        if name in _START:
            open_since.setdefault(_START[name], []).append(t)
        elif name in _END and open_since.get(_END[name]):
            spans[_END[name]] += [(s, t) for s in open_since.pop(_END[name])]
    for b, starts in open_since.items():
        spans[b] += [(s, end) for s in starts]
    stops = [*sorted(e[0] for e in evs if e[1] in _STOP), end]
    for i, (t, _, _, ok) in enumerate(steps):
        nxt = steps[i + 1][0] if i + 1 < len(steps) else float("inf")
        stop = next((s for s in stops if s > t), end)
        spans["productive" if ok else "wasted_progress_from_disruption"].append((t, min(nxt, stop, end)))
    if not any(e[1] == "compile_start" for e in evs):
        for r in sorted({s[2] for s in steps}):
            mine = [i for i, s in enumerate(steps) if s[2] == r]
            durations, complete = [], []
            for i in mine:
                t = steps[i][0]
                nxt = steps[i + 1][0] if i + 1 < len(steps) else float("inf")
                stop = next((s for s in stops if s > t), end)
                durations.append(min(nxt, stop, end) - t)
                complete.append(nxt <= stop)
            others = [d for d, c in zip(durations[1:], complete[1:], strict=True) if c]
            if len(mine) >= 2 and complete[0] and others:
                excess = durations[0] - sum(others) / len(others)
                if excess > 0:
                    spans["program_startup"].append((steps[mine[0]][0], steps[mine[0]][0] + excess))
    for t, name, _, _ in evs:
        if name in ("failure", "preemption", "eviction"):
            back = next((e[0] for e in evs if e[0] >= t and e[1] in _RESUME), end)
            spans["infrastructure_recovery_from_disruption"].append((t, min(back, end)))
    # pass 3: sweep the instants between consecutive boundaries, checking allocation event by event
    start = evs[0][0]
    points = sorted({start, end} | {e[0] for e in evs} | {x for lst in spans.values() for s in lst for x in s})
    points = [p for p in points if start <= p <= end]
    allocs = [(e[0], e[3]) for e in evs if e[1] == "allocation"]
    first = min((e[0] for e in evs if e[1] != "submitted"), default=start)
    begin = min((e[0] for e in evs if e[1] == "job_start"), default=first)
    productive, totals = 0.0, dict.fromkeys(BUCKETS, 0.0)
    for lo, hi in itertools.pairwise(points):
        if allocs:
            held = 0
            for at, c in allocs:
                if at <= lo:
                    held = c
            if held < job.chips:
                continue
        elif lo < begin:
            continue
        label = "other"
        for name in PRIORITY:
            if any(s <= lo and hi <= e for s, e in spans[name]):
                label = name
                break
        if label == "productive":
            productive += hi - lo
        else:
            totals[label] += hi - lo
    return productive, totals
