"""tpufleet sweep, serially (no Dask needed): spec checks, seeds, statistics, outputs, failures and resume."""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import scipy.stats

from tpufleet.ops import sweep as ops_sweep
from tpufleet.ops.simulate import simulate
from tpufleet.state.siminputs import shipped_inputs
from tpufleet.state.sweepstore import load_spec
from tpufleet.sweep import backends, spec, stats
from tpufleet.sweep.runs import fleet_inputs, fleet_metrics

ROOT = Path(__file__).resolve().parents[1]
SMALL = """schema_version: 1
simulation: fleet
seeds: 2
seed: 5
fixed: {days: 0.5}
plot: {metric: rg, young_daly_for: 8x8x8}
grid:
  checkpoint_interval_min: [30, 120]
  fault_scale: [1, 3]
"""


def write(tmp_path, text, name="spec.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def sweep_json(out):
    doc = json.loads((out / "sweep.json").read_text())
    doc.pop("files")
    return doc


def test_interval_is_students_t_as_scipy_gives_it():
    for values in ([0.91, 0.93, 0.95, 0.92], [1.0, 2.0], [3.5, 3.5, 3.5], [0.2, 0.9, 0.4, 0.7, 0.1, 0.3]):
        got = stats.interval(values)
        mean = statistics.fmean(values)
        if statistics.stdev(values) == 0:
            assert got["low"] == got["high"] == mean
            continue
        low, high = scipy.stats.t.interval(0.95, len(values) - 1, loc=mean, scale=scipy.stats.sem(values))
        assert got["mean"] == pytest.approx(mean) and got["n"] == len(values)
        assert got["low"] == pytest.approx(low, rel=1e-12) and got["high"] == pytest.approx(high, rel=1e-12)
    assert stats.interval([0.5]) == {"mean": 0.5, "low": None, "high": None, "n": 1}
    assert stats.summarize([{"pg": None, "rg": 0.9}, {"pg": 0.5, "rg": 0.7}])["pg"]["n"] == 1


def test_seeds_and_keys_come_from_the_spec(tmp_path):
    a = load_spec(write(tmp_path, SMALL))
    b = load_spec(write(tmp_path, SMALL, "copy.yaml"))
    assert a.seeds == b.seeds == (spec.derive_seed(5, 0), spec.derive_seed(5, 1))
    assert [p.key for p in a.points] == [p.key for p in b.points]
    assert len({p.key for p in a.points}) == 4
    assert [(p.params["checkpoint_interval_min"], p.params["fault_scale"]) for p in a.points] == [
        (30, 1), (30, 3), (120, 1), (120, 3),
    ]  # fmt: skip
    other = load_spec(write(tmp_path, SMALL.replace("seed: 5", "seed: 6"), "other.yaml"))
    assert other.seeds != a.seeds and other.points[0].key != a.points[0].key


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ("  bogus_knob: [1, 2]\n", "grid.bogus_knob"),
        ("  days: []\n", "grid.days"),
        ("  arrival_rate_per_hour: [1, -2]\n", "grid.arrival_rate_per_hour.1"),
        ("  fault_scale_x: [1]\n", "grid.fault_scale_x"),
        ("  mode: [elastic]\n", "grid.mode.0"),
    ],
)
def test_a_bad_spec_exits_2_naming_the_key_before_any_work(cli, tmp_path, change, field):
    path = write(tmp_path, SMALL + change)
    out = tmp_path / "out"
    r = cli("sweep", path, "--out", out, "--serial", state=False)
    assert r.code == 2, r.err
    assert field in r.err and "spec.yaml" in r.err and len(r.err.strip().splitlines()) == 1
    assert not out.exists()  # nothing started


@pytest.mark.parametrize("cubes", ["[8, 8]", "[8, 50, 8.0]"])
def test_an_availability_point_naming_a_slice_size_twice_is_refused(cli, tmp_path, cubes):
    """`simulate-availability --cubes 8,8` is refused (a size given twice); a sweep point's `cubes: [8, 8]` ran,
    its figures for the size once. It is bad input in the spec as on the command line: exit 2, before any run."""
    text = f"schema_version: 1\nsimulation: availability\nfixed: {{trials: 10}}\npoints:\n  - {{cubes: {cubes}}}\n"
    out = tmp_path / "out"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2 and "points.0.cubes" in r.err and "spec.yaml" in r.err, r.err
    assert not out.exists()


