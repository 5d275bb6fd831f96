"""tpufleet sweep on Dask: a real LocalCluster of two worker processes gives exactly the serial numbers.

Skipped without the sweep extra (`make sweep-deps`): the serial tests in test_sweep.py cover the rest.
"""

import json

import pytest

pytest.importorskip("distributed", reason="Dask is an optional extra: make sweep-deps installs it")

SPEC = """schema_version: 1
simulation: fleet
seeds: 2
seed: 11
fixed: {days: 0.4}
grid:
  checkpoint_interval_min: [20, 90]
  spare_cubes: [0, 4]
"""


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as running:
        yield running


def results(out):
    doc = json.loads((out / "sweep.json").read_text())
    doc.pop("files")
    return doc


def test_a_dask_cluster_gives_exactly_the_serial_numbers(cli, tmp_path, cluster):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    serial = cli("sweep", path, "--out", tmp_path / "serial", "--serial", state=False)
    assert serial.code == 0, serial.err
    remote = cli(
        "sweep", path, "--out", tmp_path / "dask", "--cluster", cluster.scheduler_address, "-o", "json", state=False
    )
    assert remote.code == 0, remote.err
    assert remote.json["executor"] == {"kind": "remote", "workers": 2}
    assert results(tmp_path / "dask") == results(tmp_path / "serial")
    assert (tmp_path / "dask" / "sweep.csv").read_text() == (tmp_path / "serial" / "sweep.csv").read_text()
    assert sorted(p.name for p in (tmp_path / "dask" / "points").iterdir()) == sorted(
        p.name for p in (tmp_path / "serial" / "points").iterdir()
    )


def test_an_unreachable_scheduler_is_one_line(cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    r = cli(
        "sweep",
        path,
        "--out",
        tmp_path / "o",
        "--cluster",
        "tcp://127.0.0.1:9",
        "--cluster-timeout",
        "0.5",
        state=False,
    )
    assert r.code == 1 and "cannot reach the Dask scheduler" in r.err


def test_the_default_is_a_local_cluster_sized_by_workers(cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(
        "schema_version: 1\nsimulation: availability\nseeds: 2\nfixed: {trials: 100}\ngrid: {cubes: [8, 64]}\n"
    )
    r = cli("sweep", path, "--out", tmp_path / "o", "--workers", "1", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["executor"] == {"kind": "local", "workers": 1} and r.json["points_finished"] == 2


def test_a_local_cluster_has_no_more_workers_than_runs(cli, tmp_path):
    """`--workers 200` for a sweep of one run started 200 worker processes on a 2-core machine: minutes before the
    one run began. The local cluster takes no more workers than the sweep has runs."""
    path = tmp_path / "one.yaml"
    path.write_text(
        "schema_version: 1\nsimulation: availability\nseeds: 1\nfixed: {trials: 50}\ngrid: {cubes: [[64]]}\n"
    )
    r = cli("sweep", path, "--out", tmp_path / "o", "--workers", "200", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["executor"] == {"kind": "local", "workers": 1}
