"""`simulate-fleet --scheduler reserve` (and `extra-large-first-reserve`): EASY backfill around a reservation.

The first single-slice job in the queue that cannot start is given a shadow time, the earliest predicted end of the
running jobs by which enough of the pod is free for it; a job behind it starts only if it ends by then or leaves
that room free. The head starts no later than its shadow time unless a fault or a job ranked ahead intervenes."""

import dataclasses
import json
import math

import pytest

from helpers import held_twice
from tpufleet.ops.goodput import build
from tpufleet.ops.simulate import summarize
from tpufleet.simulation import Options, Simulator, scheduler
from tpufleet.simulation.fault_response import FaultResponse
from tpufleet.simulation.log import jsonl
from tpufleet.simulation.placement import Placement
from tpufleet.simulation.policy import queue_rank
from tpufleet.simulation.reservation import BACKFILL_SLACK_S, reserve
from tpufleet.state.reroutecosts import shipped_costs
from tpufleet.state.siminputs import load_rates, load_workload

SIZES = ("small", "medium", "large", "extra-large")


def simulated(policy, seed, days=30.0, workload=None, rates=None, **kw):
    options = Options(days=days, seed=seed, scheduler=policy)
    sim = Simulator(
        workload or load_workload(None), rates or load_rates(None), options, reroute_costs=shipped_costs(), **kw
    )
    sim.simulate()
    return sim


def one_priority_no_faults():
    """The shipped workload's shapes and durations, every job `batch` (no job ranked ahead of an earlier one), and
    no fault of any kind."""
    workload = dataclasses.replace(load_workload(None), priorities=("batch",), priority_weights=(1.0,))
    rates = dataclasses.replace(
        load_rates(None), host_per_day=0.0, link_per_day=0.0, ocs_per_day=0.0, drain_per_day=0.0
    )
    return workload, rates


def record_reservations(monkeypatch):
    """(job id, run, shadow time, time made) of the first reservation of each run of a job, and the times faults
    struck."""
    made: dict[tuple[str, int], tuple[float, float]] = {}
    strikes: list[float] = []
    now = [0.0]
    schedule, strike = scheduler.Scheduler.schedule, FaultResponse.strike

    def timed_schedule(self, t):
        now[0] = t
        schedule(self, t)

    def kept_reserve(placement, head, rerouting, running):
        r = reserve(placement, head, rerouting, running)
        if r.shadow != float("inf"):
            made.setdefault((head.id, head.runs), (r.shadow, now[0]))
        return r

    def timed_strike(self, event):
        strikes.append(event.time)
        strike(self, event)

    monkeypatch.setattr(scheduler.Scheduler, "schedule", timed_schedule)
    monkeypatch.setattr(scheduler, "reserve", kept_reserve)
    monkeypatch.setattr(FaultResponse, "strike", timed_strike)
    return made, strikes


def starts(sim):
    """job id -> the times of its runs' starts, in order."""
    out: dict[str, list[float]] = {}
    for job_id, t, name, _, _ in (e for e in sim.log.entries if isinstance(e, tuple)):
        if name == "job_start":
            out.setdefault(job_id, []).append(t)
    return out


@pytest.mark.parametrize("seed", [1, 3])
def test_the_head_starts_by_its_shadow_time_when_nothing_intervenes(monkeypatch, seed):
    """One priority, no faults: every job given a reservation starts by the shadow time worked out when it was
    made, while other jobs start behind it (backfilled)."""
    made, _ = record_reservations(monkeypatch)
    workload, rates = one_priority_no_faults()
    sim = simulated("reserve", seed, workload=workload, rates=rates)
    began = starts(sim)
    assert len(made) > 50 and sim.stats.backfilled > 50
    late = [
        (job_id, run, shadow)
        for (job_id, run), (shadow, _) in made.items()
        if run < len(began.get(job_id, [])) and began[job_id][run] > shadow + BACKFILL_SLACK_S
    ]
    assert late == []
    assert sim.stats.reservations == len(made) and sim.stats.reservations_late == 0
    never = [key for key, (shadow, _) in made.items() if len(began.get(key[0], [])) <= key[1]]
    assert all(made[key][0] > sim.end for key in never)  # only those whose shadow time is past the run's end


