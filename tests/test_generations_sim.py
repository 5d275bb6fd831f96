"""Simulation, sweep, goodput capacity and multislice jobs on pods of a generation (TPU v4, v5p, TPU7x): fault
draws at the generation's rates over its components, the step-time model on its figures, the shapes its rule
refuses, the reroute-cost table handed in by the state layer, a sweep over TPU7x pods, `--capacity state` per
generation, and the README's table of the generations rendered from the shipped profiles."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tpufleet.collectives.cost import collective_terms, collective_time
from tpufleet.collectives.profile import default_profile, for_generation
from tpufleet.collectives.reroute_table import representative
from tpufleet.constants import DAY
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.generations import FIGURES, FaultDefaults, RepairHours, is_assumption
from tpufleet.generations_markdown import between_markers, markdown_table
from tpufleet.ids import HostId, OcsId
from tpufleet.model import default_fleet, fleet_of
from tpufleet.shapes import parse_shape
from tpufleet.simulation import JobSpec, Options, Simulator, Workload, draws, reroute
from tpufleet.simulation.reroute import StepModel, costs_from_doc, slowdown
from tpufleet.state.generations import names, shipped
from tpufleet.state.reroutecosts import shipped_costs
from tpufleet.state.siminputs import load_rates

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30
NO_FAULTS: dict[str, Any] = {"host_per_day": 0.0, "link_per_day": 0.0, "ocs_per_day": 0.0, "drain_per_day": 0.0}


def unusual(name: str = "tpu7x"):
    """A generation with its own rates, repair times and 8-chip hosts (8 hosts a cube), unlike any shipped one."""
    faults = FaultDefaults(0.01, 0.0, 0.05, 0.0, RepairHours(host=3.0, link=4.0, ocs=5.0, drain=6.0))
    return replace(shipped(name), host_shape=(2, 2, 2), faults=faults)


# ---- fault draws ------------------------------------------------------------------------------------------
def test_rates_default_to_the_generations_profile():
    gen = unusual()
    rates = load_rates(None, gen)
    assert (rates.host_per_day, rates.link_per_day, rates.ocs_per_day, rates.drain_per_day) == (0.01, 0.0, 0.05, 0.0)
    assert rates.repair_hours == {"host": 3.0, "link": 4.0, "ocs": 5.0, "drain": 6.0}
    assert rates.rerouted_slowdown == load_rates(None).rerouted_slowdown == 1.08  # not a generation's figure
    for name in names():  # the shipped profiles say what they inherit from TPU v4: v4's rates
        assert load_rates(None, shipped(name)) == load_rates(None)
    for path in ("faults.host_per_day", "faults.repair_hours"):
        assert is_assumption(shipped("tpu7x").source(path)) and "inherited from tpu-v4" in shipped("tpu7x").source(path)


def test_fault_draws_are_over_the_generations_components_at_its_rates():
    """Two pods of 144 cubes of 8-chip hosts: 2,304 hosts and 96 OCS. Ten days at 1% and 5% a day: the strike
    counts within 4 sigma of the Poisson means; every machine index below the generation's 8 hosts a cube."""
    gen = unusual()
    fleet = default_fleet(2, None, gen)
    assert draws.components(fleet) == {"host": 2 * 144 * 8, "link": 2 * 144 * 96, "ocs": 96}
    strikes = list(draws.faults(random.Random(7), load_rates(None, gen), fleet, 0.0, 10 * DAY))
    hosts = [s.target for s in strikes if isinstance(s.target, HostId) and s.kind == "host"]
    ocs = [s.target for s in strikes if s.kind == "ocs"]
    assert len(hosts) + len(ocs) == len(strikes)  # no link or drain rate, no such strike
    for count, mean in ((len(hosts), 2304 * 0.01 * 10), (len(ocs), 96 * 0.05 * 10)):
        assert abs(count - mean) < 4 * math.sqrt(mean), (count, mean)
    assert {h.machine for h in hosts} == set(range(8))
    assert all(isinstance(o, OcsId) and 0 <= o.index < 16 for o in ocs)


def test_the_builtin_v4_pod_and_the_tpu_v4_generation_draw_alike():
    rates = load_rates(None)
    builtin = list(draws.faults(random.Random(3), rates, default_fleet(2), 0.0, 30 * DAY))
    v4 = default_fleet(2, None, shipped("tpu-v4"))
    named = list(draws.faults(random.Random(3), load_rates(None, shipped("tpu-v4")), v4, 0.0, 30 * DAY))
    assert builtin == named and len(builtin) > 50


