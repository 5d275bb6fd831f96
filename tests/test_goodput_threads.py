"""A large log's jobs accounted on several threads (`goodputpool.job_threads`), its pieces read by the compiled
loop on threads beside the reading (`goodputpool._loop_threads`), and each job's intervals left once its account
is made when the report reads none of them (`pipeline.travelling`): the report one thread gives, and every job
accounted once, on the threads."""

from __future__ import annotations

import importlib.util
import random
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_goodput_fastpath import B, varied_log

from helpers import GUARD_S, report_interrupted
from tpufleet.errors import BadInput
from tpufleet.goodput import pipeline
from tpufleet.ops.goodput import build
from tpufleet.state import goodputlogs, goodputpool, goodputstreams
from tpufleet.state.workthreads import WorkThreads


def any_map(mapper: Any) -> Any:
    """A job mapper, to map anything (it is typed for jobs' accounts)."""
    return mapper


def report(paths: list[Path], cpus: int, **options: Any) -> tuple[Any, list[str]]:
    """(the report, or ("error", message); the thread each job was accounted on), with `cpus` CPUs to use and
    the job threads on whatever the log's size."""
    names: list[str] = []
    real = pipeline._account_job

    def recorded(*args: Any) -> Any:
        names.append(threading.current_thread().name)
        return real(*args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputpool, "_usable_cpus", lambda: cpus)
        mp.setattr(goodputpool, "JOB_THREADS_MIN_RECORDS", 0)
        mp.setattr(pipeline, "_account_job", recorded)
        mp.setattr(pipeline, "TRAVEL_MIN_INTERVALS", 0)  # (the generated jobs are small: let them travel too)
        try:
            return build(paths, **options), names
        except BadInput as exc:
            return ("error", str(exc)), names


@settings(max_examples=20, derandomize=True, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(2, 6),
    st.integers(0, 2),
    st.sampled_from([None, "day", "hour"]),
    st.sampled_from([{}, {"windows": [("1h", 3600.0)]}, {"keep_timelines": 2}, {"since": B + 60.0}]),
)
def test_jobs_accounted_on_threads_give_the_one_thread_report(tmp_path_factory, seed, jobs, malformed, period, more):
    path = tmp_path_factory.mktemp("logs") / "a.jsonl"
    path.write_text("\n".join(varied_log(seed, jobs, malformed)) + "\n")
    options = {"by": ["accelerator", "phase"], "period": period, "skip_bad": True, **more}
    threaded, on = report([path], 2, **options)
    alone, here = report([path], 1, **options)
    assert threaded == alone
    assert len(on) == len(here) == jobs  # each job accounted once (none outside --since: the jobs start before it)
    assert all(name.startswith("goodput-jobs") for name in on) and set(here) == {"MainThread"}


def test_a_small_log_is_accounted_on_this_thread(tmp_path, monkeypatch):
    """Below JOB_THREADS_MIN_RECORDS the jobs are accounted one after another here: no thread for a small log."""
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(varied_log(7, 3, 0)) + "\n")
    records = len(path.read_text().splitlines())
    monkeypatch.setattr(goodputpool, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(goodputpool, "JOB_THREADS_MIN_RECORDS", records + 1)
    with goodputpool.job_threads(records) as mapper:
        assert mapper is map
    monkeypatch.setattr(goodputpool, "JOB_THREADS_MIN_RECORDS", records)
    with goodputpool.job_threads(records) as mapper:
        assert mapper is not map
        names = list(any_map(mapper)(lambda job: (job, threading.current_thread().name), ["a", "b", "c"]))
    assert [job for job, _ in names] == ["a", "b", "c"] and all(n.startswith("goodput-jobs") for _, n in names)


def test_jobs_on_threads_are_given_in_order_with_few_queued(monkeypatch):
    """Many jobs: each given in job order, whichever thread finishes first, and never more than JOBS_AHEAD and
    the threads' own queued at once (a future each for 100,000 jobs was as much again as their accounts)."""
    monkeypatch.setattr(goodputpool, "_usable_cpus", lambda: 2)
    queued, most = [0], [0]
    lock = threading.Lock()

    def work(job: int) -> int:
        with lock:
            most[0] = max(most[0], queued[0])
            queued[0] -= 1
        return job * job

    def jobs():
        for k in range(500):
            with lock:
                queued[0] += 1
            yield k

    with goodputpool.job_threads(goodputpool.JOB_THREADS_MIN_RECORDS) as mapper:
        assert list(any_map(mapper)(work, jobs())) == [k * k for k in range(500)]
    assert most[0] <= goodputpool.JOBS_AHEAD + 2


@pytest.mark.parametrize("more", [{}, {"period": "day"}, {"period": "week", "since": B + 60.0, "until": B + 200.0}])
def test_accounts_without_their_intervals_make_the_same_report(tmp_path, monkeypatch, more):
    """A report without --window rows or timelines drops each job's intervals as its account is made: the report
    of the accounts that keep them, byte for byte."""
    monkeypatch.setattr(pipeline, "TRAVEL_MIN_INTERVALS", 0)  # (these jobs are small)
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(varied_log(11, 5, 0)) + "\n")
    options = pipeline.ReportOptions(by=["accelerator"], **more)
    travelled = pipeline.from_log(goodputlogs.load([path], "native", False), options)
    log = goodputlogs.load([path], "native", False)
    accounts = pipeline.account_log(log, options.since, options.until, options.spans, False)
    assert all(a.starts is not None for a in accounts)  # (kept: the report below reads them)
    assert pipeline.from_accounts(accounts, log, options) == travelled
    log = goodputlogs.load([path], "native", False)
    travelling = pipeline.account_log(
        log, options.since, options.until, options.spans, False, travel=(options.period, 0)
    )
    assert all(a.starts is None and a.part_held is not None for a in travelling)


