"""Simulation inputs refused or read as they say: sweep specs (a parameter in both a point and the grid, numbers
written two ways), `simulate-availability --generation --fault-rates shipped`, workload files (a duration's max
below its median, multislice counts written two ways) and `sweep --resume --keep-events`."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from test_defects_sweep_sim import one_line, write

from tpufleet.state.sweepstore import load_spec


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("fixed: {days: 0.1, spare_cubes: 1}\ngrid: {spare_cubes: [0, 2]}\n", "grid.spare_cubes", "[0, 2]"),
        ("fixed: {days: 0.1}\npoints: [{days: 0.2}, {load_per_pod: 0.5}]\n", "points.0.days", "0.2"),
    ],
)
def test_a_parameter_fixed_for_every_point_and_set_again_is_refused(cli, tmp_path, text, field, value):
    """`fixed` is the value of every point: a grid or a point setting it again replaced it without a word."""
    spec = write(tmp_path, "schema_version: 1\nsimulation: fleet\n" + text)
    r = cli("sweep", spec, "--out", tmp_path / "o", "--serial", state=False)
    name = field.rsplit(".", 1)[1]
    expected = f"spec.yaml: field {field}: also set by fixed.{name}, the value of every point (value {value})"
    assert r.code == 2 and one_line(r.err).endswith(expected), r.err
    assert not (tmp_path / "o").exists()


def test_a_parameter_set_by_a_point_and_by_the_grid_is_refused(cli, tmp_path):
    """The grid's value was taken and the point's dropped, silently."""
    text = (
        "schema_version: 1\nsimulation: fleet\nfixed: {days: 0.1}\n"
        "points: [{load_per_pod: 0.5}, {load_per_pod: 0.8, spare_cubes: 4}]\ngrid: {spare_cubes: [0, 2]}\n"
    )
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2, r.err
    assert one_line(r.err).endswith(
        "spec.yaml: field points.1.spare_cubes: also set by grid.spare_cubes: give it in one of them (value 4)"
    )
    assert not out.exists()
    swept = load_spec(write(tmp_path, text.replace(", spare_cubes: 4", ""), "ok.yaml"))  # apart: every combination
    assert [(p.params["load_per_pod"], p.params["spare_cubes"]) for p in swept.points] == [
        (0.5, 0), (0.5, 2), (0.8, 0), (0.8, 2),
    ]  # fmt: skip


def test_an_integer_parameter_written_as_a_whole_float_runs_as_the_integer(cli, tmp_path):
    """`trials: 60.0` passed the schema (a whole number) and failed every run by a bug (exit 70); `cubes: [8.0]`
    named its figures `reconfigurable_ft.8.0`."""
    text = "schema_version: 1\nsimulation: availability\nfixed: {trials: 60.0}\ngrid: {cubes: [[8.0, 16], 4.0]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert [p["params"]["cubes"] for p in r.json["points"]] == [[8, 16], 4]
    assert r.json["points"][0]["params"]["trials"] == 60
    assert "reconfigurable_ft.8" in r.json["points"][0]["metrics"]
    assert "reconfigurable_ft.4" in r.json["points"][1]["metrics"]


def test_a_whole_float_and_the_int_are_one_point(cli, tmp_path):
    """`days: 1` and `days: 1.0` had different keys: run twice as two points, and not resumed from each other."""
    text = "schema_version: 1\nsimulation: fleet\npoints: [{days: 1}, {days: 1.0}]\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "f", "--serial", state=False)
    assert r.code == 2 and "spec.yaml: field points:" in one_line(r.err)
    assert "points 0 and 1 are the same (give more seeds instead)" in r.err
    base = "schema_version: 1\nsimulation: availability\nfixed: {trials: 60, cubes: 8}\n"
    one = write(tmp_path, base + "grid: {ocs_availability: [1, 0.99]}\n", "one.yaml")
    other = write(tmp_path, base + "grid: {ocs_availability: [1.0, 0.99]}\n", "other.yaml")
    assert [p.key for p in load_spec(one).points] == [p.key for p in load_spec(other).points]
    assert load_spec(other).points[0].params["ocs_availability"] == 1.0  # what the runs receive is as written
    out = tmp_path / "o"
    assert cli("sweep", one, "--out", out, "--serial", state=False).code == 0
    r = cli("sweep", other, "--out", out, "--serial", "--resume", "-o", "json", state=False)
    assert r.code == 0 and r.json["points_resumed"] == 2, r.err


def test_simulate_availability_generation_takes_the_profiles_fault_rates(cli, tmp_path, monkeypatch):
    """`--generation X --fault-rates shipped` read the shipped TPU v4 file's rates, not the profile's (today's
    profiles inherit v4's, so a test profile with its own host rate shows which is read)."""
    from dataclasses import replace

    from tpufleet.ops.availability import steady_state_availability
    from tpufleet.state import generations

    real = generations.shipped("tpu7x")
    own = replace(real, faults=replace(real.faults, host_per_day=0.01))
    monkeypatch.setattr(generations, "shipped", lambda name: own if name == "tpu7x" else generations.shipped(name))
    hours = real.faults.repair_hours.host
    ocs_only = write(
        tmp_path, "schema_version: 1\nocs_per_day: 0.001\n", "rates.yaml"
    )  # the host rate left out: the profile's
    for rates in ("shipped", ocs_only):
        args = ("--generation", "tpu7x", "--fault-rates", rates, "--cubes", "8", "--trials", "50", "-o", "json")
        r = cli("simulate-availability", *args, state=False)
        assert r.code == 0, r.err
        assert r.json["host_availability"] == steady_state_availability(0.01, hours)
        assert r.json["availability_source"] == f"fault rates ({rates}, defaults of the tpu7x profile)"


@pytest.mark.parametrize(
    ("durations", "message"),
    [
        ("{median: 10, max: 5}", "field duration_hours.max: below the median (10 h) (value 5)"),
        ("{max: 2}", "field duration_hours.max: below the median (5 h, the default) (value 2)"),
        ("{median: 200}", "field duration_hours.median: above the maximum (96 h, the default) (value 200)"),
    ],
)
def test_a_workload_whose_maximum_duration_is_below_its_median_is_refused(cli, tmp_path, durations, message):
    """It was accepted, and most drawn jobs (with sigma 0, every one) ran for the maximum."""
    text = f"schema_version: 1\narrival_rate_per_hour: 1\nduration_hours: {durations}\n"
    workload = write(tmp_path, text, "workload.yaml")
    r = cli("simulate-fleet", "--days", "0.1", "--workload", workload, "--out", tmp_path / "e.jsonl", state=False)
    assert r.code == 2 and one_line(r.err) == f"tpufleet: error: {workload}: {message}"
    text = "schema_version: 1\narrival_rate_per_hour: 1\nduration_hours: {median: 3, sigma: 0, max: 3}\n"
    r = cli("simulate-fleet", "--days", "0.1", "--workload", write(tmp_path, text, "equal.yaml"), state=False)
    assert r.code == 0, r.err


@pytest.mark.parametrize("slices", ['{"2": 1, "02": 3}', '{2: 1, "02": 3}'])
def test_a_multislice_count_given_twice_is_refused(cli, tmp_path, slices):
    """`"2"` and `"02"` were both taken as 2 slices, the last weight silently replacing the first."""
    text = f"schema_version: 1\narrival_rate_per_hour: 1\nmultislice: {{share: 0.5, slices: {slices}}}\n"
    workload = write(tmp_path, text, "workload.yaml")
    r = cli("simulate-fleet", "--days", "0.1", "--workload", workload, state=False)
    assert r.code == 2
    assert one_line(r.err) == (
        f"tpufleet: error: {workload}: field multislice.slices.02: the slice count 2 is given twice (also as 2) "
        "(value '02')"
    )


def test_sweep_resume_keep_events_says_how_many_points_have_no_events(cli, tmp_path):
    """A resumed point is not run, so `--resume --keep-events` wrote no events for it, and said nothing."""
    text = "schema_version: 1\nsimulation: fleet\nseeds: 1\nfixed: {days: 0.1}\ngrid: {spare_cubes: [0, 4]}\n"
    spec, out = write(tmp_path, text), tmp_path / "o"
    assert cli("sweep", spec, "--out", out, "--serial", state=False).code == 0  # no events kept
    next((out / "points").iterdir()).unlink()  # one point runs again
    r = cli("sweep", spec, "--out", out, "--serial", "--resume", "--keep-events", "-o", "json", state=False)
    assert r.code == 0 and r.json["points_resumed"] == 1 and r.json["events_absent"] == 1, r.err
    assert len(list((out / "events").iterdir())) == 1
    r = cli("sweep", spec, "--out", out, "--serial", "--resume", "--keep-events", state=False)
    assert (
        r.code == 0
        and (
            "events: 1 resumed point(s) without their events in events/ (--resume does not run a finished point "
            "again; run the sweep into a new --out to write them)"
        )
        in r.out.splitlines()
    )
    kept = tmp_path / "k"
    assert cli("sweep", spec, "--out", kept, "--serial", "--keep-events", state=False).code == 0
    r = cli("sweep", spec, "--out", kept, "--serial", "--resume", "--keep-events", "-o", "json", state=False)
    assert r.code == 0 and r.json["points_resumed"] == 2 and r.json["events_absent"] == 0


def test_sweep_resume_of_a_reordered_spec_does_not_pair_a_point_with_anothers_events(cli, tmp_path):
    """Event files were named by the point's place in the spec: after a reordered grid, a resumed point whose
    events were never kept was counted as having those of the point that used to be first."""
    out = tmp_path / "o"

    def sweep(values: str, *extra: str) -> Any:
        text = (
            f"schema_version: 1\nsimulation: fleet\nseeds: 1\nfixed: {{days: 0.1}}\ngrid: {{spare_cubes: {values}}}\n"
        )
        return cli("sweep", write(tmp_path, text), "--out", out, "--serial", "-o", "json", *extra, state=False)

    assert sweep("[0, 8]", "--keep-events").code == 0  # the first two points' events kept
    assert sweep("[4]", "--resume").code == 0  # spare_cubes 4 is first now, no events kept
    r = sweep("[4, 0]", "--resume", "--keep-events")
    assert r.code == 0 and r.json["points_resumed"] == 2, r.err
    assert r.json["events_absent"] == 1
    with_events = {p.name.removesuffix("-r0.jsonl.gz") for p in (out / "events").iterdir()}
    keys = {point["params"]["spare_cubes"]: point["key"] for point in r.json["points"]}
    assert keys[0] in with_events and keys[4] not in with_events and len(with_events) == 2  # 0's and 8's


@pytest.mark.parametrize("name", ['""', '" "'])
def test_a_blank_size_mix_shape_is_bad_input(cli, tmp_path, name):
    """A blank `size_mix` shape failed the spec's check by a bug (IndexError, exit 70)."""
    text = f"schema_version: 1\nsimulation: fleet\nfixed: {{days: 0.1}}\ngrid: {{size_mix: [{{{name}: 1}}]}}\n"
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2 and "spec.yaml: field grid: point 0: bad size_mix shape" in one_line(r.err)
    assert "give an allocatable shape, optionally 'twisted'" in r.err and not out.exists()


@pytest.mark.parametrize(("first", "second"), [('"4x4x4"', '"4x4x4 "'), ('"4x4x8"', '"8x4x4"')])
def test_one_size_mix_shape_named_twice_is_bad_input(cli, tmp_path, first, second):
    """`{"4x4x4": 1, "4x4x4 ": 1}` was taken as two entries of one shape (its weight counted twice)."""
    mix = f"{{{first}: 1, {second}: 1}}"
    text = f"schema_version: 1\nsimulation: fleet\nfixed: {{days: 0.1}}\ngrid: {{size_mix: [{mix}]}}\n"
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2 and "spec.yaml: field grid: point 0: bad size_mix:" in one_line(r.err)
    assert "are one shape" in r.err and not out.exists()


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["simulate-fleet", "--days", "1", "--workload", "{missing}"], "no such workload file"),
        (["simulate-fleet", "--days", "1", "--fault-rates", "{missing}"], "no such fault-rate file"),
        (["inject-fault", "--from", "{missing}"], "no such fault scenario file"),
        (["goodput-report", "{missing}"], "no such goodput log"),
        (["sweep", "{missing}", "--out", "{out}", "--serial"], "no such sweep spec"),
    ],
)
def test_a_missing_input_file_is_named_without_a_value(fleet, tmp_path, args, what):
    """A missing file said "... no such workload file (value None)", as if a field held null."""
    missing = tmp_path / "late.yaml"
    argv = [a.format(missing=missing, out=tmp_path) for a in args]
    r = fleet(*argv)
    assert r.code == 2 and one_line(r.err).endswith(f"{missing}: field <root>: cannot be read: {what}"), r.err