def test_the_defaults_a_point_leaves_out_are_the_ones_the_readme_gives(tmp_path):
    """README said a point leaves out "what the command defaults to"; an availability point without `cubes` ran
    1, 8, 16, 32, 50 and 64 (not simulate-availability's sizes, on a TPU7x pod not up to its 144 cubes) and a
    fleet point's `days`, which simulate-fleet requires, was 30. The README now says so; this holds the two equal."""
    text = "schema_version: 1\nsimulation: availability\ngrid: {generation: [tpu-v4, tpu7x]}\n"
    loaded = load_spec(write(tmp_path, text))
    assert [p.params["cubes"] for p in loaded.points] == [[1, 8, 16, 32, 50, 64]] * 2
    fleet = load_spec(write(tmp_path, "schema_version: 1\nsimulation: fleet\ngrid: {pods: [1]}\n", "f.yaml"))
    assert fleet.points[0].params["days"] == 30
    words = " ".join((ROOT / "README.md").read_text().split())
    assert "a fleet point's `days` (which `simulate-fleet` requires) is 30" in words
    assert "an availability point's `cubes` are 1, 8, 16, 32, 50 and 64 whatever its generation" in words


def test_an_availability_point_is_its_sizes_in_any_order(cli, tmp_path):
    """`cubes: [8, 50]` and `cubes: [50, 8]` simulate the same sizes (as `--cubes 50,8` does 8 and 50) but were
    two points, run twice with the same figures under two resume files; a spec giving both is now refused as a point
    given twice, and a point's sizes are kept in ascending order."""
    head = "schema_version: 1\nsimulation: availability\nfixed: {trials: 10}\n"
    loaded = load_spec(write(tmp_path, head + "points:\n  - {cubes: [50, 8]}\n"))
    assert [p.params["cubes"] for p in loaded.points] == [[8, 50]]
    for text in ("points:\n  - {cubes: [8, 50]}\n  - {cubes: [50, 8]}\n", "grid: {cubes: [[8, 50], [50, 8]]}\n"):
        out = tmp_path / "out"
        r = cli("sweep", write(tmp_path, head + text), "--out", out, "--serial", state=False)
        assert r.code == 2 and "points 0 and 1 are the same" in r.err, r.err
        assert not out.exists()


def test_other_bad_specs(cli, tmp_path):
    cases = {
        "schema_version: 1\nsimulation: fleet\ngrid: {}\n": "field grid: nothing to sweep",
        "schema_version: 1\nsimulation: fleet\nfixed: {days: 3650, pods: 16}\ngrid: {seeds_x: [1]}\n": "grid.seeds_x",
        "schema_version: 1\nsimulation: fleet\ngrid: {days: [3650]}\nfixed: {pods: 16}\n": "simulation too large",
        "schema_version: 1\nsimulation: fleet\ngrid: {fault_scale: [{host: -1}]}\n": "grid.fault_scale.0",
        # simulate-fleet refuses --days 0.005: a point it would refuse is refused too (it ran, its figures empty)
        "schema_version: 1\nsimulation: fleet\ngrid: {days: [0.0001]}\n": "grid.days.0",
        "schema_version: 1\nsimulation: fleet\ngrid: {size_mix: [{5x5x5: 1}]}\n": "bad shape",
        "schema_version: 1\nsimulation: fleet\ngrid: {workload: [missing.yaml]}\n": "missing.yaml",
        "schema_version: 1\nsimulation: availability\ngrid: {checkpoint_interval_min: [1]}\n": "unknown availability",
    }
    for text, expected in cases.items():
        r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", state=False)
        assert r.code == 2 and expected in r.err, (text, r.err)
    r = cli("sweep", write(tmp_path, SMALL), "--out", tmp_path / "no" / "such", "--serial", state=False)
    assert r.code == 2 and "does not exist" in r.err
    (tmp_path / "file").write_text("")
    r = cli("sweep", write(tmp_path, SMALL), "--out", tmp_path / "file", "--serial", state=False)
    assert r.code == 2 and "not a directory" in r.err


