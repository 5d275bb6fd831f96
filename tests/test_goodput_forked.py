"""A large log's jobs accounted by this process and processes forked from it (`state.forkedjobs`): the report one
process gives, byte for byte, the accounts in job order whoever made them, the first failure in job order raised
wherever it came from, a child killed partway (at a named job) made good here, and no child left behind by an
error or Ctrl-C. Processes meet at named jobs through events they share, never after a sleep."""

from __future__ import annotations

import multiprocessing
import os
import sys
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
from tpufleet.state import forkedjobs, goodputpool

pytestmark = pytest.mark.skipif(sys.platform != "linux" or not hasattr(os, "fork"), reason="jobs are forked on Linux")

_FORK = multiprocessing.get_context("fork")
JOBS = [f"j{k}" for k in range(12)]


class Meeting:
    """Events the processes share: each one's first job waits there until the other has taken one, so both take
    some whichever starts first (a child takes every job of a small log before this process is back from the fork)."""

    def __init__(self) -> None:
        self.parent, self.took = os.getpid(), {True: _FORK.Event(), False: _FORK.Event()}

    def met(self) -> None:
        here = os.getpid() == self.parent
        self.took[here].set()
        assert self.took[not here].wait(GUARD_S), "the other process took no job"


def test_accounts_come_in_job_order_from_both_processes(reaped):
    meeting = Meeting()

    def work(job: str) -> tuple[str, int]:
        meeting.met()
        return job, os.getpid()

    out = list(forkedjobs.forked_map(work, JOBS))
    assert [job for job, _ in out] == JOBS
    assert len({pid for _, pid in out}) == 2
    assert reaped()


@pytest.fixture
def schedule(monkeypatch):
    """The jobs taken by a fixed rule (this process the even ones, the child the odd ones), still stopped by the
    shared counter: failures and deaths at named jobs of a named process. Returns the jobs made in this process."""
    parent, made_here = os.getpid(), []
    following = {True: 0, False: 1}  # the next job each takes

    def taken(jobs: Any, give_up: Any = None) -> int | None:
        here = os.getpid() == parent
        mine = following[here]
        if jobs.counter.value >= jobs.count or mine >= jobs.count:
            return None
        following[here] = mine + 2
        return mine

    monkeypatch.setattr(forkedjobs._Jobs, "taken", taken)

    def in_parent(job: str) -> bool:
        if os.getpid() == parent:
            made_here.append(job)
            return True
        return False

    return in_parent, made_here


@pytest.mark.parametrize(
    ("failing", "raised"),
    [(["j3", "j6"], "j3"), (["j5"], "j5"), (["j2", "j5"], "j2")],
    ids=["child first", "child alone", "parent first"],
)
def test_the_first_failure_in_job_order_is_raised_wherever_it_came(schedule, reaped, failing, raised):
    """Jobs that fail wherever they are made (the odd ones in the child, which has failed once this process is
    past its first job): the first in job order is raised, a child's made again here for its own error."""
    in_parent, made_here = schedule
    child_failed = _FORK.Event()

    def work(job: str) -> str:
        here = in_parent(job)
        if here and job == "j0":
            assert child_failed.wait(GUARD_S), "the child never failed"
        if job in failing:
            if not here:
                child_failed.set()
            raise ValueError(f"{job} is bad")
        return job

    with pytest.raises(ValueError, match=f"{raised} is bad"):
        list(forkedjobs.forked_map(work, JOBS))
    assert raised in made_here and "j1" not in made_here  # j1: the child's, handed back
    assert reaped()


def test_the_jobs_of_a_child_killed_partway_are_accounted_here(schedule, reaped):
    """The child dies at j3 (as one the OOM killer picks): j3 and the child's later jobs are accounted here."""
    in_parent, made_here = schedule

    def work(job: str) -> str:
        if not in_parent(job) and job == "j3":
            os._exit(9)
        return job.upper()

    assert list(forkedjobs.forked_map(work, JOBS)) == [j.upper() for j in JOBS]
    assert set(made_here) == {f"j{k}" for k in range(12) if k % 2 == 0 or k >= 3}
    assert reaped()


def test_an_interrupt_here_leaves_no_child_behind(reaped):
    """Ctrl-C while a child is in a job that never ends: the interrupt goes on at once, the child killed and
    reaped (the job is never waited for)."""
    parent, child_busy = os.getpid(), _FORK.Event()

    def work(job: str) -> str:
        if os.getpid() != parent:
            child_busy.set()
            threading.Event().wait()  # never ends
        assert child_busy.wait(GUARD_S), "the child never took a job"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        list(forkedjobs.forked_map(work, JOBS))
    assert reaped()


