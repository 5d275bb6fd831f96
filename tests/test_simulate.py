import json
import math
import random
from dataclasses import replace

import pytest

from tpufleet import allocation
from tpufleet.constants import OPTICAL_LINKS_PER_CUBE, POLARITIES
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.ids import LinkId
from tpufleet.model import check_known, component_counts, default_fleet
from tpufleet.ops.simulate import summarize
from tpufleet.shapes import parse_shape
from tpufleet.simulation import (
    FaultRates,
    JobSpec,
    Options,
    Simulator,
    Workload,
    draws,
)
from tpufleet.state.reroutecosts import shipped_costs
from tpufleet.state.siminputs import SHIPPED_RATES, default_rates, load_rates, load_workload

HIGH_RATES = """schema_version: 1
host_per_day: 0.002
link_per_day: 0.0005
ocs_per_day: 0.01
repair_hours: {host: 8.0, link: 4.0, ocs: 2.0}
rerouted_slowdown: 1.08
"""


def run(workload, rates, **options):
    """A simulation as `simulate-fleet` runs it: a rerouted job's slowdown from the shipped reroute-cost table
    (modelling each term instead routes every fault's representative again: test_simulate_reroute.py)."""
    sim = Simulator(workload, rates, Options(**options), reroute_costs=shipped_costs())
    records = sim.run()
    return sim, records, summarize(records, sim)


def single_job(shape="8x8x8"):
    job = JobSpec(parse_shape(shape), duration_hours=100000, phase="training")
    return Workload(arrival_rate_per_hour=0.0, shapes=(), checkpoint_write_s=60.0, jobs=(job,))


def only_rates(**rates):
    """The shipped rates with every fault and drain rate zero except the ones given."""
    zero = {"host_per_day": 0.0, "link_per_day": 0.0, "ocs_per_day": 0.0, "drain_per_day": 0.0}
    return replace(default_rates(), **{**zero, **rates})


def test_same_seed_same_events_different_seed_different():
    w, r = load_workload(None), load_rates(None)
    _, a, _ = run(w, r, days=3, seed=7)
    _, b, _ = run(w, r, days=3, seed=7)
    _, c, _ = run(w, r, days=3, seed=8)
    assert json.dumps(a) == json.dumps(b) and json.dumps(a) != json.dumps(c)


def model_rg(n_hosts, rate_per_day, u0_s, interval_s, write_s):
    nr = n_hosts * rate_per_day / 86400.0
    return (1 - nr * (u0_s + interval_s / 2)) / (1 + write_s / interval_s)


def test_one_job_matches_the_analytic_model():
    rates = only_rates(host_per_day=2.0 / 128)
    u0, T = 600.0, 3600.0
    rgs = []
    for seed in range(3):
        _, _, s = run(single_job(), rates, days=100, seed=seed, checkpoint_interval_s=T, restart_overhead_s=u0)
        rgs.append(s["rg"])
    expected = model_rg(128, 2.0 / 128, u0, T, 60.0)
    assert 0.9 < expected < 0.95
    assert sum(rgs) / len(rgs) == pytest.approx(expected, rel=0.05)


def test_best_simulated_interval_is_near_youngs():
    rates = only_rates(host_per_day=2.0 / 128)
    w = 60.0
    mtbf = 86400.0 / 2.0
    young = math.sqrt(2 * w * mtbf)  # ~38 minutes
    results = {}
    for minutes in (10, 20, 40, 80, 160):
        options = {"days": 60, "checkpoint_interval_s": minutes * 60.0, "restart_overhead_s": 600.0}
        rg = [run(single_job(), rates, seed=s, **options)[2]["rg"] for s in (0, 1)]
        results[minutes] = sum(rg) / 2
    best = max(results, key=lambda minutes: results[minutes])
    assert best in (20, 40, 80)
    assert abs(math.log(best * 60 / young)) <= math.log(2.2), (results, young)
    assert results[best] > results[10] and results[best] > results[160]


