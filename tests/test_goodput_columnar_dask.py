"""goodput-report on a Dask cluster (`--workers N`, `--cluster`): one task a log, the jobs several logs share
merged in the logs' order and accounted as one; the serial report byte for byte, and the serial error."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("distributed", reason="Dask is an optional extra (make sweep-deps installs it): no cluster here")

from test_goodput_fastpath import B, split_logs

from tpufleet.goodput import render
from tpufleet.goodput.pipeline import ReportOptions
from tpufleet.ops import goodputparts
from tpufleet.ops.goodput import build


@pytest.fixture(scope="module")
def scheduler():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def test_a_cluster_gives_the_serial_report_byte_for_byte(tmp_path, scheduler):
    paths = split_logs(tmp_path, 5, 4)
    options: dict[str, Any] = {"by": ["accelerator", "phase"], "period": "day"}
    serial = build(paths, **options)
    shared = goodputparts.report(paths, "native", False, scheduler, None, ReportOptions(**options))
    assert shared["input"] == {k: v for k, v in serial["input"].items() if k not in ("files", "format")}
    on_cluster = build(paths, **options, cluster=scheduler)
    assert json.dumps(on_cluster) == json.dumps(serial)
    assert render.to_table(on_cluster, top=50) == render.to_table(serial, top=50)
    assert serial["input"]["records"] == sum(1 for p in paths for line in p.read_text().splitlines() if line.strip())
    assert len(serial["jobs"]) >= 10
    named = [
        {line.split('"job": "')[1].split('"')[0] for line in p.read_text().splitlines() if '"job": "' in line}
        for p in paths
    ]
    by_one = [j for j in set().union(*named) if sum(j in n for n in named) == 1]
    assert by_one and len(by_one) < len(set().union(*named))  # jobs of one log and jobs shared by several


def test_local_workers_give_the_serial_report_and_the_serial_error(tmp_path):
    paths = split_logs(tmp_path, 9, 3)
    serial = build(paths, period="week", skip_bad=True)
    assert json.dumps(build(paths, period="week", skip_bad=True, workers=2)) == json.dumps(serial)
    with paths[1].open("a") as fh:
        fh.write('{"type":"event","job":"j0","time":1767571200.0,"event":"step_start","step":-1}\n')
    with pytest.raises(Exception) as serial_error:
        build(paths)
    with pytest.raises(type(serial_error.value)) as error:
        build(paths, workers=2)
    assert str(error.value) == str(serial_error.value) and f"{paths[1]}:" in str(error.value)


@pytest.mark.parametrize("case", ["records that disagree first", "copies skipped whole"])
def test_copies_of_a_log_get_what_the_serial_reading_says(tmp_path, scheduler, case):
    """A copy of a log after a log whose job record disagrees with the first's: the serial reading stops at that
    record, before the copy. Copies of a log whose one line --skip-bad skips for an earlier log's record: the
    serial reading refuses nothing. The cluster says the same (it leaves copies to the serial reading)."""
    job = {"type": "job", "job": "x", "chips": 4, "accelerator": "tpu-v4"}
    events = [{"type": "event", "job": "x", "time": B + t, "event": e} for t, e in ((0, "job_start"), (100, "job_end"))]
    second = [{**job, "chips": 8}] if case == "records that disagree first" else [
        {"type": "event", "job": "x", "time": B + 50, "event": "allocation", "chips": 8}
    ]  # fmt: skip
    paths = [tmp_path / name for name in ("a.jsonl", "b.jsonl", "c.jsonl")]
    for path, records in zip(
        paths, ([job, *events], second, second if "skipped" in case else [job, *events]), strict=True
    ):
        path.write_text("".join(json.dumps(r) + "\n" for r in records))

    def said(**options: Any) -> Any:
        try:
            return json.dumps(build(paths, skip_bad="skipped" in case, **options))
        except Exception as exc:  # noqa: BLE001  (the serial error, whichever it is)
            return type(exc).__name__, str(exc)

    serial = said()
    assert serial[0] == "ConflictingRecords" if "disagree" in case else json.loads(serial)["input"]["skipped"] == 2
    assert said(cluster=scheduler) == serial


def test_the_cli_takes_workers_or_cluster_not_both(cli, tmp_path, scheduler):
    paths = split_logs(tmp_path, 2, 2)
    serial = cli("goodput-report", *paths, "-o", "json", state=False)
    shared = cli("goodput-report", *paths, "-o", "json", "--cluster", scheduler, state=False)
    assert serial.code == shared.code == 0 and shared.out == serial.out
    both = cli("goodput-report", *paths, "--cluster", scheduler, "--workers", "2", state=False)
    assert both.code == 2 and "--workers sizes the local cluster" in both.err


def test_logs_beyond_what_one_process_reads_are_read_on_the_cluster(cli, tmp_path, scheduler, monkeypatch):
    """All the logs together over the serial reading's limit (lowered here to below their size): one process
    refuses them, the cluster (one log a worker) gives the report the serial reading gives without the limit; a
    bad record there is the task's own error, naming the file and line."""
    from tpufleet.errors import BadStateFile
    from tpufleet.state import goodputlogs

    paths = split_logs(tmp_path, 3, 3)
    whole = build(paths, period="day")
    monkeypatch.setattr(goodputlogs, "MAX_TOTAL_LOG_BYTES", sum(p.stat().st_size for p in paths) - 1)
    with pytest.raises(BadStateFile) as refused:
        build(paths, period="day")
    assert str(refused.value).startswith(f"{paths[2]}:") and "larger than" in str(refused.value)
    on_cluster = build(paths, period="day", cluster=scheduler)
    assert json.dumps(on_cluster) == json.dumps(whole)
    lines = paths[2].read_text().splitlines()
    paths[2].write_text("\n".join([*lines, '{"type":"event","job":"j0","time":"soon","event":"step_start"}']) + "\n")
    with pytest.raises(Exception) as bad:
        build(paths, period="day", cluster=scheduler)
    assert str(bad.value).startswith(f"{paths[2]}:{len(lines) + 1}:") and "time" in str(bad.value)
    r = cli("goodput-report", *paths, "--cluster", scheduler, "-o", "json", state=False)
    assert r.code == 2 and json.loads(r.err)["error"] == str(bad.value), r.err


