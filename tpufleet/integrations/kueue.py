"""Kueue's objects of the fleet (pure): a `Topology` of the dynamic-slicing partitions and the `ResourceFlavor`s of
the fleet's TPU nodes, those of its partitions and those of the ordinary node pools `import k8s` recorded. The
names (blocks, partitions, nodes) are `exports.Names`'; the accelerator of a pod `exports.accelerator`."""

from __future__ import annotations

import hashlib
import re

from tpufleet.constants import MACHINES_PER_CUBE
from tpufleet.fleetstate import FleetState
from tpufleet.ids import natural_key
from tpufleet.integrations.exports import Doc, accelerator, machines_without_node
from tpufleet.integrations.k8s import HEALTHY_PARTITION, LabelKeys

# Kueue's API versions: v1beta2 is served from Kueue 0.15 on; v1beta1 is deprecated (no longer served from 0.20,
# kubernetes-sigs/kueue#13957). Topology and
# ResourceFlavor have the same fields in both (levels[].nodeLabel; nodeLabels, topologyName, tolerations).
KUEUE_API_VERSIONS = ("v1beta2", "v1beta1")
KUEUE_API = f"kueue.x-k8s.io/{KUEUE_API_VERSIONS[0]}"
TPU_TAINT = "google.com/tpu"  # GKE taints TPU nodes with it; pods (and Kueue flavors) must tolerate it


def kueue_topology(
    state: FleetState, name: str = "tpufleet", keys: LabelKeys | None = None, api: str = KUEUE_API
) -> list[Doc]:
    """A Kueue `Topology` (block -> 4x4x4 partition -> host: a slice's chips in one partition share an
    electrical mesh, in one block an OCS pod) and a `ResourceFlavor` of the fleet's TPU nodes that uses it, one
    per accelerator of its pods (in pod order; a fleet of one generation has one); and a flavor per accelerator and
    topology of the imported node pools, or per pool beside partitions of its accelerator (`_pool_flavors`). A cluster of ordinary node pools only (no node on a
    machine: no partition labels) gets those alone: its nodes carry no partition label or state to select."""
    keys = keys or LabelKeys()
    pools = _pool_flavors(state, name, keys, api)
    if pools and machines_without_node(state) == len(state.fleet.cubes) * MACHINES_PER_CUBE:
        return pools
    levels = [keys.block, keys.partition, keys.hostname]
    topology = {
        "apiVersion": api,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": label} for label in levels]},
    }
    flavors = [
        {
            "apiVersion": api,
            "kind": "ResourceFlavor",
            "metadata": {"name": f"{name}-{acc}"},
            "spec": {
                # xpk's super-slicing flavor: not the topology label, which on a dynamic-slicing node is its pool's
                # (4x8x8, 8x16x16), not the partition's; a partition's state selects its nodes, healthy ones
                "nodeLabels": {keys.accelerator: acc, keys.partition_state: HEALTHY_PARTITION},
                "topologyName": name,
                "tolerations": [{"key": TPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
            },
        }
        for acc in dict.fromkeys(accelerator(p) for p in state.fleet.pods)  # one per accelerator, in pod order
    ]
    return [topology, *flavors, *pools]


def _pool_flavors(state: FleetState, name: str, keys: LabelKeys, api: str) -> list[Doc]:
    """A `ResourceFlavor` per accelerator and topology of the node pools `import k8s` recorded, selecting the labels
    their nodes carry (`gke-tpu-accelerator` and `gke-tpu-topology`, as xpk's TPU flavors and GKE's nodeSelectors
    do; a pool is one slice, so the topology picks whole slices), no `topologyName`: they have no partition level.
    The topology is the label's value as the nodes write it (`8x4x4`, not the shape's `4x4x8`: a node selector
    matches the text), so one shape written two ways is two flavors.

    Where nodes of the accelerator are also on machines (dynamic-slicing partitions, whose nodes carry the
    accelerator and their own pool's topology), those two labels would select them too, and Kueue's nodeLabels
    match values only (no "label absent"): the pools of that accelerator then get a flavor each,
    `NAME-nodepool-POOL-TOPOLOGY`, selecting `gke-nodepool` as well, the one label only a pool's own nodes carry."""
    shared = _accelerators_on_machines(state)
    kinds: dict[tuple[str, str, str | None], None] = {}
    for pool_name, pool in sorted(state.k8s.node_pools.items(), key=lambda item: natural_key(item[0])):
        for topology in pool.topology_labels:
            kinds[pool.accelerator, topology, pool_name if pool.accelerator in shared else None] = None
    return [_pool_flavor(name, keys, api, *kind) for kind in kinds]


def _pool_flavor(name: str, keys: LabelKeys, api: str, acc: str, topology: str, pool: str | None) -> Doc:
    """The flavor of the pools of `acc` and `topology`, or (`pool` given) of that pool alone."""
    labels = {keys.accelerator: acc, keys.topology: topology}
    flavor = f"{name}-{acc}-{topology}"
    if pool is not None:
        labels[keys.node_pool] = pool
        flavor = f"{name}-nodepool-{_name_part(pool)}-{topology}"
    return {
        "apiVersion": api,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor},
        "spec": {
            "nodeLabels": labels,
            "tolerations": [{"key": TPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def _accelerators_on_machines(state: FleetState) -> frozenset[str]:
    """The accelerators of the pods that hold a node `import k8s` put on a machine."""
    pods = {state.fleet.cube_pod[host.cube] for host in state.k8s.nodes.values()}
    return frozenset(accelerator(p) for p in state.fleet.pods if p.name in pods)


_OBJECT_PART = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def _name_part(pool: str) -> str:
    """A node pool's name as part of an object name: itself (GKE's pool names are lower-case letters, digits and
    '-'); another label value (`A_b`) lower-cased, '-' for the rest, and 6 hex digits of its hash, so two pools
    never share one."""
    if _OBJECT_PART.fullmatch(pool):
        return pool
    tag = hashlib.sha256(pool.encode()).hexdigest()[:6]
    return (re.sub(r"[^a-z0-9]+", "-", pool.lower()).strip("-") + "-" + tag).lstrip("-")
