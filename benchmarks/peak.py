"""Run a command as a fresh process and measure it from outside: wall, CPU and peak RSS as `wait4` reports them.

    from peak import run
    child = run([sys.executable, "-c", "..."])   # child.peak_mib, child.cpu, child.wall, child.stdout

Why a launcher: on Linux a process's recorded peak RSS (what `getrusage(RUSAGE_SELF)`, `wait4` and
`RUSAGE_CHILDREN` report) starts at the peak of the memory it was exec'd from. `subprocess` starts children with
vfork, so an exec'd child begins with its *parent's* peak: a benchmark that has grown to 800 MiB reports at least
800 MiB for every child it starts, whatever the child uses. So the command is started by a small launcher (this
file run as a script, `python -S -I`, a few MiB): the launcher forks and execs the command and reads its
rusage with `os.wait4`; the command's peak is then its own (at least the launcher's few MiB, `FLOOR` below
measures that). CPU is user + system of the command and of every child it waited for (forked workers included);
its peak is the largest of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Child:
    stdout: str
    stderr: str
    returncode: int
    wall: float  # seconds from fork to exit (start-up and imports included)
    cpu: float  # user + system seconds of the command and the children it waited for
    peak_mib: float  # peak RSS of the command (or of its largest waited-for child), MiB
    tree_peak_mib: float | None = None  # with `tree`: the most memory the command and its children held together


def run(
    argv: list[str], *, cwd: Any = None, env: dict[str, str] | None = None, check: bool = True, tree: bool = False
) -> Child:
    """`argv` run as a fresh process started by the launcher; its output captured. With `tree`, the memory the
    command and every process it forks hold together is sampled too (`TreeMemory`)."""
    read_fd, write_fd = os.pipe()
    sampler: TreeMemory | None = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-I", os.path.abspath(__file__), str(write_fd), *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=env,
            pass_fds=(write_fd,),
        )
    finally:
        os.close(write_fd)
    if tree:
        sampler = TreeMemory(proc.pid)
    with os.fdopen(read_fd) as report:
        out, err = proc.communicate()
        fields = report.read().split()
    tree_peak = sampler.stopped() if sampler is not None else None
    if len(fields) != 4:
        raise RuntimeError(f"launcher gave no report for {argv[:3]}...: {err[-2000:]}")
    wall, cpu, maxrss_kib, code = float(fields[0]), float(fields[1]), int(fields[2]), int(fields[3])
    if check and code != 0:
        raise subprocess.CalledProcessError(code, argv, out, err)
    return Child(out, err, code, wall, cpu, maxrss_kib / 1024, tree_peak)


class TreeMemory:
    """The most memory a process and all its descendants held at once, sampled every SAMPLE_S from outside: the
    sum of their proportional set sizes (``Pss`` of /proc/PID/smaps_rollup: a page shared by n processes counts
    1/n in each, so pages a forked child shares with its parent count once). A peak RSS cannot say this: each
    forked child's includes every page it shares. A sample may miss a peak shorter than SAMPLE_S."""

    SAMPLE_S = 0.02

    def __init__(self, root: int) -> None:
        import threading

        self.root, self.peak_kib, self.done = root, 0, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def stopped(self) -> float:
        """Stop sampling; the peak in MiB."""
        self.done.set()
        self.thread.join()
        return self.peak_kib / 1024

    def _watch(self) -> None:
        while not self.done.wait(self.SAMPLE_S):
            self.peak_kib = max(self.peak_kib, sum(_pss_kib(pid) for pid in _descendants(self.root)))


def _descendants(root: int) -> list[int]:
    """`root` and every process below it (from each process's parent in /proc/PID/stat)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    parents[int(entry)] = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue  # (gone meanwhile)
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass  # (gone meanwhile)
    return 0


def _launch() -> None:
    """The launcher (run as a script): fork, exec argv[2:], wait4, write 'wall cpu maxrss_kib exit_code'."""
    import time

    report = int(sys.argv[1])
    os.set_inheritable(report, False)
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(sys.argv[2], sys.argv[2:])
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    os.write(report, f"{wall} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss} {code}\n".encode())
    sys.exit(code if code >= 0 else 128 - code)


def floor_mib() -> float:
    """The smallest peak the launcher can report: a command that allocates nothing (`true`)."""
    return run(["true"]).peak_mib


if __name__ == "__main__":
    _launch()
