"""Multislice jobs in simulate-fleet: gang placement over pods, a host fault stopping the whole job or (elastic)
leaving it on fewer slices until one is back, the DCN in the ideal step, and the workload's multislice mix."""

import itertools
from dataclasses import replace
from typing import Any

import pytest

from tpufleet.collectives.profile import default_profile
from tpufleet.errors import BadStateFile
from tpufleet.ids import HostId, LinkId
from tpufleet.shapes import parse_shape
from tpufleet.simulation import JobSpec, Options, Simulator, Workload
from tpufleet.simulation.events import FaultStrike
from tpufleet.simulation.reroute import StepModel
from tpufleet.state.siminputs import default_rates, load_workload

HOUR = 3600.0
SHAPE = parse_shape("4x4x8")
NO_FAULTS: dict[str, Any] = {"host_per_day": 0.0, "link_per_day": 0.0, "ocs_per_day": 0.0, "drain_per_day": 0.0}


def _sim(*jobs: JobSpec, pods: int = 2, days: float = 2.0, fault_at: tuple[float, int, int] | None = None):
    """A run of the listed jobs on `pods` pods, no random faults; `fault_at` (hours, slice, job) fails machine 0 of
    the first cube of that slice of that job at that hour (found by a first run of the same seed)."""
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=jobs)
    rates = replace(default_rates(), **NO_FAULTS)
    options = Options(days=days, seed=1, pods=pods)
    sim = Simulator(workload, rates, options)
    if fault_at is not None:
        hours, k, j = fault_at
        probe = Simulator(workload, rates, replace(options, days=hours / 24))
        probe.run()
        cube = probe.jobs[j].held[k].cubes[0]
        sim.queue.push(FaultStrike(sim.start + hours * HOUR, "host", HostId(cube, 0)))
    records = sim.run()
    return sim, records


def _events(records, job="j", name=None):
    return [r for r in records if r.get("job") == job and r["type"] == "event" and (name is None or r["event"] == name)]


def test_a_spread_job_is_placed_whole_one_slice_per_pod():
    spec = JobSpec(SHAPE, duration_hours=10, phase="training", id="j", slices=2)
    sim, records = _sim(spec)
    (job,) = sim.jobs
    assert job.spread  # listed multislice jobs spread over pods, as the islands of Pathways
    (record,) = [r for r in records if r["type"] == "job"]
    assert record["chips"] == 256
    assert [r["chips"] for r in _events(records, name="allocation")] == [256, 0]  # placed whole, then done
    probe = Simulator(
        Workload(arrival_rate_per_hour=0.0, shapes=(), jobs=(spec,)),
        replace(default_rates(), **NO_FAULTS),
        Options(days=0.1, seed=1, pods=2),
    )
    probe.run()
    assert sorted(a.pod for a in probe.jobs[0].held) == ["pod0", "pod1"]


def test_a_host_fault_stops_a_non_elastic_job_whole():
    spec = JobSpec(SHAPE, duration_hours=40, phase="training", id="j", slices=3)
    sim, records = _sim(spec, fault_at=(5.0, 1, 0))
    assert len(_events(records, name="failure")) == 1
    allocations = [r["chips"] for r in _events(records, name="allocation")]
    assert allocations[:3] == [384, 0, 384]  # every slice freed, then all placed again
    assert sim.fault_response.slices_lost == 0


def test_an_elastic_job_runs_on_fewer_slices_and_takes_the_slice_back():
    """4 slices, minimum 3: a host fault takes one; the job runs on 3 (each step 4/3 as long) without a
    disruption, and the scheduler gives it a fourth slice back at once (the fleet has room)."""
    spec = JobSpec(SHAPE, duration_hours=40, phase="training", id="j", slices=4, elastic_min=3)
    sim, records = _sim(spec, fault_at=(5.0, 2, 0))
    assert not _events(records, name="failure") and not _events(records, name="eviction")
    allocations = [(r["time"], r["chips"]) for r in _events(records, name="allocation")]
    assert [c for _, c in allocations] == [512, 384, 512, 0]  # the fault, the slice back, the job's end
    assert allocations[1][0] == allocations[2][0] == sim.start + 5 * HOUR  # back at the same instant's schedule
    assert sim.fault_response.slices_lost == 1 and sim.scheduler.slices_regained == 1


