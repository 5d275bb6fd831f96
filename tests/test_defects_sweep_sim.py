"""Issue 26, the sweep and simulation items, through the CLI: unbounded grids and simulations refused before any
work (exit 2 naming the cap and the work asked for), `sweep --cluster` addresses and peers, `sweep --resume` over
planted or truncated point files, the sweep's plot figure and intervals, and runs with no job at all."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tpufleet.state.siminputs import SHIPPED_WORKLOAD
from tpufleet.state.sweepstore import load_spec
from tpufleet.sweep.stats import bounds

AVAILABILITY = """schema_version: 1
simulation: availability
seeds: 2
seed: 3
fixed: {trials: 60}
grid:
  cubes: [1, 2, 4, 8, 16, 32]
"""


def write(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def sweep_doc(out: Path) -> dict:
    doc = json.loads((out / "sweep.json").read_text())
    doc.pop("files")
    return doc


# ---- item 5: the grid is counted, not built ---------------------------------------------------------------------
def test_a_grid_of_5e11_combinations_is_refused_by_its_count(cli, tmp_path):
    axes = {
        "days": [round(0.01 * i, 2) for i in range(1, 101)],
        "arrival_rate_per_hour": list(range(100)),
        "load_per_pod": [round(0.01 * i, 2) for i in range(100)],
        "checkpoint_interval_min": list(range(1, 101)),
        "restart_overhead_min": list(range(50)),
        "spare_cubes": list(range(10)),
        "fault_scale": list(range(10)),
    }
    text = "schema_version: 1\nsimulation: fleet\ngrid:\n" + "".join(f"  {k}: {v}\n" for k, v in axes.items())
    assert len(text) < 6000
    out = tmp_path / "out"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2
    line = one_line(r.err)
    assert "spec.yaml" in line and "field grid" in line and "500,000,000,000 points" in line and "100,000" in line
    assert not out.exists()


def test_a_grid_too_large_to_count_exactly_gives_its_order_of_magnitude(cli, tmp_path):
    axes = {  # five axes of up to 10,000 values each (the schema's limit), 10^20 points in about 300 KB
        "days": [round(0.01 * i, 2) for i in range(1, 10_001)],
        "arrival_rate_per_hour": [round(0.1 * i, 1) for i in range(10_000)],
        "load_per_pod": [round(0.01 * i, 2) for i in range(10_000)],
        "checkpoint_interval_min": list(range(1, 10_001)),
        "restart_overhead_min": [round(0.2 * i, 1) for i in range(7200)],
    }
    text = "schema_version: 1\nsimulation: fleet\ngrid:\n" + "".join(f"  {k}: {v}\n" for k, v in axes.items())
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", state=False)
    assert r.code == 2 and "about 10^20 points" in one_line(r.err), r.err
    exact = "schema_version: 1\nsimulation: fleet\ngrid:\n" + "".join(
        f"  {name}: [{', '.join(str(v) for v in range(1, 60))}]\n"
        for name in ("spare_cubes", "checkpoint_interval_min", "restart_overhead_min", "arrival_rate_per_hour")
    )
    r = cli("sweep", write(tmp_path, exact, "exact.yaml"), "--out", tmp_path / "o", "--serial", state=False)
    assert r.code == 2 and "12,117,361 points x 1 seed(s)" in one_line(r.err)


# ---- item 6: --cluster addresses, silent and garbled peers ----------------------------------------------------
@pytest.mark.parametrize(
    "address",
    ["http://x:8786", "", "tcp://" + "a" * 300 + ":8786", "inproc://x", "tcp://h:0", "tcp://h:99999", "tcp://a b:1",
     "tcp://[zz]:1", "tcp://h\u0660:1", "tcp://-h:1", "tcp://h:1/path"],
)  # fmt: skip
def test_a_malformed_cluster_address_exits_2_naming_the_option(cli, tmp_path, address):
    r = cli("sweep", write(tmp_path, AVAILABILITY), "--out", tmp_path / "o", "--cluster", address, state=False)
    assert r.code == 2
    line = one_line(r.err)
    assert "--cluster" in line and "tcp://HOST:PORT" in line
    assert "a" * 61 not in line  # at most 60 characters of the bad value
    assert not (tmp_path / "o").exists()


def test_a_well_formed_address_gets_past_the_check(cli, tmp_path, monkeypatch):
    from tpufleet.sweep import backends

    monkeypatch.setattr(backends, "dask_available", lambda: False)
    for address in ("scheduler", "tcp://10.0.0.7:8786", "tls://[::1]:9000", "dask_scheduler.example.com:1"):
        r = cli("sweep", write(tmp_path, AVAILABILITY), "--out", tmp_path / "o", "--cluster", address, state=False)
        assert r.code == 2 and "sweep extra" in r.err, (address, r.err)  # the next check: Dask is needed


def test_a_dask_that_is_installed_but_cannot_be_imported_is_bad_input(cli, tmp_path, monkeypatch):
    """Found (Dask is looked for without importing it, so that a local cluster's fork server imports it alongside)
    but broken, a dependency of its own missing: the one line saying so and how to install it, exit 2."""
    from tpufleet.sweep import backends

    def broken() -> None:
        raise ImportError("No module named 'tornado'")

    monkeypatch.setattr(backends, "dask_available", lambda: True)
    monkeypatch.setattr(backends, "_distributed", broken)
    r = cli("sweep", write(tmp_path, AVAILABILITY), "--out", tmp_path / "o", "--cluster", "scheduler", state=False)
    assert r.code == 2 and "Dask cannot be imported (No module named 'tornado')" in r.err, r.err


@contextmanager
def peer(answer: bytes | None) -> Iterator[int]:
    """A local port that accepts connections and then never answers (None), or answers with `answer` and waits."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)
            if answer is not None:
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        with suppress(OSError):
            server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (closing alone does not, on Linux)
        server.close()
        for conn in accepted:
            conn.close()
        thread.join(5)


def test_a_port_that_accepts_and_never_answers_is_given_the_timeout(cli, tmp_path):
    pytest.importorskip("distributed", reason="Dask is an optional extra: make sweep-deps installs it")
    with peer(None) as port:
        r = cli(
            "sweep", write(tmp_path, AVAILABILITY), "--out", tmp_path / "o", "--cluster", f"tcp://127.0.0.1:{port}",
            "--cluster-timeout", "0.5", state=False,
        )  # fmt: skip
    assert r.code == 1
    line = one_line(r.err)
    assert f"127.0.0.1:{port}" in line and "did not answer within 0.5 s" in line and "--cluster-timeout" in line


@pytest.mark.parametrize("runner", [[], ["--serial"], ["--workers", "1"]])
def test_cluster_timeout_without_a_cluster_is_refused(cli, tmp_path, runner):
    """`--cluster-timeout` bounds a scheduler's answers; without `--cluster` it was accepted and did nothing.
    Bad input (exit 2) before any run, nothing written."""
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, AVAILABILITY), "--out", out, *runner, "--cluster-timeout", "5", state=False)
    assert r.code == 2
    assert "bad option --cluster-timeout" in one_line(r.err) and "--cluster" in r.err
    assert not out.exists()


