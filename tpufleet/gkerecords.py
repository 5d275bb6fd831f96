"""What the fleet state keeps of the provider's side of a fleet (pure, typed): the Kubernetes names of pods,
cubes and machines, node pools not yet placed, announced maintenance windows, the reservation's sub-blocks, and
the alerts already taken. `fleetstate.FleetState` holds them; `tpufleet.state` reads and writes them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.errors import Refused
from tpufleet.ids import HostId, natural_key
from tpufleet.shapes import Shape
from tpufleet.timeparse import utc_stamp


@dataclass(frozen=True)
class NodePoolSlice:
    """A GKE TPU node pool held as an *unplaced* slice: a node pool is one slice of its topology (GKE creates and
    repairs a multi-host pool as one unit), but no label of its nodes says which cubes it holds. It is kept on a
    pod of its generation and counted against that pod's free cubes (`status`), never given cubes by guess."""

    shape: Shape
    accelerator: str  # cloud.google.com/gke-tpu-accelerator
    pod: str
    nodes: tuple[str, ...]  # its nodes' names, sorted
    # the cubes of its other nodes, which carry 4x4x4 partition ids (a pool partly relabelled): those nodes are
    # machines of named cubes of the free pool, so the pool no longer holds these cubes as an unplaced slice
    placed_cubes: tuple[str, ...] = ()
    # the `gke-tpu-topology` values its nodes carry, as written, when not just the shape's text (`8x4x4` for a 4x4x8
    # pool): a Kueue flavor selects the label as written (() for the shape's text, and in states written before)
    topology: tuple[str, ...] = ()

    @property
    def topology_labels(self) -> tuple[str, ...]:
        """The `gke-tpu-topology` values its nodes carry: as imported, else the shape's text."""
        return self.topology or (self.shape.text,)

    @property
    def cubes(self) -> int:
        """Whole cubes it holds unplaced (a sub-cube slice holds machines of one cube: see `machines`)."""
        return 0 if self.shape.is_subcube else max(0, self.shape.cubes - len(self.placed_cubes))

    @property
    def single_host(self) -> bool:
        """A one-machine topology (2x2x1): GKE scales such a pool node by node, each node a slice of its own."""
        return self.shape.machines == 1

    @property
    def machines(self) -> int:
        """Machines it holds unplaced: none once any of a sub-cube slice's nodes is on a named cube (a single-host
        pool: one per node, each its own slice)."""
        if self.single_host:
            return len(self.nodes)
        if self.shape.is_subcube:
            return 0 if self.placed_cubes else self.shape.machines
        return self.cubes * MACHINES_PER_CUBE

    def record(self) -> dict[str, object]:
        out: dict[str, object] = {"shape": self.shape.text, "accelerator": self.accelerator, "pod": self.pod}
        out["nodes"] = sorted(self.nodes, key=natural_key)  # as every list of names: node-9 before node-10
        out |= {"placed_cubes": list(self.placed_cubes)} if self.placed_cubes else {}
        return out | ({"topology": list(self.topology)} if self.topology else {})


POOL_NOT_A_SLICE = (  # a name `status` lists among the unplaced node-pool slices, given where a slice is taken
    "; {name} is a node pool `import k8s` holds as an unplaced slice on {pod}: no label says which cubes, so it only"
    " counts against that pod's free cubes; `tpufleet allocate {name} --shape {shape}` places it (or `export"
    " node-labels` once such a slice runs on its nodes)"
)


@dataclass
class K8sNames:
    """What a Kubernetes cluster calls the fleet's parts, learnt by `import k8s` and kept so that later imports
    place the same node on the same machine (GKE names partitions and hosts by opaque ids, not positions); and
    what the last import said of them that is no fault: DEGRADED partitions (degraded cubes that still serve)
    and node pools held as unplaced slices."""

    blocks: dict[str, str] = field(default_factory=dict)  # `gce-topology-block` value -> pod
    partitions: dict[str, str] = field(default_factory=dict)  # 4x4x4 partition id -> cube
    nodes: dict[str, HostId] = field(default_factory=dict)  # node name -> machine
    degraded: frozenset[str] = frozenset()  # cubes whose partition GKE reports DEGRADED
    node_pools: dict[str, NodePoolSlice] = field(default_factory=dict)  # node pool name -> its unplaced slice
    # cube -> its nodes' `gce-topology-subblock`, of the partitions learnt: `import reservation` gives a sub-block at
    # that physical position (`physicalTopology.subBlock`, named within its block) in the cube's pod that cube
    sub_blocks: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        parts = (self.blocks, self.partitions, self.nodes, self.degraded, self.node_pools, self.sub_blocks)
        return any(parts)

    def pod_block(self) -> dict[str, str]:
        return {pod: block for block, pod in self.blocks.items()}

    def cube_partition(self) -> dict[str, str]:
        return {cube: part for part, cube in self.partitions.items()}

    def machine_node(self) -> dict[HostId, str]:
        return {host: node for node, host in self.nodes.items()}

    def pool_note(self, name: str) -> str:
        """What a name `status` lists among the unplaced node-pool slices is, said where a slice is taken."""
        pool = self.node_pools.get(name)
        return "" if pool is None else POOL_NOT_A_SLICE.format(name=name, pod=pool.pod, shape=pool.shape.text)