def test_an_elastic_job_waits_on_fewer_slices_when_none_is_free():
    """One pod of 8 cubes, all held by the job's 4 slices: after the fault there is no cube for a fourth slice
    until the repair (8 hours), so the job steps 4/3 as slowly in between."""
    spec = JobSpec(SHAPE, duration_hours=40, phase="training", id="j", slices=4, elastic_min=3)
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=(spec,))
    rates = replace(default_rates(), **NO_FAULTS)
    options = Options(days=1.0, seed=1, pods=1, cubes_per_pod=8)
    sim = Simulator(workload, rates, options)
    probe = Simulator(workload, rates, replace(options, days=5 / 24))
    probe.run()
    cube = probe.jobs[0].held[0].cubes[0]
    sim.queue.push(FaultStrike(sim.start + 5 * HOUR, "host", HostId(cube, 0)))
    records = sim.run()
    allocations = [(r["time"] - sim.start, r["chips"]) for r in _events(records, name="allocation")]
    repair = 5 * HOUR + default_rates().repair_hours["host"] * HOUR
    assert [c for _, c in allocations[:3]] == [512, 384, 512]
    assert allocations[1][0] == pytest.approx(5 * HOUR) and allocations[2][0] == pytest.approx(repair)
    starts = [r["time"] for r in _events(records, name="step_start")]
    slow = [b - a for a, b in itertools.pairwise(starts) if 5 * HOUR + 600 < a - sim.start < repair - 600]
    slower = pytest.approx(options.step_s * 4 / 3)
    assert slower in slow and options.step_s not in slow  # (a step with a checkpoint write is longer still)
    counts = [(r["time"] - sim.start, r["active_slices"]) for r in _events(records, name="slice_counts")]
    assert counts == [(0.0, 4), (5 * HOUR, 3), (pytest.approx(repair), 4)]
    assert all(r["total_slices"] == 4 for r in _events(records, name="slice_counts"))


def test_goodput_report_reads_an_elastic_jobs_slice_counts(cli, tmp_path):
    """The slice counts the simulator writes feed goodput-report's stepping slice efficiency: 3 of 4 slices for
    the 8 hours between the fault and the repair, 4 of 4 otherwise, over the job's 40 h and start-up."""
    from tpufleet.simulation.log import jsonl

    spec = JobSpec(SHAPE, duration_hours=40, phase="training", id="j", slices=4, elastic_min=3)
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=(spec,))
    options = Options(days=3.0, seed=1, pods=1, cubes_per_pod=8)
    sim = Simulator(workload, replace(default_rates(), **NO_FAULTS), options)
    probe = Simulator(workload, replace(default_rates(), **NO_FAULTS), replace(options, days=5 / 24))
    probe.run()
    sim.queue.push(FaultStrike(sim.start + 5 * HOUR, "host", HostId(probe.jobs[0].held[0].cubes[0], 0)))
    log = tmp_path / "run.jsonl"
    log.write_bytes(jsonl(sim.run()))
    r = cli("goodput-report", str(log), "--by", "slices", "-o", "json", state=False)
    assert r.code == 0, r.err
    (job,) = r.json["jobs"]
    (segment,) = r.json["segments"]
    assert (segment["value"], job["job_slices"]) == ("multislice", 4)
    assert segment["slices"] == job["slices"]  # one job: the segment's time-weighted efficiency is its own
    eff = job["slices"]["stepping_slice_efficiency"]
    ends = [e["time"] for e in _events(sim.log.records, name="job_end")]
    total = ends[0] - sim.start
    assert eff == pytest.approx(1 - 8 * HOUR / 4 / total, abs=1e-6)