@pytest.mark.parametrize("method", ["bogus", "Spawn"])
def test_a_bad_worker_start_method_is_bad_input_naming_the_variable(cli, tmp_path, monkeypatch, method):
    """`TPUFLEET_DASK_START` (README, sweep) took any value to Dask, whose workers then failed to start: exit 70
    under a screen of Dask's traceback. Bad input (exit 2) naming the variable and its values, before any run."""
    pytest.importorskip(
        "distributed", reason="without Dask (make sweep-deps) a sweep runs serially: the variable is unused"
    )
    monkeypatch.setenv("TPUFLEET_DASK_START", method)
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, AVAILABILITY), "--out", out, "--workers", "2", state=False)
    assert r.code == 2 and out.exists() is False
    assert f"bad environment variable TPUFLEET_DASK_START '{method}': fork, forkserver, spawn" in one_line(r.err)
    assert cli("sweep", write(tmp_path, AVAILABILITY), "--out", out, "--serial", state=False).code == 0  # unused


def test_a_bad_worker_start_method_is_bad_input_to_a_goodput_report_too(cli, tmp_path, monkeypatch):
    pytest.importorskip(
        "distributed", reason="the goodput report starts a local cluster only with Dask (make sweep-deps)"
    )
    monkeypatch.setenv("TPUFLEET_DASK_START", "bogus")
    logs = [
        write(tmp_path, '{"type":"capacity","time":0,"accelerator":"tpu-v4","chips":64}\n', f"{k}.jsonl") for k in "ab"
    ]
    r = cli("goodput-report", *logs, "--workers", "2", state=False)
    assert r.code == 2 and "bad environment variable TPUFLEET_DASK_START 'bogus'" in one_line(r.err)


