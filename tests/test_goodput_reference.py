"""A plain per-event implementation of the accounting in tpufleet/goodput/timeline.py, and the random logs on
which the two must agree to the nanosecond.

The reference walks the events one at a time with plain Python state (no numpy, no searchsorted): an independent
statement of the same rules, including the ml-goodput-measurement disruption rule and the six importer defects'
fixes (a restart after steps is a disruption at the last step start, or at start + median when the step is not
redone; only complete steps measure start-up; start-up is net of higher labels; each start takes the first end
after it in log order; entries outside the job are dropped).
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpufleet.goodput.events import CODE, EVENT_NAMES, Job
from tpufleet.goodput.jobaccount import BUCKETS
from tpufleet.goodput.timeline import NETTED, PAIRS, PRIORITY, account

Record = tuple[float, int, int, int, str]
_START = {s: b for b, (s, _e) in PAIRS.items()}
_END = {e: b for b, (_s, e) in PAIRS.items()}
_DISRUPT = {"failure", "preemption", "eviction"}
_RESUME = {"job_start", "tpu_init_start", "training_prep_start", "compile_start", "restore_start", "step_start"}
_RESUME |= {"job_end"}


def _merge(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(x for x in spans if x[1] > x[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(a, b) for a, b in out]


def _overlap(spans: list[tuple[float, float]], lo: float, hi: float) -> float:
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in spans)


def _window(evs: list[Any]) -> tuple[float, float, list[Any]]:
    starts = [e[0] for e in evs if e[1] == "job_start"]
    early = [e[0] for e in evs if e[1] in ("job_start", "submitted", "allocation")]
    start = min(early) if starts else evs[0][0]
    ends = [e[0] for e in evs if e[1] == "job_end"]
    end = max(ends) if ends else max(e[0] for e in evs)
    return start, end, [e for e in evs if start <= e[0] <= end]


def _inferred(evs: list[Any], steps: list[list[Any]]) -> list[tuple[float, float]]:
    restarts = [e[0] for e in evs if e[1] == "job_start"]
    out = []
    for k in range(1, len(restarts)):
        r = restarts[k]
        mine = [s for s in steps if s[2] == k]
        if not mine or mine[-1][0] >= r:
            continue
        last = mine[-1]
        if any(last[0] <= e[0] <= r and e[1] in _DISRUPT | {"job_end"} for e in evs):
            continue
        after = [s for s in steps if s[0] >= r]
        if after and after[0][1] <= last[1]:
            out.append((last[0], r))
        elif len(mine) >= 2:
            median = statistics.median(b[0] - a[0] for a, b in itertools.pairwise(mine))
            out.append((min(r, last[0] + median), r))
        else:
            out.append((last[0], r))
    return out


def buckets(job: Job, records: list[Record]) -> tuple[float, dict[str, float]]:
    evs = sorted(((r[0], EVENT_NAMES[r[1]], r[2], r[3]) for r in records), key=lambda e: e[0])
    start, end, evs = _window(evs)
    steps: list[list[Any]] = []  # [time, step, run, survives, end, complete]
    run = 0
    for t, name, step, _ in evs:
        run += name == "job_start"
        if name == "step_start":
            steps.append([t, step, run, True, 0.0, False])
    inferred = _inferred(evs, steps)
    explicit = [e[0] for e in evs if e[1] in _DISRUPT]
    disrupt = sorted(explicit + [d for d, _ in inferred])
    stops = sorted([e[0] for e in evs if e[1] in ("job_start", "job_end")] + disrupt + [end])
    for i, s in enumerate(steps):
        nxt = steps[i + 1][0] if i + 1 < len(steps) else float("inf")
        bound = min([x for x in stops if x > s[0]] + [d for d in disrupt if d >= s[0]] + [end])
        s[4], s[5] = min(nxt, bound), nxt <= bound
    has_saves = any(e[1] == "checkpoint_end" for e in evs)
    for i, s in enumerate(steps):
        if job.phase != "training":
            continue
        if any(x[1] <= s[1] for x in steps[i + 1 :]):  # its step number logged again later: done again
            s[3] = False
        if has_saves and explicit:
            run_start = max((e[0] for e in evs if e[1] == "job_start" and e[0] <= s[0]), default=float("-inf"))
            cut = next((d for d in sorted(explicit) if d > s[0]), None)
            nxt_run = next((e[0] for e in evs if e[0] > s[0] and e[1] in ("job_start", "job_end")), float("inf"))
            if cut is not None and cut < nxt_run:
                saved = max((e[2] for e in evs if e[1] == "checkpoint_end" and run_start <= e[0] <= cut), default=-1)
                s[3] = s[3] and s[1] <= saved
    spans: dict[str, list[tuple[float, float]]] = {name: [] for name in PRIORITY}
    for i, (t, name, _, _) in enumerate(evs):
        if name in _START:
            b = _START[name]
            matched = next((e[0] for e in evs[i + 1 :] if e[1] == PAIRS[b][1]), float("inf"))
            stop = min([x for x in stops if x > t] + [end])
            spans[b].append((t, min(matched, stop, end)))
    for s in steps:
        spans["productive" if s[3] else "wasted_progress_from_disruption"].append((s[0], s[4]))
    if steps and not any(e[1] == "compile_start" for e in evs):
        spans["program_startup"] += _startup(steps, _merge([x for n in NETTED for x in spans[n]]))
    for d in explicit:
        back = min((e[0] for e in evs if e[0] >= d and e[1] in _RESUME), default=end)
        spans["infrastructure_recovery_from_disruption"].append((d, min(back, end)))
    for d, r in inferred:
        spans["infrastructure_recovery_from_disruption"].append((d, min(r, end)))
    return _sweep(job, evs, spans, start, end)


def _startup(steps: list[list[Any]], cover: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out = []
    for r in sorted({s[2] for s in steps}):
        mine = [s for s in steps if s[2] == r]
        net = [s[4] - s[0] - _overlap(cover, s[0], s[4]) for s in mine]
        others = [n for s, n in zip(mine[1:], net[1:], strict=True) if s[5] and s[3]]
        if len(mine) < 2 or not mine[0][5] or not others:
            continue
        excess = net[0] - sum(others) / len(others)
        if excess <= 0:
            continue
        t, left = mine[0][0], excess  # walk forward over uncovered time
        for a, b in cover:
            if b <= t:
                continue
            if max(0.0, a - t) >= left:
                break
            left -= max(0.0, a - t)
            t = max(t, b)
        out.append((mine[0][0], t + left))
    return out


def _sweep(job: Job, evs: list[Any], spans: dict[str, list[tuple[float, float]]], start: float, end: float) -> Any:
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
        if _ended(evs, lo):
            continue
        label = next((n for n in PRIORITY if any(s <= lo and hi <= e for s, e in spans[n])), "other")
        if label == "productive":
            productive += hi - lo
        else:
            totals[label] += hi - lo
    return productive, totals


def _ended(evs: list[Any], lo: float) -> bool:
    """Whether the job has ended by `lo` (its last start or end up to then, in log order, is an end), starts
    again later and has not been allocated since: it holds nothing until its next start."""
    last = None
    for k, e in enumerate(evs):
        if e[0] <= lo and e[1] in ("job_start", "job_end"):
            last = k
    if last is None or evs[last][1] != "job_end" or not any(e[1] == "job_start" for e in evs[last + 1 :]):
        return False
    last_t = evs[last][0]
    return not any(e[1] == "allocation" and last_t <= e[0] <= lo for e in evs)


@st.composite
def random_jobs(draw: Any) -> tuple[Job, list[Record]]:
    """Random but plausible event sequences: runs of activities and steps, disruptions (logged or not), restarts,
    back-to-back pairs, steps at the last instant, stray entries outside the job."""
    t, step, recs = 100.0, 1, []
    phase = draw(st.sampled_from(["training", "serving"]))
    allocation = draw(st.booleans())
    if allocation:
        recs.append((100.0, CODE["allocation"], -1, draw(st.sampled_from([2, 4])), ""))
    if draw(st.booleans()):
        recs.append((draw(st.sampled_from([5.0, 99.0])), CODE["checkpoint_start"], 0, -1, ""))  # stray, 1970
    for _ in range(draw(st.integers(1, 3))):
        recs.append((t, CODE["job_start"], -1, -1, ""))
        for _ in range(draw(st.integers(0, 12))):
            kind = draw(st.sampled_from(["step", "step", "step", "ckpt", "data", "init", "compile", "custom", "alloc"]))
            dt_ = draw(st.sampled_from([0.5, 1.0, 2.0, 3.0]))
            if kind == "step":
                recs.append((t, CODE["step_start"], step, -1, ""))
                step += 1
            elif kind == "alloc" and allocation:
                recs.append((t, CODE["allocation"], -1, draw(st.sampled_from([2, 4])), ""))
            elif kind in ("ckpt", "data", "init", "compile", "custom"):
                s, e = {
                    "ckpt": ("checkpoint_start", "checkpoint_end"),
                    "data": ("data_loading_start", "data_loading_end"),
                    "init": ("tpu_init_start", "tpu_init_end"),
                    "compile": ("compile_start", "compile_end"),
                    "custom": ("custom_badput_start", "custom_badput_end"),
                }[kind]
                recs.append((t, CODE[s], step - 1, -1, ""))
                if draw(st.booleans()):
                    length = draw(st.sampled_from([dt_ / 2, dt_]))  # dt_: the next one may start at its end
                    recs.append((t + length, CODE[e], step - 1, -1, ""))
            t += dt_
        ending = draw(st.sampled_from(["failure", "preemption", "silent", "silent"]))
        if ending != "silent":
            recs.append((t, CODE[ending], -1, -1, ""))
        if draw(st.integers(0, 3)) == 0:  # the run ends: nothing held until the next start (or an allocation)
            recs.append((t, CODE["job_end"], -1, -1, ""))
        t += draw(st.sampled_from([0.0, 1.0, 5.0]))
        step = max(1, step - draw(st.integers(0, 3)))
    if draw(st.booleans()):
        recs.append((t + 1, CODE["job_end"], -1, -1, ""))
    elif draw(st.booleans()):
        recs.append((t, CODE["step_start"], step, -1, ""))  # a step at the last logged instant
    return Job("j", chips=4, phase=phase), recs


@settings(max_examples=max(300, settings().max_examples), derandomize=True)
@given(random_jobs())
def test_vectorized_accounting_matches_the_per_event_reference(case):
    job, recs = case
    a = account(job, recs)
    productive, totals = buckets(job, recs)
    assert a.productive_s == pytest.approx(productive, abs=1e-9)
    for b in BUCKETS:
        assert a.buckets[b] == pytest.approx(totals[b], abs=1e-9), b
    assert a.productive_s + sum(a.buckets.values()) == pytest.approx(a.all_allocated_s, abs=1e-9)
