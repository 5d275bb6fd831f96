"""The native goodput event schema (version 1) and the Log that holds what its readers read (JSONL: `eventlines`;
CSV: `csvlog`; each record checked and added by `eventrecords`).

One record per line (JSONL) or row (CSV, columns named like the keys). Three record types:

* ``{"type": "job", "job": ID, "accelerator": "tpu-v4", "chips": 256, "topology": "4x8x8",
  "phase": "training|serving|bulk_inference", "framework": "jax", "priority": "batch",
  "ideal_step_s": 1.2}``: job metadata; instead of ``ideal_step_s``, ``flops_per_step`` and
  ``peak_flops_per_chip`` (ideal step = flops / (peak x chips)); or ``model_flops_per_step`` and
  ``gradient_bytes`` with ``topology``: compute at the hardware profile's peak plus the modelled all-reduce of the
  gradients on that slice shape.
* ``{"type": "capacity", "time": T, "accelerator": "tpu-v4", "chips": 4096}``: fleet capacity from T on.
* ``{"type": "event", "job": ID, "time": T, "event": NAME, ...}`` with NAME one of EVENT_NAMES; ``step`` for
  ``step_start``, ``checkpoint_start/end`` (the step saved) and ``restore_end``; ``chips`` for ``allocation``
  (how many of the job's chips are allocated from T on: at most the job record's chips, and with ``slice`` a slice
  the record's ``slices`` number, `eventrecords.check_allocation`); ``label`` for ``custom_badput_start/end``.

T is ISO 8601 UTC (``2026-01-05T10:00:00Z``) or POSIX seconds, from 1970 to 2200 (MIN_TIME, MAX_TIME; 0 or at least
SMALLEST_TIME, a microsecond, so that no duration is subnormal). A first
record ``{"type": "schema", "version": 1}`` is optional.

Bounds, each refused as a bad record: ``chips`` at most MAX_CHIPS, ``step`` at most MAX_STEP, strings at most
MAX_TEXT characters, numbers finite, an ideal step time (declared or derived) at most MAX_IDEAL_STEP_S, so that
every goodput figure stays finite (1.7e308 s made PG infinite). Files are read by `tpufleet.state.goodputlogs`
(at most MAX_LOG_BYTES each, UTF-8, JSON lines nested at most 64 deep, no NaN or Infinity); a line longer than
MAX_LINE_BYTES is refused before it is decoded (a line of ``[[],[],...]`` costs ~26x its size as Python objects),
and a report reads at most MAX_JOBS jobs (each costs a few KB however short its log).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from tpufleet.constants import DAY, MiB
from tpufleet.errors import BadInput, shown

if TYPE_CHECKING:
    from tpufleet.collectives.profile import Profile

SCHEMA_VERSION = 1
MAX_CHIPS = 10_000_000  # chips of a job, an allocation or a capacity record
MAX_STEP = 10**15  # step numbers (exact in the float64 arrays the accounting uses)
MAX_SLICES = 100_000  # slices of a multislice job
MAX_TEXT = 4096  # characters of a string field (job ids, names, labels)
MAX_IDEAL_STEP_S = 365.0 * DAY  # a year: ideal x steps x chips stays far below the float range
MAX_LINE_BYTES = MiB  # one log line or entry (a job record of five 4,096-character fields is ~120 KB)
MAX_JOBS = 100_000  # jobs of one report (rows are held to be rendered): 475 MiB peak at 100,000 one-line jobs
PHASES = ("training", "serving", "bulk_inference")
EVENT_NAMES = (
    "submitted",
    "allocation",
    "job_start",
    "job_end",
    "tpu_init_start",
    "tpu_init_end",
    "training_prep_start",
    "training_prep_end",
    "compile_start",
    "compile_end",
    "step_start",
    "data_loading_start",
    "data_loading_end",
    "checkpoint_start",
    "checkpoint_end",
    "restore_start",
    "restore_end",
    "custom_badput_start",
    "custom_badput_end",
    "failure",
    "preemption",
    "eviction",
    "elastic_slice_down_start",
    "elastic_slice_down_end",
    "elastic_scale_up_start",
    "elastic_scale_up_end",
    "elastic_reinit_start",
    "elastic_reinit_end",
    "slice_counts",
    "drain",  # a planned stop with notice (maintenance): the job saved its work and moves; no disruption
)
CODE = {name: i for i, name in enumerate(EVENT_NAMES)}
# Why a job stopped unplanned (a simulation's log writes them, the accounting reads them), in the reports' order.
Disruption = Literal["failure", "eviction", "preemption"]
DISRUPTIONS: tuple[Disruption, ...] = get_args(Disruption)
# A planned stop (`drain`): the run ends there as at a disruption, but nothing failed: it is no disruption, counts
# in no MTBF, and no disruption is inferred at the restart that follows it.
Stop = Disruption | Literal["drain"]

EventRecord = tuple[float, int, int, int, str]
SliceCounts = tuple[
    float, int, int, int
]  # (time, active = stepping slices, available slices, total slices)  # (time, event code, step, chips, label); -1 / "" where absent


@dataclass
class Job:
    id: str
    accelerator: str = "unknown"
    chips: int = 1
    topology: str = ""
    phase: str = "training"
    framework: str = "unknown"
    priority: str = ""
    ideal_step_s: float | None = None
    slices: int = 1  # a multislice job's slices (chips counts them all)
    where: str = field(default="", compare=False)  # "file:line" of its record: named when another disagrees
    inferred: bool = field(default=False, compare=False)  # no record: made from its events (`pipeline.account_log`)


# A job record's fields that must agree with an earlier record of the same job (`Log.add_job`), in the order a
# disagreement is named.
RECORD_FIELDS = ("accelerator", "chips", "topology", "phase", "framework", "priority", "ideal_step_s", "slices")
# A capacity step: from time, accelerator, chips, and where it is said ("file:line", or the option) for messages.
CapacityRecord = tuple[float, str, int, str]


class EventColumns:
    """One job's events as four typed arrays, 25 bytes an event (a tuple of five costs about 150): ten million
    events fit in memory. Labels (custom badput only) are kept aside by position. Iterating gives EventRecords."""

    __slots__ = ("chips", "code", "labels", "step", "t")

    def __init__(self) -> None:
        self.t = array("d")
        self.code = array("b")
        self.step = array("q")
        self.chips = array("q")
        self.labels: dict[int, str] = {}

    def append(self, t: float, code: int, step: int = -1, chips: int = -1, label: str = "") -> None:
        if label:
            self.labels[len(self.t)] = label
        self.t.append(t)
        self.code.append(code)
        self.step.append(step)
        self.chips.append(chips)

    def __len__(self) -> int:
        return len(self.t)

    def __getitem__(self, i: int) -> EventRecord:
        return (self.t[i], self.code[i], self.step[i], self.chips[i], self.labels.get(i, ""))

    def __iter__(self) -> Iterator[EventRecord]:
        return (self[i] for i in range(len(self.t)))


class ConflictingRecords(BadInput):
    """Two records of one job that disagree. Not a malformed line (`--skip-bad` does not skip it): which of the two
    is wrong cannot be told, and keeping either would make the report depend on the order of the logs."""

    def __init__(self, known: Job, later: Job) -> None:
        name = next(f for f in RECORD_FIELDS if getattr(known, f) != getattr(later, f))
        super().__init__(
            f"{later.where}: field {name}: the record of job {shown(later.id)} at {known.where} says "
            f"{shown(getattr(known, name))} (value {shown(getattr(later, name))})"
        )


class AllocatedBeyondRecord(BadInput):
    """A job record read after allocations of its job that it cannot hold: more chips than it says, or a slice
    beyond its slices. Not a malformed line (`--skip-bad` does not skip it), as with `ConflictingRecords`: the
    record or the allocations may be the wrong ones. (An allocation read after the record is the bad line.)"""

    def __init__(self, job: Job, field_name: str, problem: str) -> None:
        value = getattr(job, field_name)
        super().__init__(f"{job.where}: field {field_name}: {problem} (value {shown(value)})")


class TooManyJobs(Exception):
    """A log names more jobs than its Log admits (`Log.job_limit`); the reader of the file says which file."""

    def __init__(self, job: str, limit: int) -> None:
        super().__init__(job)
        self.job, self.limit = job, limit


@dataclass
class Log:
    jobs: dict[str, Job] = field(default_factory=dict)
    events: dict[str, EventColumns] = field(default_factory=dict)  # job -> its events
    capacity: list[CapacityRecord] = field(default_factory=list)
    slices: dict[str, list[SliceCounts]] = field(default_factory=dict)  # job -> elastic slice counts
    # job -> per-slice allocations (time, order read, slice, chips): folded into job allocations
    # (`eventrecords.fold_slices`)
    slice_allocations: dict[str, list[tuple[float, int, int, int]]] = field(default_factory=dict)
    skipped: int = 0
    cut_off: list[tuple[str, int]] = field(default_factory=list)  # (log, line) where a gzip stream is cut short
    records: int = 0
    job_limit: int = 0  # jobs admitted (events and job records, each counted): 0 for no limit (the simulator's)
    unrecorded: set[str] = field(default_factory=set)  # jobs named without a record (`name_job`): defaults only
    # accelerator -> the hardware figures a job's modelled ideal step is worked out with (others: TPU v4's)
    step_profiles: Mapping[str, Profile] = field(default_factory=dict)

    def columns(self, job: str) -> EventColumns:
        """The job's event columns, new ones for a new job; TooManyJobs past `job_limit`."""
        columns = self.events.get(job)
        if columns is None:
            self._admit(self.events, job)
            columns = self.events[job] = EventColumns()
        return columns

    def add_job(self, job: Job) -> None:
        """A job record: the first of a job is kept (it replaces the defaults of `name_job`), another that agrees
        with it adds nothing, one that disagrees is ConflictingRecords; TooManyJobs past `job_limit`."""
        known = self.jobs.get(job.id)
        if known is None:
            self._admit(self.jobs, job.id)
        elif job.id not in self.unrecorded:
            if known != job:
                raise ConflictingRecords(known, job)
            return
        beyond = self.allocated_beyond(job)
        if beyond is not None:
            raise AllocatedBeyondRecord(job, *beyond)
        self.jobs[job.id] = job
        self.unrecorded.discard(job.id)

    def allocated_beyond(self, job: Job, where: str = "read before this record") -> tuple[str, str] | None:
        """(field, problem) when the allocations held for the job (read `where`: before its record `job`) give it
        more chips than the record says, or name a slice beyond its slices (when it says more than one); else
        None."""
        most, last_slice = _most_chips(self.events.get(job.id)), -1
        for _t, _order, part, chips in self.slice_allocations.get(job.id, ()):
            most, last_slice = max(most, chips), max(last_slice, part)
        if most > job.chips:
            return "chips", f"an allocation {where} gives job {shown(job.id)} {most:,} chips"
        if last_slice >= job.slices > 1:
            return "slices", f"an allocation {where} names slice {last_slice} of job {shown(job.id)}"
        return None

    def name_job(self, job: str) -> None:
        """A job named by a log that has no record of it (ml-goodput-measurement entries without metadata): the
        defaults, admitted as a record is, until a record of it is read."""
        if job not in self.jobs:
            self.add_job(Job(job))
            self.unrecorded.add(job)

    def _admit(self, table: Mapping[str, object], job: str) -> None:
        if self.job_limit and len(table) >= self.job_limit:
            raise TooManyJobs(job, self.job_limit)

    def add_event(self, job: str, t: float, code: int, step: int = -1, chips: int = -1, label: str = "") -> None:
        self.columns(job).append(t, code, step, chips, label)