def one_name_each(names: K8sNames) -> K8sNames:
    """`names`, Refused if two Kubernetes names would stand for one pod, cube or machine."""
    for what, named in (("pod", names.blocks), ("cube", names.partitions), ("machine", names.nodes)):
        counts = Counter(named.values())
        if len(counts) != len(named):
            twice = sorted((str(p) for p, n in counts.items() if n > 1), key=natural_key)
            raise Refused(f"two Kubernetes names for one {what}: {', '.join(twice[:5])}")
    return names


@dataclass(frozen=True)
class MaintenanceWindow:
    """Announced maintenance of a reservation sub-block (Compute Engine's `upcomingGroupMaintenance`)."""

    status: str  # maintenanceStatus: PENDING, ONGOING or UNKNOWN
    kind: str | None = None  # type: SCHEDULED, UNSCHEDULED, MULTIPLE, UNKNOWN_TYPE
    start: str | None = None  # windowStartTime, RFC 3339
    end: str | None = None  # windowEndTime

    @property
    def drains(self) -> bool:
        """Pending or ongoing maintenance takes the cube's hosts away: a planned drain, once it is due."""
        return self.status in ("PENDING", "ONGOING")

    def due(self, now: str) -> bool:
        """Whether the drain is due at `now` (the tool's UTC stamp): ongoing maintenance, or pending maintenance
        whose window has started or has no start given. Announced weeks ahead, the cube serves until its window,
        so the slices on it can be moved first (`plan-maintenance`), not stopped at the import.

        >>> w = MaintenanceWindow("PENDING", "SCHEDULED", "2026-06-16T09:00:00Z", "2026-06-16T13:00:00Z")
        >>> w.due("2026-06-01T00:00:00Z"), w.due("2026-06-16T09:00:00Z")
        (False, True)
        """
        if self.status == "ONGOING" or (self.status == "PENDING" and self.start is None):
            return True
        # windows kept before times were normalised may carry an offset or a fraction: compare as the tool writes
        return self.status == "PENDING" and self.start is not None and (utc_stamp(self.start) or self.start) <= now

    def under_way(self, now: str) -> bool:
        """Due at `now` and not over: the provider is servicing the cube (an unknown end never passes)."""
        return self.drains and self.due(now) and (self.end is None or (utc_stamp(self.end) or self.end) > now)

    def record(self) -> dict[str, object]:
        out: dict[str, object] = {"status": self.status}
        optional = {"type": self.kind, "window_start": self.start, "window_end": self.end}
        out.update({k: v for k, v in optional.items() if v is not None})
        return out


@dataclass(frozen=True)
class SubBlockRecord:
    """What the state keeps of one reservation sub-block: the cube it is, and its health and maintenance as last
    imported. A DEGRADED sub-block is a degraded cube that still serves (Compute Engine: "within SLO and can be
    used"): its own state, not a fault."""

    cube: str
    block: str  # physicalTopology.block ("" when the sub-block did not say)
    health: str  # healthInfo.healthStatus: HEALTHY, DEGRADED or HEALTH_STATUS_UNSPECIFIED
    healthy_hosts: int | None = None
    degraded_hosts: int | None = None
    maintenance: MaintenanceWindow | None = None
    # physicalTopology.subBlock, the value of its nodes' `cloud.google.com/gce-topology-subblock` label: how
    # `import k8s` finds the cube of a partition whose id is no sub-block's name (not compared: fixed by the name)
    position: str | None = field(default=None, compare=False)

    @property
    def degraded(self) -> bool:
        return self.health == "DEGRADED"

    def record(self) -> dict[str, object]:
        out: dict[str, object] = {"cube": self.cube, "block": self.block, "health": self.health}
        if self.healthy_hosts is not None:
            out["healthy_hosts"] = self.healthy_hosts
        if self.degraded_hosts is not None:
            out["degraded_hosts"] = self.degraded_hosts
        if self.maintenance is not None:
            out["maintenance"] = self.maintenance.record()
        return out


@dataclass
class ReservationNames:
    """A Compute Engine reservation's sub-blocks as cubes, learnt by `import reservation` and kept so that a later
    import puts the same sub-block on the same cube (sub-blocks are named by opaque server-generated names)."""

    blocks: dict[str, str] = field(default_factory=dict)  # physicalTopology.block -> pod
    sub_blocks: dict[str, SubBlockRecord] = field(default_factory=dict)  # sub-block name -> its record

    def __bool__(self) -> bool:
        return bool(self.blocks or self.sub_blocks)

    def by_cube(self) -> dict[str, tuple[str, SubBlockRecord]]:
        """cube -> (sub-block name, record)."""
        return {r.cube: (name, r) for name, r in self.sub_blocks.items()}


@dataclass(frozen=True)
class AlertMark:
    """An Alertmanager alert that opened a fault: its fingerprint and startsAt (the mark ending the fault's reason),
    its target (canonical) and the fault, kept until its resolution clears the fault, so that a repeat does not open
    the fault again once it was cleared by hand and left the state."""

    fingerprint: str
    starts_at: str
    target: str
    fault: str
