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


def run(argv: list[str], *, cwd: Any = None, env: dict[str, str] | None = None, check: bool = True) -> Child:
    """`argv` run as a fresh process started by the launcher; its output captured."""
    read_fd, write_fd = os.pipe()
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
    with os.fdopen(read_fd) as report:
        out, err = proc.communicate()
        fields = report.read().split()
    if len(fields) != 4:
        raise RuntimeError(f"launcher gave no report for {argv[:3]}...: {err[-2000:]}")
    wall, cpu, maxrss_kib, code = float(fields[0]), float(fields[1]), int(fields[2]), int(fields[3])
    if check and code != 0:
        raise subprocess.CalledProcessError(code, argv, out, err)
    return Child(out, err, code, wall, cpu, maxrss_kib / 1024)


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