@pytest.mark.parametrize(
    "garbage", [b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4, b"\x10" + b"\x00" * 7 + b"\xff" * 64, b"\x00" * 8]
)
def test_garbage_from_a_peer_is_a_connection_failure(cli, tmp_path, garbage):
    pytest.importorskip("distributed", reason="Dask is an optional extra: make sweep-deps installs it")
    with peer(garbage) as port:
        r = cli(
            "sweep", write(tmp_path, AVAILABILITY), "--out", tmp_path / "o", "--cluster", f"tcp://127.0.0.1:{port}",
            "--cluster-timeout", "2", state=False,
        )  # fmt: skip
    assert r.code == 1, r.err
    line = one_line(r.err)
    assert f"127.0.0.1:{port}" in line and ("cannot reach the Dask scheduler" in line or "did not answer" in line)


# ---- item 6: --resume reads point files like any input ----------------------------------------------------------
def test_resume_reruns_planted_and_truncated_point_files_and_says_so(cli, tmp_path):
    path = write(tmp_path, AVAILABILITY)
    whole = cli("sweep", path, "--out", tmp_path / "whole", "--serial", state=False)
    assert whole.code == 0, whole.err
    out = tmp_path / "out"
    first = cli("sweep", path, "--out", out, "--serial", state=False)
    assert first.code == 0, first.err
    points = load_spec(path).points
    files = [out / "points" / f"{p.key}.json" for p in points]
    intact = files[5].read_bytes()
    files[0].write_bytes(files[0].read_bytes()[:40])  # truncated
    saved = json.loads(files[1].read_text())
    files[1].write_text(json.dumps({**saved, "runs": [{"x": "not a number"}] * 2}))  # planted, wrong figures
    files[2].unlink()
    os.mkfifo(files[2])  # a read of it would block for ever
    files[3].write_text("[" * 100_000 + "]" * 100_000)  # nested past any limit
    with open(files[4], "wb") as fh:  # over the size limit (sparse: costs no disk)
        fh.truncate(64 * 1024 * 1024)
    r = cli("sweep", path, "--out", out, "--serial", "--resume", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["points_resumed"] == 1 and r.json["points_finished"] == 6
    warned = r.err.strip().splitlines()
    assert len(warned) == 5 and all("runs again" in line for line in warned)
    for index, file in enumerate(files[:5]):
        assert any(str(file) in line and f"point {index} runs again" in line for line in warned), index
    assert sweep_doc(out) == sweep_doc(tmp_path / "whole")
    assert all(f.is_file() for f in files) and files[5].read_bytes() == intact


def test_resume_takes_only_the_runs_from_a_point_file(cli, tmp_path):
    """A file whose runs check is used for its runs alone: its parameters and summary come from the spec."""
    path = write(tmp_path, AVAILABILITY)
    out = tmp_path / "out"
    assert cli("sweep", path, "--out", out, "--serial", state=False).code == 0
    point = load_spec(path).points[0]
    file = out / "points" / f"{point.key}.json"
    saved = json.loads(file.read_text())
    file.write_text(json.dumps({**saved, "params": {"cubes": 999}, "metrics": {"fake": 1}, "index": 7}))
    r = cli("sweep", path, "--out", out, "--serial", "--resume", "-o", "json", state=False)
    assert r.code == 0 and r.err == "" and r.json["points_resumed"] == 6
    assert r.json["points"][0]["params"] == point.params and "fake" not in r.json["points"][0]["metrics"]


# ---- item 7: simulate-availability --seed -1, --host-availability nan -----------------------------------------
@pytest.mark.parametrize(
    ("option", "value"), [("--seed", "-1"), ("--host-availability", "nan"), ("--host-availability", "inf")]
)
def test_simulate_availability_refuses_a_negative_seed_and_nan(cli, option, value):
    r = cli("simulate-availability", "--trials", "100", "--cubes", "8", option, value, state=False)
    assert r.code == 2 and option in one_line(r.err)


# ---- item 13: the sweep's plot figure, its intervals; a run with no job -------------------------------------------
def test_an_availability_sweep_without_50_cubes_plots_a_size_it_has(cli, tmp_path):
    text = "schema_version: 1\nsimulation: availability\nfixed: {trials: 60}\npoints: [{cubes: [8, 64]}, {cubes: 8}]\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "p", "--serial", "-o", "json", state=False)
    assert r.code == 0 and r.json["metric"] == "reconfigurable_ft.8"  # the largest size every point simulates
    assert all(p["metrics"]["reconfigurable_ft.8"]["mean"] is not None for p in r.json["points"])
    text = "schema_version: 1\nsimulation: availability\nfixed: {trials: 60}\ngrid: {cubes: [8, 16]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert r.json["metric"] == "reconfigurable_ft.16"  # no size in every point: the largest any point simulates
    assert r.json["points"][1]["metrics"]["reconfigurable_ft.16"]["mean"] is not None
    text = (
        "schema_version: 1\nsimulation: availability\nfixed: {trials: 60, cubes: [8, 50]}\n"
        "grid: {host_availability: [0.99, 0.995]}\n"
    )
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "q", "--serial", "-o", "json", state=False)
    assert r.code == 0 and r.json["metric"] == "reconfigurable_ft.50"  # the paper's operating point, when swept