@pytest.mark.parametrize("period", ["day", "week"])
def test_a_job_of_one_instant_leaves_its_intervals_too(tmp_path, monkeypatch, period):
    """A job whose events are all at one instant lies in no period: it adds nothing to the --period rows, as the
    report of its intervals says (leaving them once failed to unpack no period)."""
    monkeypatch.setattr(pipeline, "TRAVEL_MIN_INTERVALS", 0)  # (these jobs are small)
    lines = varied_log(4, 2, 0)
    lines += [
        '{"type":"job","job":"still","chips":8}',
        f'{{"type":"event","job":"still","time":{B},"event":"job_start"}}',
    ]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n")
    options = pipeline.ReportOptions(by=["accelerator"], period=period)
    travelled = pipeline.from_log(goodputlogs.load([path], "native", False), options)
    log = goodputlogs.load([path], "native", False)
    accounts = pipeline.account_log(log, None, None, [], False)
    assert pipeline.from_accounts(accounts, log, options) == travelled
    assert "still" in {row["job"] for row in travelled["jobs"]}


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="Numba is not installed: no compiled loop")
@pytest.mark.parametrize("cpus", [1, 2])
def test_the_compiled_loop_runs_on_threads_beside_the_reading(tmp_path, monkeypatch, cpus):
    """With two CPUs the loop reads the pieces on threads (none with one), and the report is the one msgspec's
    reader gives."""
    rng = random.Random(5)
    lines = [
        f'{{"type":"event","job":"j{k % 3}","time":{B + k:.1f},"event":"step_start","step":{k}}}' for k in range(3000)
    ]
    lines.insert(0, '{"type":"capacity","time":1767571200,"accelerator":"tpu-v4","chips":64}')
    lines.insert(rng.randrange(1, len(lines)), '{"type":"job","job":"j1","chips":8}')
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(goodputstreams, "CHUNK_BYTES", 4096)  # about 60 pieces
    monkeypatch.setattr(goodputpool, "_usable_cpus", lambda: cpus)
    monkeypatch.setattr(goodputpool, "COMPILED_MIN_BYTES", 1 << 62)
    expected = build([path], by=["accelerator"], period="day")
    from tpufleet.goodput import linescan

    where: list[tuple[str, bool]] = []
    real = linescan.decode_piece

    def recorded(piece: bytes) -> Any:
        decoded = real(piece)
        where.append((threading.current_thread().name, decoded is not None))
        return decoded

    monkeypatch.setattr(linescan, "decode_piece", recorded)
    monkeypatch.setattr(goodputpool, "COMPILED_MIN_BYTES", 0)
    assert build([path], by=["accelerator"], period="day") == expected
    assert len(where) > 50 and all(taken for _, taken in where)
    threads = {name.split("_")[0] for name, _ in where}
    assert threads == ({"goodput-loop"} if cpus == 2 else {"MainThread"})


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="Numba is not installed: no compiled loop")
def test_a_bad_line_past_the_pieces_on_threads_is_named(tmp_path, monkeypatch):
    """A piece the threads decode ahead of a bad line: the error names the bad line, and nothing after it."""
    lines = [f'{{"type":"event","job":"j0","time":{B + k:.1f},"event":"drain"}}' for k in range(2000)]
    lines[1500] = '{"type":"event","job":"j0","time":"soon","event":"drain"}'
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(goodputstreams, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(goodputpool, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(goodputpool, "COMPILED_MIN_BYTES", 0)
    with pytest.raises(BadInput, match=r"a\.jsonl:1501: field time: .*soon"):
        build([path], by=[], period=None)


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="Numba is not installed: no compiled loop")
@pytest.mark.parametrize("compiled", [False, True])
def test_a_log_over_its_size_is_refused_after_the_same_lines_by_every_reader(tmp_path, monkeypatch, compiled):
    """The compiled loop's smaller pieces are cut from the same reads: a log over its size limit is refused at the
    same read whichever reader decodes it, before a bad line the other would have named (the limit of a log is any
    number once earlier logs used most of the total)."""
    lines = [f'{{"type":"event","job":"j0","time":{B + k:.1f},"event":"step_start","step":{k}}}' for k in range(100)]
    lines[60] = '{"type":"event","job":"j0","time":"soon","event":"drain"}'  # past the last whole read under the limit
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(goodputpool, "COMPILED_MIN_BYTES", 0 if compiled else 1 << 62)
    monkeypatch.setattr(goodputstreams, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(goodputlogs, "LOOP_PIECE_BYTES", 1024)
    monkeypatch.setattr(goodputlogs, "MAX_LOG_BYTES", 6000)
    assert sum(len(line) + 1 for line in lines[:60]) > 4096
    with pytest.raises(BadInput, match=r"a\.jsonl: field <root>: larger than the 6,000 bytes allowed"):
        build([path])


def test_a_job_spanning_more_periods_than_it_has_intervals_keeps_them(tmp_path, monkeypatch):
    """A job submitted years before it ran spans a thousand days with a handful of intervals: it keeps them (its
    TERMS a day would be the larger, and made a day at a time), the others leave theirs; the same report."""
    monkeypatch.setattr(pipeline, "TRAVEL_MIN_INTERVALS", 0)  # (these jobs are small)
    lines = varied_log(9, 3, 0)
    lines += [
        f'{{"type":"event","job":"early","time":{B - 3 * 365 * 86400},"event":"submitted"}}',
        f'{{"type":"event","job":"early","time":{B + 5},"event":"job_start"}}',
        f'{{"type":"event","job":"early","time":{B + 65},"event":"job_end"}}',
    ]
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n")
    options = pipeline.ReportOptions(by=["accelerator"], period="day")
    log = goodputlogs.load([path], "native", False)
    kept = {a.job.id: a.starts is not None for a in pipeline.account_log(log, None, None, [], False, travel=("day", 0))}
    assert kept == {"early": True, "j0": False, "j1": False, "j2": False}
    travelled = pipeline.from_log(goodputlogs.load([path], "native", False), options)
    log = goodputlogs.load([path], "native", False)
    assert pipeline.from_accounts(pipeline.account_log(log, None, None, [], False), log, options) == travelled
    assert len(travelled["periods"]) > 1000


def test_a_report_made_here_keeps_small_jobs_intervals(tmp_path, monkeypatch):
    """Below TRAVEL_MIN_INTERVALS a job keeps its intervals in a report made in this process (dropping them would
    cost more than it saves), above it they leave; the report is the same either way."""
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(varied_log(12, 4, 0)) + "\n")
    kept: list[bool] = []
    real = pipeline.travelling

    def recorded(accounts: Any, period: Any, fewest: int = 0) -> Any:
        out = real(accounts, period, fewest)
        kept.extend(a.starts is not None for a in out)
        return out

    monkeypatch.setattr(pipeline, "travelling", recorded)
    options = pipeline.ReportOptions(by=["accelerator"], period="day")
    small = pipeline.from_log(goodputlogs.load([path], "native", False), options)
    assert kept == [True] * 4
    kept.clear()
    monkeypatch.setattr(pipeline, "TRAVEL_MIN_INTERVALS", 0)
    assert pipeline.from_log(goodputlogs.load([path], "native", False), options) == small
    assert kept == [False] * 4


_REPORT_INTERRUPTED_WHILE_A_JOB_IS_ACCOUNTED = """
import os, signal, sys, threading
from tpufleet.goodput import pipeline
from tpufleet.state import goodputpool
goodputpool.JOB_THREADS_MIN_RECORDS = 0  # the job threads, whatever the log's size
goodputpool._usable_cpus = lambda: 2
account = pipeline._account_job

def large_job(*args):
    if args[2] == "j0":  # the first job: Ctrl-C comes while it is accounted (the report waits for its account)
        os.killpg(0, signal.SIGINT)
        threading.Event().wait()  # an account that never ends: the report must not wait for it
    return account(*args)

pipeline._account_job = large_job
from tpufleet.cli import main
main(["goodput-report", sys.argv[1]])
"""


def test_ctrl_c_while_a_job_is_accounted_on_a_thread_is_the_one_line_interrupt(tmp_path):
    """Ctrl-C while a thread accounts a large job: the interrupt line and exit 130, the job not waited for (an
    executor's threads were, for seconds, and a second Ctrl-C in that wait printed a traceback). The job here never
    ends: the guard only tells a hang."""
    from tpufleet.cli import INTERRUPTED

    assert report_interrupted(_REPORT_INTERRUPTED_WHILE_A_JOB_IS_ACCOUNTED, tmp_path) == (130, "", INTERRUPTED + "\n")


def test_the_process_exits_without_waiting_for_a_job_running():
    """A report stopped while a thread accounts a job exits without waiting for it: the threads are daemons
    (an executor's are joined at exit: a second Ctrl-C in that wait printed a traceback)."""
    import subprocess
    import sys

    code = (
        "import threading\n"
        "from tpufleet.state.workthreads import WorkThreads\n"
        "started = threading.Event()\n"
        "def job():\n"
        "    started.set(); threading.Event().wait()\n"  # a job that never ends
        "pool = WorkThreads(2, 'goodput-jobs')\n"
        "pool.submit(job); started.wait(60)\n"
        "pool.shutdown(wait=False)\n"
        "raise SystemExit(130)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=GUARD_S)
    assert (result.returncode, result.stderr) == (130, "")  # (the guard only tells a hang)


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="no per-thread signal masks on this platform")
def test_work_threads_leave_the_stopping_signals_to_the_main_thread():
    """A work thread blocks Ctrl-C, SIGTERM and SIGHUP, so the kernel hands them to the main thread: one a work
    thread took left the main thread asleep in its wait for that thread's result (a report that never stopped)."""
    pool = WorkThreads(2, "goodput-jobs")
    try:
        masks = [pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, []).result() for _ in range(4)]
    finally:
        pool.shutdown()
    assert all({signal.SIGINT, signal.SIGTERM, signal.SIGHUP} <= mask for mask in masks)
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # this thread's mask is its own


def test_a_ctrl_c_another_thread_took_ends_the_wait_for_a_result():
    """A Ctrl-C that a thread other than the main one took, or that came just before the main thread slept, ends
    its wait for a result that never comes (Python only raises it between the main thread's instructions)."""
    import subprocess
    import sys

    code = (
        "import signal, threading\n"
        "from concurrent.futures import Future\n"
        "from tpufleet.state.workthreads import waited\n"
        "never = Future()\n"
        "import sys\n"
        "def interrupt():\n"  # once the main thread waits, a Ctrl-C this thread takes: nothing wakes that wait
        "    while sys._current_frames()[threading.main_thread().ident].f_code.co_name != 'wait':\n"
        "        threading.Event().wait(0.01)\n"
        "    threading.Event().wait(0.1)\n"  # (asleep by then, not still in the wait's first instructions)
        "    signal.pthread_kill(threading.get_ident(), signal.SIGINT)\n"
        "try:\n"
        "    threading.Thread(target=interrupt).start()\n"
        "    waited(never)\n"
        "except KeyboardInterrupt:\n"
        "    raise SystemExit(130)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=GUARD_S)
    assert (result.returncode, result.stderr) == (130, "")  # (the guard only tells a hang)
