"""From files to the report (the only part of goodput that reads files)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from tpufleet.errors import BadInput, shown
from tpufleet.goodput import events, metrics, mlgoodput
from tpufleet.goodput.timeline import JobAccount, account
from tpufleet.state.inputfiles import MAX_LOG_BYTES, decode_utf8, read_bytes

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


_CAPACITY = re.compile(r"\s*([^=,\s](?:[^=,]{0,62}[^=,\s])?)\s*=\s*([0-9]{1,9})\s*")
MAX_TOTAL_LOG_BYTES = 4 * MAX_LOG_BYTES  # all the files of one report together


def parse_capacity(text: str) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for part in text.split(","):
        match = _CAPACITY.fullmatch(part)
        if match is None or int(match[2]) > events.MAX_CHIPS:
            raise BadInput(
                f"bad option --capacity: {shown(part)} is not ACCELERATOR=CHIPS (a name, and 0 to "
                f"{events.MAX_CHIPS:,} chips)"
            )
        if match[1] in out:
            raise BadInput(f"bad option --capacity: accelerator {match[1]!r} is given twice")
        out[match[1]] = int(match[2])
    return list(out.items())


def load(paths: list[Path], fmt: str, skip_bad: bool) -> events.Log:
    log = events.Log()
    budget = MAX_TOTAL_LOG_BYTES
    for path in paths:
        data = read_bytes(path, "goodput log", min(MAX_LOG_BYTES, budget))
        budget -= len(data)
        text = decode_utf8(data, str(path))
        del data
        if fmt == "ml-goodput":
            mlgoodput.read(text, str(path), log, skip_bad)
        else:
            events.read_native(text, str(path), log, skip_bad, csv_format=str(path).lower().endswith(".csv"))
    return log


def _peak_capacity(accounts: list[JobAccount], t0: float) -> metrics.Capacity:
    """Without capacity records: the busiest moment's all-allocated chips per accelerator."""
    import numpy as np

    out: metrics.Capacity = []
    for acc in sorted({a.job.accelerator for a in accounts}):
        times: list[npt.NDArray[np.float64]] = []
        deltas: list[npt.NDArray[np.int_]] = []
        for a in accounts:
            if a.job.accelerator == acc and a.starts is not None and a.ends is not None and len(a.starts):
                times += [a.starts, a.ends]
                deltas += [np.full(len(a.starts), a.job.chips), np.full(len(a.ends), -a.job.chips)]
        if not times:
            continue
        t = np.concatenate(times)
        d = np.concatenate(deltas)
        order = np.lexsort((d, t))  # ends before starts at the same instant
        out.append((t0, acc, int(np.cumsum(d[order]).max())))
    return out


def build(
    paths: list[Path],
    fmt: str = "native",
    by: list[str] | None = None,
    period: str | None = None,
    since: float | None = None,
    until: float | None = None,
    skip_bad: bool = False,
    capacity_flag: str | None = None,
) -> metrics.Report:
    log = load(paths, fmt, skip_bad)
    result = from_log(log, by, period, since, until, capacity_flag)
    result["input"] = {"files": [str(p) for p in paths], "format": fmt, **result["input"]}
    return result


def from_log(
    log: events.Log,
    by: list[str] | None = None,
    period: str | None = None,
    since: float | None = None,
    until: float | None = None,
    capacity_flag: str | None = None,
) -> metrics.Report:
    """The report for records already in memory (used by `simulate-fleet` for its summary)."""
    for job in log.events:
        log.jobs.setdefault(job, events.Job(job))
    accounts: list[JobAccount] = []
    for job_id in sorted(log.events):
        records = log.events[job_id]
        if since is not None or until is not None:
            records = [r for r in records if (since is None or r[0] >= since) and (until is None or r[0] <= until)]
        if records:
            accounts.append(account(log.jobs[job_id], records, until=until, since=since))
    if not accounts:
        raise BadInput("no job events in the input" + (" inside --since/--until" if since or until else ""))
    t0 = since if since is not None else min(a.start for a in accounts)
    t1 = until if until is not None else max(a.end for a in accounts)
    capacity = list(log.capacity)
    basis = "events"
    if not capacity and capacity_flag:
        capacity = [(t0, acc, chips) for acc, chips in parse_capacity(capacity_flag)]
        basis = "flag"
    elif not capacity:
        capacity = _peak_capacity(accounts, t0)
        basis = "peak-allocation"
    result = metrics.report(accounts, capacity, t0, t1, by or [], period)
    result["fleet"]["capacity_basis"] = basis
    outside = sum(a.outside for a in accounts)
    result["input"] = {"records": log.records, "skipped": log.skipped, "events_outside_jobs": outside}
    return result
