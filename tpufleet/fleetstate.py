"""The fleet state as typed objects, and every transition of it in one place (pure).

`tpufleet.state` turns the state file into a `FleetState` when it loads it and back when it commits; nothing
else sees the document. A command's use case (`tpufleet.ops`) receives the freshly loaded state inside the
lock, changes it only through the methods below, and returns what it did.

>>> from tpufleet.ids import parse_target
>>> from tpufleet.model import default_fleet
>>> state = FleetState(default_fleet())
>>> fault = state.open_fault(parse_target("host:c03/5"), planned=False, reason="ECC", now="t")
>>> fault.id, state.health().cubes_out
('f1', {'c03': ['f1']})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from tpufleet.allocation import Allocation, machine_usage
from tpufleet.constants import ALERT_MARKS_KEPT, MAX_REASON_CHARS
from tpufleet.errors import Refused
from tpufleet.fleetparts import (
    DEFAULT_MIN_THROUGHPUT,
    Change,
    Fault,
    Job,
    Pair,
    Reroute,
    RouteRecord,
    Slice,
    SliceState,
    fault_reason,
)
from tpufleet.gkerecords import (
    AlertMark,
    K8sNames,
    NodePoolSlice,
    ReservationNames,
    SubBlockRecord,
    one_name_each,
)
from tpufleet.health import Health, health_of
from tpufleet.ids import CubeId, HostId, OcsId, TargetId, canonical, natural_key
from tpufleet.integrations.k8s import LABEL_VALUE
from tpufleet.model import Fleet
from tpufleet.text import printable, unknown_name

# The parts most use cases and views import with FleetState, from here.
__all__ = [
    "DEFAULT_MIN_THROUGHPUT",
    "Change",
    "Fault",
    "FleetState",
    "Job",
    "Reroute",
    "RouteRecord",
    "Slice",
    "SliceState",
]

_Named = TypeVar("_Named")


@dataclass
class FleetState:
    fleet: Fleet
    serial: int = 0
    created: str | None = None
    next_fault: int = 1
    faults: list[Fault] = field(default_factory=list)
    slices: dict[str, Slice] = field(default_factory=dict)
    ocs: dict[OcsId, frozenset[Pair]] = field(default_factory=dict)
    routes: dict[str, RouteRecord] = field(default_factory=dict)
    k8s: K8sNames = field(default_factory=K8sNames)
    jobs: dict[str, Job] = field(default_factory=dict)
    reservation: ReservationNames = field(default_factory=ReservationNames)
    alert_marks: dict[str, AlertMark] = field(default_factory=dict)  # by fingerprint, oldest first
    # cube -> cleared unplanned faults moved from the state to the journal (`prune_cleared`): their history stays
    pruned_history: dict[str, int] = field(default_factory=dict)
    # Derived from `faults`, kept while they do not change, so a batch of faults costs linear time.
    _health: Health | None = field(default=None, init=False, repr=False, compare=False)
    _open_by_target: dict[TargetId, Fault] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def next_serial(self) -> int:
        """The serial this state gets when the running transaction commits."""
        return self.serial + 1

    def health(self) -> Health:
        if self._health is None:
            from tpufleet.integrations.k8s_pools import unplaced_cubes

            health = self._health = health_of(self.faults)
            health.held, health.degraded = unplaced_cubes(self.k8s.node_pools.values()), self.degraded_cubes()
            self._health.maintenance = frozenset(
                r.cube
                for r in self.reservation.sub_blocks.values()
                if r.maintenance is not None and r.maintenance.drains and r.cube not in self._health.cubes_out
            )
        return self._health

    def _faults_changed(self) -> None:
        self._health, self._open_by_target = None, None

    # ---- slices ------------------------------------------------------------------------------------------
    def slice(self, name: str) -> Slice:
        job = self.jobs.get(name) if name not in self.slices else None
        if job is not None:  # a job's name where one slice is wanted (`reschedule JOB`): say which slices it has
            evicted = [n for n in job.slices if self.slices[n].state is SliceState.EVICTED]
            which = f"; evicted: {', '.join(evicted)}" if evicted else ""
            raise Refused(
                f"{name!r} is a multislice job, not a slice: give one of its slices ({', '.join(job.slices)}{which})"
            )
        if name not in self.slices:
            raise Refused(
                unknown_name("slice", name, {"slices": sorted(self.slices, key=natural_key)}) + self.k8s.pool_note(name)
            )
        return self.slices[name]

    def add_slice(self, sl: Slice) -> None:
        if sl.name in self.slices:
            raise Refused(f"slice {sl.name!r} already exists (release it first)")
        self.slices[sl.name] = sl

    def release(self, name: str) -> Slice:
        """Forget the slice and its tables' index entry; its cross-connects stay for reuse. A job's slices go only
        with their job (`release_job`): a job never points at a slice that is gone."""
        sl = self.slice(name)
        if sl.job is not None:
            raise Refused(
                f"slice {name!r} is one slice of job {sl.job!r}: release the job (`tpufleet release {sl.job}`)"
            )
        del self.slices[name]
        self.routes.pop(name, None)
        return sl

    # ---- multislice jobs --------------------------------------------------------------------------------
    def job(self, name: str) -> Job:
        return _known(self.jobs, name, "job")

    def add_job(self, job: Job, slices: Iterable[Slice]) -> None:
        """Record the job and all its slices at once (the slices must be exactly the job's, each naming it)."""
        members = list(slices)
        if job.name in self.jobs or job.name in self.slices:
            raise Refused(f"name {job.name!r} is already used by a {'job' if job.name in self.jobs else 'slice'}")
        if [s.name for s in members] != list(job.slices) or any(s.job != job.name for s in members):
            raise ValueError(f"the slices given are not those of job {job.name!r}")  # a bug in the caller
        taken = [s.name for s in members if s.name in self.slices]
        if taken:
            raise Refused(f"slice name(s) of job {job.name!r} already in use: {', '.join(taken)}")
        for sl in members:
            self.slices[sl.name] = sl
        self.jobs[job.name] = job

    def release_job(self, name: str) -> list[Slice]:
        """Forget the job, its slices and their tables' index entries; cross-connects stay for reuse."""
        job = self.job(name)
        gone = [self.slices.pop(s) for s in job.slices]
        for s in job.slices:
            self.routes.pop(s, None)
        del self.jobs[name]
        return gone

    def job_slices(self, name: str) -> list[Slice]:
        return [self.slices[s] for s in self.job(name).slices]

    def slices_named(self, name: str) -> list[Slice]:
        """The slices `name` names for a command that takes a slice or a job (release, policy, routes...): the
        job's, or the one slice; Refused listing both kinds when it is neither, as either was meant."""
        if name in self.jobs:
            return self.job_slices(name)
        if name not in self.slices:
            slices, jobs = (sorted(names, key=natural_key) for names in (self.slices, self.jobs))
            raise Refused(
                unknown_name("slice or job", name, {"slices": slices, "jobs": jobs}) + self.k8s.pool_note(name)
            )
        return [self.slices[name]]

    def cubes_drained(self) -> set[str]:
        """The cubes a planned drain of the whole cube holds out of the pool now (a maintenance drain, by hand or
        imported), as against a failure."""
        return {f.target.cube for f in self.open_faults() if f.planned and isinstance(f.target, CubeId)}

    def announced_end(self, target: TargetId) -> str | None:
        """The end of the maintenance the reservation announced for the cube `target` (None: not a cube, or no end
        known): a maintenance plan's drain there holds the cube until then (`maintenance.plan_window_ahead`)."""
        found = self.reservation.by_cube().get(target.cube) if isinstance(target, CubeId) else None
        window = found[1].maintenance if found is not None else None
        return window.end if window is not None and window.drains else None

    def slices_holding(self, cube: str) -> list[str]:
        """The slices on `cube` that it would stop, by name (an evicted slice holds its cubes but runs nowhere)."""
        on = (n for n, sl in self.slices.items() if cube in sl.cubes and sl.state is not SliceState.EVICTED)
        return sorted(on, key=natural_key)

    def connect(self, name: str) -> None:
        sl = self.slice(name)
        sl.state = SliceState.CONNECTED
        sl.connected_serial = self.next_serial
        sl.evicted_by, sl.reroute, sl.proposal = None, None, None

    def degrade(self, name: str, reroute: Reroute) -> None:
        """The slice runs on around its faults (a wired slice only)."""
        sl = self.slice(name)
        sl.state = SliceState.DEGRADED
        sl.reroute = reroute

    def recover(self, name: str) -> None:
        """A degraded slice whose faults are all cleared is plainly connected again."""
        sl = self.slice(name)
        if sl.state is SliceState.DEGRADED:
            sl.state, sl.reroute = SliceState.CONNECTED, None

    def evict(self, name: str, fault_id: str, proposal: Allocation | None) -> None:
        """Stop the slice; `proposal` (reserved against other allocations) is where `reschedule` will move it."""
        sl = self.slice(name)
        sl.state = SliceState.EVICTED
        sl.evicted_by, sl.reroute, sl.proposal = fault_id, None, proposal

    def move(self, name: str, where: Allocation) -> None:
        """Give the slice new cubes (or machines); it must be wired again."""
        sl = self.slice(name)
        sl.pod, sl.cubes, sl.coords = where.pod, where.cubes, dict(where.coords)
        sl.machines = where.machines
        sl.origin = where.origin if sl.machines else None
        sl.state = SliceState.ALLOCATED
        sl.evicted_by, sl.reroute, sl.proposal = None, None, None

    def record_routes(self, name: str, entry: RouteRecord) -> None:
        """Index the slice's newly stored routing tables (replacing its older entry)."""
        self.slice(name)
        self.routes[name] = entry

    def set_policy(self, name: str, min_throughput: float | None, fault_tolerant_routing: bool | None) -> None:
        """How the slice meets network faults from the next fault on (None: unchanged)."""
        sl = self.slice(name)
        if min_throughput is not None:
            sl.min_throughput = min_throughput
        if fault_tolerant_routing is not None:
            sl.fault_tolerant_routing = fault_tolerant_routing

    def machine_usage(self, excluding: str | None = None) -> dict[str, set[int]]:
        """cube -> machines held: by every slice, and reserved for the moves of evicted ones."""
        others = [s for s in self.slices.values() if s.name != excluding]
        return machine_usage([*others, *(s.proposal for s in others if s.proposal is not None)])

    def owner_of_ports(self) -> dict[tuple[str, int], str]:
        """(pod, OCS port number) -> the whole-cube slice whose cube is cabled there."""
        position = self.fleet.cube_position
        return {(sl.pod, position[c]): sl.name for sl in self.slices.values() if not sl.machines for c in sl.cubes}

    # ---- what the provider calls the parts ------------------------------------------------------------------
    def partition_names(self) -> dict[str, str]:
        """cube -> the GKE 4x4x4 partition id it has: the one `import k8s` learnt, else its reservation sub-block's
        name (GKE names a TPU7x partition after its sub-block, and the import then needs to learn nothing)."""
        return {**{r.cube: name for name, r in self.reservation.sub_blocks.items()}, **self.k8s.cube_partition()}

    def reservation_degraded(self) -> frozenset[str]:
        """Cubes whose reservation sub-block is DEGRADED (as `import reservation` last read it)."""
        return frozenset(r.cube for r in self.reservation.sub_blocks.values() if r.degraded)

    def degraded_cubes(self) -> frozenset[str]:
        """Cubes degraded by either source, a DEGRADED sub-block or a DEGRADED partition: one fact, whichever
        reported it (each source keeps and clears its own word)."""
        return self.reservation_degraded() | self.k8s.degraded

    def block_names(self) -> dict[str, str]:
        """pod -> the `gce-topology-block` it is: learnt by `import k8s`, else the reservation's physical block when
        it can be a label value (not the empty one of a sub-block list that names no block, nor one such as
        `projects/p/block:1`: the API server refuses a node that carries it, so no node names a pod by it)."""
        reserved = {
            pod: block for block, pod in self.reservation.blocks.items() if block and LABEL_VALUE.fullmatch(block)
        }
        return {**reserved, **self.k8s.pod_block()}

    # ---- faults ------------------------------------------------------------------------------------------
    def open_faults(self) -> list[Fault]:
        return [f for f in self.faults if f.is_open]

    def open_fault_on(self, target: TargetId) -> Fault | None:
        """The open fault on this component, by whichever of its names (`ids.canonical`)."""
        if self._open_by_target is None:
            self._open_by_target = {canonical(f.target): f for f in self.faults if f.is_open}
        return self._open_by_target.get(canonical(target))

    def open_fault(self, target: TargetId, planned: bool, reason: str, now: str) -> Fault:
        reason = fault_reason(reason)
        target = canonical(target)  # one fault a component, whichever name it was given by
        fault = Fault(f"f{self.next_fault}", target, planned, now, None, reason, self.next_serial)
        self.next_fault += 1
        self.faults.append(fault)
        if self._health is not None:  # one more fault: update rather than rebuild (batches stay linear)
            self._health.add(fault)
        if self._open_by_target is not None:
            self._open_by_target[target] = fault
        return fault

    def set_fault_window(self, fault_id: str, start: str | None, end: str | None, reason: str | None = None) -> None:
        """Give a planned drain the window of the maintenance it stands for (and the reason that says it, when the
        maintenance was rescheduled)."""
        fault = self.fault(fault_id)
        if fault is None or not fault.planned:
            raise ValueError(f"no planned fault {fault_id!r} to give a window")  # a bug in the caller
        fault.window_start, fault.window_end = start, end
        if reason is not None:
            fault.reason = printable(reason)[:MAX_REASON_CHARS]

    def clear_fault(self, fault: Fault, now: str) -> None:
        fault.cleared = now
        self._faults_changed()

    def prune_cleared(self, keep: int) -> list[Fault]:
        """Drop all but the `keep` most recently cleared faults from the live state and return the dropped ones
        (oldest first), so the state grows with the fleet and not with its age; their records go to the journal, and
        their count per cube stays (`pruned_history`)."""
        cleared = [f for f in self.faults if not f.is_open]
        if len(cleared) <= keep:
            return []
        cleared.sort(key=lambda f: (f.cleared or "", int(f.id[1:])))
        dropped = cleared[: len(cleared) - keep]
        for f in dropped:
            cube = f.history_cube
            if cube is not None:
                self.pruned_history[cube] = self.pruned_history.get(cube, 0) + 1
        gone = {f.id for f in dropped}
        self.faults = [f for f in self.faults if f.id not in gone]
        self._faults_changed()
        return dropped

    def fault(self, fault_id: str | None) -> Fault | None:
        return next((f for f in self.faults if f.id == fault_id), None)

    # ---- cross-connects and routing tables ---------------------------------------------------------------
    def set_ocs(self, ocs: Mapping[OcsId, frozenset[Pair]]) -> None:
        self.ocs = {k: v for k, v in ocs.items() if v}

    def mark_routes_stale(self, names: Iterable[str | None], why: str, moved: bool = False) -> list[str]:
        """Tables of these slices no longer match the network; `status` says so until they are made again.
        `moved`: the slices are on other cubes now, which is why, whatever made them stale before. Returns those
        of them with stored tables, all stale now (by this or before: either way `routes` is their next step)."""
        stale = []
        for name in sorted({n for n in names if n is not None}, key=natural_key):  # s9 before s10, as counted
            record = self.routes.get(name)
            if record is not None:
                if moved or not record.stale:  # the first cause is kept, unless it moved
                    record.stale, record.stale_reason = True, why
                stale.append(name)
        return stale

    # ---- Alertmanager alerts that opened faults ------------------------------------------------------------
    def note_alert(self, mark: AlertMark) -> None:
        """Remember an alert that opened a fault (replacing an earlier episode of its fingerprint), the
        `ALERT_MARKS_KEPT` most recent only."""
        self.alert_marks.pop(mark.fingerprint, None)
        self.alert_marks[mark.fingerprint] = mark
        while len(self.alert_marks) > ALERT_MARKS_KEPT:
            del self.alert_marks[next(iter(self.alert_marks))]

    def forget_alert(self, fingerprint: str) -> None:
        """Forget an alert (its resolution cleared its fault: a late repeat finds that fault, still in the state)."""
        self.alert_marks.pop(fingerprint, None)

    # ---- names in a Kubernetes cluster -------------------------------------------------------------------
    def name_in_k8s(self, names: K8sNames) -> None:
        """Record the cluster's names of pods, cubes and machines (made by `k8s_names_after`); Refused if a part
        would get two names."""
        self.k8s = one_name_each(names)

    def k8s_names_after(
        self,
        blocks: Mapping[str, str],
        partitions: Mapping[str, str],
        nodes: Mapping[str, HostId],
        forget: Iterable[str] = (),
        sub_blocks: Mapping[str, str] | None = None,
    ) -> K8sNames:
        """The names `name_in_k8s` would record (without recording them), so a plan is refused like its apply."""
        gone, k8s = set(forget), self.k8s
        kept = {name: host for name, host in k8s.nodes.items() if name not in gone}
        named = ({**k8s.blocks, **blocks}, {**k8s.partitions, **partitions}, {**kept, **nodes})
        return one_name_each(K8sNames(*named, k8s.degraded, k8s.node_pools, {**k8s.sub_blocks, **(sub_blocks or {})}))

    def record_k8s_health(
        self, degraded: Iterable[str], node_pools: Mapping[str, NodePoolSlice], removed: Iterable[str] = ()
    ) -> None:
        """Record the cubes whose partition is DEGRADED (replacing the set), add or update node-pool slices and
        drop the `removed` ones (pools whose every node is now another pool's)."""
        self.k8s.degraded = frozenset(degraded)
        gone = set(removed)
        kept = {name: p for name, p in {**self.k8s.node_pools, **node_pools}.items() if name not in gone}
        self.k8s.node_pools = dict(sorted(kept.items()))
        self._health = None  # the cubes the pools hold are the allocator's to leave free

    # ---- a Compute Engine reservation --------------------------------------------------------------------
    def record_reservation(self, blocks: Mapping[str, str], sub_blocks: Mapping[str, SubBlockRecord]) -> None:
        """Record (or update) which pod each physical block is and which cube each sub-block is, with its health
        and maintenance; Refused if a cube would be two sub-blocks."""
        self.reservation = self.reservation_after(blocks, sub_blocks)
        self._health = None  # the cubes under announced maintenance may have changed

    def reservation_after(
        self, blocks: Mapping[str, str], sub_blocks: Mapping[str, SubBlockRecord]
    ) -> ReservationNames:
        """What `record_reservation` would record (without recording it), so a plan is refused like its apply."""
        merged = ReservationNames({**self.reservation.blocks, **blocks}, {**self.reservation.sub_blocks, **sub_blocks})
        counts = Counter(r.cube for r in merged.sub_blocks.values())
        twice = sorted((c for c, n in counts.items() if n > 1), key=natural_key)
        if twice:
            raise Refused(f"two reservation sub-blocks for one cube: {', '.join(twice[:5])}")
        return merged


def _known(named: Mapping[str, _Named], name: str, what: str) -> _Named:
    """`named[name]`; Refused naming the known ones if there is no such `what` (a slice, a job)."""
    try:
        return named[name]
    except KeyError:
        raise Refused(unknown_name(what, name, {f"{what}s": sorted(named, key=natural_key)})) from None