def test_a_late_head_had_a_fault_or_a_job_ranked_ahead_in_its_way(monkeypatch):
    """The shipped workload with faults: a reservation started after its shadow time had a fault strike, or a job
    ranked ahead of it submitted, between the reservation and its start; the summary counts them."""
    made, strikes = record_reservations(monkeypatch)
    sim = simulated("reserve", 3)
    began, jobs = starts(sim), {j.id: j for j in sim.jobs}
    late = 0
    for (job_id, run), (shadow, at) in made.items():
        if run >= len(began.get(job_id, [])) or began[job_id][run] <= shadow + BACKFILL_SLACK_S:
            continue
        late += 1
        start, rank = began[job_id][run], queue_rank(jobs[job_id], "reserve")
        ahead = [j for j in sim.jobs if at <= j.submitted <= start and queue_rank(j, "reserve") < rank]
        assert ahead or any(at <= s <= start for s in strikes), (job_id, run, shadow, at, start)
    summary = summarize(sim.log.entries, sim)
    assert summary["reservations"] == {"made": len(made), "late": late, "backfilled": sim.stats.backfilled}
    assert 0 < late < len(made)


def _unallocated(events, job_id):
    mine = sorted((e for e in events if e[0] == job_id), key=lambda e: e[1])
    off, chips, t0 = 0.0, 0, mine[0][1]
    for _, t, name, _, held in mine:
        off += (t - t0) if chips == 0 else 0.0
        t0 = t
        chips = held if name == "allocation" else chips
    return off


@pytest.mark.parametrize("policy", ["reserve", "extra-large-first-reserve"])
def test_reserve_invariants(monkeypatch, tmp_path, policy):
    """No placement takes a machine another job holds or a cube out of the pool; a preempted training job's lost
    steps are wasted progress from disruption and its time off the pod demand without allocation."""
    hold = Placement.hold
    clashes: list[tuple[str, object]] = []

    def checked_hold(self, job_id, alloc):
        clashes.extend((cube, "out") for cube in alloc.cubes if not self.health().cube_ok(cube))
        hold(self, job_id, alloc)
        clashes.extend(held_twice(self))

    monkeypatch.setattr(Placement, "hold", checked_hold)
    sim = simulated(policy, 4)
    assert clashes == [] and sim.stats.backfilled > 50
    events = [e for e in sim.log.entries if isinstance(e, tuple)]
    jobs = {j.id: j for j in sim.jobs}
    preempted = {e[0] for e in events if e[2] == "preemption"}
    assert len(preempted) > 50
    if policy == "extra-large-first-reserve":
        assert not [j for j in preempted if jobs[j].size == "extra-large"]
    path = tmp_path / "events.jsonl"
    path.write_bytes(jsonl(sim.log.entries))
    rows = {r["job"]: r for r in build([path])["jobs"]}
    lost = [rows[j]["badput_s"]["wasted_progress_from_disruption"] for j in preempted if jobs[j].phase == "training"]
    assert sum(w > 0 for w in lost) > len(lost) / 2
    for job_id in preempted:
        row = rows[job_id]
        assert row["demand_s"] - row["all_allocated_s"] == pytest.approx(_unallocated(events, job_id), abs=0.01)


def test_reserve_is_deterministic_and_the_fit_shortcuts_change_no_event():
    first = simulated("reserve", 3, days=4)
    again = simulated("reserve", 3, days=4)
    plain = simulated("reserve", 3, days=4, fit_shortcuts=False)
    assert first.stats.backfilled > 10
    assert jsonl(first.log.entries) == jsonl(again.log.entries) == jsonl(plain.log.entries)


