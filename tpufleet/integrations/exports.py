"""The fleet in other tools' formats (pure): Kubernetes node labels and GKE `Slice` objects (Kueue's Topology and
ResourceFlavors are `kueue`'s, Slurm's topology `slurm`'s, from the same names).

Which machines are nodes: once `import k8s` has named any node (or recorded a node pool), exactly the machines
it named (a machine no imported node holds is not a node of the cluster, and `machines_without_node` counts
them); in a fleet never imported, every machine, named `tpu-CUBE-mMM` (e.g. `tpu-c05-m03`). A cube's partition id is the imported one,
else the cube id; a pod's block is the imported one, else the pod name. So an exported node list imported into
the same state changes nothing, and imported into a fresh state of the same shape gives the same cubes,
machines, faults and drains (see `node_labels`).

The accelerator label, the Kueue flavors and a Slice's `type` come from each pod's generation
(`Generation.gke_accelerator`: tpu-v4-podslice, tpu-v5p-slice, tpu7x); a pod without one is the built-in TPU v4
model and keeps `tpu-v4-podslice`. A Slice takes its pod's generation's accelerator (skipped where the Slice CRD
has no such type); only a pod without a generation takes the type the caller gives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.errors import Refused
from tpufleet.fleetstate import Fault, FleetState, Slice, SliceState
from tpufleet.ids import ChipId, CubeId, HostId, IciId, machine_of, natural_key
from tpufleet.integrations.k8s import (
    BAD_PARTITION_STATES,
    DEFAULT_ACCELERATORS,
    DEFAULT_DRAIN_TAINTS,
    DEGRADED_PARTITION,
    HEALTHY_PARTITION,
    LABEL_VALUE,
    LabelKeys,
)
from tpufleet.integrations.k8s_health import MAINTENANCE_OF
from tpufleet.integrations.k8s_plan import REASON_PREFIX as K8S_REASON_PREFIX
from tpufleet.model import Pod
from tpufleet.text import share_text

Doc = dict[str, Any]
SLICE_API = "accelerator.gke.io/v1beta1"
# The Slice CRD's spec.type enum (xpk, slice/config/crd/bases/accelerator.gke.io_slices.yaml): a Slice of any
# other type is refused by the API server, so none is written.
CRD_SLICE_TYPES = frozenset({"v6e", "tpu7x"})


def accelerator(pod: Pod) -> str:
    """The pod's GKE accelerator label value: its generation's, else the built-in TPU v4 model's."""
    return DEFAULT_ACCELERATORS[0] if pod.generation is None else pod.generation.gke_accelerator


def types_of(state: FleetState) -> str:
    """The Slice types the pods' generations give ("tpu7x", "tpu7x, v6e"), when every pod has a generation: then
    no Slice takes `export slices --type`; "" when a pod takes it (one without a generation)."""
    pods = state.fleet.pods
    if not pods or any(p.generation is None for p in pods):
        return ""
    return ", ".join(sorted({accelerator(p) for p in pods}))


class Names:
    """Node, partition and block names of the fleet's parts (imported, else made up from tpufleet's ids)."""

    def __init__(self, state: FleetState) -> None:
        self.node_of = state.k8s.machine_node()
        # imported: a node named, or a node pool recorded (its nodes are on no machine: no machine is a node)
        self.imported = bool(self.node_of or state.k8s.node_pools)
        self.partition_of = state.partition_names()
        self.block_of = state.block_names()
        # cube -> its physical sub-block (`gce-topology-subblock`): the reservation's, else its nodes' as imported
        positions = ((r.cube, r.position) for r in state.reservation.sub_blocks.values())
        self.subblock_of = {c: p for c, p in positions if p and LABEL_VALUE.fullmatch(p)}
        self.subblock_of |= state.k8s.sub_blocks

    def node(self, host: HostId) -> str:
        return self.node_of.get(host) or f"tpu-{host.cube}-m{host.machine:02d}"

    def machines(self, cube: str) -> list[HostId]:
        """The cube's machines that are nodes: those an import named (a node missing from the cluster stays
        missing, a machine never named is no node), or all 16 in a fleet never imported."""
        every = [HostId(cube, m) for m in range(MACHINES_PER_CUBE)]
        return [h for h in every if h in self.node_of] if self.imported else every

    def partition(self, cube: str) -> str:
        return self.partition_of.get(cube, cube)

    def block(self, pod: str) -> str:
        return self.block_of.get(pod, pod)


