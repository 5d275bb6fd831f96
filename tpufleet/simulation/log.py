"""What a run writes (native goodput records, in order) and what it counts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tpufleet.simulation.inputs import FAULT_KINDS
from tpufleet.simulation.job import Job

ACCELERATOR = "tpu-v4"  # the built-in pod's; a run on pods of a generation writes the generation's name
Record = dict[str, Any]  # one line of the native JSONL log `goodput-report` reads
# One job event as the run keeps it: (job id, time rounded to milliseconds, event name, step, chips); None where
# the record has no such field. A dict per event cost a tenth of a 16-pod run; records are made only when asked.
EventTuple = tuple[str, float, str, int | None, int | None]
Entry = Record | EventTuple  # capacity and job records stay dicts (a few per job)


class EventLog:
    """The records of a run: capacity, one per job, then the jobs' events (times rounded to milliseconds).

    `entries` holds them in order, events as `EventTuple`s; `records` gives them all as dicts. `by_job` holds the
    same event tuples grouped by job (the summary reads them so)."""

    def __init__(self, accelerator: str = ACCELERATOR) -> None:
        self.accelerator = accelerator
        self.entries: list[Entry] = []
        self.by_job: dict[str, list[EventTuple]] = {}

    @property
    def records(self) -> list[Record]:
        """Every record as the JSON-lines writer and `goodput-report` see it (made afresh on each call)."""
        return [as_record(entry) if isinstance(entry, tuple) else entry for entry in self.entries]

    def capacity(self, time: float, chips: int) -> None:
        self.entries.append({"type": "capacity", "time": time, "accelerator": self.accelerator, "chips": chips})

    def job(self, job: Job, ideal_step_s: float) -> None:
        topology = job.shape.text + (" twisted" if job.shape.twisted else "")
        self.entries.append(
            {
                "type": "job",
                "job": job.id,
                "accelerator": self.accelerator,
                "chips": job.chips,
                "topology": topology,
                "phase": job.phase,
                "framework": job.framework,
                "priority": job.priority_name,
                "ideal_step_s": round(ideal_step_s, 6),
                **({"slices": job.slices} if job.slices > 1 else {}),
            }
        )

    def slice_counts(self, job: Job, time: float) -> None:
        """An elastic multislice job's slice counts from `time` on (a record of its own: the goodput report's
        stepping and available slice efficiency). Every slice the job holds steps."""
        active = job.active
        record = {"type": "event", "job": job.id, "time": round(time, 3), "event": "slice_counts",
                  "active_slices": active, "available_slices": active, "total_slices": job.slices}  # fmt: skip
        self.entries.append(record)

    def event(self, job: Job, time: float, name: str, *, step: int | None = None, chips: int | None = None) -> None:
        event = (job.id, round(time, 3), name, step, chips)
        self.entries.append(event)
        mine = self.by_job.get(job.id)
        if mine is None:
            mine = self.by_job[job.id] = []
        mine.append(event)


def as_record(event: EventTuple) -> Record:
    job, time, name, step, chips = event
    record: Record = {"type": "event", "job": job, "time": time, "event": name}
    if step is not None:
        record["step"] = step
    if chips is not None:
        record["chips"] = chips
    return record


RESERVATION_COUNTS = ("made", "late", "backfilled")  # `reservations` in simulate-fleet's JSON, a sweep's figures


@dataclass
class Stats:
    preemptions: int = 0
    evictions: int = 0  # every unplanned stop other than a preemption (failures included)
    drain_moves: int = 0  # jobs a planned drain moved (after their checkpoint): planned, so no eviction
    reroutes: int = 0
    faults: dict[str, int] = field(default_factory=lambda: {kind: 0 for kind in FAULT_KINDS})
    xconnect_changes: int = 0  # cross-connects added plus removed
    jobs_finished: int = 0
    reservations: int = 0  # `reserve` policies: runs of a job given a reservation at the head of the queue
    reservations_late: int = 0  # of those, started after the shadow time (a fault or a higher rank intervened)
    backfilled: int = 0  # jobs started behind a reserved head
    restart_waits: dict[str, list[float]] = field(default_factory=dict)  # by size: seconds from a fault to the restart

    def reservation_counts(self) -> dict[str, int]:
        """The reserving policies' figures under their names in a run's JSON (`reservations`) and a sweep's."""
        return dict(zip(RESERVATION_COUNTS, (self.reservations, self.reservations_late, self.backfilled), strict=True))


def jsonl(records: Iterable[Entry]) -> bytes:
    """The records (dicts, or the log's event tuples) as JSON lines, byte for byte what
    `json.dumps(record, separators=(",", ":"))` gives each one's record.

    Events (nearly all of them) are formatted directly: their keys and value types are fixed by `EventLog.event`,
    and formatting them is several times faster than the general encoder, which took a sixth of a 16-pod run."""
    encode = json.JSONEncoder(separators=(",", ":")).encode
    prefix: dict[str, str] = {}  # job id -> the start of its event lines (ids may hold characters JSON escapes)
    names: dict[str, str] = {}  # event name -> its JSON string
    lines: list[str] = []
    append = lines.append
    for record in records:
        event = record if isinstance(record, tuple) else _event_of(record)
        if event is None:
            append(encode(record))
            continue
        job, time, name, step, chips = event
        head = prefix.get(job)
        if head is None:
            head = prefix[job] = f'{{"type":"event","job":{encode(job)},"time":'
        quoted = names.get(name)
        if quoted is None:
            quoted = names[name] = f',"event":{encode(name)}'
        if step is None and chips is None:
            append(f"{head}{time!r}{quoted}}}")
        elif chips is None:
            append(f'{head}{time!r}{quoted},"step":{step}}}')
        elif step is None:
            append(f'{head}{time!r}{quoted},"chips":{chips}}}')
        else:
            append(f'{head}{time!r}{quoted},"step":{step},"chips":{chips}}}')
    lines.append("")
    return "\n".join(lines).encode()


def _event_of(record: Record) -> EventTuple | None:
    """An event record written by `EventLog.event` as its tuple; None for any other record (encoded in full)."""
    if record.get("type") != "event" or len(record) > 6 or list(record)[:4] != ["type", "job", "time", "event"]:
        return None
    job, time, name = record["job"], record["time"], record["event"]
    step, chips = record.get("step"), record.get("chips")
    if type(job) is not str or type(time) is not float or type(name) is not str:
        return None
    if any(v is not None and type(v) is not int for v in (step, chips)) or len(record) != 4 + (step is not None) + (
        chips is not None
    ):
        return None
    if "step" in record and "chips" in record and list(record)[4:] != ["step", "chips"]:
        return None
    return job, time, name, step, chips