@pytest.mark.parametrize(
    ("name", "text", "command", "problem"),
    [
        (
            "big.yaml",
            "a" * (1024 * 1024 + 1),
            "inject-fault",
            "larger than the 1 MiB allowed for a fault scenario file",
        ),
        ("bad.yaml", "a: [1\n", "inject-fault", "not valid YAML/JSON ("),
        ("state.json", '{"a":', "status", "not valid JSON (Expecting value at line 1 column 6)"),
        ("deep.toml", "a = " + "[" * 70 + "]" * 70 + "\n", "config", "nested more than 64 levels deep"),
        ("long.toml", "lock_timeout = " + "9" * 5000 + "\n", "config", "not valid TOML (ValueError: "),
    ],
)
def test_a_file_refused_as_a_whole_is_named_without_a_value(fleet, tmp_path, monkeypatch, name, text, command, problem):
    """A file too large or not parseable at all has no value to show; it said "(value None)" as if a field held
    null."""
    path = tmp_path / "state" / name if command == "status" else tmp_path / name
    path.write_text(text)
    if command == "config":
        monkeypatch.setenv("TPUFLEET_CONFIG", str(path))
    r = fleet("inject-fault", "--from", path) if command == "inject-fault" else fleet("status")
    line = one_line(r.err)
    assert r.code == 2 and f"{path}: field <root>: {problem}" in line, r.err
    assert "(value" not in line, r.err