def refuse_without_nodes(state: FleetState, what: str) -> None:
    """Refused when no machine of the fleet is a node (a cluster of ordinary node pools names none): an empty
    `what` written over the one in use would take every node out of the scheduler's topology."""
    if machines_without_node(state) == len(state.fleet.cubes) * MACHINES_PER_CUBE:
        raise Refused(
            f"no machine of the fleet is a node of the imported cluster (the nodes of its node pools are on no "
            f"machine: no label says which): no {what} to write; nothing written"
        )


def machines_without_node(state: FleetState) -> int:
    """Machines the exports leave out: in an imported fleet, those no imported node holds."""
    names = Names(state)
    return sum(MACHINES_PER_CUBE - len(names.machines(cube)) for cube in state.fleet.cubes)


# ---- node labels -------------------------------------------------------------------------------------------
def node_labels(
    state: FleetState,
    keys: LabelKeys | None = None,
    own_only: bool = False,
    drain_taints: frozenset[str] = frozenset(DEFAULT_DRAIN_TAINTS),
) -> Doc:
    """A `kubectl get nodes -o json`-shaped List of a Node per machine that is one (`Names.machines`): labels, a cordon for a planned drain
    (the taint the node reported for a drain `import k8s` opened for it, when `drain_taints` has its key),
    and a `Ready` condition (False for a failed machine, chip or electrical link; as the node reported it for a fault
    `import k8s` opened for its NotReady). A failed cube is its partition UNHEALTHY (INCOMPLETE when that is
    what its partition reported); a drained cube cordons its 16 nodes (read back as 16 machine drains). Optical link and
    OCS faults have no node to show them. `own_only`: only the `tpufleet.io/` labels, safe to apply to a live
    cluster (the rest is GKE's to set)."""
    keys, names = keys or LabelKeys(), Names(state)
    health = _node_health(state, drain_taints)
    down, drained, cubes_down = health.down, health.drained, health.cubes_down
    degraded = state.degraded_cubes()  # a DEGRADED sub-block is its partition's DEGRADED too
    items = []
    for pod in state.fleet.pods:
        for cube in pod.cubes:
            for host in names.machines(cube):
                m, name = host.machine, names.node(host)
                own = {keys.pod: pod.name, keys.cube: cube, keys.machine: str(m)}
                if own_only:
                    items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": own}})
                    continue
                labels = {
                    keys.accelerator: accelerator(pod),
                    keys.topology: "4x4x4",
                    keys.block: names.block(pod.name),
                    keys.partition: names.partition(cube),
                    keys.partition_state: _partition_state(cube, cubes_down, degraded),
                    keys.hostname: name,
                    **own,
                }
                if not LABEL_VALUE.fullmatch(name):  # a node name of 64-253 characters is no label value
                    del labels[keys.hostname]
                if cube in names.subblock_of:
                    labels[keys.subblock] = names.subblock_of[cube]
                sub_block = health.maintenance.get(host) or health.maintenance.get(cube)
                if sub_block is not None:
                    labels[keys.maintenance] = sub_block
                drain = health.tainted.get(host) or (_CORDON if host in drained or cube in drained else None)
                items.append(_node(name, labels, drain, down.get(host)))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def _partition_state(cube: str, down: dict[str, str], degraded: frozenset[str]) -> str:
    """A failed cube's partition is as it was reported (UNHEALTHY for a fault opened otherwise); a degraded one's
    (it still serves) DEGRADED, as GKE reports it."""
    return down.get(cube, DEGRADED_PARTITION if cube in degraded else HEALTHY_PARTITION)


# what `import k8s` gives the faults it opens for a partition's state and for a node's drain taint, as read
_PARTITION_DOWN = re.compile(
    re.escape(K8S_REASON_PREFIX) + r"partition \S+ (" + "|".join(sorted(BAD_PARTITION_STATES)) + ")"
)
_TAINTED = re.compile(re.escape(K8S_REASON_PREFIX) + r"node \S+ tainted (\S+):(NoSchedule|NoExecute)")
_CORDON = ("", "")  # a node's drain written as a cordon (else as the (key, effect) of its taint)


