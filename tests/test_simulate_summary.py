"""The simulator's own goodput summary against the goodput report on the same events, job by job and in total."""

from dataclasses import replace
from pathlib import Path

import pytest

from tpufleet.goodput import events as goodput_events
from tpufleet.goodput.timeline import account
from tpufleet.ops.goodput import build
from tpufleet.shapes import parse_shape
from tpufleet.simulation import JobSpec, Options, Simulator
from tpufleet.simulation.log import jsonl
from tpufleet.simulation.scale import scale_rates
from tpufleet.simulation.summary import JobFigures, goodput, job_figures
from tpufleet.state import goodputlogs
from tpufleet.state.reroutecosts import shipped_costs
from tpufleet.state.siminputs import load_rates, load_workload

FIGURES = ("start", "end", "demand_s", "all_allocated_s", "productive_s", "productive_steps")
MULTISLICE = Path(__file__).resolve().parents[1] / "fixtures" / "multislice-workload.yaml"
# (seed, mode, fault-rate factor, restart overhead s, checkpoint interval s, pods, workload): static, reconfigurable
# and fault-tolerant pods; machine, link, OCS faults and drains at up to 30x the shipped rates; zero-length
# start-ups; multislice jobs, elastic ones running on part of their chips.
RUNS = [
    (0, "static", 20.0, 600.0, 3600.0, 1, None),
    (1, "reconfigurable", 20.0, 0.0, 600.0, 2, None),
    (2, "reconfigurable-ft", 30.0, 60.0, 1800.0, 1, None),
    (3, "reconfigurable-ft", 1.0, 600.0, 3600.0, 2, None),
    (4, "static", 30.0, 0.0, 900.0, 1, None),
    (5, "reconfigurable-ft", 20.0, 600.0, 1800.0, 2, MULTISLICE),
]


def simulated(seed, mode, factor, overhead, interval, pods, workload=None):
    rates = scale_rates(load_rates(None), dict.fromkeys(("host", "link", "ocs", "drain"), factor))
    options = Options(
        days=2, seed=seed, pods=pods, mode=mode, restart_overhead_s=overhead, checkpoint_interval_s=interval
    )
    sim = Simulator(load_workload(workload), rates, options, reroute_costs=shipped_costs())  # as simulate-fleet runs
    sim.simulate()
    return sim


def report_of(sim, tmp_path):
    """`goodput-report --by size` on the run's events written out: fleet and size segments, and its job accounts."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(jsonl(sim.log.entries))
    report = build([path], by=["size"])
    keys = ("sg", "rg", "pg", "mpg", "jobs")
    return {
        "fleet": {k: report["fleet"][k] for k in keys},
        "segments": [{"value": s["value"], **{k: s[k] for k in keys}} for s in report["segments"]],
    }, goodputlogs.load([path], "native", False)


def figures_of(summary):
    """The fleet's and the size segments' factors (what the report gives), whatever else the summary holds."""
    return {"fleet": summary["fleet"], "segments": summary["segments"]}


@pytest.mark.parametrize("run", RUNS, ids=[f"{r[1]}-seed{r[0]}{'-multislice' if r[6] else ''}" for r in RUNS])
def test_the_summary_is_the_goodput_reports(run, tmp_path):
    sim = simulated(*run)
    expected, log = report_of(sim, tmp_path)
    assert figures_of(goodput(sim.log.entries, sim.log.by_job)) == expected
    assert figures_of(goodput(sim.log.records)) == expected  # from dict records too
    faults = sum(sim.stats.faults.values())
    assert faults > (0 if run[2] == 1.0 else 50) and expected["fleet"]["jobs"] > 50
    for job_id, mine in sim.log.by_job.items():
        job = log.jobs[job_id]
        figures = job_figures(mine, job.chips, job.phase == "training")
        assert figures is not None, job_id  # the shortcut vouched for every job the simulator wrote
        theirs = account(job, log.events[job_id])
        assert figures == JobFigures(*(getattr(theirs, k) for k in FIGURES)), job_id


def test_disruptions_and_restarts_are_exercised():
    """The runs above hold what the accounting rules turn on: wasted steps, waits in place, zero-length stages."""
    sim = simulated(*RUNS[0])
    names = [e[2] for e in sim.log.entries if isinstance(e, tuple)]
    assert {"failure", "eviction", "preemption"} <= set(names) and names.count("job_start") > names.count("submitted")
    assert sim.stats.evictions > 10


def test_events_the_shortcut_does_not_vouch_for_go_to_the_report():
    job = goodput_events.Job("j", chips=64, phase="training", ideal_step_s=1.0)
    t = 1767571200.0
    events = [
        ("j", t, "submitted", None, None),
        ("j", t + 10, "allocation", None, 64),
        ("j", t + 10, "job_start", None, None),
        ("j", t + 20, "step_start", 1, None),
        ("j", t + 30, "step_start", 2, None),
        ("j", t + 40, "job_start", None, None),  # a restart with no disruption logged: the report infers one
        ("j", t + 50, "step_start", 2, None),
    ]
    assert job_figures(events, 64, True) is None
    assert job_figures([events[1], events[0], *events[2:]], 64, True) is None  # out of time order
    columns = goodput_events.EventColumns()
    for _, time, name, step, chips in events:
        columns.append(time, goodput_events.CODE[name], -1 if step is None else step, -1 if chips is None else chips)
    record = {"type": "job", "job": "j", "chips": 64, "phase": "training", "ideal_step_s": 1.0}
    capacity = {"type": "capacity", "time": t, "accelerator": "tpu-v4", "chips": 4096}
    theirs = account(job, columns)
    summary = goodput([capacity, record, *events])
    assert summary["fleet"]["rg"] == round(theirs.productive_s / theirs.all_allocated_s, 6)
    assert summary["fleet"]["pg"] == round(theirs.productive_steps / theirs.productive_s, 6)


def test_a_listed_job_with_an_odd_id_is_summed_like_the_report(tmp_path):
    spec = JobSpec(parse_shape("4x4x4"), duration_hours=30, id='odd "id" \u00e9', phase="training")
    workload = replace(load_workload(None), jobs=(spec,))
    sim = Simulator(workload, load_rates(None), Options(days=1, seed=1))
    sim.simulate()
    expected, _ = report_of(sim, tmp_path)
    assert figures_of(goodput(sim.log.entries, sim.log.by_job)) == expected