@pytest.mark.parametrize(
    "mixes",
    ['[{"4x4x8": 1}, {"8x4x4": 1}]', '[{"4x4x8": 1, "8x8x8": 2}, {"4x8x4 ": 1.0, "8x8x8": 2}]'],
)
def test_a_size_mix_written_two_ways_is_one_point(cli, tmp_path, mixes):
    """Shapes named two ways (4x4x8 and 8x4x4) made two points of the same work, run twice."""
    text = f"schema_version: 1\nsimulation: fleet\nfixed: {{days: 0.1}}\ngrid: {{size_mix: {mixes}}}\n"
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2 and "spec.yaml: field grid: points 0 and 1 are the same" in one_line(r.err), r.err
    assert not out.exists()


def test_a_size_mix_in_another_order_is_another_point(cli, tmp_path):
    """The run draws a job's shape from the mix in its order, so {4x4x8: 1, 8x8x8: 1} and {8x8x8: 1, 4x4x8: 1} give
    other figures (SG 0.72 and 0.85 over 3 days); the key sorted the mix, so they were refused as one point, and
    --resume of one in the other's directory reused the other's figures and events."""
    mixes = '[{"4x4x8": 1, "8x8x8": 1}, {"8x8x8": 1, "4x4x8": 1}]'
    text = f"schema_version: 1\nsimulation: fleet\nfixed: {{days: 0.1}}\ngrid: {{size_mix: {mixes}}}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert len({point["key"] for point in r.json["points"]}) == 2