def test_a_serial_sweep_writes_json_csv_plot_and_its_numbers_are_the_simulations(cli, tmp_path):
    out = tmp_path / "out"
    r = cli("sweep", write(tmp_path, SMALL), "--out", out, "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    doc = r.json
    assert doc["executor"] == {"kind": "serial", "workers": 1} and doc["points_finished"] == 4
    assert r.err == ""  # no progress bar when stderr is not a terminal
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    csv_lines = (out / "sweep.csv").read_text().splitlines()
    assert len(csv_lines) == 5 and csv_lines[0].startswith("point,checkpoint_interval_min,fault_scale,sg_mean")
    sweep = load_spec(write(tmp_path, SMALL))
    point = sweep.points[3]  # 120 minutes, 3x the fault rates
    direct = [
        fleet_metrics(simulate(*fleet_inputs(point.params, {}, seed, shipped_inputs())).summary) for seed in sweep.seeds
    ]
    saved = json.loads((out / "points" / f"{point.key}.json").read_text())
    assert saved["runs"] == direct
    assert doc["points"][3]["metrics"]["rg"] == stats.interval(
        [float(d["rg"] or 0) for d in direct], stats.bounds("rg")
    )
    assert doc["points"][3]["params"]["fault_scale"] == 3


def test_a_failing_point_is_reported_and_the_rest_finish_then_resume_runs_only_it(cli, tmp_path, monkeypatch):
    real = ops_sweep._fleet

    def flaky(params, inputs, seed, keep_events, shipped):
        if params["checkpoint_interval_min"] == 120 and params["fault_scale"] == 1:
            from tpufleet.errors import Refused

            raise Refused("no room for this point")
        return real(params, inputs, seed, keep_events, shipped)

    monkeypatch.setattr(ops_sweep, "_fleet", flaky)
    path, out = write(tmp_path, SMALL), tmp_path / "out"
    r = cli("sweep", path, "--out", out, "--serial", "-o", "json", state=False)
    assert r.code == 1
    doc = r.json
    assert doc["points_finished"] == 3 and [f["index"] for f in doc["failed"]] == [2]
    failed = doc["failed"][0]
    assert failed["params"]["checkpoint_interval_min"] == 120 and "no room" in failed["error"] and not failed["bug"]
    assert "point 2 failed" in r.err
    assert len(list((out / "points").iterdir())) == 3
    monkeypatch.setattr(ops_sweep, "_fleet", real)
    r = cli("sweep", path, "--out", out, "--serial", "-o", "json", state=False)
    assert r.code == 2 and "--resume" in r.err  # never mixed into an old sweep's points by accident
    r = cli("sweep", path, "--out", out, "--serial", "--resume", "-o", "json", state=False)
    assert r.code == 0 and r.json["points_resumed"] == 3 and r.json["points_finished"] == 4


def test_a_bug_in_a_point_exits_70_after_the_others(cli, tmp_path, monkeypatch):
    def broken(params, seed):
        if params["host_availability"] == 0.5:
            raise ZeroDivisionError("oops")
        return {"x": 1.0}

    monkeypatch.setattr(ops_sweep, "_availability", broken)
    text = "schema_version: 1\nsimulation: availability\ngrid: {host_availability: [0.5, 0.9]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "-o", "json", state=False)
    assert r.code == 70 and r.json["failed"][0]["bug"] and "ZeroDivisionError" in r.json["failed"][0]["error"]
    assert r.json["points_finished"] == 1


@pytest.mark.slow
def test_killed_at_a_named_point_then_resumed_gives_the_uninterrupted_output(tmp_path):
    path = write(tmp_path, SMALL)
    env = {**os.environ, "TPUFLEET_CRASH_AT": "sweep.after_point:2"}
    cmd = [sys.executable, "-m", "tpufleet", "sweep", str(path), "--serial", "-o", "json"]
    killed = subprocess.run([*cmd, "--out", str(tmp_path / "a")], env=env, capture_output=True, cwd=ROOT)
    assert killed.returncode == -9
    finished = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (tmp_path / "a" / "points").iterdir()}
    assert len(finished) == 2
    env.pop("TPUFLEET_CRASH_AT")
    resumed = subprocess.run([*cmd, "--out", str(tmp_path / "a"), "--resume"], env=env, capture_output=True, cwd=ROOT)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["points_resumed"] == 2
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (tmp_path / "a" / "points").iterdir()}
    assert len(after) == 4 and {name: after[name] for name in finished} == finished  # not run again
    whole = subprocess.run([*cmd, "--out", str(tmp_path / "b")], env=env, capture_output=True, cwd=ROOT)
    assert whole.returncode == 0
    assert sweep_json(tmp_path / "a") == sweep_json(tmp_path / "b")
    assert (tmp_path / "a" / "sweep.csv").read_text() == (tmp_path / "b" / "sweep.csv").read_text()


def test_without_dask_the_sweep_runs_serially_and_says_so(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(backends, "dask_available", lambda: False)
    text = "schema_version: 1\nsimulation: availability\nseeds: 3\nfixed: {trials: 200}\ngrid: {cubes: [8, 64]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "-o", "json", state=False)
    assert r.code == 0 and "running serially" in r.err and r.json["executor"]["kind"] == "serial"
    exact = r.json["points"][1]["metrics"]["reconfigurable_ft_exact.64"]
    assert exact["low"] == exact["high"] == exact["mean"]  # no seed changes an exact value
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "p", "--cluster", "tcp://x:1", state=False)
    assert r.code == 2 and "sweep extra" in r.err


