"""What a run writes (native goodput records, in order) and what it counts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tpufleet.simulation.inputs import FAULT_KINDS
from tpufleet.simulation.job import Job

ACCELERATOR = "tpu-v4"
Record = dict[str, Any]  # one line of the native JSONL log `goodput-report` reads


class EventLog:
    """The records of a run: capacity, one per job, then the jobs' events (times rounded to milliseconds)."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def capacity(self, time: float, chips: int) -> None:
        self.records.append({"type": "capacity", "time": time, "accelerator": ACCELERATOR, "chips": chips})

    def job(self, job: Job, ideal_step_s: float) -> None:
        topology = job.shape.text + (" twisted" if job.shape.twisted else "")
        self.records.append(
            {
                "type": "job",
                "job": job.id,
                "accelerator": ACCELERATOR,
                "chips": job.chips,
                "topology": topology,
                "phase": job.phase,
                "framework": job.framework,
                "priority": job.priority_name,
                "ideal_step_s": round(ideal_step_s, 6),
            }
        )

    def event(self, job: Job, time: float, name: str, *, step: int | None = None, chips: int | None = None) -> None:
        record: Record = {"type": "event", "job": job.id, "time": round(time, 3), "event": name}
        if step is not None:
            record["step"] = step
        if chips is not None:
            record["chips"] = chips
        self.records.append(record)


@dataclass
class Stats:
    preemptions: int = 0
    evictions: int = 0  # every unplanned stop other than a preemption (failures included)
    reroutes: int = 0
    faults: dict[str, int] = field(default_factory=lambda: {kind: 0 for kind in FAULT_KINDS})
    xconnect_changes: int = 0  # cross-connects added plus removed
    jobs_finished: int = 0
    restart_waits: dict[str, list[float]] = field(default_factory=dict)  # by size: seconds from a fault to the restart


def jsonl(records: Iterable[Record]) -> bytes:
    """The records as JSON lines, byte for byte what `json.dumps(record, separators=(",", ":"))` gives each one.

    Event records (nearly all of them) are formatted directly: their keys and value types are fixed by
    `EventLog.event`, and formatting them is several times faster than the general encoder, which took a sixth of
    a 16-pod run."""
    encode = json.JSONEncoder(separators=(",", ":")).encode
    quoted: dict[str, str] = {}  # job id -> its JSON string (ids may hold characters JSON escapes)
    lines = []
    for record in records:
        if record["type"] != "event" or len(record) > 6 or type(record["time"]) is not float:
            lines.append(encode(record))
            continue
        job = record["job"]
        name = quoted.get(job)
        if name is None:
            name = quoted[job] = encode(job)
        line = f'{{"type":"event","job":{name},"time":{record["time"]!r},"event":{encode(record["event"])}'
        for key in ("step", "chips"):
            if key in record:
                line += f',"{key}":{record[key]}'
        lines.append(line + "}")
    lines.append("")
    return "\n".join(lines).encode()