def test_a_workload_with_its_keys_in_another_order_is_another_point(cli, tmp_path):
    """A run draws a job's phase from the workload's phases in their order: {training: 70, serving: 15, ...} and
    {serving: 15, training: 70, ...} give other figures, yet the key sorted the file's keys, so the two files were
    refused as one point (and --resume took one's figures for the other)."""
    shipped = (Path(__file__).resolve().parents[1] / "fixtures" / "workload.yaml").read_text()
    phases = "phases: {training: 70, serving: 15, bulk_inference: 15}"
    assert phases in shipped
    (tmp_path / "a.yaml").write_text(shipped)
    (tmp_path / "b.yaml").write_text(shipped.replace(phases, "phases: {serving: 15, training: 70, bulk_inference: 15}"))
    text = "schema_version: 1\nsimulation: fleet\nfixed: {days: 0.1}\ngrid: {workload: [a.yaml, b.yaml]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert len({point["key"] for point in r.json["points"]}) == 2


KEEP_SPEC = "schema_version: 1\nsimulation: fleet\nseeds: 1\nfixed: {days: 0.05}\ngrid: {spare_cubes: [0]}\n"


def _kept_events_name(cli: Any, spec: Path, out: Path) -> str:
    """The name the sweep gives its one run's events (it holds the point's key)."""
    assert cli("sweep", spec, "--out", out, "--serial", "--keep-events", state=False).code == 0
    (name,) = os.listdir(out / "events")
    shutil.rmtree(out)
    return name