def test_modes_order_as_the_paper_says(tmp_path):
    rates_file = tmp_path / "rates.yaml"
    rates_file.write_text(HIGH_RATES)
    w, r = load_workload(None), load_rates(rates_file)
    summaries = {m: run(w, r, days=12, seed=3, mode=m)[2] for m in ("static", "reconfigurable", "reconfigurable-ft")}
    st, rc, ft = summaries["static"], summaries["reconfigurable"], summaries["reconfigurable-ft"]
    assert ft["rg"] >= rc["rg"] > st["rg"]
    for size in ("large", "extra-large"):  # multi-cube jobs wait less for any cubes than for a contiguous box
        seg = {m: next(x for x in s["segments"] if x["value"] == size) for m, s in summaries.items()}
        assert seg["reconfigurable-ft"]["sg"] >= seg["reconfigurable"]["sg"] * 0.98
        assert seg["reconfigurable"]["sg"] > seg["static"]["sg"]
    assert ft["disruptions"]["eviction"] < rc["disruptions"]["eviction"]  # faults rerouted instead
    assert ft["reroutes"] > 0


def test_cli_feeds_goodput_report(cli, tmp_path, monkeypatch):
    out = tmp_path / "events.jsonl"
    r = cli("simulate-fleet", "--days", "2", "--out", out, "--seed", "4", "-o", "json", state=False)
    assert r.code == 0, r.err
    s = r.json
    assert s["jobs_submitted"] > 20 and s["events"] == len(out.read_text().splitlines())
    g = cli("goodput-report", out, "-o", "json", state=False).json
    assert g["fleet"]["rg"] == s["rg"] and g["fleet"]["mpg"] == s["mpg"]
    assert g["fleet"]["sg"] == s["sg"] and g["fleet"]["pg"] == s["pg"] and s["out"] == str(out)
    monkeypatch.chdir(tmp_path)  # without --out nothing is written, here or anywhere
    alone = cli("simulate-fleet", "--days", "2", "--seed", "4", "-o", "json", state=False)
    assert alone.code == 0, alone.err
    assert alone.json == {**s, "out": None} and sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl"]
    text = cli("simulate-fleet", "--days", "0.5", "--seed", "4", state=False)
    assert text.code == 0 and "not written (--out FILE" in text.out
    bad = tmp_path / "w.yaml"
    bad.write_text("schema_version: 1\nshapes:\n  - {shape: 5x5x5, weight: 1}\n")
    r = cli("simulate-fleet", "--days", "1", "--out", out, "--workload", bad, state=False)
    assert r.code == 2 and "shapes.0.shape" in r.err and "w.yaml" in r.err
    bad.write_text("schema_version: 1\narrival_rate_per_hour: fast\n")
    r = cli("simulate-fleet", "--days", "1", "--out", out, "--workload", bad, state=False)
    assert r.code == 2 and "arrival_rate_per_hour" in r.err


@pytest.mark.parametrize("name", ["events.jsonl.gz", "EVENTS.JSONL.GZ"])
def test_out_named_gz_is_gzip_compressed_and_reads_back(cli, tmp_path, name):
    """An events file named .gz is written gzip-compressed (it was plain JSON lines under that name), holds the
    same lines as a plain one, and goodput-report reads it back to the summary's figures."""
    import gzip

    packed, plain = tmp_path / name, tmp_path / "events.jsonl"
    r = cli("simulate-fleet", "--days", "0.5", "--out", packed, "--seed", "4", "-o", "json", state=False)
    assert r.code == 0, r.err
    s = r.json
    assert packed.read_bytes()[:2] == b"\x1f\x8b" and s["out"] == str(packed)
    assert cli("simulate-fleet", "--days", "0.5", "--out", plain, "--seed", "4", state=False).code == 0
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    assert s["events"] == len(plain.read_text().splitlines())
    g = cli("goodput-report", packed, "-o", "json", state=False)
    assert g.code == 0, g.err
    fleet = g.json["fleet"]
    assert (fleet["sg"], fleet["rg"], fleet["pg"], fleet["mpg"]) == (s["sg"], s["rg"], s["pg"], s["mpg"])
    assert fleet["jobs"] == s["jobs_submitted"]


