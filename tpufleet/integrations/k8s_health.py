"""From a placed Kubernetes node list to faults (pure): what each node and partition says is failed or drained
(`wanted`), and how that differs from the state's open faults (`health_diff`).

`Ready` False or Unknown is a fault on the node's machine (a planned drain when GKE's own signal on the node says
it services it: `gke_maintenance`); otherwise a cordon or a drain taint
(`NoSchedule`/`NoExecute`) is a planned drain on it; a partition UNHEALTHY or INCOMPLETE is a fault on its cube
(a partition DEGRADED still serves: a degraded cube, `k8s_pools`, not a fault). Faults the import opens carry the
reason prefix `k8s: `; it only ever clears those, and only on machines and cubes the list reports healthy (a node
missing from the list says nothing). `k8s_plan.place` decides which machine each node is.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.fleetstate import Fault, FleetState
from tpufleet.ids import ChipId, CubeId, HostId, IciId, OcsId, TargetId, machine_of, natural_key
from tpufleet.integrations.k8s import (
    BAD_PARTITION_STATES,
    CORDON_TAINT,
    DRAIN_EFFECTS,
    MAINTENANCE_ONGOING,
    K8sMapping,
    Node,
)
from tpufleet.integrations.k8s_plan import REASON_PREFIX, Placement
from tpufleet.integrations.reservation import REASON_PREFIX as RESERVATION_PREFIX
from tpufleet.integrations.reservation import Drain

MAINTENANCE_OF = " during the maintenance of sub-block "  # ends the reason of a failure reported during maintenance
GKE_MAINTENANCE = " during GKE maintenance "  # a NotReady GKE's own signal on the node says is planned


# ---- health ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Want:
    target: TargetId
    planned: bool
    reason: str

    def record(self) -> dict[str, Any]:
        return {"target": str(self.target), "planned": self.planned, "reason": self.reason}


def wanted(nodes: list[Node], placement: Placement, mapping: K8sMapping) -> tuple[dict[TargetId, Want], set[TargetId]]:
    """The faults and drains the list reports, and every target it reports on (healthy or not). A failure of a
    node that carries the maintenance label (`tpufleet.io/maintenance`, written by `export node-labels`), or of a
    partition every node of which carries it, is that sub-block's maintenance: the drain `during_maintenance` made
    (one node's label is its own drain's, not its cube's)."""
    wants: dict[TargetId, Want] = {}
    scope: set[TargetId] = set()
    by_name = {n.name: n for n in nodes}
    said: dict[str, set[str | None]] = defaultdict(set)  # cube -> the maintenance labels of its nodes (None: none)
    for name, host in placement.hosts.items():
        scope.add(host)
        sub_block = by_name[name].labels.get(mapping.labels.maintenance) or None
        said[host.cube].add(sub_block)
        want = _node_want(by_name[name], host, mapping)
        if want is not None:
            wants[host] = maintenance_drain(want, sub_block)
    for cube, (state, partition) in placement.cube_states.items():
        target = CubeId(cube)
        scope.add(target)
        if state in BAD_PARTITION_STATES:
            failure = Want(target, False, f"{REASON_PREFIX}partition {partition} {state}")
            labels = said.get(cube, set())
            wants[target] = maintenance_drain(failure, next(iter(labels)) if len(labels) == 1 else None)
    return wants, scope


def maintenance_drain(want: Want, sub_block: str | None) -> Want:
    """A failure reported while the provider services the cube (`sub_block` named) as the planned drain it is. A
    NotReady GKE's signal made planned (`gke_maintenance`) is the sub-block's maintenance too: the sub-block named
    is what `export node-labels` writes back (`tpufleet.io/maintenance`), so its reason wins."""
    if sub_block is None or (want.planned and GKE_MAINTENANCE not in want.reason):
        return want
    failure = want.reason.rpartition(GKE_MAINTENANCE)[0] if want.planned else want.reason
    return Want(want.target, True, f"{failure}{MAINTENANCE_OF}{sub_block}")


def during_maintenance(state: FleetState, wants: dict[TargetId, Want], now: str) -> dict[TargetId, Want]:
    """`wants` with the failures reported inside a cube under the reservation's maintenance, its window open at
    `now`, made planned: nodes going NotReady while the provider services their cube are the maintenance, not
    failures that mark the cube's record (`plan-spares`' history). Once the window is over, the same report is a
    failure again, and the next import turns the drain into one."""
    out = dict(wants)
    for name, record in state.reservation.sub_blocks.items():
        if record.maintenance is None or not record.maintenance.under_way(now):
            continue
        for target, want in wants.items():
            if not isinstance(target, OcsId) and target.cube == record.cube:
                out[target] = maintenance_drain(want, name)
    return out


def _node_want(node: Node, host: HostId, mapping: K8sMapping) -> Want | None:
    trouble = node_trouble(node, mapping)
    if trouble is None:
        return None
    planned, what = trouble
    return Want(host, planned, f"{REASON_PREFIX}node {node.name} {what}")


def node_trouble(node: Node, mapping: K8sMapping) -> tuple[bool, str] | None:
    """(planned, what) when the node reports a failure (NotReady: not planned, unless GKE says it services the
    node: `gke_maintenance`) or a drain (a cordon or a drain taint: planned), else None."""
    if node.ready in ("False", "Unknown"):
        why = f" ({node.ready_reason})" if node.ready_reason else ""
        said = gke_maintenance(node, mapping)
        if said is not None:
            return True, f"Ready={node.ready}{why}{GKE_MAINTENANCE}({said})"
        return False, f"Ready={node.ready}{why}"
    if node.unschedulable:
        return True, "cordoned"
    for key, effect in node.taints:
        if key in mapping.drain_taints and effect in DRAIN_EFFECTS:
            return True, f"tainted {key}:{effect}"
    return None


def gke_maintenance(node: Node, mapping: K8sMapping) -> str | None:
    """What on a node says its NotReady is planned work, else None: GKE's label `cloud.google.com/active-node-
    maintenance: ONGOING` (set while GKE services the node's host), or a drain taint other than the cordon's
    (`cloud.google.com/impending-node-termination`, GKE's graceful termination before maintenance;
    `ToBeDeletedByClusterAutoscaler`, a node being removed; the mapping's `drain_taints`). A cordon alone is not:
    `kubectl cordon` and GKE's upgrade set the same, so a cordoned node going NotReady stays a failure."""
    key = mapping.labels.node_maintenance
    if node.labels.get(key) == MAINTENANCE_ONGOING:
        return f"{key}={MAINTENANCE_ONGOING}"
    for key, effect in node.taints:
        if key in mapping.drain_taints and key != CORDON_TAINT and effect in DRAIN_EFFECTS:
            return f"tainted {key}:{effect}"
    return None


def _faults_within_machines(state: FleetState) -> dict[HostId, set[bool]]:
    """Per machine, whether open faults inside it (a chip's, an electrical link's) or on its whole cube (a drain)
    are planned: a node's NotReady or cordon reports those, as `export node-labels` writes them, so they are
    no new fault of the machine. A failed cube is its partition's state, not its nodes'."""
    out: dict[HostId, set[bool]] = defaultdict(set)
    for fault in state.open_faults():
        target = fault.target
        if isinstance(target, (ChipId, IciId)):
            out[HostId(target.cube, machine_of(target.x, target.y, target.z))].add(fault.planned)
        elif isinstance(target, CubeId) and fault.planned:
            for m in range(MACHINES_PER_CUBE):
                out[HostId(target.cube, m)].add(True)
    return out


@dataclass
class HealthDiff:
    open: list[Want] = field(default_factory=list)
    clear: list[Fault] = field(default_factory=list)
    kept: int = 0  # reported faults already open (by an earlier import or by hand)
    handed_back: list[Drain] = field(default_factory=list)  # the reservation's drains a cleared fault held back


def health_diff(state: FleetState, wants: dict[TargetId, Want], scope: set[TargetId], now: str) -> HealthDiff:
    """The faults to open and to clear for what the node list reports.

    One fault is open on a target at a time, so a report the state already holds in another fault is kept, with
    two exceptions that let neither source's word be lost when the other's fault closes: a failure reported on a
    cube the reservation holds drained replaces the drain (the reservation's next import keeps the failure, and
    would clear only its own drain, leaving a broken cube free); and when this import clears a fault on a cube
    whose reservation sub-block still announces maintenance due at `now`, the reservation's drain is opened in its
    place (`handed_back`: its import saw the cube held by this fault and opened none).
    """
    diff = HealthDiff()
    within = _faults_within_machines(state)
    for target in sorted(wants, key=lambda t: natural_key(str(t))):
        want, fault = wants[target], state.open_fault_on(target)
        if fault is None and isinstance(target, HostId) and want.planned in within.get(target, ()):
            diff.kept += 1  # a chip, link or cube fault the node's state already says (`export node-labels`)
        elif fault is None:
            diff.open.append(want)
        elif isinstance(target, HostId) and not want.planned and fault.planned and False in within.get(target, ()):
            # a drained machine's NotReady that a failure inside it already says (`export node-labels` writes
            # it so): the failure holds the cube, and the drain stays until the node reports otherwise
            diff.kept += 1
        elif fault.reason.startswith(REASON_PREFIX) and fault.planned != want.planned:
            diff.clear.append(fault)  # a drain became a failure (or back): close one, open the other
            diff.open.append(want)
        elif fault.planned and not want.planned and fault.reason.startswith(RESERVATION_PREFIX):
            diff.clear.append(fault)  # the failure stands in for the reservation's drain: handed back with it
            diff.open.append(want)
        else:
            diff.kept += 1
    for fault in state.open_faults():
        if fault.reason.startswith(REASON_PREFIX) and fault.target in scope and fault.target not in wants:
            diff.clear.append(fault)
    diff.handed_back = _drains_held_back(state, diff, now)
    return diff


def _drains_held_back(state: FleetState, diff: HealthDiff, now: str) -> list[Drain]:
    """The reservation's drains for the cubes whose k8s fault the diff closes and opens nothing on, where the
    last reservation import announced maintenance now due (announced for later, the cube serves until then)."""
    sub_blocks = state.reservation.by_cube()
    reopened = {w.target for w in diff.open}
    out = []
    for fault in diff.clear:
        if not isinstance(fault.target, CubeId) or not fault.reason.startswith(REASON_PREFIX):
            continue
        if fault.target in reopened:
            continue
        name, record = sub_blocks.get(fault.target.cube, (None, None))
        window = record.maintenance if record is not None else None
        if name is not None and record is not None and window is not None and window.drains and window.due(now):
            out.append(Drain(record.cube, name, window))
    return out