@dataclass
class _NodeHealth:
    """From the open faults: machines down (-> the fault why), machines or whole cubes drained, failed cubes
    (-> their partition's state), and machines whose drain is the taint a node reported (-> (key, effect))."""

    down: dict[HostId, Fault] = field(default_factory=dict)
    drained: set[HostId | str] = field(default_factory=set)
    cubes_down: dict[str, str] = field(default_factory=dict)
    tainted: dict[HostId, tuple[str, str]] = field(default_factory=dict)
    # machines and cubes whose drain `import k8s` opened for a failure reported during a sub-block's maintenance
    # (-> the sub-block): written as that failure and the maintenance label, so an import reads that drain again
    maintenance: dict[HostId | str, str] = field(default_factory=dict)


def _during_maintenance(fault: Fault) -> tuple[str, str] | None:
    """(the failure's reason, the sub-block) of a drain `import k8s` opened for a failure reported during a
    sub-block's maintenance, else None."""
    if not (fault.planned and fault.reason.startswith(K8S_REASON_PREFIX) and MAINTENANCE_OF in fault.reason):
        return None
    reason, _, sub_block = fault.reason.rpartition(MAINTENANCE_OF)
    return (reason, sub_block) if LABEL_VALUE.fullmatch(sub_block) and sub_block else None


def _node_health(state: FleetState, drain_taints: frozenset[str]) -> _NodeHealth:
    """The node health the open faults give. A drain `import k8s` opened for a drain taint is written as that taint
    when `drain_taints` has its key (so an import reads it as that drain again), else as a cordon."""
    out = _NodeHealth()
    down, drained, cubes_down = out.down, out.drained, out.cubes_down
    for fault in state.open_faults():
        target = fault.target
        maintenance = _during_maintenance(fault)
        if maintenance is not None and isinstance(target, (CubeId, HostId)):
            reason, sub_block = maintenance  # the failure as reported, marked as the maintenance's
            fault = replace(fault, planned=False, reason=reason)
            out.maintenance[target.cube if isinstance(target, CubeId) else target] = sub_block
        if isinstance(target, CubeId):
            if fault.planned:
                drained.add(target.cube)
            else:
                reported = _PARTITION_DOWN.fullmatch(fault.reason)
                cubes_down[target.cube] = reported.group(1) if reported else "UNHEALTHY"
        elif isinstance(target, (HostId, ChipId, IciId)):
            host = (
                target if isinstance(target, HostId) else HostId(target.cube, machine_of(target.x, target.y, target.z))
            )
            if fault.planned:
                drained.add(host)
                taint = _TAINTED.fullmatch(fault.reason) if isinstance(target, HostId) else None
                if taint is not None and taint.group(1) in drain_taints:
                    out.tainted[host] = (taint.group(1), taint.group(2))
            else:
                down.setdefault(host, fault)
    return out


# the reason `import k8s` gives the fault of a node that is not Ready: the condition's status and reason, as read
_NOT_READY = re.compile(re.escape(K8S_REASON_PREFIX) + r"node \S+ Ready=(False|Unknown)(?: \((.*)\))?")


def _ready(down: Fault | None) -> Doc:
    """The node's `Ready` condition: True, else as the node reported it when its fault is the one `import k8s`
    opened for it (so the reason is the kubelet's again once imported back), else False for a tpufleet fault."""
    if down is None:
        return {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": ""}
    reported = _NOT_READY.fullmatch(down.reason) if isinstance(down.target, HostId) else None
    status, reason = (reported.group(1), reported.group(2) or "") if reported else ("False", "TpufleetFault")
    message = f"{down.id} {down.target}" + (f": {down.reason}" if down.reason.strip() else "")
    return {"type": "Ready", "status": status, "reason": reason, "message": message}


def _node(name: str, labels: dict[str, str], drain: tuple[str, str] | None, down: Fault | None) -> Doc:
    """A Node; `drain`: None, `_CORDON`, or the (key, effect) of the drain taint the node reported (no cordon then:
    a cordoned node reads back as cordoned, whatever its taints)."""
    ready = _ready(down)
    spec: Doc = {}
    if drain == _CORDON:
        spec = {"unschedulable": True}
    elif drain is not None:
        spec = {"taints": [{"key": drain[0], "effect": drain[1]}]}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"conditions": [ready]},
    }


# ---- GKE Slice objects -------------------------------------------------------------------------------------
_SLICE_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
# The Slice reference: at most 54 characters, as the controller appends a hyphen and an 8-character cluster hash to
# make Compute Engine names, of at most 63. A longer slice name takes a hashed suffix, and `import slices` refuses a
# Slice named longer: it could not be exported under its name (`kubectl apply` would add a second Slice).
MAX_SLICE_NAME = 54