def test_keep_events_writes_each_runs_events(cli, tmp_path):
    text = "schema_version: 1\nsimulation: fleet\nseeds: 1\nfixed: {days: 0.2}\ngrid: {spare_cubes: [0, 4]}\n"
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", "--keep-events", "-o", "json", state=False)
    assert r.code == 0, r.err
    keys = [point["key"] for point in r.json["points"]]
    assert sorted(p.name for p in (out / "events").iterdir()) == sorted(f"{key}-r0.jsonl.gz" for key in keys)
    assert sorted(p.name for p in (out / "points").iterdir()) == sorted(f"{key}.json" for key in keys)


def test_the_shipped_specs_are_valid():
    ckpt = load_spec(ROOT / "fixtures" / "sweeps" / "checkpoint-interval.yaml")
    assert ckpt.swept == ("checkpoint_interval_min", "fault_scale") and ckpt.young_daly_for
    assert all(p.params["workload"] == "one-large-job.yaml" for p in ckpt.points)
    spares = load_spec(ROOT / "fixtures" / "sweeps" / "spare-cubes.yaml")
    assert spares.swept == ("spare_cubes", "fault_scale") and spares.metric == "wait_hours.large"


def test_points_combine_with_the_grid_and_show_unset_parameters_as_null(cli, tmp_path):
    text = """schema_version: 1
simulation: availability
seeds: 2
fixed: {trials: 100}
points:
  - {host_availability: 0.98}
  - {ocs_availability: 0.99}
grid: {cubes: [8, 64]}
"""
    sweep = load_spec(write(tmp_path, text))
    assert sweep.swept == ("cubes", "host_availability", "ocs_availability")
    assert [(p.params["host_availability"], p.params["ocs_availability"], p.params["cubes"]) for p in sweep.points] == [
        (0.98, 0.999, 8), (0.98, 0.999, 64), (0.99, 0.99, 8), (0.99, 0.99, 64),
    ]  # fmt: skip
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "--plot-format", "svg", state=False)
    assert r.code == 0, r.err
    assert (tmp_path / "o" / "sweep.svg").read_text().lstrip().startswith("<?xml")


def test_resume_runs_again_the_points_another_version_of_the_code_ran(cli, tmp_path, monkeypatch):
    from tpufleet.state import sweepstore

    text = "schema_version: 1\nsimulation: availability\ngrid: {host_availability: [0.9, 0.99]}\n"
    path, out = write(tmp_path, text), tmp_path / "out"
    assert cli("sweep", path, "--out", out, "--serial", state=False).code == 0
    r = cli("sweep", path, "--out", out, "--serial", "--resume", "-o", "json", state=False)
    assert r.code == 0 and r.json["points_resumed"] == 2
    monkeypatch.setattr(sweepstore, "code_version", lambda: "0.3.0+another")
    r = cli("sweep", path, "--out", out, "--serial", "--resume", "-o", "json", state=False)
    assert r.code == 0 and r.json["points_resumed"] == 0 and r.json["points_finished"] == 2


def test_the_code_version_follows_every_module_and_shipped_input(tmp_path):
    import shutil

    import tpufleet
    from tpufleet.state.sweepstore import code_version

    copy = tmp_path / "tpufleet"
    shutil.copytree(Path(tpufleet.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert code_version(copy) == code_version()
    (copy / "simulation" / "__init__.py").write_text((copy / "simulation" / "__init__.py").read_text() + "\n")
    changed = code_version(copy)
    assert changed != code_version() and changed.startswith(tpufleet.__version__ + "+")
    (copy / "data" / "fault-rates.yaml").write_bytes((copy / "data" / "fault-rates.yaml").read_bytes() + b"#\n")
    assert code_version(copy) not in (changed, code_version())


def test_keep_events_on_an_availability_sweep_is_refused(cli, tmp_path):
    """`--keep-events` on an availability sweep was accepted and made an empty `events/`: it keeps a fleet run's."""
    spec = write(
        tmp_path, "schema_version: 1\nsimulation: availability\nseeds: 1\nfixed: {trials: 50}\ngrid: {cubes: [[64]]}\n"
    )
    (tmp_path / "o").mkdir()
    r = cli("sweep", spec, "--out", tmp_path / "o", "--serial", "--keep-events", state=False)
    assert r.code == 2 and "bad option --keep-events" in r.err
    assert list((tmp_path / "o").iterdir()) == []
