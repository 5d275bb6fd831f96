"""Multislice jobs in the pure core: the job's state derived from its slices, the job-level verdict of a fault
(on hand-built states), where a job's slices go, and a property over random allocate/release/fault sequences.

The CLI side (exit codes, refusals leaving the state untouched, the acceptance case) is in test_jobs_cli.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from tpufleet.allocation import Allocation
from tpufleet.errors import BadInput, Refused
from tpufleet.fleetparts import job_slice_names
from tpufleet.fleetstate import FleetState, Job, Slice, SliceState
from tpufleet.ids import parse_target
from tpufleet.jobs import JobState, fault_verdicts, job_status, jobs_hit, place_slices, status_of
from tpufleet.model import default_fleet
from tpufleet.shapes import parse_shape
from tpufleet.state import codec
from tpufleet.state.schema import SCHEMA_VERSION, validate

S448 = parse_shape("4x4x8")
C, D, E, A = SliceState.CONNECTED, SliceState.DEGRADED, SliceState.EVICTED, SliceState.ALLOCATED


def _job(states: list[SliceState], elastic_min: int | None = None) -> tuple[Job, list[Slice]]:
    job = Job("j", S448, tuple(job_slice_names("j", len(states))), elastic_min)
    return job, [
        Slice(n, S448, f"pod{i % 2}", (), {}, st_, job="j")
        for i, (n, st_) in enumerate(zip(job.slices, states, strict=True))
    ]


@pytest.mark.parametrize(
    ("states", "elastic_min", "state", "active", "kept", "slowdown"),
    [
        ([C, C, C, C], None, "running", 4, 1.0, 1.0),
        ([C, D, C, C], None, "running", 4, 1.0, 1.0),  # a slice rerouted inside its pod still counts in full
        ([C, E, C, C], None, "stopped", 3, 0.0, None),  # not elastic: one evicted slice stops the whole job
        ([C, E, C, C], 3, "degraded", 3, 0.75, 1.333),
        ([C, E, E, C], 3, "stopped", 2, 0.0, None),  # below its minimum
        ([C, E, A, C], 2, "degraded", 2, 0.5, 2.0),
        ([A, A, A, A], None, "pending", 0, None, None),
        ([C, A, C, C], 1, "pending", 3, None, None),
        ([C, C], 2, "running", 2, 1.0, 1.0),
        ([E], 1, "stopped", 0, 0.0, None),
    ],
)
def test_job_state_is_derived_from_its_slices(states, elastic_min, state, active, kept, slowdown):
    job, slices = _job(states, elastic_min)
    s = status_of(job, slices)
    assert (s.state.value, len(s.active), s.throughput_kept, s.step_slowdown) == (state, active, kept, slowdown)
    assert s.evicted == tuple(sl.name for sl in slices if sl.state is E)
    assert s.pods == (("pod0", "pod1") if len(states) > 1 else ("pod0",))
    record = s.record()
    assert set(record) >= {"name", "shape", "slices", "elastic_min", "spread", "state", "active_slices", "pods"}


def _state_with_job(elastic_min: int | None) -> FleetState:
    """Two pods of 8 cubes, job j of four 4x4x8 slices (two per pod), every slice wired; slice j-1 then evicted
    by a host fault with its replacement reserved, as the fault path leaves it."""
    state = FleetState(default_fleet(2, 8))
    pods = {0: "pod0", 1: "pod1"}
    members = []
    for i, name in enumerate(job_slice_names("j", 4)):
        pod = pods[i % 2]
        base = (i % 2) * 8 + (i // 2) * 2
        cubes = (f"c{base:02d}", f"c{base + 1:02d}")
        members.append(Slice(name, S448, pod, cubes, {cubes[0]: (0, 0, 0), cubes[1]: (0, 0, 1)}, C, job="j"))
    state.add_job(Job("j", S448, tuple(m.name for m in members), elastic_min, True, "2026-01-06T10:30:00Z"), members)
    fault = state.open_fault(parse_target("host:c08/3"), False, "ECC", "2026-01-06T10:30:00Z")
    spare = Allocation("pod1", ("c12", "c09"), {"c12": (0, 0, 0), "c09": (0, 0, 1)})
    state.evict("j-1", fault.id, spare)
    return state


def _validates(state: FleetState) -> dict[str, Any]:
    doc = codec.encode(state)
    doc["schema_version"] = SCHEMA_VERSION
    return validate(json.loads(json.dumps(doc)), "state.json")


def test_a_non_elastic_job_is_stopped_whole_with_one_replacement_slice_proposed():
    state = _state_with_job(None)
    _validates(state)
    (verdict,) = fault_verdicts(state, ["j-1"])
    r = verdict.record(state, "2099-01-01T00:00:00Z")
    assert (r["job"], r["action"], r["state"], r["active_slices"], r["total_slices"]) == ("j", "stop", "stopped", 3, 4)
    assert r["throughput_kept"] == 0.0 and r["step_slowdown"] is None
    assert [x["slice"] for x in r["replacements"]] == ["j-1"]  # only the broken slice is replaced
    assert r["replacements"][0]["proposal"]["cubes"] == ["c12", "c09"]
    assert r["next"] == ["tpufleet reschedule j-1"]
    assert "stops the whole job" in r["reason"] and "3 slice(s) stay held" in r["reason"]
    # the verdict is derived: the other slices stay held and wired
    assert [state.slices[n].state for n in ("j-0", "j-2", "j-3")] == [C, C, C]


def test_an_elastic_job_continues_on_n_minus_one_slices_and_says_what_it_keeps():
    state = _state_with_job(3)
    (verdict,) = fault_verdicts(state, ["j-1", "not-a-slice"])
    r = verdict.record(state, "2099-01-01T00:00:00Z")
    assert (r["action"], r["state"], r["active_slices"], r["total_slices"], r["elastic_min"]) == (
        "continue",
        "degraded",
        3,
        4,
        3,
    )
    assert (r["throughput_kept"], r["step_slowdown"]) == (0.75, 1.333)
    assert "continues on 3 of 4 slices" in r["reason"]


def test_the_job_runs_again_when_its_slice_is_back():
    state = _state_with_job(None)
    state.move("j-1", state.slices["j-1"].proposal or Allocation("", (), {}))
    assert job_status(state, "j").state is JobState.PENDING  # moved, not wired yet
    state.connect("j-1")
    assert job_status(state, "j").state is JobState.RUNNING and state.slices["j-1"].job == "j"
    _validates(state)


def test_verdicts_name_only_the_jobs_hit():
    state = _state_with_job(None)
    state.add_slice(Slice("solo", S448, "pod0", ("c06", "c07"), {"c06": (0, 0, 0), "c07": (0, 0, 1)}, E))
    assert fault_verdicts(state, ["solo"]) == []
    radius = {"slices": [{"slice": "solo", "action": "reschedule"}, {"slice": "j-1", "action": "reschedule"}]}
    assert [r["job"] for r in jobs_hit(state, radius, "2099-01-01T00:00:00Z")] == ["j"]
    assert (
        jobs_hit(state, {"slices": [{"slice": "j-0", "action": "none"}]}, "2099-01-01T00:00:00Z") == []
    )  # a bystander


def test_a_slice_of_a_job_goes_only_with_its_job():
    state = _state_with_job(None)
    with pytest.raises(Refused, match="release the job"):
        state.release("j-0")
    gone = state.release_job("j")
    assert [s.name for s in gone] == ["j-0", "j-1", "j-2", "j-3"] and state.slices == {} and state.jobs == {}


@pytest.mark.parametrize(
    ("count", "spread", "pods", "per_pod", "note"),
    [
        (4, True, (), {"pod0": 2, "pod1": 2}, "4 slices, 2 pod(s): not one pod each"),
        (2, True, (), {"pod0": 1, "pod1": 1}, "one pod each (pod0, pod1)"),
        (4, False, (), {"pod0": 4}, None),  # packs the first pod with room
        (5, False, (), {"pod0": 4, "pod1": 1}, None),
        (3, False, ("pod1", "pod0"), {"pod1": 3}, None),
        (2, True, ("pod1",), {"pod1": 2}, "2 slices, 1 pod(s)"),
    ],
)
def test_placement_packs_or_spreads(count, spread, pods, per_pod, note):
    state = FleetState(default_fleet(2, 8))
    p = place_slices(S448, count, state.fleet, state.machine_usage(), state.health(), pods, spread)
    assert p.per_pod == per_pod
    assert (p.note or "").startswith(note or "") and (p.note is None) == (note is None)
    cubes = [c for a in p.allocations for c in a.cubes]
    assert len(cubes) == len(set(cubes)) == 2 * count


def test_spread_says_which_pods_had_no_room_and_a_job_too_big_is_refused_whole():
    state = FleetState(default_fleet(3, 4))
    used = {c: set(range(16)) for c in state.fleet.pod_by_name["pod1"].cubes}
    p = place_slices(S448, 2, state.fleet, used, state.health(), (), True)
    assert p.per_pod == {"pod0": 1, "pod2": 1} and p.note == "one pod each (pod0, pod2)"
    p = place_slices(S448, 3, state.fleet, used, state.health(), (), True)
    assert p.per_pod == {"pod0": 2, "pod2": 1} and p.note == "pods pod1 had no room: 3 slices share 2 pod(s)"
    with pytest.raises(Refused, match="4 placed, then pod0: not enough"):
        place_slices(S448, 5, state.fleet, used, state.health(), (), False)


# ---- property: random allocate / release / fault / clear / reschedule / wire sequences --------------------------

SHAPES = ("4x4x4", "4x4x8", "2x2x2")
FAULT = st.tuples(st.just("fault"), st.integers(0, 31), st.integers(0, 15))  # a host, mostly of a held cube
OPS = st.one_of(
    FAULT,
    FAULT,
    st.tuples(
        st.just("job"),
        st.sampled_from(SHAPES),
        st.integers(1, 4),
        st.booleans(),
        st.none() | st.integers(1, 3),
        st.sampled_from([(), ("pod0",), ("pod1", "pod0")]),
        st.booleans(),  # wire it at once
    ),
    st.tuples(st.just("slice"), st.sampled_from(SHAPES)),
    st.tuples(st.just("release"), st.integers(0, 9)),
    st.tuples(st.just("clear"), st.integers(0, 9)),
    st.tuples(st.just("reschedule"), st.integers(0, 9)),
    st.tuples(st.just("wire"), st.integers(0, 9)),
)


def _apply(state: FleetState, op: tuple[Any, ...], step: int) -> None:
    """One operation as its use case runs it (raising Refused or BadInput when it refuses)."""
    from tpufleet.ops import faults, jobs, slices, xconnect

    now = f"2026-01-01T00:00:{step:02d}Z"
    kind = op[0]
    if kind == "job":
        _, shape, count, spread, elastic, pods, wired = op
        req = jobs.JobRequest(f"j{step}", parse_shape(shape), count, pods, spread, elastic and min(elastic, count))
        jobs.allocate_job(state, req, now)
        if wired:
            jobs.plan_and_apply_job(state, req.name, now)
    elif kind == "slice":
        slices.allocate(state, f"s{step}", parse_shape(op[1]), now)
    elif kind in ("release", "wire"):
        names = sorted(state.jobs) + sorted(n for n, s in state.slices.items() if s.job is None)
        if names:
            name = names[op[1] % len(names)]
            is_job = name in state.jobs
            if kind == "release":
                (jobs.release_job if is_job else slices.release)(state, name)
            else:
                (jobs.plan_and_apply_job if is_job else xconnect.plan_and_apply)(state, name, now)
    elif kind == "fault":
        held = sorted({c for sl in state.slices.values() for c in sl.cubes})
        cube = held[op[1] % len(held)] if held and op[1] < 24 else f"c{op[1] % 16:02d}"
        faults.inject(state, [faults.FaultRequest(parse_target(f"host:{cube}/{op[2]}"))], now)
    elif kind == "clear":
        open_ = state.open_faults()
        if open_:
            faults.clear(state, open_[op[1] % len(open_)].id, now)
    else:
        evicted = sorted(n for n, s in state.slices.items() if s.state is E)
        if evicted:
            faults.reschedule(state, evicted[op[1] % len(evicted)])


def _expected(job: Job, states: list[SliceState]) -> str:
    """The job state the README defines, written from the slice states alone."""
    active = sum(s in (C, D) for s in states)
    if E in states:
        return "degraded" if job.elastic_min is not None and active >= job.elastic_min else "stopped"
    return "running" if active == len(states) else "pending"


def _check(state: FleetState) -> None:
    doc = _validates(state)  # schema and cross-references: slices exist, name their job, no cube held twice
    assert codec.decode(doc).jobs == state.jobs
    for name, job in state.jobs.items():
        members = state.job_slices(name)
        assert all(s.job == name and s.shape == job.shape for s in members)
        status = job_status(state, name)
        assert status.state.value == _expected(job, [s.state for s in members]), (name, [s.state for s in members])
        assert len(status.active) == sum(s.state.wired for s in members)
        if status.state is JobState.DEGRADED:
            assert status.throughput_kept == round(len(status.active) / len(members), 3)
    assert {s.job for s in state.slices.values()} - {None} == set(state.jobs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPS, max_size=16))
# Always tried: an elastic job degraded then rescheduled, and a job stopped whole then released with a fault open.
@example(ops=[("job", "4x4x8", 4, True, 3, (), True), ("fault", 0, 3), ("reschedule", 0), ("fault", 2, 1)])
@example(ops=[("job", "4x4x4", 3, False, None, (), True), ("fault", 1, 0), ("clear", 0), ("release", 0)])
def test_random_sequences_keep_the_state_valid_and_jobs_consistent(ops):
    state = FleetState(default_fleet(2, 8))
    for step, op in enumerate(ops):
        before = codec.encode(state)
        note(f"{step}: {op}")
        try:
            _apply(state, op, step)
        except (Refused, BadInput):
            state = codec.decode(json.loads(json.dumps({**before, "schema_version": SCHEMA_VERSION})))
        _check(state)


def test_words_for_explain_and_the_map_legend():
    from tpufleet.jobs import explain_job, job_line, job_tag

    state = _state_with_job(None)
    d = explain_job(state, "j", "2099-01-01T00:00:00Z")
    assert (d["kind"], d["state"], d["next"]) == ("job", "stopped", ["tpufleet reschedule j-1"])
    assert d["why"][0] == (
        "job j: 3 of 4 slices active (not elastic), stopped: one evicted slice stops the whole job; "
        "its other slices stay held"
    )
    assert d["why"][2].endswith("by fault f1 on host:c08/3; reschedule moves it to pod1 c12,c09 (reserved)")
    assert job_tag(state, state.slices["j-0"]) == "job j (stopped)"
    assert (job_line(state, state.slices["j-3"]) or "").startswith("one of the slices of job j: 3 of 4")
    elastic = _state_with_job(3)
    assert (
        "keeps 0.75 of its throughput, a step takes 1.333x as long"
        in explain_job(elastic, "j", "2099-01-01T00:00:00Z")["why"][0]
    )
    solo = Slice("solo", S448, "pod0", (), {}, C)
    assert job_line(state, solo) is None and job_tag(state, solo) == ""