def test_the_reservations_are_in_the_summary_only_under_a_reserving_policy(cli):
    r = cli("simulate-fleet", "--days", "2", "--seed", "3", "--scheduler", "reserve", "-o", "json", state=False)
    assert r.code == 0, r.err
    summary = r.json
    assert summary["scheduler"] == "reserve"
    assert set(summary["reservations"]) == {"made", "late", "backfilled"}
    assert summary["reservations"]["made"] > 0 and summary["reservations"]["backfilled"] > 0
    text = cli("simulate-fleet", "--days", "2", "--seed", "3", "--scheduler", "reserve", state=False)
    assert f"reservations: {summary['reservations']['made']} made" in text.out
    plain = cli("simulate-fleet", "--days", "2", "--seed", "3", "-o", "json", state=False)
    assert (
        plain.json["reservations"] is None
        and "reservations" not in cli("simulate-fleet", "--days", "2", "--seed", "3", state=False).out
    )
    assert json.loads(json.dumps(summary)) == summary


def test_a_sweep_point_runs_a_reserving_policy(tmp_path):
    from tpufleet.ops.simulate import simulate
    from tpufleet.state.siminputs import shipped_inputs
    from tpufleet.state.sweepstore import load_spec
    from tpufleet.sweep.runs import fleet_inputs

    path = tmp_path / "spec.yaml"
    path.write_text(
        "schema_version: 1\nsimulation: fleet\nfixed: {days: 3}\n"
        "grid: {scheduler: [reserve, extra-large-first-reserve, priority]}\n"
    )
    points = load_spec(path).points
    summaries = [simulate(*fleet_inputs(p.params, {}, 3, shipped_inputs())).summary for p in points]
    assert [s["scheduler"] for s in summaries] == ["reserve", "extra-large-first-reserve", "priority"]
    assert [s["reservations"] is None for s in summaries] == [False, False, True]


def test_multislice_jobs_backfill_without_sharing_a_machine(monkeypatch, tmp_path):
    """Multislice jobs (some elastic) over two pods under `reserve`: a reservation is made for single-slice heads,
    jobs backfill around it, and no placement takes a machine another slice holds."""
    from tpufleet.state.siminputs import default_rates

    path = tmp_path / "w.yaml"
    path.write_text(
        "schema_version: 1\narrival_rate_per_hour: 3\nshapes: [{shape: 4x4x8, weight: 3}, {shape: 8x8x16, weight: 1}]\n"
        "multislice: {share: 0.4, slices: {'2': 1, '3': 1}, elastic_share: 0.5}\n"
    )
    hold = Placement.hold
    clashes: list[tuple[str, int]] = []

    def checked_hold(self, job_id, alloc):
        hold(self, job_id, alloc)
        clashes.extend(held_twice(self))

    monkeypatch.setattr(Placement, "hold", checked_hold)
    sim = Simulator(load_workload(path), default_rates(), Options(days=2, seed=4, pods=2, scheduler="reserve"))
    sim.simulate()
    assert clashes == []
    assert sim.stats.reservations > 5 and sim.stats.backfilled > 50
    assert any(j.slices > 1 and j.first_start is not None for j in sim.jobs)


def test_a_job_waiting_on_a_repair_holds_no_room_and_the_next_job_blocked_is_the_head(cli, monkeypatch):
    """A static pod under a hundred times the faults: some jobs' boxes are held by faults, so no running job's end
    makes room for them. Such a job holds no room (as Slurm passes over a job no node can run now): the next job
    that cannot start gets the reservation, and only jobs behind a reservation count as backfilled."""
    calls: list[tuple[str, int, float] | None] = []  # None marks the start of a pass over the queue
    heads: list[float] = []
    real_reserve, real_backfill, real_pass = reserve, scheduler.Scheduler._backfill, scheduler.Scheduler._pass

    def recorded_reserve(placement, head, rerouting, running):
        found = real_reserve(placement, head, rerouting, running)
        calls.append((head.id, head.runs, found.shadow))
        return found

    def recorded_backfill(self, job, t, head, kind):
        heads.append(head.shadow)
        return real_backfill(self, job, t, head, kind)

    def recorded_pass(self, t):
        calls.append(None)
        return real_pass(self, t)

    monkeypatch.setattr(scheduler, "reserve", recorded_reserve)
    monkeypatch.setattr(scheduler.Scheduler, "_backfill", recorded_backfill)
    monkeypatch.setattr(scheduler.Scheduler, "_pass", recorded_pass)
    args = ("--days", "2", "--mode", "static", "--fault-scale", "100", "--scheduler", "reserve", "-o", "json")
    r = cli("simulate-fleet", *args, state=False)
    assert r.code == 0, r.err
    passes = "".join("|" if c is None else ("i" if math.isinf(c[2]) else "f") for c in calls).split("|")
    assert any("if" in p for p in passes), passes  # passed over one waiting on a repair, then reserved for the next
    assert heads and all(math.isfinite(h) for h in heads)  # no job behind a head that holds no room
    made = {(job, runs) for job, runs, shadow in filter(None, calls) if math.isfinite(shadow)}
    assert r.json["reservations"]["made"] == len(made)


