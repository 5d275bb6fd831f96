"""`tpufleet metrics`: exposition parsed by prometheus_client's own parsers, every family's type, name and unit
checked, values equal to `status -o json`, goodput families equal to `goodput-report`, the textfile written
atomically; `promtool check metrics` where the prometheus package provides it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from test_fleetio_import import FIXTURE

GOODPUT = Path(__file__).parent.parent / "fixtures" / "goodput" / "fleet.jsonl"


@pytest.fixture
def busy(fleet):
    """The fixture pod imported, a slice connected, one degraded by an OCS fault, tables made stale."""
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    for name, shape in (("a", "4x4x8"), ("b", "8x8x8")):
        assert fleet("allocate", name, "--shape", shape).code == 0
        assert fleet("plan-xconnect", name, "--apply").code == 0
    assert fleet("routes", "a").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    return fleet


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(fam, **labels) -> float:
    return sum(s.value for s in fam.samples if all(s.labels.get(k) == v for k, v in labels.items()))


def test_every_family_is_named_and_typed_by_the_conventions(busy):
    r = busy("metrics")
    assert r.code == 0, r.err
    fams = families(r.out)
    for name, fam in fams.items():
        assert name.startswith("tpufleet_") and fam.documentation
        samples = {s.name for s in fam.samples}
        if fam.type == "counter":
            assert samples <= {name + "_total", name + "_created"}
        else:
            assert fam.type in ("gauge", "info") and not any(s.endswith("_total") for s in samples)
        if name.endswith("_ratio"):
            assert all(0 <= s.value <= 1 for s in fam.samples)
    assert fams["tpufleet_info"].type == "gauge" and fams["tpufleet_info"].samples[0].labels["version"]
    assert fams["tpufleet_faults_opened"].type == "counter"


def test_values_equal_status(busy):
    status = busy("status", "-o", "json").json
    fams = families(busy("metrics").out)
    for state, n in status["cubes"].items():
        assert value(fams["tpufleet_cubes"], state=state) == n
    # the fixture's DEGRADED partition is a degraded cube, not a fault: 7 from the import, 1 OCS fault
    assert value(fams["tpufleet_open_faults"]) + value(fams["tpufleet_planned_drains"]) == status["open_faults"] == 8
    assert value(fams["tpufleet_planned_drains"], kind="host") == 2
    assert value(fams["tpufleet_open_faults"], kind="ocs") == 1 == status["ocs"]["failed"]
    assert value(fams["tpufleet_ocs_xconnects"]) == status["ocs"]["xconnects"] > 0
    assert value(fams["tpufleet_stale_route_tables"]) == len(status["stale_routes"])
    assert value(fams["tpufleet_state_serial"]) == status["serial"]
    assert value(fams["tpufleet_faults_opened"]) == 8
    for sl in ("allocated", "connected", "degraded", "evicted"):
        assert value(fams["tpufleet_slices"], state=sl) == sum(1 for s in status["slices"] if s["state"] == sl)
    retained = {s.labels["slice"]: s.value for s in fams["tpufleet_slice_all_to_all_retained_ratio"].samples}
    for s in status["slices"]:
        if s["state"] == "degraded":
            assert retained[s["name"]] == s["degraded"]["all_to_all_retained"]
        elif s["state"] == "connected":
            assert retained[s["name"]] == 1.0
    journal = busy("show", "journal", "-o", "json").json
    assert value(fams["tpufleet_state_last_change_timestamp_seconds"]) > 0 and journal


def test_openmetrics_units(busy):
    r = busy("metrics", "--format", "openmetrics")
    assert r.code == 0 and r.out.rstrip().endswith("# EOF")
    fams = {f.name: f for f in parse_openmetrics(r.out)}
    assert fams["tpufleet_slice_all_to_all_retained_ratio"].unit == "ratio"
    assert fams["tpufleet_state_last_change_timestamp_seconds"].unit == "seconds"
    assert fams["tpufleet_faults_opened"].type == "counter"
    assert all(f.unit == "" for n, f in fams.items() if not n.endswith(("_ratio", "_seconds")))


def test_goodput_families_equal_the_report(fleet):
    report = fleet("goodput-report", GOODPUT, "-o", "json").json
    r = fleet("metrics", "--goodput", GOODPUT)
    assert r.code == 0, r.err
    fams = families(r.out)
    ratio = fams["tpufleet_goodput_ratio"]
    for factor in ("sg", "rg", "pg", "mpg"):
        assert value(ratio, factor=factor, dimension="fleet") == report["fleet"][factor]
    for seg in report["segments"]:
        assert value(ratio, factor="sg", dimension=seg["dimension"], segment=seg["value"]) == seg["sg"]
    badput = fams["tpufleet_goodput_badput_chip_seconds"]
    for bucket, chip_s in report["fleet"]["badput_chip_s"].items():
        assert value(badput, bucket=bucket, dimension="fleet") == chip_s
    assert fleet("metrics", "--goodput", GOODPUT, "--goodput-format", "csv").code == 2


def test_textfile_is_written_atomically_and_equals_stdout(busy, tmp_path):
    (tmp_path / "textfile").mkdir()
    out = tmp_path / "textfile" / "tpufleet.prom"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    r = busy("metrics", "--out", out, "-o", "json")
    assert r.code == 0, r.err
    assert r.json["file"] == str(out) and r.json["families"] >= 12
    assert out.read_text() == busy("metrics").out
    assert oct(out.stat().st_mode & 0o777) == "0o640"  # an existing file keeps its mode
    assert [p.name for p in out.parent.iterdir()] == ["tpufleet.prom"]  # no temp file left behind
    warn = busy("metrics", "--out", tmp_path / "metrics.txt")
    assert warn.code == 0 and "reads only *.prom" in warn.err
    assert busy("metrics", "--out", tmp_path / "nodir" / "x.prom").code == 2


def test_json_output_is_the_parsed_families(busy):
    data = busy("metrics", "-o", "json").json
    names = [f["name"] for f in data]
    assert "tpufleet_cubes" in names and all(set(f) == {"name", "type", "help", "samples"} for f in data)


def test_promtool_accepts_it(busy, tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (the distribution's prometheus package provides it)")
    text = busy("metrics", "--goodput", GOODPUT).out
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_job_families_equal_show_jobs(cli):
    """Two multislice jobs, one elastic: a host fault leaves the elastic one degraded at 3 of 4 and stops the
    other; the job families say exactly what `show jobs -o json` says."""
    assert cli("init", "--pods", "2", "--cubes-per-pod", "16").code == 0
    for name, extra in (("e", ("--elastic", "3")), ("h", ())):
        assert cli("allocate", name, "--shape", "4x4x8", "--slices", "4", "--spread", *extra).code == 0
        assert cli("plan-xconnect", name, "--apply").code == 0
    for name in ("e-1", "h-2"):
        (row,) = [r for r in cli("show", "slices", "-o", "json").json if r["name"] == name]
        assert cli("inject-fault", f"host:{row['cubes'][0]}/0").code == 0
    jobs = {j["name"]: j for j in cli("show", "jobs", "-o", "json").json}
    assert (jobs["e"]["state"], jobs["h"]["state"]) == ("degraded", "stopped")
    fams = families(cli("metrics").out)
    assert value(fams["tpufleet_jobs"], state="degraded") == 1 == value(fams["tpufleet_jobs"], state="stopped")
    assert value(fams["tpufleet_jobs"]) == 2
    for name, job in jobs.items():
        assert value(fams["tpufleet_job_active_slices"], multislice_job=name) == job["active_slices"] == 3
        assert value(fams["tpufleet_job_slices"], multislice_job=name) == job["total_slices"] == 4
        assert value(fams["tpufleet_job_throughput_kept_ratio"], multislice_job=name) == job["throughput_kept"]
    assert jobs["e"]["throughput_kept"] == 0.75 and jobs["h"]["throughput_kept"] == 0.0


def test_an_openmetrics_textfile_is_said_to_be_one_the_collector_drops(busy, tmp_path):
    """The textfile collector parses the Prometheus text format only, which has no `info` type: an OpenMetrics
    `.prom` file is dropped whole (promtool, the same parser, refuses it). Writing one says so; the default does
    not."""
    om, prom = tmp_path / "om.prom", tmp_path / "text.prom"
    written = busy("metrics", "--format", "openmetrics", "--out", om)
    assert written.code == 0 and om.read_text().endswith("# EOF\n")
    assert "--format prometheus" in written.err
    plain = busy("metrics", "--out", prom)
    assert plain.code == 0 and plain.err == ""
    promtool = shutil.which("promtool")
    if promtool is not None:
        done = subprocess.run([promtool, "check", "metrics"], input=om.read_bytes(), capture_output=True, check=False)
        assert done.returncode != 0


def test_the_cubes_node_pools_hold_are_a_family(cli):
    """On a cluster of ordinary node pools `status` said 137 of the 140 free cubes are left to allocate (the pools
    hold 3, which ones unknown), while the metrics gave 140 free and no word of the pools: a dashboard or alert on
    free cubes counted cubes `allocate` refuses. `tpufleet_node_pool_cubes{pod}` carries them; absent without pools."""
    assert cli("init", "--generation", "tpu-v5p").code == 0
    assert "tpufleet_node_pool_cubes" not in cli("metrics").out
    nodes = Path(__file__).parent.parent / "fixtures" / "k8s" / "v5p-cluster-nodes.json"
    assert cli("import", "k8s", nodes, "--apply").code == 0
    status = cli("status", "-o", "json").json
    fams = families(cli("metrics").out)
    held = fams["tpufleet_node_pool_cubes"]
    assert held.type == "gauge" and {s.labels["pod"]: s.value for s in held.samples} == {"pod0": 3}
    assert status["k8s"]["unplaced_slices"]["by_pod"] == {"pod0": 3}
    assert value(fams["tpufleet_cubes"], state="free") - value(held) == status["k8s"]["free_after_unplaced"] == 137
