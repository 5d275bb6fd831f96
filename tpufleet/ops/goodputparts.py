"""`goodput-report --workers N / --cluster tcp://HOST:8786`: many logs read and accounted on a Dask cluster,
with the serial run's report, byte for byte.

One task a log reads it on a worker, accounts every job it names and says which those are (`summarize_part`);
only the accounts and the counts come back, so a worker holds one log at a time. The accounts of a job that one
log names are kept; a job that several logs name is read again from those logs (`shared_part`), its records
merged in the order of the logs, as reading them one after another puts them, and accounted here as one (each
job's account depends on its own records alone). The accounts, in job order, make the report
(`pipeline.from_accounts`). The cluster is the sweep's (`tpufleet.sweep.backends.Dask`: a local cluster of
`workers` processes, or the scheduler at `address`, whose workers must see the logs at the same paths).

Whatever the serial reading would refuse (a bad record, a log too large, too many jobs), the serial reading
says: on any failure of a task, or with too many jobs together, the logs are read again in this process
(`goodputlogs.load`), which names the file, line and field exactly as before. One limit is the serial reading's
alone: all the logs together at most MAX_TOTAL_LOG_BYTES, which bounds what one process holds; a cluster holds one
log a worker, so logs beyond it are read there (and a task's own error is given where the serial reading would
refuse them all for their size).
Standard input is read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tpufleet.errors import Refused, TpufleetError
from tpufleet.goodput import events, metrics
from tpufleet.goodput.jobaccount import JobAccount
from tpufleet.goodput.pipeline import ReportOptions, account_log, from_accounts, from_log
from tpufleet.state import goodputlogs, goodputpool, goodputstreams

__all__ = [
    "beyond_job_limits",
    "counts_of",
    "merge_part",
    "report",
    "report_here",
    "same_bytes",
    "shared_part",
    "summarize_part",
]

Summary = tuple[set[str], set[str], set[str], list[JobAccount], goodputlogs.Content, events.Log]
# (every job the log names, those with events, those with a job record, every job's account, what it held, its
# counts)


def summarize_part(
    path: str, fmt: str, skip_bad: bool, since: float | None, until: float | None,
    spans: list[tuple[float, float]], timelines: bool, period: str | None, windows: bool,
) -> Summary:  # fmt: skip
    """Run on a worker: one log read and every job it names accounted; the log itself is dropped. Without
    `windows` (--window rows) or `timelines`, the accounts come back without their intervals: what the report
    reads of them is made here (`pipeline.travelling`), so the result is a few KiB a job, not 16 MiB a log."""
    log, content = goodputlogs.load_part(Path(path), fmt, skip_bad)
    names = events.job_names(log)
    with_events, with_records = set(log.events), set(log.jobs)
    counts = counts_of(log)
    accounts = account_log(log, since, until, spans, timelines, travel=None if windows or timelines else (period, 0))
    return names, with_events, with_records, accounts, content, counts


def shared_part(path: str, fmt: str, skip_bad: bool, names: set[str]) -> events.Log:
    """Run on a worker: the records of the jobs `names` (which other logs name too), read again from one log."""
    log, _content = goodputlogs.load_part(Path(path), fmt, skip_bad)
    return events.take_jobs(log, names)


def report(
    paths: list[Path],
    fmt: str,
    skip_bad: bool,
    address: str | None,
    workers: int | None,
    options: ReportOptions,
) -> metrics.Report:
    """The report of `paths` read on the cluster, as `options` ask."""
    from tpufleet.sweep import backends

    if any(str(p) == goodputlogs.STDIN for p in paths) or (len(paths) < 2 and address is None):
        return report_here(goodputlogs.load(paths, fmt, skip_bad), options)  # nothing to share out
    executor = backends.Dask(None, address, workers, worker_module=__name__)
    try:
        accounts, log, failure = _on_cluster(executor.client, paths, fmt, skip_bad, options)
    finally:
        executor.close()
    if log is None:  # refused somewhere: the serial reading says where, as it always has
        if failure is not None and goodputstreams.on_disk_bytes(paths) > goodputlogs.MAX_TOTAL_LOG_BYTES:
            raise _beyond_one_process(failure)
        return report_here(goodputlogs.load(paths, fmt, skip_bad), options)
    return from_accounts(accounts, log, options)


def report_here(log: events.Log, options: ReportOptions) -> metrics.Report:
    """The report of a log read in this process, its jobs accounted side by side on this machine's CPUs when it
    is large (`goodputpool.job_mapper`: processes forked from this one, or threads): the same report as one after
    another."""
    with goodputpool.job_mapper(log.records) as mapper:
        return from_log(log, options, mapper)


def _beyond_one_process(failure: Exception) -> Exception:
    """What to say when a task failed on logs the serial reading would refuse all together for their size: the
    task's own error when it is tpufleet's (a bad record: file, line, field, value), else that the cluster failed
    (a lost worker, say: exit 1, not an internal error)."""
    if isinstance(failure, TpufleetError):
        return failure
    return Refused(
        f"the Dask cluster failed reading the logs ({type(failure).__name__}: {failure}); they are too large "
        "together to be read in one process"
    )


def _on_cluster(
    client: Any, paths: Sequence[Path], fmt: str, skip_bad: bool, options: ReportOptions
) -> tuple[list[JobAccount], events.Log | None, Exception | None]:
    """(every job's account in job order, the merged capacity and counts, None); no log if a task failed (with
    its error) or the logs together name too many jobs."""
    spans, since, until, timelines = options.spans, options.since, options.until, options.keep_timelines > 0
    asked = (options.period, bool(options.windows))
    tasks = [
        client.submit(summarize_part, str(p), fmt, skip_bad, since, until, spans, timelines, *asked, pure=False)
        for p in paths
    ]
    try:
        summaries = _fetched(tasks)
    except Exception as exc:  # noqa: BLE001 - a refused log (or a lost worker): the serial reading says which
        return [], None, exc
    if beyond_job_limits([s[1] for s in summaries], [s[2] for s in summaries]):
        return [], None, None
    within = sum(s[4].size for s in summaries) <= goodputlogs.MAX_TOTAL_LOG_BYTES  # (one process reads them)
    if within and same_bytes([s[4] for s in summaries]):
        return [], None, None  # the serial reading says whether it refuses them, or stops earlier (`same_bytes`)
    contents: dict[goodputlogs.Content, str] = {}
    for path, summary in zip(paths, summaries, strict=True):
        goodputlogs.refuse_same_content(contents, summary[4], goodputlogs.shown_name(path), summary[5].records)
    seen: dict[str, int] = {}
    for names, *_ in summaries:
        for name in names:
            seen[name] = seen.get(name, 0) + 1
    shared = {name for name, count in seen.items() if count > 1}
    again = {i: client.submit(shared_part, str(p), fmt, skip_bad, shared & summaries[i][0], pure=False)
             for i, p in enumerate(paths) if shared & summaries[i][0]}  # fmt: skip
    accounts = [a for s in summaries for a in s[3] if a.job.id not in shared]
    log = events.Log()
    for i, (*_, counts) in enumerate(summaries):
        try:
            rest = again[i].result() if i in again else events.Log()
        except Exception as exc:  # noqa: BLE001 - the log changed since, or a worker was lost: read it here
            return [], None, exc
        try:
            merge_part(log, counts, rest)
        except events.AllocatedBeyondRecord as exc:  # across logs: the serial reading names the line
            return [], None, exc
    whole = counts_of(log)
    accounts += account_log(log, since, until, spans, timelines)
    accounts.sort(key=lambda a: a.job.id)
    return accounts, whole, None


def _fetched(tasks: list[Any]) -> list[Summary]:
    """Each task's summary, fetched as soon as it is done and then let go on its worker (a summary holds its jobs'
    step times: kept there until every log is read, they would add up to every job's on two workers)."""
    import distributed

    as_completed: Any = distributed.as_completed  # untyped
    place = {task.key: i for i, task in enumerate(tasks)}
    out: dict[int, Summary] = {}
    for task in as_completed(tasks):
        out[place[task.key]] = task.result()
        task.release()
    return [out[i] for i in range(len(tasks))]