def test_simulate_fleet_strikes_and_repairs_at_the_generations_rates(tmp_path, monkeypatch):
    """Through the use case: a TPU7x fleet of a profile with its own rates strikes about 230 hosts in 10 days
    (at v4's 0.08% it would be 18), and every fault is repaired after the profile's hours."""
    from tpufleet.ops.simulate import run_fleet
    from tpufleet.simulation import fault_response

    gen = unusual()
    workload = tmp_path / "idle.yaml"
    workload.write_text("schema_version: 1\narrival_rate_per_hour: 0\n")
    repairs: list[tuple[str, float]] = []
    real = fault_response.FaultResponse.strike

    def spy(self, fault):
        real(self, fault)
        repairs.append((fault.kind, self.rates.repair_hours[fault.kind]))

    monkeypatch.setattr(fault_response.FaultResponse, "strike", spy)
    result = run_fleet(Options(days=10, seed=5, pods=2, generation=gen, cubes_per_pod=144), workload)
    faults = result.summary["faults"]
    assert abs(faults["host"] - 230.4) < 4 * math.sqrt(230.4) and faults["link"] == faults["drain"] == 0
    assert {(kind, hours) for kind, hours in repairs} == {("host", 3.0), ("ocs", 5.0)}


# ---- the step-time model ----------------------------------------------------------------------------------
def test_a_tpu7x_jobs_ideal_step_uses_tpu7x_flops_and_bandwidth():
    gen = shipped("tpu7x")
    profile = for_generation(default_profile(), gen)
    assert (profile.peak_flops, profile.link_bandwidth) == (2307e12, 100e9)
    shape = parse_shape("4x4x8", twisted=True)
    model = StepModel(8.44425e14, GIB, 0.0533)
    job = JobSpec(shape, duration_hours=1, phase="training", model=model, id="j")
    workload = Workload(arrival_rate_per_hour=0.0, shapes=(), jobs=(job,))
    options = Options(days=0.1, seed=1, generation=gen, cubes_per_pod=144)
    sim = Simulator(workload, replace(load_rates(None, gen), **NO_FAULTS), options, reroute_costs=shipped_costs())
    record = next(r for r in sim.run() if r["type"] == "job")
    ideal = 8.44425e14 / (128 * 2307e12) + collective_time(shape, GIB, profile=profile)
    assert record["ideal_step_s"] == round(options.step_s * ideal / 0.0533, 6)
    v4_ideal = 8.44425e14 / (128 * 275e12) + collective_time(shape, GIB)
    assert ideal < v4_ideal / 2  # 8.4 times the FLOP/s and twice the link bandwidth
    assert sim.fault_response.profile == profile  # a rerouted job's slowdown is modelled on the same figures
    fault = [OcsId("pod0", "x", 0)]
    healthy = collective_time(shape, GIB, profile=profile)
    rerouted = collective_time(shape, GIB, profile=profile, alive=representative(shape, "ocs", "x"))
    factor = slowdown(shape, model, fault, profile, shipped_costs())
    assert factor == pytest.approx(1 + (rerouted - healthy) / 0.0533, rel=1e-12)


def test_a_multislice_jobs_dcn_all_reduce_uses_the_generations_dcn():
    from tpufleet.collectives.dcn import dcn_all_reduce
    from tpufleet.simulation.multislice import dcn_seconds

    shape, gen = parse_shape("4x4x8"), shipped("tpu7x")
    profile = for_generation(default_profile(), gen)
    assert profile.dcn_link().host_bandwidth == 4 * 12.5e9  # 100 Gb/s a chip, 4 chips a host
    expected = dcn_all_reduce(GIB, 3, 32, profile.dcn_link(), True).seconds
    assert dcn_seconds(shape, 3, GIB, True, profile, gen.chips_per_host) == expected
    assert dcn_seconds(shape, 3, GIB, True) == dcn_all_reduce(GIB, 3, 32, default_profile().dcn_link(), True).seconds
    assert expected < dcn_seconds(shape, 3, GIB, True)