@pytest.mark.parametrize("planted", ["fifo", "symlink"])
def test_sweep_keep_events_replaces_what_sits_at_its_own_file_names(cli, tmp_path, planted):
    """A FIFO at events/KEY-r0.jsonl.gz blocked the sweep until something read it; a symlink sent the events to
    its target (any file the operator can write). The names are the sweep's own: the file is replaced."""
    spec, out, outside = write(tmp_path, KEEP_SPEC), tmp_path / "o", tmp_path / "outside.txt"
    kept = out / "events" / _kept_events_name(cli, spec, out)
    kept.parent.mkdir(parents=True)
    outside.write_text("keep me\n")
    reader = None
    if planted == "fifo":
        os.mkfifo(kept)
        reader = os.open(kept, os.O_RDONLY | os.O_NONBLOCK)  # (so that the sweep before the fix did not hang)
    else:
        kept.symlink_to(outside)
    try:
        r = cli("sweep", spec, "--out", out, "--serial", "--keep-events", "-o", "json", state=False)
    finally:
        if reader is not None:
            os.close(reader)
    assert r.code == 0, r.err
    assert stat.S_ISREG(os.lstat(kept).st_mode) and gzip.decompress(kept.read_bytes())
    assert outside.read_text() == "keep me\n"


def test_sweep_keep_events_refuses_an_events_file_before_any_run(cli, tmp_path):
    """OUT/events as a file was an internal error (exit 70) once the first run had finished."""
    spec, out = write(tmp_path, KEEP_SPEC), tmp_path / "o"
    out.mkdir()
    (out / "events").write_text("")
    r = cli("sweep", spec, "--out", out, "--serial", "--keep-events", state=False)
    line = one_line(r.err)
    assert line.startswith("tpufleet: error: bad option --out ") and line.endswith(
        f"{out / 'events'} is not a directory"
    )
    assert r.code == 2 and os.listdir(out / "points") == []


def test_sweep_replaces_what_sits_at_its_result_file_names(cli, tmp_path):
    """A FIFO at OUT/sweep.csv blocked the sweep, every run done, until something read it; a symlink at
    OUT/sweep.json sent the results to its target. The names are the sweep's own: the files are replaced."""
    spec, out, outside = write(tmp_path, KEEP_SPEC), tmp_path / "o", tmp_path / "outside.txt"
    out.mkdir()
    outside.write_text("keep me\n")
    os.mkfifo(out / "sweep.csv")
    (out / "sweep.json").symlink_to(outside)
    reader = os.open(out / "sweep.csv", os.O_RDONLY | os.O_NONBLOCK)  # (so that the sweep before the fix did not hang)
    try:
        r = cli("sweep", spec, "--out", out, "--serial", "-o", "json", state=False)
    finally:
        os.close(reader)
    assert r.code == 0, r.err
    for name in ("sweep.csv", "sweep.json"):
        assert stat.S_ISREG(os.lstat(out / name).st_mode), name
    assert outside.read_text() == "keep me\n" and json.loads((out / "sweep.json").read_text())["points_total"] == 1


@pytest.mark.parametrize("option", ["--workload", "--fault-rates"])
def test_simulate_fleet_out_naming_its_own_input_is_refused_before_the_run(cli, tmp_path, option):
    """`--out` naming the workload or fault-rate file the run reads (by any name) replaced it with the events,
    the operator's input lost; it is refused before the run (exit 2) and the file is left as it was."""
    source = {"--workload": "workload.yaml", "--fault-rates": "fault-rates.yaml"}[option]
    given = tmp_path / source
    shutil.copy(Path(__file__).parents[1] / "fixtures" / source, given)
    before = given.read_bytes()
    (tmp_path / "link.yaml").symlink_to(given)
    for out in (given, tmp_path / "link.yaml"):
        r = cli("simulate-fleet", "--days", "0.1", option, given, "--out", out, state=False)
        assert r.code == 2 and "bad option --out" in one_line(r.err) and "the output would replace it" in r.err
    assert given.read_bytes() == before
