"""goodput-report on several large logs read side by side by forked processes (`ops.goodputforked` over
`state.forkedparts`): the serial report byte for byte whichever jobs the logs share, the serial error (a bad record,
a copy of a log, too many jobs, records that disagree across logs), a child killed at a named point of the protocol
(its reading of a named log, its accounting) made good here, no child left behind; and which logs are read so."""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_goodput_fastpath import B, split_logs, varied_log

from tpufleet.errors import TpufleetError
from tpufleet.goodput import events, pipeline
from tpufleet.ops import goodputforked
from tpufleet.ops.goodput import build
from tpufleet.state import forkedjobs, goodputlogs, goodputpool

pytestmark = pytest.mark.skipif(sys.platform != "linux" or not hasattr(os, "fork"), reason="logs are forked on Linux")


@pytest.fixture
def forked(monkeypatch):
    """The forked reading taken whatever the logs' size and look; gives what each attempt came to: True (the
    report made so), False (it fell back to the reading here)."""
    monkeypatch.setattr(goodputforked, "FORKED_MIN_BYTES", 0)
    monkeypatch.setattr(goodputforked, "_apart", lambda paths, fmt: True)
    monkeypatch.setattr(goodputpool, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(forkedjobs, "can_fork", lambda: True)  # (other tests leave idle server threads, lockless)
    outcomes: list[bool] = []
    real = goodputforked.report

    def recorded(*args: Any) -> Any:
        done = real(*args)
        outcomes.append(done is not None)
        return done

    monkeypatch.setattr(goodputforked, "report", recorded)
    return outcomes


def outcome(paths: list[Path], forked: bool = True, **options: Any) -> Any:
    """The report as JSON text, or (type, message) of its error; read here alone unless `forked`."""
    with pytest.MonkeyPatch.context() as mp:
        if not forked:
            mp.setattr(goodputforked, "FORKED_MIN_BYTES", 1 << 62)
        try:
            return json.dumps(build(paths, **options))
        except TpufleetError as exc:
            return type(exc).__name__, str(exc)


def in_child() -> bool:
    return os.getpid() != PARENT


PARENT = os.getpid()


@settings(
    max_examples=12,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # (its patches hold for every example)
)
@given(
    st.integers(0, 10**6),
    st.integers(2, 4),
    st.sampled_from([None, "day", "hour"]),
    st.sampled_from([{}, {"windows": [("1h", 3600.0)]}, {"keep_timelines": 2}, {"since": B + 60.0}]),
)
def test_logs_read_in_forked_processes_give_the_serial_report(tmp_path_factory, forked, seed, files, period, more):
    paths = split_logs(tmp_path_factory.mktemp("logs"), seed, files)
    options: dict[str, Any] = {"by": ["accelerator", "phase"], "period": period, "skip_bad": True, **more}
    serial = outcome(paths, False, **options)
    forked.clear()
    assert outcome(paths, **options) == serial
    assert forked == [True]


def test_logs_that_share_no_job_are_accounted_where_they_are_read(tmp_path, forked, monkeypatch):
    """Each log a job of its own: no job comes back here to be accounted (every account is a child's)."""
    paths = []
    for k in range(3):
        path = tmp_path / f"job{k}.jsonl"
        path.write_text("\n".join(line.replace('"j0"', f'"job{k}"') for line in varied_log(k, 1, 0)) + "\n")
        paths.append(path)
    serial = outcome(paths, False, period="day")
    here: list[str] = []
    real = pipeline.account_log

    def recorded(log: events.Log, *args: Any, **kwargs: Any) -> Any:
        if not in_child():
            here.extend(log.events)
        return real(log, *args, **kwargs)

    monkeypatch.setattr(goodputforked, "account_log", recorded)
    forked.clear()
    assert outcome(paths, period="day") == serial
    assert forked == [True] and here == [] and len(json.loads(serial)["jobs"]) == 3


def test_a_bad_record_is_the_serial_error(tmp_path, forked, reaped):
    paths = split_logs(tmp_path, 9, 3)
    with paths[1].open("a") as fh:
        fh.write('{"type":"event","job":"j0","time":1767571200.0,"event":"step_start","step":-1}\n')
    serial = outcome(paths, False)
    forked.clear()
    assert outcome(paths) == serial and f"{paths[1]}:" in serial[1]
    assert forked == [False] and reaped()


def test_a_copy_of_a_log_is_refused_as_the_serial_reading_refuses_it(tmp_path, forked, reaped):
    paths = split_logs(tmp_path, 4, 3)
    copy = tmp_path / "copy.jsonl.gz"
    copy.write_bytes(gzip.compress(paths[0].read_bytes()))
    serial = outcome([*paths, copy], False)
    assert serial[0] == "BadInput" and "holds the same bytes" in serial[1]
    assert outcome([*paths, copy]) == serial and reaped()


@pytest.mark.parametrize("limit", ["jobs", "bytes"])
def test_logs_beyond_the_limits_together_get_the_serial_error(tmp_path, forked, monkeypatch, limit):
    """Each log within the limits, all of them together over one: the forked reading gives up, the serial one
    says which log goes over."""
    paths = split_logs(tmp_path, 6, 3)
    if limit == "jobs":
        most = max(len(events.job_names(goodputlogs.load_part(p, "native", False)[0])) for p in paths)
        monkeypatch.setattr(events, "MAX_JOBS", most)
    else:
        monkeypatch.setattr(goodputlogs, "MAX_TOTAL_LOG_BYTES", sum(p.stat().st_size for p in paths) - 1)
    serial = outcome(paths, False)
    assert serial[0] in ("BadInput", "BadStateFile") and ("more than" if limit == "jobs" else "larger") in serial[1]
    forked.clear()
    assert outcome(paths) == serial and forked == [False]


def test_a_job_record_that_disagrees_across_logs_is_the_serial_error(tmp_path, forked):
    paths = split_logs(tmp_path, 2, 2)
    record = next(json.loads(line) for line in paths[0].read_text().splitlines() if '"type": "job"' in line)
    with paths[1].open("a") as fh:
        fh.write(json.dumps({**record, "chips": record["chips"] + 1}) + "\n")
    serial = outcome(paths, False)
    assert serial[0] == "ConflictingRecords" and record["job"] in serial[1]
    forked.clear()
    assert outcome(paths) == serial and forked == [False]


@pytest.mark.parametrize("point", ["reading the second log", "accounting"])
def test_a_child_killed_partway_is_made_good_here(tmp_path, forked, reaped, monkeypatch, point):
    """A child dies (as one the OOM killer picks) at a named point: every child is stopped and reaped, and the
    logs are read here, with the serial report."""
    paths = split_logs(tmp_path, 3, 3)
    serial = outcome(paths, False, period="day")
    read, account = goodputlogs.load_part, pipeline.account_log

    def killed_reading(path: Path, *args: Any, **kwargs: Any) -> Any:
        if in_child() and path == paths[1]:
            os._exit(9)
        return read(path, *args, **kwargs)

    def killed_accounting(*args: Any, **kwargs: Any) -> Any:
        if in_child():
            os._exit(9)
        return account(*args, **kwargs)

    if point == "accounting":
        monkeypatch.setattr(goodputforked, "account_log", killed_accounting)
    else:
        monkeypatch.setattr(goodputlogs, "load_part", killed_reading)
    forked.clear()
    assert outcome(paths, period="day") == serial
    assert forked == [False] and reaped()


def test_an_interrupt_here_leaves_no_child_behind(tmp_path, forked, reaped, monkeypatch):
    """Ctrl-C while this process decides: the interrupt goes on at once, every child killed and reaped."""
    paths = split_logs(tmp_path, 5, 2)

    def interrupted(paths: list[Path]) -> Any:
        def decide(summaries: Any) -> Any:
            raise KeyboardInterrupt

        return decide

    monkeypatch.setattr(goodputforked, "_decided", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(paths)
    assert reaped()


def test_logs_that_name_one_job_in_their_heads_are_read_here(tmp_path):
    """Logs rotated by time open with the same long jobs: read in this process. Logs of jobs apart, gzip or not,
    are read side by side; a log that cannot be looked at (a FIFO) is read here, which says what it is."""
    apart = [tmp_path / f"log{k}.jsonl" for k in range(2)]
    for k, path in enumerate(apart):
        path.write_text("\n".join(re.sub(r'"j([0-9])', rf'"log{k}-j\1', line) for line in varied_log(k, 2, 0)))
    zipped = tmp_path / "z.jsonl.gz"
    zipped.write_bytes(gzip.compress(b'{"type":"event","job":"zz","time":1767571200.0,"event":"job_start"}\n'))
    assert goodputforked._apart([*apart, zipped], "native")
    lines, rotated = varied_log(1, 4, 0), [tmp_path / "day1.jsonl", tmp_path / "day2.jsonl"]
    rotated[0].write_text("\n".join(lines[: len(lines) // 2]))
    rotated[1].write_text("\n".join(lines[len(lines) // 2 :]))
    assert not goodputforked._apart(rotated, "native")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert not goodputforked._apart([apart[0], fifo], "native")
    assert goodputforked._apart(apart, "csv-like format")  # (no way to name a job: read side by side)


def test_a_job_in_two_logs_is_merged_in_the_order_of_the_logs(tmp_path, forked):
    """A save logged to start in one log and to end in the next at the same instant: in the order of the logs it
    ends there (no time saving); merged the other way round it would run on to the job's end."""

    def lines(*records: dict[str, Any]) -> str:
        return "\n".join(json.dumps({"type": "event", "job": "j", **r}) for r in records) + "\n"

    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    job = {"type": "job", "job": "j", "accelerator": "tpu-v4", "chips": 8}
    first.write_text(json.dumps(job) + "\n" + lines(
        {"time": B, "event": "job_start"},
        {"time": B + 10, "event": "step_start", "step": 1},
        {"time": B + 100, "event": "checkpoint_start", "step": 1},
    ))  # fmt: skip
    second.write_text(lines(
        {"time": B + 100, "event": "checkpoint_end", "step": 1},
        {"time": B + 100, "event": "step_start", "step": 2},
        {"time": B + 200, "event": "step_start", "step": 3},
        {"time": B + 300, "event": "job_end"},
    ))  # fmt: skip
    serial = outcome([first, second], False)
    assert json.loads(serial)["jobs"][0]["badput_s"]["checkpoint_save"] == 0
    forked.clear()
    assert outcome([first, second]) == serial and forked == [True]


def write(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def event(job: str, t: float, name: str, **more: Any) -> dict[str, Any]:
    return {"type": "event", "job": job, "time": B + t, "event": name, **more}


def test_a_jobs_slice_allocations_in_two_logs_fold_in_the_order_of_the_logs(tmp_path, forked):
    """Slice 0 released at 50 at the end of one log and held again at 50 at the start of the next: in log order
    the job holds all its chips throughout (the merge numbered the second log's allocations 0, 2, 4...: it lost
    them half the time)."""
    first = write(
        tmp_path / "a.jsonl",
        {"type": "job", "job": "m", "chips": 16, "slices": 2, "accelerator": "tpu-v4"},
        *(event("m", 0, "allocation", chips=8, slice=s) for s in (0, 1)),
        event("m", 0, "job_start"),
        event("m", 10, "step_start", step=1),
        event("m", 50, "allocation", chips=0, slice=0),
    )
    second = write(
        tmp_path / "b.jsonl",
        event("m", 50, "allocation", chips=8, slice=0),
        event("m", 60, "step_start", step=2),
        event("m", 100, "job_end"),
    )
    serial = outcome([first, second], False)
    assert json.loads(serial)["fleet"]["sg"] == 1.0
    forked.clear()
    assert outcome([first, second]) == serial and forked == [True]


def test_a_copy_of_a_log_after_records_that_disagree_is_the_serial_error(tmp_path, forked):
    """The serial reading stops at the second log's record before it reaches the copy in the third."""
    job = {"type": "job", "job": "x", "chips": 4, "accelerator": "tpu-v4"}
    first = write(tmp_path / "a.jsonl", job, event("x", 0, "job_start"), event("x", 100, "job_end"))
    write(tmp_path / "b.jsonl", {**job, "chips": 8})
    (tmp_path / "c.jsonl").write_bytes(first.read_bytes())
    paths = [first, tmp_path / "b.jsonl", tmp_path / "c.jsonl"]
    serial = outcome(paths, False)
    assert serial[0] == "ConflictingRecords"
    assert outcome(paths) == serial


def test_copies_of_a_log_the_serial_reading_skips_whole_are_not_refused(tmp_path, forked):
    """With --skip-bad, a log whose one line gives a job more chips than an earlier log's record is skipped whole
    by the serial reading, and so is its copy: no record in either, nothing to refuse."""
    job = {"type": "job", "job": "x", "chips": 4, "accelerator": "tpu-v4"}
    first = write(tmp_path / "a.jsonl", job, event("x", 0, "job_start"), event("x", 100, "job_end"))
    over = write(tmp_path / "c.jsonl", event("x", 50, "allocation", chips=8))
    (tmp_path / "e.jsonl").write_bytes(over.read_bytes())
    paths = [first, over, tmp_path / "e.jsonl"]
    serial = outcome(paths, False, skip_bad=True)
    assert json.loads(serial)["input"]["skipped"] == 2
    assert outcome(paths, skip_bad=True) == serial


def test_a_damaged_gzip_log_is_the_serial_error(tmp_path, forked, monkeypatch):
    """Looked at before the fork (`_apart`, not forced here): a gzip stream that cannot be decompressed is read
    in this process, which names it."""
    monkeypatch.undo()
    monkeypatch.setattr(goodputforked, "FORKED_MIN_BYTES", 0)
    monkeypatch.setattr(goodputpool, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(forkedjobs, "can_fork", lambda: True)
    first = write(tmp_path / "a.jsonl", event("a", 0, "job_start"))
    damaged = tmp_path / "b.jsonl"
    damaged.write_bytes(b"\x1f\x8b\x09\x00" + bytes(20))  # gzip's magic, then no method gzip knows
    assert not goodputforked._apart([first, damaged], "native")
    serial = outcome([first, damaged], False)
    assert serial[0] == "BadStateFile" and str(damaged) in serial[1]
    assert outcome([first, damaged]) == serial


def test_a_child_gone_while_it_waits_for_the_decision_is_made_good_here(tmp_path, forked, monkeypatch):
    """Both children have read every log and wait, holding them; one is killed then (as the OOM killer picks a
    large idle process): the decision cannot reach it, every child is stopped and the logs are read here."""
    paths = split_logs(tmp_path, 3, 2)
    serial = outcome(paths, False, period="day")
    real, forks = goodputforked._decided, []
    fork = os.fork

    def recorded() -> int:
        pid = fork()
        forks.append(pid)
        return pid

    def killing(paths: list[Path]) -> Any:
        decide = real(paths)

        def decided(summaries: Any) -> Any:
            os.kill(forks[0], 9)
            os.waitpid(forks[0], 0)
            return decide(summaries)

        return decided

    monkeypatch.setattr(os, "fork", recorded)
    monkeypatch.setattr(goodputforked, "_decided", killing)
    forked.clear()
    assert outcome(paths, period="day") == serial and forked == [False]


def test_no_process_to_be_had_reads_the_logs_here(tmp_path, forked, monkeypatch):
    paths = split_logs(tmp_path, 3, 2)
    serial = outcome(paths, False)

    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    forked.clear()
    assert outcome(paths) == serial and forked == [False]


@pytest.mark.parametrize("animated", [False, True])
def test_a_terminals_reading_bar_leaves_the_report_free_to_fork(monkeypatch, animated):
    """goodput-report's bar on a terminal is drawn by no thread of its own unless a Dask cluster reads the logs:
    a process running another thread never forks (`forkedjobs.can_fork`: the forked reading and accounting would
    be off at a terminal)."""
    import io

    from tpufleet.cli.progress import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, before = Terminal(), threading.active_count()  # (other tests may leave threads running here)
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress("reading logs", None, animated=animated):
        more = threading.active_count() - before
    assert more == animated and "reading logs" in terminal.getvalue()