def test_an_elastic_job_takes_a_slice_back_beside_a_head_without_a_reservation(monkeypatch):
    """Static pods under fifty times the faults: heads whose room a fault holds get no reservation (no running job's
    end makes room for them), so no room is kept free for them and an elastic job short of slices takes one back
    wherever it fits, as the jobs behind such a head start wherever they fit."""
    from pathlib import Path

    refused: list[str] = []
    leaves = scheduler.Scheduler._regrow_leaves_room

    def recorded(self, job, head, beside):
        ok = leaves(self, job, head, beside)
        stuck = not ok and head.shadow == float("inf")  # a slice found is then refused for no reservation
        if stuck and self.placement.find(job.shape, self.rerouting(job), True, beside) is not None:
            refused.append(job.id)
        return ok

    monkeypatch.setattr(scheduler.Scheduler, "_regrow_leaves_room", recorded)
    rates = load_rates(None)
    rates = dataclasses.replace(
        rates,
        host_per_day=rates.host_per_day * 50,
        link_per_day=rates.link_per_day * 50,
        ocs_per_day=rates.ocs_per_day * 50,
    )
    workload = load_workload(Path(__file__).parent.parent / "fixtures" / "multislice-workload.yaml")
    sim = Simulator(workload, rates, Options(days=3, seed=2, pods=2, scheduler="reserve", mode="static"))
    sim.simulate()
    assert refused == []
    assert sim.scheduler.slices_regained >= 1


def test_a_sweep_counts_the_reservations_of_a_reserving_point_as_the_simulation_does(cli, tmp_path):
    """sweep's figures left out the reservations simulate-fleet counts under `reserve`: a sweep comparing the
    policies could not say how many jobs waited behind a reserved head. A reserving point has them, as the
    simulation's own summary counts them; a point under another policy has none, and a plot of them is refused
    where no point gives them."""
    from tpufleet.ops.simulate import simulate
    from tpufleet.state.siminputs import shipped_inputs
    from tpufleet.state.sweepstore import load_spec
    from tpufleet.sweep.runs import fleet_inputs

    spec = tmp_path / "spec.yaml"
    head = "schema_version: 1\nsimulation: fleet\nseeds: 1\nfixed: {days: 3}\nplot: {metric: reservations.made}\n"
    spec.write_text(head + "points: [{scheduler: reserve}, {scheduler: priority}]\n")
    r = cli("sweep", spec, "--out", tmp_path / "out", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    reserving = load_spec(spec).points[0]
    direct = simulate(*fleet_inputs(reserving.params, {}, load_spec(spec).seeds[0], shipped_inputs())).summary
    figures = {k: v["mean"] for k, v in r.json["points"][0]["metrics"].items() if k.startswith("reservations.")}
    assert figures == {f"reservations.{k}": v for k, v in direct["reservations"].items()}
    assert figures["reservations.made"] > 0
    assert not [k for k in r.json["points"][1]["metrics"] if k.startswith("reservations.")]
    spec.write_text(head + "points: [{scheduler: priority}, {pods: 2}]\n")
    refused = cli("sweep", spec, "--out", tmp_path / "out2", "--serial", state=False)
    assert refused.code == 2 and "plot.metric" in refused.err and "reservations.made" in refused.err