def test_a_failed_cluster_beyond_one_process_is_refused_not_an_internal_error():
    from tpufleet.errors import BadInput, Refused

    bad = BadInput("a.jsonl:3: field time: not a time (value 'soon')")
    assert goodputparts._beyond_one_process(bad) is bad
    lost = goodputparts._beyond_one_process(OSError("worker lost"))
    assert isinstance(lost, Refused) and "worker lost" in str(lost) and lost.exit_code == 1


def test_ml_goodput_metadata_in_one_log_and_steps_in_another_keep_the_metadata(tmp_path, scheduler):
    """A job's `job_metadata` read from one log is kept when a later log names the job without metadata (the
    defaults a log gives a job it has no record of never replace a record), as reading them in turn keeps it."""
    start = 1767571200
    first = tmp_path / "a.jsonl"
    first.write_text(
        json.dumps({"job_name": "x", "job_metadata": {"chips": 64, "accelerator": "tpu-v4", "ideal_step_s": 1}})
        + "\n" + json.dumps({"job_name": "x", "job_start_time": start}) + "\n"
        + json.dumps({"job_name": "x", "step_count": 1, "step_start_time": start + 10}) + "\n"
    )  # fmt: skip
    later = tmp_path / "b.jsonl"
    later.write_text(
        json.dumps({"job_name": "x", "step_count": 2, "step_start_time": start + 20}) + "\n"
        + json.dumps({"job_name": "x", "job_end_time": start + 100}) + "\n"
    )  # fmt: skip
    for paths in ([first, later], [later, first]):
        serial = build(paths, fmt="ml-goodput")
        assert serial["jobs"][0]["chips"] == 64 and serial["jobs"][0]["pg_basis"] == "declared"
        assert json.dumps(build(paths, fmt="ml-goodput", cluster=scheduler)) == json.dumps(serial)