_MAPPERS_CHOSEN = """
import threading
from tpufleet.state import forkedjobs, goodputpool
goodputpool._usable_cpus = lambda: 2
goodputpool.JOB_PROCESSES_MIN_RECORDS = 0
def chosen():
    with goodputpool.job_mapper(goodputpool.JOB_THREADS_MIN_RECORDS) as mapper:
        return "forked" if getattr(mapper, "func", None) is forkedjobs.forked_map else "map" if mapper is map else "threads"
alone = chosen()
stop = threading.Event()
other = threading.Thread(target=stop.wait)
other.start()
print(alone, chosen())
stop.set()
"""


def test_no_fork_while_another_thread_runs():
    """A thread holding a lock at a fork leaves it held in the child: with another thread running (a server's, a
    Dask worker's), the jobs go to threads (in a process of its own: other tests leave idle threads here)."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", _MAPPERS_CHOSEN], capture_output=True, text=True, timeout=GUARD_S)
    assert (result.stdout, result.stderr) == ("forked threads\n", "")


def report(paths: list[Path], forked: bool, **options: Any) -> tuple[Any, set[int]]:
    """(the report, or ("error", message); the processes the jobs were accounted in), forked whatever the log's
    size or not at all (one job after another)."""
    parent, pids = os.getpid(), _FORK.SimpleQueue()
    real = pipeline._account_job

    def recorded(*args: Any) -> Any:
        if os.getpid() != parent:
            pids.put(os.getpid())
        return real(*args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(goodputpool, "_usable_cpus", lambda: 2)
        mp.setattr(forkedjobs, "can_fork", lambda: True)  # (other tests leave idle server threads here, lockless)
        mp.setattr(goodputpool, "JOB_PROCESSES_MIN_RECORDS", 0 if forked else 1 << 62)
        mp.setattr(goodputpool, "JOB_THREADS_MIN_RECORDS", 1 << 62)
        mp.setattr(pipeline, "_account_job", recorded)
        mp.setattr(pipeline, "TRAVEL_MIN_INTERVALS", 0)  # (the generated jobs are small: let them travel too)
        out: Any
        try:
            out = build(paths, **options)
        except BadInput as exc:
            out = ("error", str(exc))
    seen = set()
    while not pids.empty():
        seen.add(pids.get())
    return out, seen


@settings(max_examples=15, derandomize=True, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(2, 8),
    st.sampled_from([None, "day", "hour"]),
    st.sampled_from([{}, {"windows": [("1h", 3600.0)]}, {"keep_timelines": 2}, {"since": B + 60.0}]),
)
def test_jobs_accounted_in_forked_processes_give_the_one_process_report(tmp_path_factory, seed, jobs, period, more):
    path = tmp_path_factory.mktemp("logs") / "a.jsonl"
    path.write_text("\n".join(varied_log(seed, jobs, 1)) + "\n")
    options: dict[str, Any] = {"by": ["accelerator", "phase"], "period": period, "skip_bad": True, **more}
    alone, elsewhere = report([path], False, **options)
    meeting, real = Meeting(), pipeline._account_job

    def met(*args: Any) -> Any:
        meeting.met()
        return real(*args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "_account_job", met)
        forked, pids = report([path], True, **options)
    assert forked == alone and not elsewhere and len(pids) == 1 and os.getpid() not in pids


def test_a_large_log_is_accounted_in_both_processes(tmp_path, monkeypatch):
    """Each process waits at its first job until the other has taken one: the report is still one process's."""
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(varied_log(5, 8, 0)) + "\n")
    alone, _ = report([path], False, by=["accelerator"], period="day")
    meeting, real = Meeting(), pipeline._account_job

    def met(*args: Any) -> Any:
        meeting.met()
        return real(*args)

    monkeypatch.setattr(pipeline, "_account_job", met)
    forked, pids = report([path], True, by=["accelerator"], period="day")
    assert forked == alone and len(pids) == 1 and os.getpid() not in pids


_REPORT_INTERRUPTED_WHILE_A_CHILD_ACCOUNTS = """
import os, signal, sys, threading
from tpufleet.goodput import pipeline
from tpufleet.state import goodputpool
goodputpool.JOB_PROCESSES_MIN_RECORDS = 0  # forked, whatever the log's size
goodputpool._usable_cpus = lambda: 2
account, parent = pipeline._account_job, os.getpid()

def large_job(*args):
    if os.getpid() != parent:  # the child's first job never ends: Ctrl-C comes while it is accounted
        os.killpg(0, signal.SIGINT)
        threading.Event().wait()
    threading.Event().wait()  # nor does this process's: the interrupt must reach it
    return account(*args)

pipeline._account_job = large_job
from tpufleet.cli import main
main(["goodput-report", sys.argv[1]])
"""


