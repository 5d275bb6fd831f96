"""Open faults said alike by `status` and the metrics (drains apart), the export summaries' kinds, the Slurm
topology's serial, and a config file's state path as the file means it."""

from __future__ import annotations

import json

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from test_fleetio_import import FIXTURE


def _metric_sum(text: str, name: str) -> float:
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    return sum(s.value for s in fams[name].samples)


def test_status_counts_open_faults_as_the_metrics_do_and_drains_apart(fleet):
    assert fleet("inject-fault", "host:c03/5").code == 0
    assert fleet("inject-fault", "ocs:pod0/x/3").code == 0
    assert fleet("inject-fault", "cube:c07", "--planned", "--reason", "maintenance").code == 0
    status = fleet("status", "-o", "json").json
    metrics = fleet("metrics").out
    assert (status["unplanned_faults"], status["planned_drains"], status["open_faults"]) == (2, 1, 3)
    assert _metric_sum(metrics, "tpufleet_open_faults") == status["unplanned_faults"]
    assert _metric_sum(metrics, "tpufleet_planned_drains") == status["planned_drains"]
    text = fleet("status").out
    assert "open faults: 3 (2 unplanned, 1 planned drain)" in text.splitlines()  # the JSON's total, drains apart
    assert [line for line in text.splitlines() if line.endswith("(planned drain)")] == [
        line for line in text.splitlines() if "cube:c07" in line
    ]


def test_status_without_drains_names_open_faults_only(fleet):
    assert fleet("inject-fault", "host:c03/5").code == 0
    assert "open faults: 1" in fleet("status").out.splitlines()


def test_report_page_counts_open_faults_and_drains_apart(fleet):
    assert fleet("inject-fault", "host:c03/5").code == 0
    assert fleet("inject-fault", "cube:c07", "--planned", "--reason", "maintenance").code == 0
    page = fleet("report", "-o", "html").out
    assert "; 2 open fault(s) (1 unplanned, 1 planned drain(s))</div>" in page


# Every export's summary `kind`, kebab-case as its command, and what the table output says it wrote
EXPORTS = [
    (["node-labels"], "node-labels", "wrote 1023 Node objects"),
    (["kueue-topology"], "kueue-topology", "wrote 2 Kueue objects"),
    (["slurm-topology"], "slurm-topology-conf", "wrote 65 topology.conf lines"),
    (["slurm-topology", "--format", "yaml"], "slurm-topology-yaml", "wrote 1 topology.yaml topology"),
    (["slices", "--type", "tpu7x"], "slices", "wrote 1 Slice object"),
]


@pytest.mark.parametrize(("args", "kind", "said"), EXPORTS, ids=[e[1] for e in EXPORTS])
def test_export_summaries_name_their_kind_in_one_style(fleet, tmp_path, args, kind, said):
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    assert fleet("allocate", "s", "--shape", "4x4x4").code == 0
    out = tmp_path / "export.out"
    objects = int(said.split()[1])
    for fmt, parse in (("json", json.loads), ("yaml", yaml.safe_load)):
        r = fleet("export", *args, "--out", out, "-o", fmt)
        assert r.code == 0, r.err
        assert parse(r.out) == {"kind": kind, "file": str(out), "objects": objects}
    r = fleet("export", *args, "--out", out)
    assert r.code == 0, r.err
    assert r.out == f"{said} to {out}\n"


def test_every_export_kind_is_tested_above():
    from tpufleet.cli.fleetio import EXPORT_KINDS

    assert sorted(kind for _, kind, _ in EXPORTS) == sorted(EXPORT_KINDS)


@pytest.mark.parametrize("plugin", ["tree", "block", "torus3d"])
def test_slurm_topology_yaml_names_the_serial_as_topology_conf_does(fleet, tmp_path, plugin):
    assert fleet("import", "k8s", FIXTURE, "--apply").code == 0
    serial = fleet("status", "-o", "json").json["serial"]
    r = fleet("export", "slurm-topology", "--plugin", plugin, "--format", "yaml")
    assert r.code == 0, r.err
    first = r.out.splitlines()[0]
    assert first == f"# topology.yaml for Slurm's topology/{plugin} plugin, written by tpufleet (serial {serial})"
    assert yaml.safe_load(r.out)[0]["topology"] == f"tpufleet-{plugin}"
    out = tmp_path / "topology.yaml"
    assert fleet("export", "slurm-topology", "--plugin", plugin, "--format", "yaml", "--out", out).code == 0
    assert out.read_text() == r.out
    if plugin != "torus3d":  # topology.conf's header says the same of its file
        conf = fleet("export", "slurm-topology", "--plugin", plugin).out.splitlines()[0]
        assert conf == first.replace("topology.yaml", "topology.conf")


def test_serve_names_the_config_files_state_normalised_beside_the_file(cli, tmp_path, monkeypatch):
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    conf = tmp_path / "conf"
    (conf / "cfg").mkdir(parents=True)
    config = conf / "config.toml"
    config.write_text('state = "cfg/../s1"\n')
    monkeypatch.setenv("TPUFLEET_CONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    r = cli("init", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["state_dir"] == str(conf / "s1")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    command = [sys.executable, "-m", "tpufleet", "serve", "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert line.startswith(f"tpufleet: serving {conf / 's1'} (serial 1) at http://127.0.0.1:"), line
