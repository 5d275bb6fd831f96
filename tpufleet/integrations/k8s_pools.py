"""Ordinary GKE TPU node pools as slices, and DEGRADED partitions as degraded cubes: the part of `import k8s`
that is no placement of a node on a machine (pure).

A TPU node pool is one slice: GKE creates a multi-host pool of `--tpu-topology` as one unit and repairs it as one
("About TPUs in GKE": atomicity), every node labelled with the pool (`cloud.google.com/gke-nodepool`), the
accelerator (`cloud.google.com/gke-tpu-accelerator`) and the slice's topology (`cloud.google.com/gke-tpu-topology`).
So the nodes of a pool that the placement of `k8s_plan` could not put on machines (no 4x4x4 partition id, no
`tpufleet.io/cube`, no mapping entry) are read as one slice of the pool's topology, on a pod of the accelerator's
generation (a pod without one is the built-in TPU v4 model, whose nodes are `tpu-v4-podslice`):

- the pod is the one an earlier import gave the pool, else the one its nodes' `gce-topology-block` names (the
  mapping file, an earlier `import k8s` or `import reservation`), else the one their `tpufleet.io/pod` names,
  else the first pod of the generation with room for it after the other unplaced slices, else the first pod of
  the generation; a node whose `tpufleet.io/pod` says otherwise is not placed (listed with why), as off a pool;
- no label says which cubes it holds, so it is held *unplaced*: kept in the state (`k8s.node_pools`) and counted
  against its pod's free cubes by `status`, never given cubes by guess;
- a pool whose nodes disagree on accelerator or topology (its sides in another order are the same topology), whose
  topology is not a slice of its generation, or whose accelerator is no generation's, is bad input (exit 2, naming
  the node and the label); a pool with more nodes than its topology has machines is not a slice (its nodes are
  listed with why), except a single-host pool (a one-machine topology such as 2x2x1), which GKE scales node by
  node: each of its nodes is a slice of its own, the pool holding a machine per node;
- a node of such a pool without the topology label has no slice shape: it is listed as not placed, with why, and
  its pool is the slice of its other nodes (the list is not refused for it).

Nodes of 4x4x4 partitions (dynamic slicing's sub-blocks: "a node pool maps directly to a sub-block") are cubes of
the pool of free capacity, as before, never a slice. A pool missing from the list says nothing (as a missing node
says nothing): it stays as it was. A pool's node that is NotReady, cordoned or drain-tainted is on no machine, so
it opens no fault or drain: it is reported with its pool (`PoolPlan.troubled`), never put on a machine by guess.

A partition DEGRADED is a degraded cube that still serves: its own state (`k8s.degraded`), not a fault; the
import sets it on cubes whose partition the list reports DEGRADED and clears it on cubes it reports otherwise. A
cube a DEGRADED reservation sub-block already holds degraded is no news: the import records nothing for it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.errors import BadInput, BadStateFile
from tpufleet.fleetstate import FleetState
from tpufleet.gkerecords import NodePoolSlice
from tpufleet.ids import natural_key
from tpufleet.integrations.k8s import DEFAULT_ACCELERATORS, DEGRADED_PARTITION, K8sMapping, LabelKeys, Node
from tpufleet.integrations.k8s_health import node_trouble
from tpufleet.integrations.k8s_plan import Placement
from tpufleet.model import Pod
from tpufleet.shapes import Shape, parse_shape, require_allocatable

BUILT_IN_ACCELERATOR = DEFAULT_ACCELERATORS[0]  # the nodes of a pod of the built-in TPU v4 model


@dataclass
class PoolPlan:
    slices: dict[str, NodePoolSlice] = field(default_factory=dict)  # every pool of the list that is a slice
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    # known pools the list does not name but lists nodes of in other pools (a pool deleted and made again under
    # another name) or on machines: gone, since GKE makes and repairs a pool as one unit and a node is in one pool
    removed: list[str] = field(default_factory=list)
    degraded: frozenset[str] = frozenset()  # the cubes degraded after the import
    degraded_new: list[str] = field(default_factory=list)
    degraded_cleared: list[str] = field(default_factory=list)
    # pool -> its nodes that report a failure or a drain: on no machine, so no fault or drain is opened; reported
    troubled: dict[str, list[tuple[str, bool, str]]] = field(default_factory=dict)  # (node, planned, what)

    @property
    def changes(self) -> dict[str, NodePoolSlice]:
        return {name: self.slices[name] for name in (*self.new, *self.changed)}

    @property
    def has_changes(self) -> bool:
        return bool(self.new or self.changed or self.removed or self.degraded_new or self.degraded_cleared)


def plan_pools(
    state: FleetState,
    nodes: list[Node],
    mapping: K8sMapping,
    placement: Placement,
    source: str,
    known_accelerators: Collection[str] = DEFAULT_ACCELERATORS,
) -> PoolPlan:
    """Node pools as slices and partition health as degraded cubes. Takes the pools' nodes out of
    `placement.unplaced` (they are the pool's slice now) and puts there those of pools that are no slice.
    BadStateFile (exit 2) for a pool the labels contradict; `known_accelerators`: every generation's."""
    out = PoolPlan()
    keys = mapping.labels
    members, shapeless = _members(nodes, mapping, {name for name, _ in placement.unplaced})
    pooled = {n.name for group in members.values() for n in group}
    on_machines = _cubes_of_placed_members(state, nodes, keys.node_pool, placement)
    placement.unplaced = [(n, shapeless.get(n, why)) for n, why in placement.unplaced if n not in pooled]
    rooms = _rooms(state)
    for pool in sorted(members):
        group = sorted(members[pool], key=lambda n: n.name)
        shape, pods = _pool_shape(state, pool, group, mapping, source, known_accelerators)
        why = (
            _why_no_slice(pool, group, shape, pods, keys.accelerator)
            if pool not in state.slices
            else _own(state, pool, shape)
        )
        if why is not None:
            placement.unplaced += [(n.name, why) for n in group]
            continue
        assert shape is not None
        pod = _pod_for(state, pool, group, pods, shape, mapping, placement, rooms)
        group = _agreeing_on_pod(state, pool, group, pod, keys.pod, placement)
        if not group:
            continue
        accelerator = group[0].labels[keys.accelerator]
        placed = tuple(sorted(on_machines.get(pool, ()), key=natural_key))
        written = tuple(sorted({n.labels[keys.topology] for n in group}))  # as a Kueue flavor must select it
        written = () if written == (shape.text,) else written
        out.slices[pool] = NodePoolSlice(shape, accelerator, pod, tuple(n.name for n in group), placed, written)
        troubles = ((n.name, node_trouble(n, mapping)) for n in group)
        out.troubled[pool] = [(name, *t) for name, t in troubles if t is not None]
        known = state.k8s.node_pools.get(pool)
        if known is None:
            out.new.append(pool)
        elif known != out.slices[pool]:
            out.changed.append(pool)
    placement.unplaced.sort()
    _moved_away(state, out, placement)
    _degraded(state, placement, out)
    return out


def _members(
    nodes: list[Node], mapping: K8sMapping, unplaced: set[str]
) -> tuple[dict[str, list[Node]], dict[str, str]]:
    """pool -> its nodes the placement left unplaced that are a slice's (`_poolable`), and node -> why not placed for
    those that would be but carry no topology label: a pool is a slice of its topology, so without it the node is
    listed as not placed, not guessed, and the rest of the list is imported as usual."""
    keys = mapping.labels
    members: dict[str, list[Node]] = defaultdict(list)
    shapeless: dict[str, str] = {}
    for node in nodes:
        if node.name not in unplaced or not _poolable(node, mapping):
            continue
        pool = node.labels.get(keys.node_pool)
        if keys.topology not in node.labels:
            of = f" (node pool {pool})" if pool else ""
            shapeless[node.name] = f"no {keys.topology} label, so no slice shape{of}"
        elif pool:
            members[pool].append(node)
    return members, shapeless


def _moved_away(state: FleetState, out: PoolPlan, placement: Placement) -> None:
    """Known pools the list does not name as a slice but lists nodes of in other pools, or places on machines (their
    nodes now carry 4x4x4 partition ids: cubes of the pool of free capacity, counted there), are gone
    (`PoolPlan.removed`), as is one a slice of its name was allocated for since; a pool missing with its nodes
    says nothing, and stays."""
    listed = {node for sl in out.slices.values() for node in sl.nodes} | set(placement.hosts)
    for name, known in sorted(state.k8s.node_pools.items()):
        if name not in out.slices and (name in state.slices or any(n in listed for n in known.nodes)):
            out.removed.append(name)


def _cubes_of_placed_members(
    state: FleetState, nodes: list[Node], pool_key: str, placement: Placement
) -> dict[str, set[str]]:
    """pool -> the cubes of its nodes the placement put on machines (they carry 4x4x4 partition ids, a cube or a
    mapping entry): a pool partly relabelled holds those cubes as named cubes, not as its unplaced slice. A cube
    recorded so stays when the list names none of the nodes on it (a missing node says nothing)."""
    out: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        pool, host = node.labels.get(pool_key), placement.hosts.get(node.name)
        if pool and host is not None:
            out[pool].add(host.cube)
    listed = {n.name for n in nodes}
    cubes_listed = {host.cube for name, host in state.k8s.nodes.items() if name in listed}
    for name, known in state.k8s.node_pools.items():
        out[name] |= {c for c in known.placed_cubes if c not in cubes_listed}
    return out


def _agreeing_on_pod(
    state: FleetState, pool: str, group: list[Node], pod: str, key: str, placement: Placement
) -> list[Node]:
    """The pool's nodes whose `tpufleet.io/pod` label, if any, is the pool's pod; the others are listed as not
    placed with why (as a node off any pool whose pod label contradicts its cube), never put in the pool."""
    kept = []
    for node in group:
        label = node.labels.get(key)
        if label is not None and label not in state.fleet.pod_by_name:
            placement.unplaced.append((node.name, f"{key} {label} is not a pod of the fleet"))
        elif label is not None and label != pod:
            placement.unplaced.append((node.name, f"{key} is {label}, but node pool {pool} is in {pod}"))
        else:
            kept.append(node)
    return kept


def _poolable(node: Node, mapping: K8sMapping) -> bool:
    """A TPU node the labels place on no cube: no partition id, no cube of tpufleet's, no mapping entry."""
    keys, labels = mapping.labels, node.labels
    return (
        labels.get(keys.accelerator) in mapping.accelerators
        and keys.partition not in labels
        and keys.cube not in labels
        and node.name not in mapping.nodes
    )


def pods_of(state: FleetState, accelerator: str) -> list[Pod]:
    """The pods whose nodes carry this accelerator (a pod of the built-in v4 model: tpu-v4-podslice)."""
    return [
        p
        for p in state.fleet.pods
        if (p.generation.gke_accelerator if p.generation is not None else BUILT_IN_ACCELERATOR) == accelerator
    ]


def _label_path(node: Node, key: str) -> str:
    return f"{node.item}.metadata.labels.{key}"


def _same_label(key: str, value: str, want: str, keys: LabelKeys) -> bool:
    """Whether a pool's node says what its first node says: a topology is a slice's sides in any order (as a
    shape is everywhere: 8x4x4 is 4x4x8), other labels as written."""
    if key != keys.topology:
        return value == want
    return sorted(map(int, value.split("x"))) == sorted(map(int, want.split("x")))


def _pool_shape(
    state: FleetState,
    pool: str,
    group: list[Node],
    mapping: K8sMapping,
    source: str,
    known_accelerators: Collection[str],
) -> tuple[Shape | None, list[Pod]]:
    """The pool's slice shape on its generation, and the pods of that generation (BadStateFile if malformed)."""
    keys, first = mapping.labels, group[0]
    accelerator, topology = first.labels[keys.accelerator], first.labels[keys.topology]
    for node in group[1:]:
        for key, want in ((keys.accelerator, accelerator), (keys.topology, topology)):
            if not _same_label(key, node.labels[key], want, keys):
                problem = f"node pool {pool} is {want} on node {first.name}: a node pool has one {key.split('/')[-1]}"
                raise BadStateFile(source, _label_path(node, key), node.labels[key], problem)
    if accelerator not in known_accelerators:
        problem = f"no TPU generation has this accelerator (known: {', '.join(sorted(known_accelerators))})"
        raise BadStateFile(source, _label_path(first, keys.accelerator), accelerator, problem)
    pods = pods_of(state, accelerator)
    if not pods:
        return None, pods
    try:
        shape = require_allocatable(parse_shape(topology, generation=pods[0].generation))
    except BadInput as exc:
        raise BadStateFile(source, _label_path(first, keys.topology), topology, f"not a slice: {exc}") from None
    return shape, pods


# a pool of a slice's name is that slice (made for it after `allocate`), not another slice holding more cubes
_OWN = (
    "node pool %s is tpufleet's slice of its name: its nodes name none of its machines (`tpufleet export node-labels`)"
)


def _own(state: FleetState, pool: str, shape: Shape | None) -> str:
    """Why the nodes of a pool of a slice's name are not placed: they are the slice's, or (another topology) the
    name is the slice's and the pool another slice, which only a rename or a release settles."""
    mine = state.slices[pool].shape
    if shape is None or sorted(shape.dims) == sorted(mine.dims):
        return _OWN % pool
    return (
        f"node pool {pool} is {shape.text}, but tpufleet's slice of its name is {mine.text}: one of the two is "
        f"misnamed (release the slice, or rename the pool)"
    )


def _why_no_slice(pool: str, group: list[Node], shape: Shape | None, pods: list[Pod], key: str) -> str | None:
    if shape is None:
        return f"node pool {pool}: no pod of the fleet has {key.split('/')[-1]} {group[0].labels[key]}"
    if len(group) > shape.machines > 1:  # a single-host pool (2x2x1) is a slice per node: GKE scales it by node
        return f"node pool {pool} has {len(group)} nodes, but a {shape.text} slice has {shape.machines} machine(s)"
    return None


def _rooms(state: FleetState) -> dict[str, int]:
    """pod -> machines free for an unplaced slice: free cubes' machines less those held by unplaced slices."""
    health, used = state.health(), {c for sl in state.slices.values() for c in sl.cubes}
    room = {
        p.name: MACHINES_PER_CUBE * sum(1 for c in p.cubes if health.cube_ok(c) and c not in used)
        for p in state.fleet.pods
    }
    for pool in state.k8s.node_pools.values():
        room[pool.pod] = room.get(pool.pod, 0) - pool.machines
    return room


def _pod_for(
    state: FleetState,
    pool: str,
    group: list[Node],
    pods: list[Pod],
    shape: Shape,
    mapping: K8sMapping,
    placement: Placement,
    rooms: dict[str, int],
) -> str:
    names = [p.name for p in pods]
    known = state.k8s.node_pools.get(pool)
    if known is not None and known.pod in names:
        return known.pod
    block = group[0].labels.get(mapping.labels.block)
    if block is not None:
        for table in (mapping.pods, placement.blocks, state.k8s.blocks, state.reservation.blocks):
            if table.get(block) in names:
                return table[block]
    labelled = {n.labels[mapping.labels.pod] for n in group if mapping.labels.pod in n.labels}
    # the pod the nodes' own `tpufleet.io/pod` names, when they agree on one of the generation's pods
    pod = labelled.pop() if len(labelled) == 1 and labelled <= set(names) else None
    needs = len(group) if shape.machines == 1 else shape.machines  # a single-host pool: one machine a node
    pod = pod or next((p for p in names if rooms.get(p, 0) >= needs), names[0])
    rooms[pod] = rooms.get(pod, 0) - needs
    return pod


def _degraded(state: FleetState, placement: Placement, out: PoolPlan) -> None:
    """Cubes whose partition the list reports: DEGRADED ones degraded, the others not; the rest as they were. A
    cube the reservation already holds degraded is no news: one fact, whichever source said it first (so
    `export node-labels`, which writes it DEGRADED, imports back as no change); each source clears its own word."""
    reported, held = placement.cube_states, state.reservation_degraded()
    was = state.k8s.degraded
    said = {c for c, (s, _) in reported.items() if s == DEGRADED_PARTITION and (c in was or c not in held)}
    now = {c for c in was if c not in reported} | said
    out.degraded = frozenset(now)
    out.degraded_new = sorted(now - was, key=natural_key)
    out.degraded_cleared = sorted(was - now, key=natural_key)


def unplaced_cubes(pools: Iterable[NodePoolSlice]) -> dict[str, int]:
    """pod -> cubes its unplaced slices hold: whole-cube slices their cubes, sub-cube ones their machines in cubes
    (rounded up: 2x2x1 and 2x2x2 slices on one pod take one cube of room)."""
    cubes: dict[str, int] = defaultdict(int)
    machines: dict[str, int] = defaultdict(int)
    for pool in pools:
        if pool.shape.is_subcube:
            machines[pool.pod] += pool.machines
        else:
            cubes[pool.pod] += pool.cubes
    for pod, m in machines.items():
        cubes[pod] += -(-m // MACHINES_PER_CUBE)
    return dict(cubes)
