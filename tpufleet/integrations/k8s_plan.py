"""From a Kubernetes node list to tpufleet's view: which machine each node is, and what is failed or drained (pure).

Placement, for each TPU node (one whose accelerator is in the mapping's list), in this order:

1. the mapping file's `nodes` entry, else tpufleet's own labels (`tpufleet.io/cube` and `tpufleet.io/machine`,
   written by `export node-labels`; their `tpufleet.io/pod` must be the pod of the cube the node goes to, or the
   node is not placed);
2. else its 4x4x4 partition: the cube the mapping file's `cubes`, or an earlier import, gave that partition id
   (a partition id that is a cube id no partition is known by is the stand-in `export node-labels` writes: that
   cube, no name learnt);
   a new partition takes the cube of the reservation sub-block whose `physicalTopology.subBlock` is its nodes'
   `gce-topology-subblock` (`import reservation` keeps it), else the first cube of its pod (by position) that no
   partition or sub-block has yet. Its pod is the one
   the mapping's `pods` or an earlier import gave its `gce-topology-block`; a new block takes the first pod no
   block has yet (new partitions and blocks are met in the order of node names);
3. its machine: the one an earlier import gave that node name, else the lowest machine of the cube that no node
   of this list holds, in the order of `gce-topology-host`, then node name (numbers in it as numbers: node-2
   before node-10).

Names are learnt once and kept in the state, so a second import of the same list places every node where the
first did. A node that cannot be placed (not a TPU node, an accelerator not in the list, no partition label, no
pod or cube left, a label that contradicts a name already learnt, a new partition whose nodes disagree on its cube)
is listed with the reason, never guessed.

What the placed nodes say is failed or drained is `k8s_health`'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.errors import BadStateFile
from tpufleet.fleetstate import FleetState
from tpufleet.ids import HostId, natural_key
from tpufleet.integrations.k8s import K8sMapping, Node
from tpufleet.integrations.k8s_subblocks import no_sub_block, sub_block_cube
from tpufleet.model import Fleet

REASON_PREFIX = "k8s: "  # marks the faults an import opened: the only ones a later import may clear
CLOSING_IMPORT = "tpufleet import k8s NODES.json --apply"  # `kubectl get nodes -o json`, once the node is well
_WORST_FIRST = ("UNHEALTHY", "INCOMPLETE", "DEGRADED", "UNSET", "HEALTHY")


def check_mapping_fits(fleet: Fleet, mapping: K8sMapping) -> None:
    """BadStateFile (exit 2) naming the mapping file's first entry that pins a pod, cube or machine the fleet
    does not have: refused when read, so no plan proposes a name the state would refuse to keep."""
    pinned: list[tuple[str, str, str, bool]] = [
        *((f"pods.{block}", pod, "pod", pod in fleet.pod_by_name) for block, pod in mapping.pods.items()),
        *((f"cubes.{part}", cube, "cube", cube in fleet.cube_pod) for part, cube in mapping.cubes.items()),
        *((f"nodes.{node}", str(host), "cube", host.cube in fleet.cube_pod) for node, host in mapping.nodes.items()),
    ]
    for entry, value, kind, known in pinned:
        if not known:
            have = ", ".join(_first_and_last(fleet.pod_by_name if kind == "pod" else fleet.cubes))
            raise BadStateFile(mapping.source, entry, value, f"no such {kind} in the fleet (it has {have})")


def _first_and_last(names: Iterable[str]) -> list[str]:
    ordered = list(names)
    return ordered if len(ordered) <= 2 else [f"{ordered[0]} to {ordered[-1]}"]


@dataclass
class Placement:
    hosts: dict[str, HostId] = field(default_factory=dict)  # every placed node -> its machine
    blocks: dict[str, str] = field(default_factory=dict)  # names learnt now: block -> pod
    partitions: dict[str, str] = field(default_factory=dict)  # partition -> cube
    sub_blocks: dict[str, str] = field(default_factory=dict)  # a new partition's cube -> its gce-topology-subblock
    nodes: dict[str, HostId] = field(default_factory=dict)  # node -> machine (new or moved)
    forget: list[str] = field(default_factory=list)  # node names whose machine a node of this list took over
    unplaced: list[tuple[str, str]] = field(default_factory=list)
    cube_states: dict[str, tuple[str, str]] = field(default_factory=dict)  # cube -> (worst state, partition id)


def _claim(names: dict[str, str], taken: set[str], name: str, value: str, known: str | None) -> None:
    """Name `value` (a cube or pod) `name` unless the name is known already or the value is taken."""
    if known is None and value not in taken:
        names[name] = value
        taken.add(value)


class _Namer:
    """Looks names up in the mapping file, then this import, then the state; gives free parts to new names."""

    def __init__(self, state: FleetState, mapping: K8sMapping, out: Placement) -> None:
        self.state, self.mapping, self.out = state, mapping, out
        self.fleet = state.fleet
        # (`import reservation` names physical blocks too: the same block is the same pod whichever import came first)
        self.taken_pods = (
            set(state.k8s.blocks.values()) | set(mapping.pods.values()) | set(state.reservation.blocks.values())
        )
        self.taken_cubes = set(state.k8s.partitions.values()) | set(mapping.cubes.values())
        self.taken_cubes |= {r.cube for r in state.reservation.sub_blocks.values()}  # (a partition id is a sub-block)

    def block_disagrees(self, block: str | None, partition: str, cube: str) -> str | None:
        """Why a node's block label contradicts what is known of its partition's cube (its pod is another
        block's, or has another block), else None: such a node is not placed on a guess."""
        if block is None:
            return None
        pod = self.fleet.cube_pod[cube]
        named = self.out.blocks.get(block) or self.mapping.pods.get(block) or self.state.k8s.blocks.get(block)
        named = named or self.state.reservation.blocks.get(block)
        if named is not None and named != pod:
            return f"block {block} is {named}, but partition {partition} is cube {cube} of {pod}"
        own = {p: b for b, p in self.out.blocks.items()}.get(pod) or self.state.block_names().get(pod)
        if named is None and own is not None and own != block:
            return f"partition {partition} is cube {cube} of {pod}, whose block is {own}, not {block}"
        return None

    def pod_of_block(self, block: str, accelerator: str) -> str | None:
        """The block's pod: known, or the first pod no block has whose generation takes the accelerator."""
        known = self.known_pod(block)
        if known is not None:
            return known if known in self.fleet.pod_by_name else None
        pod = self.next_pod(accelerator)
        if pod is not None:
            self.out.blocks[block] = pod
            self.taken_pods.add(pod)
        return pod

    def next_pod(self, accelerator: str) -> str | None:
        """The pod a new block would take: the first no block has whose generation takes the accelerator."""
        fits = (p for p in self.fleet.pods if p.generation is None or p.generation.gke_accelerator == accelerator)
        return next((p.name for p in fits if p.name not in self.taken_pods), None)

    def known_cube(self, partition: str) -> str | None:
        pinned = self.mapping.cubes.get(partition)
        if pinned is not None and self.state.k8s.partitions.get(partition) != pinned:
            self.out.partitions[partition] = pinned  # kept, so later imports agree without the mapping file
        known = self.out.partitions.get(partition) or self.state.k8s.partitions.get(partition)
        reserved = self.state.reservation.sub_blocks.get(partition)
        return pinned or known or (reserved.cube if reserved is not None else None)

    def known_pod(self, block: str) -> str | None:
        pinned = self.mapping.pods.get(block)
        if pinned is not None and self.state.k8s.blocks.get(block) != pinned:
            self.out.blocks[block] = pinned
        known = self.out.blocks.get(block) or self.state.k8s.blocks.get(block)
        return pinned or known or self.state.reservation.blocks.get(block)

    def new_cube(self, partition: str, pod: str, subblock: str | None = None) -> str | None:
        """The cube of the reservation sub-block at the partition's physical sub-block (its nodes'
        `gce-topology-subblock` is the sub-block's `physicalTopology.subBlock`), if no partition names it yet;
        else the pod's first cube neither import holds."""
        named = {*self.state.k8s.partitions.values(), *self.mapping.cubes.values(), *self.out.partitions.values()}
        cube = sub_block_cube(self.state, named, subblock, pod)
        if cube is not None:  # a sub-block's cube: held by the reservation, named by this partition now
            self.out.partitions[partition] = cube
            self.taken_cubes.add(cube)
            return cube
        cube = next((c for c in self.fleet.pod_by_name[pod].cubes if c not in self.taken_cubes), None)
        if cube is not None:
            _claim(self.out.partitions, self.taken_cubes, partition, cube, None)
        return cube

    def learn(self, partition: str | None, block: str | None, cube: str) -> str | None:
        """Names a node's explicit cube confirms; the reason when they contradict what is known. A partition that
        is the cube's own id, or a block that is the pod's own name, is what `export node-labels` writes for a part
        no import named: it is no name to learn (learnt, it would hold the cube or pod against the cluster's real
        partition or block), and the cube or pod stays taken for this import's new names only."""
        pod = self.fleet.cube_pod[cube]
        if partition is not None:
            known = self.known_cube(partition)
            if known is not None and known != cube:
                return f"partition {partition} is cube {known}, but the node's labels say {cube}"
            if partition == cube and known is None:
                self.taken_cubes.add(cube)
            else:
                _claim(self.out.partitions, self.taken_cubes, partition, cube, known)
        if block is not None:
            known_pod = self.known_pod(block)
            if known_pod is not None and known_pod != pod:
                return f"block {block} is {known_pod}, but the node's labels put it in {pod}"
            if block == pod and known_pod is None:
                self.taken_pods.add(pod)
            else:
                _claim(self.out.blocks, self.taken_pods, block, pod, known_pod)
        return None


def place(state: FleetState, nodes: list[Node], mapping: K8sMapping) -> Placement:
    out = Placement()
    namer, keys = _Namer(state, mapping, out), mapping.labels
    pending: dict[str, list[Node]] = defaultdict(list)  # cube -> nodes still without a machine
    explicit: list[tuple[Node, HostId]] = []
    disputed = _disputed_partitions(state, nodes, mapping)
    for node in sorted(nodes, key=lambda n: natural_key(n.name)):
        accelerator = node.labels.get(keys.accelerator)
        if accelerator is None:
            out.unplaced.append((node.name, f"not a TPU node (no {keys.accelerator} label)"))
        elif accelerator not in mapping.accelerators:
            out.unplaced.append((node.name, mapping.not_listed(accelerator)))
        elif node.labels.get(keys.partition) in disputed:
            out.unplaced.append((node.name, disputed[node.labels[keys.partition]]))
        else:
            cube, machine, why = _resolve(node, namer, mapping, accelerator)
            why = why or _generation_mismatch(state, cube, accelerator)
            if why is not None or cube is None:
                out.unplaced.append((node.name, why or "no cube"))
            elif machine is not None:
                explicit.append((node, HostId(cube, machine)))
            else:
                pending[cube].append(node)
            if cube is not None and why is None:
                _note_state(out, cube, node, mapping)
                _note_sub_block(state, out, cube, node.labels.get(keys.subblock))
    _claim_machines(state, out, explicit, pending, mapping)
    return out


def _note_sub_block(state: FleetState, out: Placement, cube: str, sub_block: str | None) -> None:
    """The physical sub-block (`gce-topology-subblock`) of a partition this import names or an earlier one learnt
    (before positions were kept), kept for `import reservation`: a sub-block at that position (`physicalTopology.
    subBlock`) of the cube's pod is this cube (two blocks may hold sub-blocks at the same position: it names a
    sub-block within its block). Not when the reservation's sub-block on the cube already has that position."""
    if sub_block is None or cube in state.k8s.sub_blocks or cube in out.sub_blocks:
        return
    named = cube in out.partitions.values() or cube in state.k8s.partitions.values()
    reserved = state.reservation.by_cube().get(cube, (None, None))[1]
    if named and (reserved is None or reserved.position != sub_block):
        out.sub_blocks.setdefault(cube, sub_block)


def _disputed_partitions(state: FleetState, nodes: list[Node], mapping: K8sMapping) -> dict[str, str]:
    """partition -> why none of its nodes is placed, for each partition no name is known for yet whose nodes'
    explicit cubes (mapping entry, else `tpufleet.io/cube`, else the partition id when it is a cube's: the export's
    stand-in) disagree: which node is mislabelled is a guess, so nothing is learnt for it (learnt from the first
    node, it would misplace the others and keep the wrong name)."""
    keys, fleet = mapping.labels, state.fleet
    # partition -> cube -> its first node (in the natural order of the names)
    claims: dict[str, dict[str, str]] = defaultdict(dict)
    for node in sorted(nodes, key=lambda n: natural_key(n.name)):
        partition, pinned = node.labels.get(keys.partition), mapping.nodes.get(node.name)
        cube = pinned.cube if pinned else node.labels.get(keys.cube, partition)
        if partition is None or cube not in fleet.cube_pod or node.labels.get(keys.accelerator) is None:
            continue
        claims[partition].setdefault(cube, node.name)
    known = set(mapping.cubes) | set(state.k8s.partitions) | set(state.reservation.sub_blocks)
    order, disputed = {c: i for i, c in enumerate(fleet.cubes)}, {}
    for partition, cubes in claims.items():
        if len(cubes) > 1 and partition not in known:
            said = ", ".join(f"{c} ({cubes[c]})" for c in sorted(cubes, key=order.__getitem__))
            disputed[partition] = f"partition {partition}'s nodes disagree on its cube: {said}; nothing learnt for it"
    return disputed


def _generation_mismatch(state: FleetState, cube: str | None, accelerator: str) -> str | None:
    """A node whose accelerator is not its pod's generation's (a TPU7x node on a v5p pod) is not placed there. A pod
    without a generation (the built-in TPU v4 model) takes any accelerator of the mapping's list, as before."""
    if cube is None or cube not in state.fleet.cube_pod:
        return None
    gen = state.fleet.pod_of(cube).generation
    if gen is None or accelerator == gen.gke_accelerator:
        return None
    return f"accelerator {accelerator} on cube {cube} of a {gen.name} pod (whose nodes are {gen.gke_accelerator})"


def _resolve(
    node: Node, namer: _Namer, mapping: K8sMapping, accelerator: str
) -> tuple[str | None, int | None, str | None]:
    """(cube, machine if given explicitly, why not placed). A node of another generation than the pod it would go
    to teaches no name: it is refused before any block or partition is learnt from it."""
    keys, labels = mapping.labels, node.labels
    pinned = mapping.nodes.get(node.name)
    label_cube, label_machine = labels.get(keys.cube), labels.get(keys.machine)
    cube = pinned.cube if pinned else label_cube
    machine = pinned.machine if pinned else (int(label_machine) if label_machine is not None else None)
    partition, block = labels.get(keys.partition), labels.get(keys.block)
    pod_label = None if pinned else labels.get(keys.pod)  # the mapping's entry wins over tpufleet's labels
    if pod_label is not None and pod_label not in namer.fleet.pod_by_name:
        return None, None, f"{keys.pod} {pod_label} is not a pod of the fleet"
    if cube is None and partition in namer.fleet.cube_pod and namer.known_cube(partition) is None:
        taken = _stand_in_taken(namer, partition)  # else the stand-in `export node-labels` writes: that cube
        if taken is not None:
            return None, None, taken
        cube = partition
    if cube is not None:
        if cube not in namer.fleet.cube_pod:
            return None, None, f"cube {cube} is not in the fleet"
        why = _pod_label_disagrees(namer, keys.pod, pod_label, cube, f"cube {cube}")
        mismatch = why or _generation_mismatch(namer.state, cube, accelerator)
        return cube, machine, mismatch or namer.learn(partition, block, cube)
    if partition is None:
        return None, None, f"no {keys.partition} label (and no {keys.cube})"
    known = namer.known_cube(partition)
    if known is not None:
        if known not in namer.fleet.cube_pod:
            return None, None, f"partition {partition} is mapped to {known}, which is not in the fleet"
        why = _pod_label_disagrees(namer, keys.pod, pod_label, known, f"partition {partition} (cube {known})")
        return known, machine, why or namer.block_disagrees(block, partition, known)
    if block is None:
        return None, None, f"no {keys.block} label to find the pod of new partition {partition}"
    pinned_pod = mapping.pods.get(block)
    if pinned_pod is not None and pinned_pod not in namer.fleet.pod_by_name:
        return None, None, f"block {block} is mapped to {pinned_pod}, which is not in the fleet"
    known_pod = namer.known_pod(block)  # the pod label is checked before a new block is named
    would_be, is_or_takes = (known_pod, "is") if known_pod is not None else (namer.next_pod(accelerator), "would take")
    if pod_label is not None and would_be is not None and would_be != pod_label:
        return None, None, f"{keys.pod} is {pod_label}, but block {block} {is_or_takes} {would_be}"
    pod = namer.pod_of_block(block, accelerator)
    if pod is None:
        return None, None, _no_pod_for(namer.fleet, block, accelerator)
    mismatch = _generation_mismatch(namer.state, namer.fleet.pod_by_name[pod].cubes[0], accelerator)
    if mismatch is not None:
        return None, None, mismatch
    cube = namer.new_cube(partition, pod, labels.get(keys.subblock))
    if cube is None:
        named = {**namer.mapping.cubes, **namer.state.k8s.partitions, **namer.out.partitions}
        why = no_sub_block(namer.state, named, pod, keys.subblock, labels.get(keys.subblock))
        return None, None, f"no cube of {pod} left for partition {partition}{why}"
    return cube, machine, None


def _stand_in_taken(namer: _Namer, cube: str) -> str | None:
    """A node whose partition id is a cube id that no partition is known by is on that cube: it is the stand-in
    `export node-labels` writes for a cube no import named, and no name to learn (`_Namer.learn`). Why not, when a
    partition already names that cube (the export would have written that partition's id), else None."""
    named = {c: p for p, c in namer.out.partitions.items()} | namer.state.partition_names()
    if named.get(cube, cube) != cube:
        return f"partition {cube} is the id of cube {cube}, which is partition {named[cube]}"
    return None


def _pod_label_disagrees(namer: _Namer, key: str, pod_label: str | None, cube: str, what: str) -> str | None:
    """Why the node's pod label (`tpufleet.io/pod`) contradicts the cube it would go to, else None."""
    pod = namer.fleet.cube_pod[cube]
    if pod_label is None or pod_label == pod:
        return None
    return f"{key} is {pod_label}, but {what} is in {pod}"


def _no_pod_for(fleet: Fleet, block: str, accelerator: str) -> str:
    if any(p.generation is None or p.generation.gke_accelerator == accelerator for p in fleet.pods):
        return f"no pod left for block {block} (every pod of its generation has a block; map it in the mapping file)"
    have = sorted({p.generation.gke_accelerator for p in fleet.pods if p.generation is not None})
    return f"no pod of the fleet takes {accelerator} nodes (its pods' nodes are {', '.join(have)})"


def _note_state(out: Placement, cube: str, node: Node, mapping: K8sMapping) -> None:
    state = node.labels.get(mapping.labels.partition_state)
    if state is None:
        return
    partition = node.labels.get(mapping.labels.partition, cube)
    old = out.cube_states.get(cube)
    if old is None or _WORST_FIRST.index(state) < _WORST_FIRST.index(old[0]):
        out.cube_states[cube] = (state, partition)


def _claim_machines(
    state: FleetState,
    out: Placement,
    explicit: list[tuple[Node, HostId]],
    pending: dict[str, list[Node]],
    mapping: K8sMapping,
) -> None:
    holder: dict[HostId, str] = {}
    for node, host in explicit:
        if host in holder:
            out.unplaced.append((node.name, f"{host} is already node {holder[host]}"))
        else:
            holder[host] = node.name
    known = state.k8s.nodes
    named = set(known.values())
    for cube in sorted(pending):
        later = []
        for node in pending[cube]:
            had = known.get(node.name)
            if had is not None and had.cube == cube and had not in holder:
                holder[had] = node.name
            else:
                later.append(node)
        if later:
            later.sort(key=lambda n: (n.labels.get(mapping.labels.host, ""), natural_key(n.name)))
            _fill(cube, later, holder, named, out)
    seen = {name for name in holder.values()}
    named_by = state.k8s.machine_node()
    for host, name in sorted(holder.items()):
        out.hosts[name] = host
        if known.get(name) != host:
            out.nodes[name] = host
            previous = named_by.get(host)
            if previous is not None and previous not in seen:
                out.forget.append(previous)


def _fill(cube: str, nodes: list[Node], holder: dict[HostId, str], named: set[HostId], out: Placement) -> None:
    """Give the nodes the free machines of the cube: never named first, then those named by absent nodes."""
    free = [HostId(cube, m) for m in range(MACHINES_PER_CUBE) if HostId(cube, m) not in holder]
    free.sort(key=lambda h: (h in named, h.machine))
    for node, host in zip(nodes, free, strict=False):
        holder[host] = node.name
    for node in nodes[len(free) :]:
        out.unplaced.append((node.name, f"cube {cube} has {MACHINES_PER_CUBE} machines, all held by other nodes"))