def test_the_dcn_all_reduce_is_in_a_multislice_jobs_ideal_step():
    model = StepModel(8.44425e14, 1 << 30, 0.0533)
    shape = parse_shape("4x4x8", twisted=True)
    spec = JobSpec(shape, duration_hours=1, phase="training", id="j", slices=4, model=model)
    sim, records = _sim(spec)
    (record,) = [r for r in records if r["type"] == "job"]
    dcn = default_profile().dcn_link()
    hosts = 128 // 4
    closed = 2 * 3 / 4 * (1 << 30) / hosts / dcn.host_bandwidth + 2 * 3 * dcn.latency  # one pod: no oversubscription
    ideal = model.ideal_step_s(shape)
    step = sim.options.step_s
    assert record["ideal_step_s"] == round(step * (ideal + closed) / (model.step_time_s + closed), 6)


def _workload(tmp_path, text: str):
    path = tmp_path / "w.yaml"
    path.write_text("schema_version: 1\narrival_rate_per_hour: 1\nshapes: [{shape: 4x4x8}]\n" + text)
    return load_workload(path)


def test_the_workload_mix_of_multislice_jobs(tmp_path):
    w = _workload(tmp_path, "multislice: {share: 0.2, slices: {'2': 3, '4': 1}, elastic_share: 0.5}\n")
    assert w.multislice is not None and w.multislice.counts == ((2, 3.0), (4, 1.0))
    assert (w.multislice.elastic_min(4), w.multislice.elastic_min(2)) == (3, 2)
    for bad, field in (
        ("multislice: {share: 0.2, slices: {'0': 1}}\n", r"multislice\.slices\.0"),
        ("multislice: {share: 1.5, slices: {'2': 1}}\n", r"multislice\.share"),
        ("multislice: {share: 0.2, slices: {'2': 0}}\n", r"multislice\.slices"),
        ("jobs: [{shape: 4x4x8, duration_hours: 1, slices: 2, elastic_min: 3}]\n", r"jobs\.0\.elastic_min"),
        ("jobs: [{shape: 4x4x8, duration_hours: 1, slices: 0}]\n", r"jobs\.0\.slices"),
        ("jobs: [{shape: 4x4x8, duration_hours: 1, elastic_min: 1}]\n", r"jobs\.0\.elastic_min: applies to a job of 2"),
    ):
        with pytest.raises(BadStateFile, match=field):
            _workload(tmp_path, bad)


def test_a_mixed_workload_runs_and_places_multislice_jobs_over_pods(tmp_path):
    w = _workload(tmp_path, "multislice: {share: 0.5, slices: {'2': 1, '3': 1}, elastic_share: 0.5}\n")
    sim = Simulator(w, default_rates(), Options(days=3, seed=4, pods=3))
    records = sim.run()
    multi = [j for j in sim.jobs if j.slices > 1]
    assert multi and len(multi) < len(sim.jobs)
    assert any(j.elastic_min is not None for j in multi) and any(j.elastic_min is None for j in multi)
    chips = {r["job"]: r["chips"] for r in records if r["type"] == "job"}
    assert all(chips[j.id] == 128 * j.slices for j in sim.jobs)
    for r in records:
        if r["type"] == "event" and r["event"] == "allocation":
            assert r["chips"] % 128 == 0 and r["chips"] <= chips[r["job"]]


