"""`goodput-report` on several large logs, read side by side by processes forked from this one: the serial run's
report, byte for byte.

Each log is read by one child (`state.forkedparts`), which keeps it until every log is read and says which jobs it
names. A job only one log names is then accounted where that log is; the records of a job several logs name come
back here, are merged in the order of the logs (as reading them one after another puts them) and accounted here
as one. So the logs are read on every CPU without the interpreter's lock between them, each job is accounted as
soon as its log is whole, and nothing is read twice; the accounts, in job order, make the report
(`pipeline.from_accounts`) as `goodputparts` makes it from a Dask cluster's.

Whatever the serial reading would refuse (a bad record, logs too large or with too many jobs together), it says:
on any failure, the caller reads the logs in this process (`goodputlogs.load`), which names the file, line and
field exactly as always. Used only where it pays and is safe: two logs or more, regular files, together at least
FORKED_MIN_BYTES, two CPUs or more, and this process's only thread (`forkedjobs.can_fork`).
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable
from pathlib import Path

from tpufleet.constants import MiB
from tpufleet.errors import BadInput
from tpufleet.goodput import compiledaccount, events, metrics
from tpufleet.goodput.jobaccount import JobAccount
from tpufleet.goodput.pipeline import ReportOptions, account_log, from_accounts
from tpufleet.ops.goodputparts import beyond_job_limits, counts_of, merge_part, same_bytes
from tpufleet.state import forkedjobs, forkedparts, goodputlogs, goodputpool, goodputstreams

__all__ = ["FORKED_MIN_BYTES", "report"]

# Below this, one process reads the logs in about a second: forking (a few milliseconds a GiB of page tables) and
# the accounts pickled back are not worth it, and neither is a second copy of what a child loads.
FORKED_MIN_BYTES = 128 * MiB
MAX_PROCESSES = 4

_Summary = tuple[set[str], set[str], set[str], goodputlogs.Content, events.Log]
# (every job the log names, those with events, those with a job record, what it held, its counts)


def report(paths: list[Path], fmt: str, skip_bad: bool, options: ReportOptions) -> metrics.Report | None:
    """The report of `paths` read by forked processes; None where that is not worth it or not safe, or when
    anything failed (the caller reads the logs in this process, which says what is wrong)."""
    children = min(goodputpool._usable_cpus(), MAX_PROCESSES, len(paths))
    if children < 2 or not _worth_forking(paths, fmt):
        return None
    # loaded here, once, before the fork: every child has the loop and the accounting's helpers from this process;
    # taken as the serial reading takes it, from the native logs' size (not CSV's)
    native = [p for p in paths if fmt == "native" and not goodputlogs.is_csv(p)]
    compiled = bool(native) and goodputpool.compiled_for(goodputstreams.on_disk_bytes(native))
    if compiled:
        compiledaccount.prepared()
    travel = None if options.windows or options.keep_timelines else (options.period, 0)
    spans, timelines = options.spans, options.keep_timelines > 0

    def read(index: int) -> tuple[_Summary, events.Log]:
        log, content = goodputlogs.load_part(paths[index], fmt, skip_bad, compiled=compiled)
        return (events.job_names(log), set(log.events), set(log.jobs), content, counts_of(log)), log

    def finish(shared: set[str], _index: int, log: events.Log) -> tuple[list[JobAccount], events.Log]:
        rest = events.take_jobs(log, shared & events.job_names(log))
        return account_log(log, options.since, options.until, spans, timelines, travel=travel), rest

    done = forkedparts.forked_parts(forkedparts.Parts(read, _decided(paths), finish), len(paths), children)
    if done is None:
        return None
    summaries, _shared, results = done
    log = events.Log()
    try:
        for (*_, counts), (_accounts, rest) in zip(summaries, results, strict=True):
            merge_part(log, counts, rest)
    except BadInput:  # a job's records that disagree across logs: the serial reading names the line
        return None
    whole = counts_of(log)
    accounts = [a for accounts, _rest in results for a in accounts]
    with goodputpool.job_mapper(sum(len(columns) for columns in log.events.values())) as mapper:
        accounts += account_log(log, options.since, options.until, spans, timelines, mapper, travel)
    accounts.sort(key=lambda a: a.job.id)
    return from_accounts(accounts, whole, options)


def _worth_forking(paths: list[Path], fmt: str) -> bool:
    """Safe (this process's only thread; regular files, which a child can read up without taking them from this
    process) and worth it (at least FORKED_MIN_BYTES, and logs that look apart: `_apart`)."""
    if not forkedjobs.can_fork() or not all(_regular(p) for p in paths):
        return False
    return goodputstreams.on_disk_bytes(paths) >= FORKED_MIN_BYTES and _apart(paths, fmt)


def _decided(paths: list[Path]) -> Callable[[list[_Summary]], set[str] | None]:
    """What is decided once every log is read: None (the serial reading then says why, or whether: see
    `goodputparts.same_bytes`) when the logs hold too many bytes or jobs together, or two hold the same bytes;
    else the jobs more than one log names."""

    def decide(summaries: list[_Summary]) -> set[str] | None:
        contents = [s[3] for s in summaries]
        if sum(c.size for c in contents) > goodputlogs.MAX_TOTAL_LOG_BYTES or same_bytes(contents):
            return None
        if beyond_job_limits([s[1] for s in summaries], [s[2] for s in summaries]):
            return None
        seen: dict[str, int] = {}
        for names, *_ in summaries:
            for name in names:
                seen[name] = seen.get(name, 0) + 1
        return {name for name, count in seen.items() if count > 1}

    return decide


def _apart(paths: list[Path], fmt: str) -> bool:
    """Whether the logs look like each holding jobs of its own (a log a job, or jobs shared out among logs): no
    job named in the first SNIFF_BYTES of two of them. Logs rotated by time name their long jobs in every one
    (each day's log opens with the jobs running at midnight): those jobs' records would all come back here to be
    merged, which costs more than reading the logs side by side saves (10 M events of 500 jobs in 8 logs of a day
    each: 3.1 s against 2.8 s in one process), so such logs are read here. A look, not a rule: where it is wrong,
    the report is the same, only slower."""
    named = _NAMED.get(fmt)
    if named is None:
        return True
    heads: list[set[bytes]] = []
    for path in paths:
        try:
            with goodputstreams._open(path, files_only=True) as fh:
                names = set(named.findall(fh.read(SNIFF_BYTES)))
        except Exception:  # noqa: BLE001  (not readable, damaged gzip...: reading it in this process says what is wrong)
            return False
        if any(names & other for other in heads):
            return False
        heads.append(names)
    return True


SNIFF_BYTES = 64 * 1024
_NAMED = {  # a job's name in a record of the format (CSV logs name none this way: they look apart)
    "native": re.compile(rb'"job"\s*:\s*"([^"\\]*)"'),
    "ml-goodput": re.compile(rb'"job_name"\s*:\s*"([^"\\]*)"'),
}


def _regular(path: Path) -> bool:
    """A regular file (standard input, a FIFO or a device would be read up by the child that took it)."""
    try:
        return str(path) != goodputlogs.STDIN and stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False  # reading it says what is wrong