@pytest.mark.parametrize(
    ("plot", "field"),
    [
        ("{metric: reconfigurable_ft.50}", "plot.metric"),
        ("{metric: rg}", "plot.metric"),
        ("{young_daly_for: 8x8x8}", "plot.young_daly_for"),
    ],
)
def test_an_availability_spec_with_a_plot_it_cannot_draw_is_refused_before_any_run(cli, tmp_path, plot, field):
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, AVAILABILITY + f"plot: {plot}\n"), "--out", out, "--serial", state=False)
    assert r.code == 2 and f"field {field}" in one_line(r.err) and "spec.yaml" in r.err
    assert not out.exists()


@pytest.mark.parametrize(
    ("axes", "field"),
    [("grid: {spare_cubes: [0, 2, 0]}", "grid"), ("points: [{spare_cubes: 2}, {spare_cubes: 2}]", "points")],
)
def test_a_point_given_twice_is_refused_before_any_run(cli, tmp_path, axes, field):
    """Two points of the same work ran twice and shared one resume file."""
    text = f"schema_version: 1\nsimulation: fleet\nfixed: {{days: 0.1}}\n{axes}\n"
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2 and f"spec.yaml: field {field}:" in one_line(r.err)
    assert "are the same (give more seeds instead)" in r.err
    assert not out.exists()


@pytest.mark.parametrize("names", ["[one-large-job.yaml, ./one-large-job.yaml]", "[one-large-job.yaml, copy.yaml]"])
def test_one_workload_file_named_two_ways_is_one_point(cli, tmp_path, names):
    """A point's key held the file's name beside its contents: one file named two ways ran twice as two points."""
    workload = (Path(__file__).resolve().parents[1] / "fixtures/sweeps/one-large-job.yaml").read_text()
    write(tmp_path, workload, "one-large-job.yaml")
    write(tmp_path, workload, "copy.yaml")
    text = f"schema_version: 1\nsimulation: fleet\nfixed: {{days: 0.1}}\ngrid: {{workload: {names}}}\n"
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2 and "spec.yaml: field grid:" in one_line(r.err)
    assert "points 0 and 1 are the same (give more seeds instead)" in r.err
    assert not out.exists()