def test_the_summary_gives_multislice_jobs_apart(tmp_path):
    """Every arrival a multislice job of 2 or 3 slices of 4x4x8 (256 or 384 chips: one size class): the
    multislice kind is then the whole size segment, which the summary works out as goodput-report does."""
    from tpufleet.ops.simulate import simulate

    w = _workload(tmp_path, "multislice: {share: 1.0, slices: {'2': 1, '3': 1}, elastic_share: 0.5}\n")
    result = simulate(w, default_rates(), Options(days=4, seed=2, pods=2))
    s = result.summary
    m = s["multislice"]
    (segment,) = s["segments"]
    assert m["jobs"] == s["jobs_submitted"] == segment["jobs"] == m["multislice"]["jobs"]
    assert {k: m["multislice"][k] for k in ("sg", "rg", "pg", "mpg")} == {
        k: segment[k] for k in ("sg", "rg", "pg", "mpg")
    }
    assert m["single_slice"]["jobs"] == 0 and m["single_slice"]["sg"] is None
    plain = simulate(load_workload(None), default_rates(), Options(days=1, seed=2)).summary
    assert plain["multislice"] is None


def test_the_summarys_kinds_equal_goodput_report_by_slices(cli, tmp_path):
    """A third of the arrivals multislice: the summary's multislice and single-slice figures are what
    `goodput-report --by slices` gives on the written events (an independent path: the report's own reader and
    accounting)."""
    from tpufleet.ops.simulate import simulate
    from tpufleet.simulation.log import jsonl

    w = _workload(tmp_path, "multislice: {share: 0.33, slices: {'2': 2, '4': 1}, elastic_share: 0.5}\n")
    result = simulate(w, replace(default_rates(), host_per_day=0.02), Options(days=4, seed=5, pods=2))
    log = tmp_path / "run.jsonl"
    log.write_bytes(jsonl(result.entries))
    r = cli("goodput-report", str(log), "--by", "slices", "-o", "json", state=False)
    assert r.code == 0, r.err
    segments = {s["value"]: s for s in r.json["segments"]}
    kinds = result.summary["multislice"]
    for kind, value in (("multislice", "multislice"), ("single_slice", "single-slice")):
        assert {k: kinds[kind][k] for k in ("sg", "rg", "pg", "mpg", "jobs")} == {
            k: segments[value][k] for k in ("sg", "rg", "pg", "mpg", "jobs")
        }, kind
    assert kinds["jobs"] == segments["multislice"]["jobs"] > 0


def test_a_slice_lost_just_after_the_job_finished_is_not_held_again():
    """The job's 20 h end on its own falls between steps and the completion event that confirms it: a fault on
    one of its machines then must not hold its slices again (they stayed held for the rest of the run)."""
    spec = JobSpec(parse_shape("4x4x4"), duration_hours=20, phase="training", id="E", slices=4, elastic_min=2)
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=(spec,))
    rates, options = replace(default_rates(), **NO_FAULTS), Options(days=3, seed=0, pods=1)
    first = Simulator(workload, rates, options)
    first.run()
    (end,) = [r["time"] for r in _events(first.log.records, "E", "job_end")]
    probe = Simulator(workload, rates, replace(options, days=0.1))
    probe.run()
    cube = probe.jobs[0].held[1].cubes[0]
    sim = Simulator(workload, rates, options)
    sim.queue.push(FaultStrike(end + 30.0, "host", HostId(cube, 0)))
    records = sim.run()
    assert [r["event"] for r in _events(records, "E")][-2:] == ["job_end", "allocation"]
    assert sim.placement.placed == {} and sim.scheduler.short == {}
    assert sim.fault_response.slices_lost == 0