def test_planned_drains_move_jobs_without_losing_work():
    from tpufleet.goodput import eventrecords, events
    from tpufleet.goodput.pipeline import from_log

    rates = only_rates(drain_per_day=2.0 / 128)
    _, records, s = run(single_job(), rates, days=30, seed=1, checkpoint_interval_s=3600.0, restart_overhead_s=600.0)
    assert s["faults"]["drain"] > 20 and s["drain_moves"] > 20 and s["disruptions"]["eviction"] == 0
    log = events.Log()
    for i, rec in enumerate(records):
        eventrecords.add_record(log, rec, "<sim>", i + 1)
    fleet = from_log(log)["fleet"]
    assert fleet["badput_chip_s"]["wasted_progress_from_disruption"] < 1.0  # chip-seconds, over dozens of drains
    assert fleet["badput_chip_s"]["checkpoint_restore"] > 0


def test_link_faults_strike_each_optical_link_at_the_daily_rate():
    fleet = default_fleet()
    links = component_counts(fleet)["link"]
    assert links == len(fleet.cubes) * OPTICAL_LINKS_PER_CUBE  # 6144 in a pod, both polarities
    rate, days = 0.01, 5
    strikes = list(draws.faults(random.Random(0), only_rates(link_per_day=rate), fleet, 0.0, days * 86400.0))
    expected = links * rate * days  # ~307; one strike per cable pair would give half that
    assert abs(len(strikes) - expected) < 4 * math.sqrt(expected)
    links_hit = [s.target for s in strikes if s.kind == "link" and isinstance(s.target, LinkId)]
    assert len(links_hit) == len(strikes)
    assert {link.polarity for link in links_hit} == set(POLARITIES)
    assert [check_known(fleet, link) for link in links_hit] == links_hit


def test_the_shipped_rates_are_the_only_defaults(tmp_path):
    import yaml

    shipped = yaml.safe_load(SHIPPED_RATES.read_text())
    rates = default_rates()
    assert rates.drain_per_day == shipped["drain_per_day"] > 0 and rates.repair_hours == shipped["repair_hours"]
    partial = tmp_path / "rates.yaml"
    partial.write_text("schema_version: 1\nhost_per_day: 0.5\nrepair_hours: {host: 1}\n")
    mine = load_rates(partial)
    assert mine == replace(rates, host_per_day=0.5, repair_hours={**rates.repair_hours, "host": 1.0})
    with pytest.raises(TypeError):
        FaultRates()  # type: ignore[call-arg]  # no second copy of the numbers