# ---- the reroute-cost table, handed in ---------------------------------------------------------------------
def test_the_reroute_table_is_handed_in_and_used_only_for_its_profile():
    table = shipped_costs()
    shape = parse_shape("4x4x8", twisted=True)
    tpu7x = for_generation(default_profile(), shipped("tpu7x"))
    assert reroute._table_terms(shape, "ocs:x", default_profile(), table) is not None
    assert reroute._table_terms(shape, "ocs:x", default_profile(), None) is None
    for pattern in ("healthy", "ocs:x", "link:z"):  # made under TPU v4's 50 GB/s: scaled to TPU7x's 100 GB/s
        scaled = reroute._table_terms(shape, pattern, tpu7x, table)
        alive = None if pattern == "healthy" else representative(shape, *pattern.split(":"))
        modelled_terms = collective_terms(shape, "all-reduce", tpu7x, alive)
        assert scaled is not None and len(scaled) == len(modelled_terms)
        for (a, b), (c, d) in zip(scaled, modelled_terms, strict=True):
            assert a == pytest.approx(c, rel=1e-12) and b == pytest.approx(d, rel=1e-12)
    other = replace(tpu7x, hop_latency=2e-6)
    assert reroute._table_terms(shape, "ocs:x", other, table) is None  # another latency: modelled
    looked_up = reroute.allreduce_seconds(shape, GIB, [OcsId("pod0", "y", 3)], None, table)
    modelled = reroute.allreduce_seconds(shape, GIB, [OcsId("pod0", "y", 3)], None, None)
    assert looked_up == modelled
    with pytest.raises(BadStateFile, match=r"costs\.json: field op: must be all-reduce"):
        costs_from_doc({**table, "op": "all-gather"}, "costs.json")
    with pytest.raises(BadStateFile, match=r"costs\.json: field schema_version: must be 1 \(value True\)"):
        costs_from_doc({**table, "schema_version": True}, "costs.json")  # True == 1 in Python: not a version
    assert "read_text" not in (ROOT / "tpufleet" / "simulation" / "reroute.py").read_text()


# ---- shapes the generation refuses ------------------------------------------------------------------------
def test_a_workload_shape_the_generation_refuses_exits_2_naming_job_shape_and_generation(cli, tmp_path):
    listed = tmp_path / "listed.yaml"
    listed.write_text("schema_version: 1\njobs:\n  - {id: big, shape: 16x16x36, duration_hours: 5}\n")
    out = tmp_path / "events.jsonl"
    args = ("simulate-fleet", "--days", "1", "--pods", "2", "--out", out, "--workload", listed)
    r = cli(*args, "--generation", "tpu-v5p", state=False)
    assert r.code == 2 and not out.exists()
    assert "listed job 0 (big): bad shape 16x16x36 for tpu-v5p: 144 cubes, at most 140" in r.err
    assert cli(*args, "--generation", "tpu7x", state=False).code == 0  # 144 cubes: a TPU7x slice
    mix = tmp_path / "mix.yaml"
    mix.write_text("schema_version: 1\nshapes:\n  - {shape: 4x4x4}\n  - {shape: 4x4x260}\n")
    r = cli("simulate-fleet", "--days", "1", "--workload", mix, "--generation", "tpu7x", state=False)
    assert r.code == 2 and "shape mix entry 1 (4x4x260): bad shape 4x4x260 for tpu7x: a side is over 256" in r.err
    with pytest.raises(BadInput, match="a static pod is a 4x4x4 grid of cubes, a tpu7x pod has 144"):
        Options(days=1, mode="static", generation=shipped("tpu7x"), cubes_per_pod=144)


def test_multislice_jobs_name_the_generation_refusing_their_shape(cli, tmp_path):
    from conftest import Cli

    assert cli("init", "--generation", "tpu7x").code == 0
    for shape, rule in (
        ("6x8x8", "bad shape 6x8x8 for tpu7x: sides must be multiples of 4"),
        ("20x24x28", "bad shape 20x24x28 for tpu7x: 210 cubes, at most 144"),  # not "needs ... machines"
        ("4x4x260", "bad shape 4x4x260 for tpu7x: a side is over 256"),
    ):
        r = cli("allocate", "j", "--shape", shape, "--slices", "2")
        assert r.code == 2 and rule in r.err and "(job 'j', 2 slices)" in r.err, r.err
    assert cli("allocate", "j", "--shape", "8x4x4", "--slices", "2").code == 0  # the canonical order, 4x4x8
    v4 = Cli(cli.capsys, tmp_path / "v4")
    assert v4("init").code == 0
    r = v4("allocate", "j", "--shape", "6x8x8", "--slices", "2")
    assert (
        r.code == 2
        and r.err.strip() == "tpufleet: error: bad shape '6x8x8': sides must all be <= 4 or all be multiples of 4"
    )