@pytest.mark.parametrize("generation", ["tpu7x", "tpu-v5p"])
def test_a_static_figure_of_pods_without_a_static_twin_is_refused_before_any_run(cli, tmp_path, generation):
    """A static pod is a 4x4x4 grid of cubes: an availability sweep of larger pods gives no static figure, so
    plotting one is refused (exit 2 naming plot.metric); with a TPU v4 pod among the points it is drawn."""
    text = "schema_version: 1\nsimulation: availability\nfixed: {trials: 40, cubes: 8}\nplot: {metric: static.8}\n"
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text + f"grid: {{generation: [{generation}]}}\n"), "--out", out, "--serial",
            state=False)  # fmt: skip
    assert r.code == 2 and "field plot.metric" in one_line(r.err) and "static.8" in r.err
    assert not out.exists()
    mixed = write(tmp_path, text + f"grid: {{generation: [{generation}, tpu-v4]}}\n", "mixed.yaml")
    r = cli("sweep", mixed, "--out", out, "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    assert [p["metrics"].get("static.8") is not None for p in r.json["points"]] == [False, True]


@pytest.mark.parametrize(
    ("plot", "field"),
    [
        ("{metric: wait_hours.enormous}", "plot.metric"),
        ("{metric: reconfigurable_ft.8}", "plot.metric"),
        ("{young_daly_for: 9x9x9}", "plot.young_daly_for"),
        ("{young_daly_for: 8x8x8 sideways}", "plot.young_daly_for"),
        ("{young_daly_for: ''}", "plot.young_daly_for"),
        ("{young_daly_for: 3x3x3}", "plot.young_daly_for"),  # no slice's shape (`topology` refuses it): was drawn
        ("{young_daly_for: 1x1x1}", "plot.young_daly_for"),
    ],
)
def test_a_fleet_spec_with_a_plot_it_cannot_draw_is_refused_before_any_run(cli, tmp_path, plot, field):
    text = f"schema_version: 1\nsimulation: fleet\nfixed: {{days: 0.2}}\ngrid: {{spare_cubes: [0, 2]}}\nplot: {plot}\n"
    out = tmp_path / "o"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2 and f"field {field}" in one_line(r.err)
    assert not out.exists()


def test_sweep_intervals_of_shares_stay_within_0_and_1_with_two_seeds(cli, tmp_path):
    text = "schema_version: 1\nsimulation: availability\nseeds: 2\nfixed: {trials: 30}\ngrid: {cubes: [[48, 56, 64]]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    figures = r.json["points"][0]["metrics"]
    clipped = 0
    for name, figure in figures.items():
        low, high = bounds(name)
        assert (low, high) == (0.0, 1.0), name
        assert low <= figure["low"] <= figure["mean"] <= figure["high"] <= high, (name, figure)
        clipped += (figure["high"] == 1.0 and figure["mean"] < 1.0) or (figure["low"] == 0.0 and figure["mean"] > 0.0)
    assert clipped  # the t interval of 2 seeds ran past [0, 1] for these figures, and was clipped


def test_counts_and_hours_intervals_do_not_go_below_zero(cli, tmp_path):
    text = "schema_version: 1\nsimulation: fleet\nseeds: 2\nfixed: {days: 0.3}\ngrid: {spare_cubes: [0]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "-o", "json", state=False)
    assert r.code == 0, r.err
    for name, figure in r.json["points"][0]["metrics"].items():
        if figure["low"] is not None:
            assert bounds(name)[0] <= figure["low"] <= figure["mean"] <= figure["high"] <= bounds(name)[1], name


def test_simulate_fleet_with_no_job_is_a_result_not_bad_input(cli, tmp_path):
    out = tmp_path / "idle.jsonl"
    r = cli("simulate-fleet", "--days", "1", "--load-per-pod", "0", "--out", out, "-o", "json", state=False)
    assert r.code == 0, r.err
    doc = r.json
    assert (
        doc["jobs_submitted"] == doc["jobs_finished"] == 0 and doc["sg"] == doc["mpg"] == 0.0 and doc["segments"] == []
    )
    assert sum(doc["disruptions"].values()) == 0
    # its log's report says what the summary says: a day of idle capacity, SG 0, nothing else measured
    report = cli("goodput-report", out, "-o", "json", state=False)
    assert report.code == 0, report.err
    fleet = report.json["fleet"]
    assert {k: fleet[k] for k in ("sg", "rg", "pg", "mpg")} == {k: doc[k] for k in ("sg", "rg", "pg", "mpg")}
    assert fleet["sg"] == 0.0 and fleet["jobs"] == 0 and fleet["capacity_basis"] == "events"
    assert fleet["window"]["end"] - fleet["window"]["start"] == 86400 and report.json["jobs"] == []
    refused = cli("goodput-report", out, "--capacity", "tpu-v4=4096", state=False)  # no records, no job: no span
    assert refused.code == 2 and "no job events in the input" in refused.err
    # a window the records do not reach, or a single record, spans no time: refused, never an empty report
    before = ("--since", "2025-01-01T00:00:00Z", "--until", "2025-02-01T00:00:00Z")
    refused = cli("goodput-report", out, *before, state=False)
    assert refused.code == 2 and "inside --since/--until, and its capacity records span no time" in refused.err
    one = tmp_path / "one.jsonl"
    one.write_text(out.read_text().splitlines()[0] + "\n")
    refused = cli("goodput-report", one, state=False)
    assert refused.code == 2 and "capacity records span no time" in refused.err
    text = "schema_version: 1\nsimulation: fleet\nfixed: {days: 0.2}\ngrid: {load_per_pod: [0]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", tmp_path / "o", "--serial", "-o", "json", state=False)
    assert r.code == 0 and r.json["points"][0]["metrics"]["jobs_submitted"]["mean"] == 0