def _most_chips(columns: EventColumns | None) -> int:
    """The most chips any of the job's (whole-job) allocation events gives it; -1 without one."""
    import numpy as np

    if columns is None or not len(columns):
        return -1
    chips = np.frombuffer(columns.chips, dtype=np.int64)[np.frombuffer(columns.code, dtype=np.int8) == _ALLOCATION]
    return int(chips.max()) if len(chips) else -1


def record_of(log: Log, job: str) -> Job | None:
    """The job's record read so far (None: none yet, or only the defaults of `Log.name_job`)."""
    known = log.jobs.get(job)
    return None if known is None or job in log.unrecorded else known


_STEP_START, _ALLOCATION, _SLICE_COUNTS = CODE["step_start"], CODE["allocation"], CODE["slice_counts"]


def job_names(log: Log) -> set[str]:
    """Every job the log says anything of (a job record, events, slice counts or per-slice allocations)."""
    return set(log.jobs) | set(log.events) | set(log.slices) | set(log.slice_allocations)


def take_jobs(log: Log, names: set[str]) -> Log:
    """The records of the jobs `names`, moved out of `log` into a new Log (its capacity and counts left), each
    table in the log's order: merged after another log's (`merge_into`), the first job record that disagrees is
    then the one the log reads first, as reading the logs one after another finds it."""
    out = Log()
    for mine, theirs in (
        (log.jobs, out.jobs),
        (log.events, out.events),
        (log.slices, out.slices),
        (log.slice_allocations, out.slice_allocations),
    ):
        for name in [name for name in mine if name in names]:
            theirs[name] = mine.pop(name)  # type: ignore[assignment]
    out.unrecorded = log.unrecorded & names
    return out