def test_ctrl_c_while_a_child_accounts_is_the_one_line_interrupt_and_no_child_is_left(tmp_path):
    """Ctrl-C (to the whole process group, as a terminal sends it) while a forked child accounts a job that never
    ends: the interrupt line and exit 130 at once, the child ignoring it and killed on the way out (the guard only
    tells a hang, and a child left would hold the pipe of the output open)."""
    from tpufleet.cli import INTERRUPTED

    assert report_interrupted(_REPORT_INTERRUPTED_WHILE_A_CHILD_ACCOUNTS, tmp_path) == (130, "", INTERRUPTED + "\n")


def test_a_log_of_one_job_forks_no_child(reaped):
    """One job: nothing to share, so no child (one that took the job would only hand its account back)."""
    assert list(forkedjobs.forked_map(lambda job: (job, os.getpid()), ["only"], children=3)) == [("only", os.getpid())]
    assert not reaped()  # (no child forked at all)


_PARENT_KILLED_WHILE_A_CHILD_ACCOUNTS = """
import os, signal, sys, threading
import multiprocessing
from tpufleet.state import forkedjobs
parent, child_busy = os.getpid(), multiprocessing.get_context("fork").Event()

def job(name):
    if os.getpid() != parent:
        print(os.getpid(), flush=True)  # the child's pid, for the test to look for
        child_busy.set()
        threading.Event().wait()  # a job that never ends
    assert child_busy.wait(30)
    os.kill(parent, signal.SIGKILL)  # no `finally` runs here: nothing of this process kills the child

list(forkedjobs.forked_map(job, ["a", "b", "c"]))
"""


def test_a_child_dies_with_its_parent_killed_outright():
    """The reading process killed with SIGKILL (the OOM killer's signal) while a child accounts a job that never
    ends: the child goes too, at once (Linux's parent-death signal), not at its next account. It holds the
    output's pipe: the run's end is its end (the guard only tells a hang)."""
    import signal
    import subprocess

    result = subprocess.run(
        [sys.executable, "-c", _PARENT_KILLED_WHILE_A_CHILD_ACCOUNTS], capture_output=True, text=True, timeout=GUARD_S
    )
    assert result.returncode == -signal.SIGKILL
    assert _ends(int(result.stdout)), "the child outlived its parent"


def _ends(pid: int) -> bool:
    """Whether the process ends (or has ended) within the guard. The pipe's end is no proof: a dying process closes
    its files before /proc shows it dead, so this waits on a pidfd, readable once the process has ended."""
    import select

    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True  # gone and reaped already
    try:
        return bool(select.select([handle], [], [], GUARD_S)[0])
    finally:
        os.close(handle)


def test_a_child_that_dies_holding_the_counters_lock_is_made_good_here(monkeypatch, reaped):
    """A child killed while it holds the lock of the shared counter (the lock is never released): this process
    stops waiting for it once the child is gone, and accounts every job no child handed back."""
    parent, real, child_holds = os.getpid(), forkedjobs._Jobs.taken, _FORK.Event()

    def taken(jobs: Any, give_up: Any = None) -> int | None:
        if os.getpid() != parent:
            jobs.lock.acquire()
            child_holds.set()
            os._exit(9)
        return real(jobs, give_up)

    def work(job: str) -> str:  # (this process's next job is taken with the lock held by the dead child)
        assert child_holds.wait(GUARD_S), "the child never took the lock"
        return job.upper()

    monkeypatch.setattr(forkedjobs._Jobs, "taken", taken)
    assert list(forkedjobs.forked_map(work, JOBS)) == [j.upper() for j in JOBS]
    assert reaped()


def test_a_report_forks_where_children_are_reaped_by_the_system():
    """Started by a parent that ignores SIGCHLD (the setting outlives exec), the system reaps the children: the
    accounts as ever, no "internal error" from reaping them here."""
    import signal

    meeting = Meeting()

    def work(job: str) -> str:
        meeting.met()
        return job.upper()

    before = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert list(forkedjobs.forked_map(work, JOBS)) == [j.upper() for j in JOBS]
    finally:
        signal.signal(signal.SIGCHLD, before)