def test_a_copy_of_a_log_is_refused_on_the_cluster_as_in_one_process(cli, tmp_path, scheduler):
    paths = split_logs(tmp_path, seed=5, files=3)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(paths[1].read_bytes())
    serial = cli("goodput-report", *paths, copy, state=False)
    shared = cli("goodput-report", *paths, copy, "--cluster", scheduler, state=False)
    assert serial.code == shared.code == 2 and serial.err == shared.err, (serial.err, shared.err)
    assert f"{copy} holds the same bytes as {paths[1]}" in shared.err


def test_an_allocation_in_one_log_beyond_the_record_in_another_is_the_serial_error(tmp_path, scheduler, monkeypatch):
    """A job's record in one log and an allocation of more chips than it says in another: each log alone reads
    on a worker, and the merge finds the two together; the error is the serial reading's (the allocation's line
    when the record is read first, else the record's), and beyond what one process reads, the merge's own."""
    from tpufleet.state import goodputlogs

    start = 1767571200.0
    record = tmp_path / "record.jsonl"
    record.write_text(json.dumps({"type": "job", "job": "x", "chips": 8, "ideal_step_s": 1.0}) + "\n")
    events = tmp_path / "events.jsonl"
    events.write_text(
        "".join(
            json.dumps({"type": "event", "job": "x", "time": start + dt, "event": name, **extra}) + "\n"
            for dt, name, extra in [(0.0, "allocation", {"chips": 16}), (0.0, "job_start", {}), (9.0, "job_end", {})]
        )
    )
    for paths, bad in (([record, events], f"{events}:1: field chips"), ([events, record], f"{record}:1: field chips")):
        with pytest.raises(Exception) as serial:
            build(paths)
        assert str(serial.value).startswith(bad), str(serial.value)
        with pytest.raises(type(serial.value)) as shared:
            build(paths, cluster=scheduler)
        assert str(shared.value) == str(serial.value)
    monkeypatch.setattr(goodputlogs, "MAX_TOTAL_LOG_BYTES", 10)
    with pytest.raises(Exception) as beyond:
        build([record, events], cluster=scheduler)
    assert str(beyond.value).startswith(f"{record}:1: field chips") and "16 chips" in str(beyond.value)


def test_since_until_without_capacity_records_on_the_cluster_is_the_serial_report(tmp_path, scheduler):
    """Without capacity records the capacity is the whole logs' busiest moment, which a job outside --since/--until
    may hold: a log whose one job ran before the span counts in it on the cluster as in one process, and the
    figures are the matching --window row's."""
    paths = split_logs(tmp_path, 7, 3)
    for path in paths:
        path.write_text("".join(f"{line}\n" for line in path.read_text().splitlines() if '"capacity"' not in line))
    early = tmp_path / "early.jsonl"  # the busiest moment of tpu-v4: 4096 chips, over before the span
    early.write_text(
        '{"type":"job","job":"early","accelerator":"tpu-v4","chips":4096}\n'
        f'{{"type":"event","job":"early","time":{B - 100},"event":"job_start"}}\n'
        f'{{"type":"event","job":"early","time":{B - 50},"event":"job_end"}}\n'
    )
    paths.append(early)
    end = build(paths)["fleet"]["window"]["end"]
    since = B + 30
    serial = build(paths, since=since, by=["accelerator"])
    assert json.dumps(build(paths, since=since, by=["accelerator"], cluster=scheduler)) == json.dumps(serial)
    assert json.dumps(build(paths, since=since, by=["accelerator"], workers=2)) == json.dumps(serial)
    (window,) = build(paths, windows=[("part", end - since)])["windows"]
    assert serial["fleet"]["capacity_basis"] == "peak-allocation"
    assert [serial["fleet"][k] for k in ("sg", "rg", "all_allocated_chip_s")] == [
        window[k] for k in ("sg", "rg", "all_allocated_chip_s")
    ]
    tpu_v4 = next(row for row in serial["segments"] if row["value"] == "tpu-v4")
    assert tpu_v4["capacity_chip_s"] >= 4096 * (end - since)