# ---- CPU within documented ranges: capped by the work asked for ------------------------------------------------
def test_simulate_fleet_at_the_maximum_arrival_rate_for_a_day_is_refused_by_its_queue_work(cli, tmp_path):
    workload = tmp_path / "busy.yaml"
    workload.write_text(
        SHIPPED_WORKLOAD.read_text().replace("arrival_rate_per_hour: 1.6", "arrival_rate_per_hour: 1000")
    )
    r = cli("simulate-fleet", "--days", "1", "--workload", workload, state=False)
    assert r.code == 2
    line = one_line(r.err)
    assert "over the limit of 50,000,000" in line and "24,000 jobs arrive" in line


def test_simulate_availability_is_refused_by_its_work_not_by_each_option(cli):
    r = cli("simulate-availability", "--host-availability", "0", "--trials", "10000000", state=False)
    assert r.code == 2
    line = one_line(r.err)
    # 10,000,000 x (1,024 draws + 1,177.6 for the static search of the 12 default sizes), whatever the availability
    assert "over the limit of 5,000,000,000" in line and "22,016,000,000 units" in line
    r = cli("simulate-availability", "--host-availability", "0", "--trials", "100", "--cubes", "8", state=False)
    assert r.code == 0, r.err  # the same availability with fewer trials is within the cap


def test_a_sweep_refuses_a_point_over_a_cap_before_any_run(cli, tmp_path):
    out = tmp_path / "o"
    # an availability point is within its cap whatever its availability (the static search no longer grows with
    # the hosts down), up to the spec's 1,000,000 trials of all 64 sizes
    from tpufleet.availability import MAX_WORK, expected_work

    assert expected_work(list(range(1, 65)), 1_000_000) < MAX_WORK
    busy = write(tmp_path, "schema_version: 1\narrival_rate_per_hour: 1000\n", "busy.yaml")
    assert busy.exists()
    text = "schema_version: 1\nsimulation: fleet\nfixed: {days: 0.5, workload: busy.yaml}\ngrid: {spare_cubes: [0]}\n"
    r = cli("sweep", write(tmp_path, text), "--out", out, "--serial", state=False)
    assert r.code == 2 and "50,000,000" in one_line(r.err) and not out.exists()


# ---- messages quote at most 60 characters of a bad value -----------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["simulate-availability", "--cubes", "x" * 5000],
        ["simulate-availability", "--plot", "p" * 5000 + ".gif"],
        ["simulate-fleet", "--days", "1", "--fault-scale", "y" * 5000],
        ["simulate-fleet", "--days", "1", "--fault-scale", "z" * 5000 + "=2"],
    ],
)
def test_messages_quote_at_most_60_characters_of_a_bad_value(cli, args):
    r = cli(*args, state=False)
    assert r.code == 2
    line = one_line(r.err)
    assert len(line) < 300 and args[-1][:61] not in line


def test_an_input_file_name_with_a_newline_stays_on_its_row(cli, tmp_path):
    """A workload named "b\\n 99 x.yaml" printed the rest of its name as a row of its own in the sweep's table."""
    job = "schema_version: 1\narrival_rate_per_hour: 0\ncheckpoint_write_s: {}\njobs:\n"
    job += "  - {{id: j, shape: 4x4x4, duration_hours: 1000, phase: training}}\n"
    (tmp_path / "a.yaml").write_text(job.format(60))
    (tmp_path / "b\n 99 x.yaml").write_text(job.format(30))
    spec = "schema_version: 1\nsimulation: fleet\nseeds: 1\nfixed: {days: 0.5}\n"
    spec += 'grid:\n  workload: ["a.yaml", "b\\n 99 x.yaml"]\n'
    r = cli("sweep", write(tmp_path, spec), "--out", tmp_path / "o", "--serial", state=False)
    assert r.code == 0, r.err
    rows = r.out.splitlines()
    assert any(line.startswith("1 ") and "b\\n 99 x.yaml" in line for line in rows)
    assert not any(line.lstrip().startswith("99 x.yaml") for line in rows)