def slices(state: FleetState, slice_type: str = DEFAULT_ACCELERATORS[0]) -> tuple[list[Doc], list[Doc]]:
    """One `Slice` per whole-cube slice (partition ids = its cubes' partitions, in slice order) and the
    sub-cube slices skipped (a Slice is made of whole 4x4x4 partitions). Its type: the pod's accelerator where its
    pod has a generation (a v5p pod's slices are skipped: the CRD has no type for them, and no other type is
    theirs), else `slice_type`."""
    names, out, skipped, used = Names(state), [], [], set[str]()
    pod_types = {p.name: accelerator(p) for p in state.fleet.pods if p.generation is not None}
    for name in sorted(state.slices, key=natural_key):  # as every list of slices: s9 before s10
        sl = state.slices[name]
        kind = pod_types.get(sl.pod, slice_type)
        if sl.machines:
            skipped.append({"slice": name, "reason": f"{sl.shape.text} is smaller than a 4x4x4 partition"})
            continue
        if kind not in CRD_SLICE_TYPES:  # the API server would refuse the object: say so, write none
            accepted = " and ".join(sorted(CRD_SLICE_TYPES))
            skipped.append({"slice": name, "reason": f"the Slice CRD's spec.type accepts {accepted}, not {kind}"})
            continue
        k8s_name = _k8s_name(name, used)
        out.append(
            {
                "apiVersion": SLICE_API,
                "kind": "Slice",
                "metadata": {"name": k8s_name, "annotations": {"tpufleet.io/slice": name}},
                "spec": {
                    "type": kind,
                    "topology": sl.shape.text,
                    "partitionIds": [names.partition(c) for c in sl.cubes],
                },
                "status": {"conditions": [_condition(sl)]},
            }
        )
    return out, skipped


def _k8s_name(name: str, used: set[str]) -> str:
    """A valid Slice name for a tpufleet slice name that depends on that name alone, so a Slice keeps its name
    whatever is allocated beside it: a valid name is itself; another is made valid (lower case, '-' for '.' and
    '_', a letter first, short enough) and takes a suffix hashed from the original (`a.b` -> `a-b-` and 6 hex
    digits), so it never takes a name a slice might be called. A clash left (a hash shared) gets a number."""
    import hashlib

    if _SLICE_NAME.fullmatch(name) and len(name) <= MAX_SLICE_NAME and name not in used:
        used.add(name)
        return name
    base = re.sub(r"[^a-z0-9-]", "-", name.lower()).strip("-") or "slice"
    if not base[0].isalpha():
        base = "s-" + base
    tag = "-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:6]
    base = base[: MAX_SLICE_NAME - len(tag)].rstrip("-") + tag
    candidate, n = base, 2
    while candidate in used or not _SLICE_NAME.fullmatch(candidate):
        suffix = f"-{n}"
        candidate, n = base[: MAX_SLICE_NAME - len(suffix)].rstrip("-") + suffix, n + 1
    used.add(candidate)
    return candidate


def _condition(sl: Slice) -> Doc:
    """The `Ready` condition a Slice would show for the tpufleet slice's state, its reason one of GKE's Slice states
    (ACTIVATING, ACTIVE, ACTIVE_DEGRADED, FAILED). The CRD requires a lastTransitionTime: tpufleet keeps no time
    of a slice's last state change, so the time it was allocated stands for it (the API's conventions allow the
    time the field changed when the transition's is not known)."""
    status, reason, message = {
        SliceState.CONNECTED: ("True", "ACTIVE", "wired as its shape"),
        SliceState.DEGRADED: ("True", "ACTIVE_DEGRADED", "running on tables that route around faults"),
        SliceState.ALLOCATED: ("False", "ACTIVATING", "cubes reserved, cross-connects not all applied"),
        SliceState.EVICTED: ("False", "FAILED", f"stopped by fault {sl.evicted_by}"),
    }[sl.state]
    if sl.state is SliceState.DEGRADED and sl.reroute is not None:
        message += f" (all-to-all throughput retained {share_text(sl.reroute.retained)})"
    since = sl.created or "1970-01-01T00:00:00Z"
    return {"type": "Ready", "status": status, "reason": reason, "message": message, "lastTransitionTime": since}