# ---- sweep ------------------------------------------------------------------------------------------------
SWEEP = """schema_version: 1
simulation: fleet
seeds: 1
fixed: {generation: tpu7x, days: 0.3, size_mix: {"4x4x4": 3, "16x24x24": 1}}
grid: {spare_cubes: [0, 100]}
"""


def test_a_sweep_over_tpu7x_pods(cli, tmp_path):
    """Two points on a TPU7x pod, serially: spare cubes up to the pod's 144 (100 is over a v4 pod), a
    superpod-sized shape in the mix; each point's saved run equals the use case run directly on TPU7x options."""
    import json

    from tpufleet.ops.simulate import simulate
    from tpufleet.state.sweepstore import load_spec
    from tpufleet.sweep.runs import fleet_inputs, fleet_metrics

    spec = tmp_path / "tpu7x.yaml"
    spec.write_text(SWEEP)
    r = cli("sweep", spec, "--out", tmp_path / "out", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["points_finished"] == 2 and not r.json["failed"]
    sweep = load_spec(spec)
    for point in sweep.points:
        workload, rates, options = fleet_inputs(point.params, {}, sweep.seeds[0], sweep.shipped)
        assert options.generation is not None and options.generation.name == "tpu7x" and options.cubes_per_pod == 144
        assert rates == load_rates(None, shipped("tpu7x"))
        direct = fleet_metrics(simulate(workload, rates, options).summary)
        saved = json.loads((tmp_path / "out" / "points" / f"{point.key}.json").read_text())
        assert saved["runs"] == [direct]
    spec.write_text(SWEEP.replace("[0, 100]", "[0, 144]"))
    r = cli("sweep", spec, "--out", tmp_path / "o2", "--serial", state=False)
    assert r.code == 2 and "bad spare cubes 144: must be a number from 0 to 143" in r.err
    spec.write_text(SWEEP.replace("tpu7x", "tpu-v5p"))
    r = cli("sweep", spec, "--out", tmp_path / "o3", "--serial", state=False)
    assert (
        r.code == 2 and "shape mix entry 1 (16x24x24): bad shape 16x24x24 for tpu-v5p: 144 cubes, at most 140" in r.err
    )
    spec.write_text(SWEEP.replace("tpu7x", "tpu9"))
    r = cli("sweep", spec, "--out", tmp_path / "o4", "--serial", state=False)
    assert r.code == 2 and "field generation" in r.err and "unknown generation 'tpu9'" in r.err


def test_an_availability_sweep_on_tpu7x_pods(cli, tmp_path):
    from scipy.stats import binom

    spec = tmp_path / "a.yaml"
    text = "schema_version: 1\nsimulation: availability\nfixed: {generation: tpu7x, trials: 300}\ngrid: {cubes: [[130, 144]]}\n"
    spec.write_text(text)
    r = cli("sweep", spec, "--out", tmp_path / "out", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    metrics = r.json["points"][0]["metrics"]
    for k in (130, 144):
        assert metrics[f"reconfigurable_ft_exact.{k}"]["mean"] == pytest.approx(
            float(binom.sf(k - 1, 144, 0.99**16)), rel=1e-12
        )
    assert not any(name.startswith("static.") for name in metrics)  # no 4x4x4 static twin of a 144-cube pod
    spec.write_text(text.replace("[[130, 144]]", "[145]"))
    r = cli("sweep", spec, "--out", tmp_path / "o2", "--serial", state=False)
    assert r.code == 2 and "bad cubes 145: a tpu7x pod has 144 cubes" in r.err


# ---- goodput --capacity state -------------------------------------------------------------------------------
def test_capacity_state_counts_each_pods_chips_under_its_generation(cli, tmp_path):
    from tpufleet.ops.goodput import fleet_capacity

    mixed = fleet_of([(None, None), (None, shipped("tpu7x")), (None, shipped("tpu-v5p")), (8, shipped("tpu7x"))])
    assert fleet_capacity(mixed) == [("tpu-v4", 4096), ("tpu7x", 9216 + 8 * 64), ("tpu-v5p", 8960)]
    assert fleet_capacity(default_fleet(2)) == [("tpu-v4", 8192)]
    log = tmp_path / "run.jsonl"
    assert cli("simulate-fleet", "--days", "1", "--generation", "tpu7x", "--out", log, state=False).code == 0
    assert cli("init", "--generation", "tpu7x").code == 0
    state = cli("goodput-report", log, "--capacity", "state", "-o", "json").json["fleet"]
    given = cli("goodput-report", log, "--capacity", "tpu7x=9216", "-o", "json").json["fleet"]
    assert state == given and state["capacity_basis"] == "flag"
    span = state["capacity_chip_s"] / 9216
    assert span > 0.9 * DAY  # a superpod's 9,216 chips over the log's span


@pytest.mark.parametrize(("generation", "label"), [(None, "tpu-v4-podslice"), ("tpu-v5p", "tpu-v5p-slice")])
def test_capacity_state_covers_jobs_named_by_their_gke_accelerator_label(cli, tmp_path, generation, label):
    """A log from a GKE cluster names the accelerator by its node label: with --capacity state (the inventory's
    chips under the generation's name) every such job was left out, the fleet's SG 0 "no capacity for
    'tpu-v5p-slice'"; the inventory's chips now count under the name the jobs use."""
    t = 1767571200
    job = {"type": "job", "job": "j", "accelerator": label, "chips": 64, "ideal_step_s": 1}
    lines = [
        job,
        *({"type": "event", "job": "j", "time": t + dt, "event": e} for dt, e in ((0, "job_start"), (9, "job_end"))),
    ]
    log = tmp_path / "gke.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli("init", *(["--generation", generation] if generation else [])).code == 0
    chips = 8960 if generation else 4096
    state = cli("goodput-report", log, "--capacity", "state", "-o", "json").json["fleet"]
    given = cli("goodput-report", log, "--capacity", f"{label}={chips}", "-o", "json").json["fleet"]
    assert state == given and state["jobs"] == 1 and state["accelerators_without_capacity"] == []


# ---- the README's table -------------------------------------------------------------------------------------
def test_the_table_gives_every_figure_with_its_source():
    gens = [shipped(name) for name in names()]
    text = markdown_table(gens)
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0] == "| figure | tpu-v4 | tpu-v5p | tpu7x |" and len(rows) == 1 + len(FIGURES) + 1
    notes = {line.split("] ", 1)[0][3:]: line.split("] ", 1)[1] for line in text.splitlines() if line.startswith("- [")}
    for column, gen in enumerate(gens, start=1):
        cells = [row.split(" | ")[column] for row in rows[1:-1]]
        marked = sum(" **A** [" in cell for cell in cells)
        assert marked == len(gen.assumptions())
        for path, cell in zip(FIGURES, cells, strict=True):
            note = cell.rsplit("[", 1)[1].rstrip("] |")
            assert notes[note] == " ".join(gen.source(path).split())
    assert rows[4].startswith("| chips per pod | 4,096 [") and "| 8,960 [" in rows[4] and "| 9,216 [" in rows[4]
    assert rows[-1].endswith("| 186 (5 twisted); in any order 800 (15 twisted) | 414 (7 twisted) | 432 (7 twisted) |")


def test_the_readme_table_is_the_rendered_one():
    from tpufleet.cli.generations_table import render

    held = between_markers((ROOT / "README.md").read_text())
    if held is None:
        pytest.skip("README.md has no <!-- generations-table:start --> / <!-- generations-table:end --> markers yet")
    assert held == render(), "README's generations table differs: paste `python -m tpufleet.cli.generations_table`"


def test_between_markers():
    assert (
        between_markers("a\n<!-- generations-table:start -->\n\n| x |\n\n<!-- generations-table:end -->\n") == "| x |"
    )
    assert between_markers("<!-- generations-table:end --> <!-- generations-table:start -->") is None
    assert between_markers("no markers") is None


def test_spare_cubes_are_bounded_by_the_generations_pod(cli):
    """`--spare-cubes` takes up to a pod's cubes minus one: 63 on the built-in TPU v4 pod, 143 on a TPU7x pod."""
    from helpers import one_line

    line = one_line(cli("simulate-fleet", "--days", "0.1", "--spare-cubes", "64"), 2)
    assert "--spare-cubes: '64'" in line and "64 cubes" in line
    r = cli("simulate-fleet", "--days", "0.1", "--generation", "tpu7x", "--spare-cubes", "143", "-o", "json")
    assert r.code == 0, r.err
    assert r.json["spare_cubes"] == 143
    assert one_line(cli("simulate-fleet", "--days", "0.1", "--generation", "tpu7x", "--spare-cubes", "144"), 2)