def test_a_static_elastic_job_short_of_a_slice_gets_it_back_after_waiting_for_a_repair():
    """Static pod: E (4 slices, min 2, no fault-tolerant routing) loses a slice to a link fault at 1 h while 60
    one-cube jobs fill the pod and a 61st waits (it takes the freed cube); a machine fault at 2 h makes E wait on
    its block for the repair. The fillers leave by 6 h; when E restarts (10 h) it takes its fourth slice back at
    once, not never."""
    cube = parse_shape("4x4x4")
    fillers = tuple(
        JobSpec(cube, duration_hours=5, phase="serving", id=f"F{i}", fault_tolerant=False) for i in range(60)
    )
    fillers += (JobSpec(cube, duration_hours=5, arrival_hours=0.5, phase="serving", id="F60", fault_tolerant=False),)
    e = JobSpec(cube, duration_hours=200, phase="training", id="E", slices=4, elastic_min=2, fault_tolerant=False)
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=(e, *fillers))
    rates, options = replace(default_rates(), **NO_FAULTS), Options(days=20, seed=0, pods=1, mode="static")
    probe = Simulator(workload, rates, replace(options, days=0.01))
    probe.run()
    cubes = [a.cubes[0] for a in probe.jobs[0].held]
    sim = Simulator(workload, rates, options)
    sim.queue.push(FaultStrike(sim.start + HOUR, "link", LinkId(cubes[1], "x", 0, "out")))
    sim.queue.push(FaultStrike(sim.start + 2 * HOUR, "host", HostId(cubes[2], 0)))
    records = sim.run()
    chips = [(round((r["time"] - sim.start) / HOUR, 3), r["chips"]) for r in _events(records, "E", "allocation")]
    assert chips[:3] == [(0.0, 256), (1.0, 192), (10.0, 256)]
    assert sim.scheduler.slices_regained == 1


def test_slice_counts_the_fleet_cannot_hold_are_refused_or_not_drawn(cli, tmp_path):
    """A listed job of 4 slices of 8x16x16 (128 cubes) on one pod of 64 cubes would wait for ever: exit 2 naming
    it. A mix whose only count is 64 slices draws none of them on one pod: every job is one slice, and runs."""
    path = tmp_path / "big.yaml"
    path.write_text(
        "schema_version: 1\njobs:\n  - {id: huge, shape: 8x16x16, twisted: true, slices: 4, duration_hours: 5}\n"
    )
    r = cli("simulate-fleet", "--days", "1", "--workload", str(path), state=False)
    assert r.code == 2 and "listed job 0 (huge): 4 slice(s) of 8x16x16 twisted need 128 cubes" in r.err
    w = _workload(tmp_path, "multislice: {share: 1.0, slices: {'64': 1}}\n")
    sim = Simulator(w, default_rates(), Options(days=2, seed=1))
    sim.run()
    assert sim.jobs and all(j.slices == 1 for j in sim.jobs)
    assert sum(j.first_start is not None for j in sim.jobs) > 0
    on_two = Simulator(w, default_rates(), Options(days=1, seed=1, pods=2))  # 64 slices of 2 cubes: 2 pods
    on_two.run()
    assert any(j.slices == 64 for j in on_two.jobs)


def test_an_elastic_job_does_not_take_back_a_slice_on_the_cube_whose_link_failed():
    """Without fault-tolerant routing, E loses the slice whose optical link failed; the only free cube is that
    one, which it may not wire whole until the link is repaired (4 h): it gets the slice back then, not at once."""
    e = JobSpec(parse_shape("4x4x4"), duration_hours=40, phase="training", id="E", slices=4, elastic_min=2,
                fault_tolerant=False)  # fmt: skip
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=(e,))
    rates, options = replace(default_rates(), **NO_FAULTS), Options(days=2, seed=0, pods=1, cubes_per_pod=4)
    probe = Simulator(workload, rates, replace(options, days=0.01))
    probe.run()
    cube = probe.jobs[0].held[1].cubes[0]
    sim = Simulator(workload, rates, options)
    sim.queue.push(FaultStrike(sim.start + HOUR, "link", LinkId(cube, "y", 3, "out")))
    records = sim.run()
    chips = [(round((r["time"] - sim.start) / HOUR, 3), r["chips"]) for r in _events(records, "E", "allocation")]
    repair = 1 + default_rates().repair_hours["link"]
    assert chips[:3] == [(0.0, 256), (1.0, 192), (repair, 256)]
