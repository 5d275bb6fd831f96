"""What a run says of a job a fault stopped: its wait for the restart, whether it waited in a queue or, in a
static pod, on its block for the repair, and whether the run ended before it restarted."""

from dataclasses import replace
from typing import Any

import pytest

from tpufleet.ids import HostId
from tpufleet.ops.simulate import summarize
from tpufleet.shapes import parse_shape
from tpufleet.simulation import JobSpec, Options, Simulator, Workload
from tpufleet.simulation.events import FaultStrike
from tpufleet.simulation.inputs import Mode
from tpufleet.state.siminputs import default_rates

HOUR = 3600.0
NO_FAULTS: dict[str, Any] = {"host_per_day": 0.0, "link_per_day": 0.0, "ocs_per_day": 0.0, "drain_per_day": 0.0}
JOB = JobSpec(parse_shape("8x8x8"), duration_hours=1000, phase="training", id="j")  # 8 cubes: a large job


def one_job_hit(
    mode: Mode, repair_hours: float, days: float = 1.0, fault_hour: float = 5.0, cubes_per_pod: int = 64
) -> Simulator:
    """One 8x8x8 job alone on a pod, no random faults: machine 0 of its first cube fails at `fault_hour`."""
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=(JOB,))
    rates = replace(default_rates(), **NO_FAULTS)
    rates = replace(rates, repair_hours={**rates.repair_hours, "host": repair_hours})
    options = Options(days=days, seed=1, mode=mode, cubes_per_pod=cubes_per_pod)
    probe = Simulator(workload, rates, replace(options, days=1 / 24))
    probe.run()
    sim = Simulator(workload, rates, options)
    sim.queue.push(FaultStrike(sim.start + fault_hour * HOUR, "host", HostId(probe.jobs[0].held[0].cubes[0], 0)))
    sim.simulate()
    return sim


def test_a_static_jobs_wait_on_its_block_for_the_repair_is_a_restart_wait():
    sim = one_job_hit("static", repair_hours=8.0)
    summary = summarize(sim.log.entries, sim)
    assert summary["disruptions"]["failure"] == 1
    assert summary["restart_wait_hours"] == {"large": pytest.approx(8.0, abs=1e-3)}


def test_a_job_not_restarted_by_the_end_waits_up_to_the_end():
    """Static: the repair comes after the run's end, the job waits on its block to the end."""
    sim = one_job_hit("static", repair_hours=100.0)
    summary = summarize(sim.log.entries, sim)
    assert summary["disruptions"]["failure"] == 1
    assert summary["restart_wait_hours"] == {"large": pytest.approx(24.0 - 5.0, abs=1e-3)}


def test_a_displaced_job_still_queued_at_the_end_waits_up_to_the_end():
    """A pod of 8 cubes, all the job's: after the fault there is no room for it until the repair, after the end."""
    sim = one_job_hit("reconfigurable", repair_hours=100.0, cubes_per_pod=8)
    summary = summarize(sim.log.entries, sim)
    assert summary["disruptions"]["failure"] == 1
    assert summary["restart_wait_hours"] == {"large": pytest.approx(24.0 - 5.0, abs=1e-3)}


def test_a_job_restarted_at_once_waited_no_time():
    sim = one_job_hit("reconfigurable", repair_hours=100.0)
    summary = summarize(sim.log.entries, sim)
    assert summary["disruptions"]["failure"] == 1
    assert summary["restart_wait_hours"] == {"large": 0.0}


def test_a_block_held_for_a_repair_past_the_end_is_allocated_to_the_end(tmp_path):
    """Static: the job holds its 8 of the 64 cubes from the start to the end, running or waiting on its block, so
    SG is 1/8 exactly and the 18.95 hours it waits are in RG's all-allocated time (as infrastructure recovery), both
    in the summary and in goodput-report on the run's events."""
    from tpufleet.ops.goodput import build
    from tpufleet.simulation.log import jsonl

    sim = one_job_hit("static", repair_hours=100.0, fault_hour=5.05)  # mid-step
    summary = summarize(sim.log.entries, sim)
    path = tmp_path / "events.jsonl"
    path.write_bytes(jsonl(sim.log.entries))
    fleet = build([path])["fleet"]
    assert summary["sg"] == fleet["sg"] == 0.125
    assert summary["rg"] == fleet["rg"] < 5 / 24
    recovery = fleet["badput_chip_s"]["infrastructure_recovery_from_disruption"]
    assert recovery == pytest.approx(512 * 18.95 * HOUR, rel=1e-6)


def test_a_fault_at_the_instant_a_step_starts_is_followed_by_infrastructure_recovery(tmp_path):
    """The fault at 5.0 h falls on a step boundary: the log has the step's start and the failure at one instant.
    The failure interrupts that step, so the 19 hours the job then waits on its block are infrastructure
    recovery (not "other"), whichever reader decodes the log."""
    from tpufleet.goodput import columnar, fastread
    from tpufleet.ops.goodput import build
    from tpufleet.simulation.log import jsonl

    sim = one_job_hit("static", repair_hours=100.0, fault_hour=5.0)
    path = tmp_path / "events.jsonl"
    path.write_bytes(jsonl(sim.log.entries))
    modes = {"standard": (None, None), "msgspec": (fastread._DECODER, None)}
    if columnar.available():
        modes["arrow"] = (None, getattr(columnar, "pa"))  # noqa: B009 - PyArrow as columnar imported it
    for mode, (decoder, arrow) in modes.items():
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(fastread, "_DECODER", decoder)
            mp.setattr(columnar, "pa", arrow)
            badput = build([path])["fleet"]["badput_chip_s"]
        assert badput["infrastructure_recovery_from_disruption"] == pytest.approx(512 * 19 * HOUR), mode
        assert badput["other"] == 0.0, mode


def run_alone(jobs: tuple[JobSpec, ...], days: float = 1.0) -> Simulator:
    """The listed jobs on one pod, no random arrivals and no faults."""
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=jobs)
    sim = Simulator(workload, replace(default_rates(), **NO_FAULTS), Options(days=days, seed=1))
    sim.simulate()
    return sim


def test_a_job_still_running_at_the_end_holds_its_chips_to_the_end():
    """The job's time ended at its last event (its last step's start): the chips it held to the end went
    uncharged, and the fleet's SG of a run it held 8 cubes of throughout was below 8/64."""
    sim = run_alone((JOB,))
    summary = summarize(sim.log.entries, sim)
    assert summary["sg"] == pytest.approx(8 / 64, abs=1e-6)
    assert [(s["value"], s["sg"]) for s in summary["segments"]] == [("large", 1.0)]
    first, last = [r["chips"] for r in sim.records if r["type"] == "capacity"]
    assert first == last == 64 * 64


def test_a_job_still_waiting_at_the_end_is_demand_to_the_end():
    """A job that waited all run for room had no demand (its time ended at its submission): its size's SG was
    none instead of 0."""
    whole_pod = JobSpec(parse_shape("16x16x16"), duration_hours=5, phase="training", id="w", arrival_hours=1)
    sim = run_alone((JobSpec(parse_shape("4x4x4"), duration_hours=100, phase="training", id="r"), whole_pod))
    summary = summarize(sim.log.entries, sim)
    waiting = next(s for s in summary["segments"] if s["value"] == "extra-large")
    assert waiting["sg"] == 0.0
    assert summary["wait_hours"]["extra-large"] == pytest.approx(23.0, abs=1e-3)
