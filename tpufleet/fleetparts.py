"""The parts the fleet state holds, as typed values: a slice and its state, a fault, a multislice job, a degraded
slice's reroute, a route-table index entry, the change a transaction made; each with its JSON form in command output.
Kept apart from `FleetState` (`fleetstate`), which holds them and makes every transition: these are the values
alone, which the codec, the views and the use cases build and read without the transitions.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from tpufleet.allocation import Allocation
from tpufleet.constants import MACHINES_PER_CUBE, MAX_REASON_CHARS
from tpufleet.errors import BadInput
from tpufleet.ids import OcsId, TargetId
from tpufleet.shapes import Shape, Vec
from tpufleet.text import printable

Pair = tuple[int, int]  # (north port, south port) of one OCS cross-connect


OcsState = Mapping[OcsId, frozenset[Pair]]


@dataclass(frozen=True)
class Change:
    """What a committed transaction did, for its journal line."""

    summary: str
    details: dict[str, object] = field(default_factory=dict)


class SliceState(str, enum.Enum):
    ALLOCATED = "allocated"  # cubes reserved, cross-connects not (all) applied
    CONNECTED = "connected"  # wired as its shape; routing tables may be made
    DEGRADED = "degraded"  # wired, running on tables that route around faults, at reduced throughput
    EVICTED = "evicted"  # a fault stopped it; `reschedule` moves it

    @property
    def wired(self) -> bool:
        return self in (SliceState.CONNECTED, SliceState.DEGRADED)

    def __str__(self) -> str:
        return self.value


@dataclass
class Fault:
    id: str
    target: TargetId
    planned: bool
    opened: str
    cleared: str | None = None
    reason: str = ""
    opened_serial: int | None = None
    window_start: str | None = None  # a planned drain of announced maintenance: its window (RFC 3339)
    window_end: str | None = None

    @property
    def is_open(self) -> bool:
        return self.cleared is None

    @property
    def history_cube(self) -> str | None:
        """The cube whose record this fault marks once cleared (`plan-spares`' history): an unplanned fault of
        anything inside a cube; None for a drain or an OCS, which say nothing of a cube's own reliability."""
        if self.planned or isinstance(self.target, OcsId):
            return None
        return self.target.cube

    def record(self) -> dict[str, object]:
        """Its JSON form in command output (`-o json`); the state file's form is `tpufleet.state.records`'s."""
        out: dict[str, object] = {
            "id": self.id,
            "target": str(self.target),
            "planned": self.planned,
            "reason": self.reason,
            "opened": self.opened,
            "cleared": self.cleared,
        }
        if self.opened_serial is not None:
            out["opened_serial"] = self.opened_serial
        if self.window_start is not None:  # only drains of announced maintenance: other faults keep their shape
            out["window_start"] = self.window_start
        if self.window_end is not None:
            out["window_end"] = self.window_end
        return out


DEFAULT_MIN_THROUGHPUT = 0.5  # below this share of healthy all-to-all throughput a slice is moved, not rerouted


@dataclass(frozen=True)
class Reroute:
    """How a degraded slice runs: the all-to-all throughput it keeps, the VCs its tables use, the faults avoided."""

    retained: float
    vcs: int
    faults: tuple[str, ...]

    def record(self) -> dict[str, object]:
        return {"all_to_all_retained": self.retained, "vcs": self.vcs, "faults": list(self.faults)}


@dataclass
class Slice:
    name: str
    shape: Shape
    pod: str
    cubes: tuple[str, ...]
    coords: dict[str, Vec]  # cube -> its (a, b, c) position in the slice's cube grid
    state: SliceState = SliceState.ALLOCATED
    fault_tolerant_routing: bool = True
    created: str | None = None
    machines: tuple[int, ...] = ()  # sub-cube slices: the machines of their one cube
    origin: Vec | None = None  # sub-cube slices: the chip where their box starts
    connected_serial: int | None = None
    evicted_by: str | None = None
    min_throughput: float = DEFAULT_MIN_THROUGHPUT  # policy floor for rerouting instead of rescheduling
    reroute: Reroute | None = None  # set while degraded
    proposal: Allocation | None = None  # set while evicted: where `reschedule` will move it (reserved)
    job: str | None = None  # the multislice job it is one slice of (named JOB-0, JOB-1, ...), if any

    @classmethod
    def allocated(
        cls,
        name: str,
        shape: Shape,
        where: Allocation,
        fault_tolerant_routing: bool,
        created: str,
        min_throughput: float = DEFAULT_MIN_THROUGHPUT,
        job: str | None = None,
    ) -> Slice:
        """A new slice on the cubes (or machines) the allocator gave it, allocated, not yet wired."""
        return cls(
            name,
            shape,
            where.pod,
            where.cubes,
            dict(where.coords),
            SliceState.ALLOCATED,
            fault_tolerant_routing,
            created=created,
            machines=where.machines,
            origin=where.origin,
            min_throughput=min_throughput,
            job=job,
        )

    @property
    def held_machines(self) -> tuple[int, ...]:
        """Machines held in each of its cubes (a whole-cube slice holds all of them)."""

        return self.machines or tuple(range(MACHINES_PER_CUBE))

    def record(self) -> dict[str, object]:
        """Its JSON form in command output (`-o json`; the name is the key, not a field); the state file's form is
        `tpufleet.state.records`'s."""
        out: dict[str, object] = {
            "shape": self.shape.text,
            "twisted": self.shape.twisted,
            "pod": self.pod,
            "cubes": list(self.cubes),
            "coords": {c: list(v) for c, v in self.coords.items()},
            "state": self.state.value,
            "fault_tolerant_routing": self.fault_tolerant_routing,
        }
        optional = {
            "created": self.created,
            "connected_serial": self.connected_serial,
            "evicted_by": self.evicted_by,
            "reroute": self.reroute.record() if self.reroute else None,
            "proposal": self.proposal.record() if self.proposal else None,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        out["min_throughput"] = self.min_throughput
        if self.job is not None:  # only job slices carry the key: other slices keep their old shape
            out["job"] = self.job
        if self.machines:
            out["machines"] = list(self.machines)
            out["origin"] = list(self.origin or (0, 0, 0))
        return out

    def describe(self) -> str:
        where = (
            f"machines {','.join(map(str, self.machines))} of {self.cubes[0]}"
            if self.machines
            else f"cubes {','.join(self.cubes)}"
        )
        return f"slice {self.name}: {self.shape} in {self.pod}, {where} ({self.state})"


@dataclass
class Job:
    """A multislice job (Pathways' "islands", Cloud TPU's multislice): N identical slices, each wired through the
    OCS of its own pod, joined by the data-centre network. Its slices are ordinary slices that name it; its state
    is derived from theirs (`tpufleet.jobs`), never stored."""

    name: str
    shape: Shape
    slices: tuple[str, ...]
    elastic_min: int | None = None  # elastic: runs on while at least this many slices are active; None: all or none
    spread: bool = False  # asked to put its slices in different pods
    created: str | None = None

    @property
    def elastic(self) -> bool:
        return self.elastic_min is not None

    @property
    def needed(self) -> int:
        """Slices that must be active for the job to run."""
        return len(self.slices) if self.elastic_min is None else self.elastic_min


def job_slice_names(job: str, count: int) -> list[str]:
    """The names of a job's slices: JOB-0, JOB-1, ... (so every per-slice command takes them as they are)."""
    return [f"{job}-{i}" for i in range(count)]


@dataclass
class RouteRecord:
    """The index entry of a slice's stored routing tables."""

    file: str
    serial: int
    made: str
    algorithm: str
    vcs: int | None  # None when the deadlock check was skipped
    routable_pairs: int
    unroutable_pairs: int
    stale: bool = False
    stale_reason: str | None = None
    # the id the tables file carries in its `meta` (None in entries written before 0.3: compared by `made` alone)
    tables_id: str | None = None


def fault_reason(reason: str) -> str:
    """A fault's reason as kept (shown in tables and messages: one line, no terminal controls); BadInput when that
    is longer than a reason may be."""
    kept = printable(reason)
    if len(kept) > MAX_REASON_CHARS:
        escaped = f" ({len(kept):,} once its control characters are escaped)" if kept != reason else ""
        raise BadInput(f"bad fault reason: {len(reason):,} characters{escaped}; at most {MAX_REASON_CHARS:,} are kept")
    return kept