def merge_into(log: Log, later: Log) -> None:
    """`later`'s records after `log`'s, where reading its file after theirs puts them (a job record read later
    adds nothing, or is ConflictingRecords if it disagrees; events and slice counts follow in order), and its
    counts added. AllocatedBeyondRecord when a job's allocations, once merged, exceed its record (reading the
    files one after another names the line)."""
    for job in later.jobs.values():
        if job.id in later.unrecorded:
            log.name_job(job.id)  # (the defaults never replace a record read before)
        else:
            log.add_job(job)
    for name, new in later.events.items():
        columns = log.columns(name)
        base = len(columns)
        columns.labels.update({base + i: label for i, label in new.labels.items()})
        columns.t.extend(new.t)
        columns.code.extend(new.code)
        columns.step.extend(new.step)
        columns.chips.extend(new.chips)
    log.capacity += later.capacity
    for name, counts in later.slices.items():
        log.slices.setdefault(name, []).extend(counts)
    for name, allocations in later.slice_allocations.items():
        held = log.slice_allocations.setdefault(name, [])
        base = len(held)  # (read once: the list grows as it is extended)
        held.extend((t, base + k, part, chips) for k, (t, _order, part, chips) in enumerate(allocations))
    log.records += later.records
    log.skipped += later.skipped
    log.cut_off += later.cut_off
    for name in job_names(later):
        known = record_of(log, name)
        beyond = None if known is None else log.allocated_beyond(known, "in another log")
        if known is not None and beyond is not None:
            raise AllocatedBeyondRecord(known, *beyond)
