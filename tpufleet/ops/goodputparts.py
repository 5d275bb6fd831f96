"""`goodput-report --workers N / --cluster tcp://HOST:8786`: many logs read and accounted on a Dask cluster,
with the serial run's report, byte for byte.

One task a log reads it on a worker (`read_part`; the decoded columns stay there) and says which jobs it names.
A job named by one log only is accounted where that log was read (`account_part`); the records of a job that
several logs name come back and are merged in the order of the logs, as reading them one after another puts
them, and that job is accounted here as one. The accounts, in job order, make the report
(`pipeline.from_accounts`). The cluster is the sweep's (`tpufleet.sweep.backends.Dask`: a local cluster of
`workers` processes, or the scheduler at `address`, whose workers must see the logs at the same paths).

Whatever the serial reading would refuse (a bad record, a log or all of them too large, too many jobs) the
serial reading says: on any failure of a task, or with the limits of all the logs together exceeded, the logs
are read again in this process (`goodputlogs.load`), which names the file, line and field exactly as before.
Standard input is read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tpufleet.goodput import events, metrics
from tpufleet.goodput.pipeline import ReportOptions, account_log, from_accounts, from_log
from tpufleet.goodput.timeline import JobAccount
from tpufleet.state import goodputlogs

__all__ = ["account_part", "read_part", "report"]

Part = tuple[events.Log, int]  # a log's records and its bytes (decompressed)


def read_part(path: str, fmt: str, skip_bad: bool) -> Part:
    """Run on a worker: one log read (its result stays on the worker)."""
    return goodputlogs.load_part(Path(path), fmt, skip_bad)


def names_of(part: Part) -> tuple[set[str], set[str], set[str], int]:
    """Run on a worker: (every job the log names, the jobs with events, those with a job record, its bytes)."""
    log, size = part
    return events.job_names(log), set(log.events), set(log.jobs), size


def account_part(
    part: Part,
    shared: set[str],
    since: float | None,
    until: float | None,
    spans: list[tuple[float, float]],
    timelines: bool,
) -> tuple[list[JobAccount], events.Log]:
    """Run on a worker: the accounts of the jobs only this log names, and the records of the `shared` ones (with
    the log's capacity records and counts) to be merged with the other logs'."""
    log, _size = part
    rest = events.take_jobs(log, shared & events.job_names(log))
    rest.capacity, rest.records, rest.skipped = log.capacity, log.records, log.skipped
    return account_log(log, since, until, spans, timelines), rest


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
        return from_log(goodputlogs.load(paths, fmt, skip_bad), options)  # nothing to share out
    executor = backends.Dask(None, address, workers)
    try:
        accounts, log = _on_cluster(executor.client, paths, fmt, skip_bad, options)
    finally:
        executor.close()
    if log is None:  # refused somewhere: the serial reading says where, as it always has
        return from_log(goodputlogs.load(paths, fmt, skip_bad), options)
    return from_accounts(accounts, log, options)


def _on_cluster(
    client: Any, paths: Sequence[Path], fmt: str, skip_bad: bool, options: ReportOptions
) -> tuple[list[JobAccount], events.Log | None]:
    """(every job's account in job order, the merged capacity and counts); None for the log if a task failed or
    the logs together exceed a limit."""
    parts = [
        client.submit(read_part, str(p), fmt, skip_bad, key=f"tpufleet-goodput-read-{i}") for i, p in enumerate(paths)
    ]
    try:
        named = client.gather([client.submit(names_of, part, pure=False) for part in parts])
    except Exception:  # noqa: BLE001 - a refused log (or a lost worker): the serial reading says which
        return [], None
    if _over_limits([n[1] for n in named], [n[2] for n in named], [n[3] for n in named]):
        return [], None
    seen: dict[str, int] = {}
    for names, *_ in named:
        for name in names:
            seen[name] = seen.get(name, 0) + 1
    shared = {name for name, count in seen.items() if count > 1}
    spans, since, until, timelines = options.spans, options.since, options.until, options.keep_timelines > 0
    done = [client.submit(account_part, part, shared, since, until, spans, timelines, pure=False) for part in parts]
    del parts  # each log's columns leave its worker once accounted
    accounts: list[JobAccount] = []
    log = events.Log()
    for future in done:
        mine, rest = future.result()
        future.release()
        accounts += mine
        events.merge_into(log, rest)
    whole = events.Log(capacity=log.capacity, records=log.records, skipped=log.skipped)
    accounts += account_log(log, since, until, spans, timelines)
    accounts.sort(key=lambda a: a.job.id)
    return accounts, whole


def _over_limits(event_jobs: list[set[str]], record_jobs: list[set[str]], sizes: list[int]) -> bool:
    """Whether reading the logs one after another would stop: all of them larger than MAX_TOTAL_LOG_BYTES, or
    more than MAX_JOBS jobs (with events, or with job records) together."""
    budget = goodputlogs.MAX_TOTAL_LOG_BYTES
    for size in sizes:
        if size > budget:
            return True
        budget -= size
    return len(set().union(*event_jobs)) > events.MAX_JOBS or len(set().union(*record_jobs)) > events.MAX_JOBS