def counts_of(log: events.Log) -> events.Log:
    """What the report reads of a log beside its jobs' accounts: its capacity records and counts."""
    return events.Log(capacity=log.capacity, records=log.records, skipped=log.skipped, cut_off=log.cut_off)


def merge_part(log: events.Log, counts: events.Log, rest: events.Log) -> None:
    """One log's records of the jobs other logs name too (`rest`) and its `counts` (`counts_of`), merged into
    `log` after those of the logs before it; AllocatedBeyondRecord when the job's allocations, merged, exceed
    its record (`events.merge_into`)."""
    rest.capacity, rest.records, rest.skipped, rest.cut_off = (
        counts.capacity,
        counts.records,
        counts.skipped,
        counts.cut_off,
    )
    events.merge_into(log, rest)


def same_bytes(contents: list[goodputlogs.Content]) -> bool:
    """Whether two logs that hold anything hold the same bytes. Not refused where the serial reading can say: it
    may stop earlier (a job's record that disagrees with another log's), and a record counted in its own log may
    be one that it skips for an earlier log's (`--skip-bad`), and then it refuses nothing."""
    held = [c for c in contents if c.size]
    return len(set(held)) < len(held)


def beyond_job_limits(event_jobs: list[set[str]], record_jobs: list[set[str]]) -> bool:
    """Whether reading the logs one after another would stop for their jobs: more than MAX_JOBS (with events, or
    with job records) together."""
    return len(set().union(*event_jobs)) > events.MAX_JOBS or len(set().union(*record_jobs)) > events.MAX_JOBS