def test_listed_jobs_are_checked_when_the_workload_is_read(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("schema_version: 1\njobs:\n  - {shape: 2x2x3, duration_hours: 1}\n")
    with pytest.raises(BadStateFile, match=r"w\.yaml: field jobs\.0\.shape: not an allocatable"):
        load_workload(path)
    path.write_text(
        "schema_version: 1\npriorities: [a, b]\njobs:\n  - {shape: 4x4x4, duration_hours: 1, priority_rank: 2}\n"
    )
    with pytest.raises(BadStateFile, match=r"field jobs\.0\.priority_rank: there are only 2 priorities"):
        load_workload(path)
    with pytest.raises(BadInput, match="bad mode"):
        Options(days=1, mode="elastic")  # type: ignore[arg-type]


def test_priority_weights_without_priorities_are_refused_not_ignored(cli, tmp_path):
    """The default workload has one priority: two weights weigh nothing given, and were dropped silently."""
    path = tmp_path / "w.yaml"
    path.write_text("schema_version: 1\npriority_weights: [1, 2]\n")
    r = cli("simulate-fleet", "--days", "0.1", "--workload", path, state=False)
    assert r.code == 2
    assert "w.yaml: field priority_weights: given without the priorities they weigh" in r.err


@pytest.mark.parametrize("key", ["shapes", "jobs"])
def test_an_empty_list_of_shapes_or_jobs_is_refused(cli, tmp_path, key):
    """`shapes: []` ran the default 4x4x4 mix; `jobs: []` turned the random arrivals off: both silently."""
    path = tmp_path / "w.yaml"
    path.write_text(f"schema_version: 1\narrival_rate_per_hour: 2.0\n{key}: []\n")
    r = cli("simulate-fleet", "--days", "0.1", "--workload", path, state=False)
    assert r.code == 2
    assert f"w.yaml: field {key}: an empty list: list at least one, or leave {key} out" in r.err


def test_a_priority_listed_twice_is_refused(cli, tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("schema_version: 1\npriorities: [prod, batch, prod]\n")
    r = cli("simulate-fleet", "--days", "0.1", "--workload", path, state=False)
    assert r.code == 2
    assert "w.yaml: field priorities: this priority is listed twice (value 'prod')" in r.err


def test_a_listed_id_with_a_control_character_is_refused(tmp_path):
    """'x\\x1f1' is the simulator's key of slice 1 of a multislice job 'x': such a job took that slice's place,
    leaving 'x''s second cube free for another job while 'x' ran on it."""
    path = tmp_path / "w.yaml"
    path.write_text(
        "schema_version: 1\njobs:\n  - {id: x, shape: 4x4x4, slices: 2, duration_hours: 5}\n"
        '  - {id: "x\\x1f1", shape: 4x4x4, duration_hours: 5, arrival_hours: 0.1}\n'
    )
    with pytest.raises(BadStateFile, match=r"w\.yaml: field jobs\.1\.id: holds a control character"):
        load_workload(path)


def test_fit_shortcuts_change_the_speed_not_the_events():
    workload, rates = load_workload(None), load_rates(None)
    fast = Simulator(workload, rates, Options(days=1, seed=2), reroute_costs=shipped_costs()).run()
    plain = Simulator(
        workload, rates, Options(days=1, seed=2), fit_shortcuts=False, reroute_costs=shipped_costs()
    ).run()
    assert fast == plain


def test_a_bug_in_allocation_is_not_taken_for_no_room(monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(allocation, "allocate", broken)
    with pytest.raises(ValueError, match="a bug"):
        Simulator(single_job("2x2x1"), only_rates(), Options(days=1), reroute_costs=shipped_costs()).run()


def test_each_pod_gets_the_workloads_load():
    from tpufleet.simulation.scale import fleet_workload

    w, r = load_workload(None), load_rates(None)
    assert fleet_workload(w, Options(days=1, pods=4)).arrival_rate_per_hour == 4 * w.arrival_rate_per_hour
    assert fleet_workload(w, Options(days=1, pods=2, load_per_pod=0.5)) == replace(w)
    one = Simulator(w, r, Options(days=2, seed=1), reroute_costs=shipped_costs()).run()
    four = Simulator(w, r, Options(days=2, seed=1, pods=4), reroute_costs=shipped_costs()).run()
    jobs = [sum(1 for rec in records if rec["type"] == "job") for records in (one, four)]
    assert 3 * jobs[0] < jobs[1] < 5 * jobs[0]


def test_placement_keeps_its_machine_count_and_crossconnects_per_pod():
    sim = Simulator(
        load_workload(None), load_rates(None), Options(days=2, seed=4, pods=2), reroute_costs=shipped_costs()
    )
    sim.run()
    assert sim.placement.used == allocation.machine_usage(sim.placement.placed.values())
    for pod, state in sim.placement.ocs_by_pod.items():
        assert all(ocs.pod == pod for ocs in state)


def test_spare_cubes_are_kept_for_jobs_a_fault_displaced():
    rates = only_rates(host_per_day=0.02)
    w = load_workload(None)
    summaries = {spares: run(w, rates, days=4, seed=2, spare_cubes=spares)[2] for spares in (0, 8)}
    without, with_spares = summaries[0], summaries[8]
    assert with_spares["spare_cubes"] == 8 and with_spares["disruptions"]["failure"] > 5
    # Displaced jobs restart at once on the spares; new jobs wait longer for the smaller pool.
    assert with_spares["restart_wait_hours"]["large"] == 0 < without["restart_wait_hours"]["large"]
    assert with_spares["wait_hours"]["large"] > without["wait_hours"]["large"]
    assert with_spares["sg"] < without["sg"]
    with pytest.raises(BadInput, match="spare cubes"):
        Options(days=1, spare_cubes=64)


def test_fault_rates_scale_per_kind():
    from tpufleet.simulation.scale import parse_factors, scale_rates

    rates = default_rates()
    assert parse_factors("2") == {"host": 2.0, "link": 2.0, "ocs": 2.0, "drain": 2.0}
    scaled = scale_rates(rates, parse_factors("host=3,ocs=0"))
    assert scaled == replace(rates, host_per_day=3 * rates.host_per_day, ocs_per_day=0.0)
    for bad in ("gpu=2", "host=fast", "host=-1", "host=2000"):
        with pytest.raises(BadInput):
            scale_rates(rates, parse_factors(bad))


@pytest.mark.parametrize("scale", ["host=50,host=0", "host=2, ocs=1,host =2"])
def test_a_fault_kind_given_twice_is_refused(cli, scale):
    """Which factor a repeated kind would take cannot be told: refused before the run, as --capacity refuses a
    repeated accelerator."""
    r = cli("simulate-fleet", "--days", "0.05", "--fault-scale", scale, state=False)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "bad option --fault-scale" in r.err and "kind 'host' is given twice" in r.err


def test_cli_takes_the_new_knobs(cli, tmp_path):
    out = tmp_path / "e.jsonl"
    args = ("--days", "0.5", "--out", out, "--pods", "2", "--load-per-pod", "0.5", "--spare-cubes", "2")
    r = cli("simulate-fleet", *args, "--fault-scale", "host=2", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["load_per_pod"] == 0.5 and r.json["spare_cubes"] == 2 and "large" in r.json["wait_hours"]
    r = cli("simulate-fleet", *args, "--fault-scale", "disk=2", state=False)
    assert r.code == 2 and "bad fault kind 'disk'" in r.err


def test_grouped_crossconnect_planning_gives_the_plain_plans_events(monkeypatch):
    from tpufleet import xconnect
    from tpufleet.simulation import placement

    rates = only_rates(ocs_per_day=0.05, host_per_day=0.005)  # down OCS make a dimension's OCS differ
    fast = Simulator(load_workload(None), rates, Options(days=2, seed=3, pods=2), reroute_costs=shipped_costs()).run()

    def plain_plan(self, shape, alloc, state, health, rerouting):
        return xconnect.plan(shape, self.fleet, alloc.coords, state, health, rerouting)

    monkeypatch.setattr(placement.Placement, "_plan", plain_plan)
    monkeypatch.setattr(placement, "_apply", xconnect.apply)
    assert (
        Simulator(load_workload(None), rates, Options(days=2, seed=3, pods=2), reroute_costs=shipped_costs()).run()
        == fast
    )


def test_the_event_writer_gives_the_json_encoders_bytes():
    from tpufleet.simulation.log import jsonl

    job = JobSpec(parse_shape("4x4x4"), duration_hours=30, id='odd "id" \u00e9\\', phase="training")
    workload = replace(load_workload(None), jobs=(job,))
    records = Simulator(
        workload, only_rates(host_per_day=0.05), Options(days=1, seed=1), reroute_costs=shipped_costs()
    ).run()
    expected = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
    assert jsonl(records) == expected and b'"odd \\"id\\"' in expected


def test_a_static_job_waits_in_place_until_every_machine_of_its_block_is_back():
    """Static pod: a machine of the job's cube fails at 1 h (repaired at 9 h) and, while the job waits on its
    block, another fails at 2 h (repaired at 10 h) and a third is drained at 3 h (back at 7 h): the job restarts
    at 10 h, not at 9 h on a machine still down."""
    from typing import Literal

    from tpufleet.constants import HOUR
    from tpufleet.ids import HostId
    from tpufleet.simulation.events import FaultStrike

    sim = Simulator(single_job("4x4x4"), only_rates(), Options(days=1, seed=0, mode="static"))
    cube = "c00"
    strikes: tuple[tuple[int, Literal["host", "drain"], int], ...] = ((1, "host", 0), (2, "host", 1), (3, "drain", 2))
    for hours, kind, machine in strikes:
        sim.queue.push(FaultStrike(sim.start + hours * HOUR, kind, HostId(cube, machine)))
    records = sim.run()
    assert sim.jobs[0].placed.cubes == (cube,)
    starts = [(r["time"] - sim.start) / HOUR for r in records if r.get("event") == "job_start"]
    assert starts == [0.0, pytest.approx(10.0)]
    assert sim.placement.machines_out == {}
