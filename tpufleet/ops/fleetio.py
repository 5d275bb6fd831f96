"""Use case of `import k8s`: a Kubernetes node list against the state, as a plan, and applied with `--apply`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tpufleet.fleetstate import FleetState
from tpufleet.ids import CubeId, natural_key
from tpufleet.integrations.k8s import K8sMapping, Node
from tpufleet.integrations.k8s_health import HealthDiff, during_maintenance, health_diff, wanted
from tpufleet.integrations.k8s_plan import Placement, check_mapping_fits, place
from tpufleet.integrations.k8s_pools import BUILT_IN_ACCELERATOR, PoolPlan, plan_pools
from tpufleet.journalentry import JournalEntry
from tpufleet.ops import faults as fault_ops
from tpufleet.ops.outcome import Outcome
from tpufleet.timeparse import STAMP_FORMAT


def import_k8s(
    state: FleetState, nodes: list[Node], mapping: K8sMapping, source: str, now: str, apply: bool = False
) -> Outcome:
    """The diff of the node list against the state; with `apply`, learn the names and open and clear the faults
    through the same transitions as `inject-fault` and `clear-fault` (blast radius, evictions, stale tables)."""
    check_mapping_fits(state.fleet, mapping)
    placement = place(state, nodes, mapping)
    pools = plan_pools(state, nodes, mapping, placement, source, known_accelerators())
    wants, scope = wanted(nodes, placement, mapping)
    diff = health_diff(state, during_maintenance(state, wants, now), scope, now)
    data = _record(nodes, placement, diff, source, mapping)
    data["warning"] = _accelerators_on_no_node(nodes, mapping) or _no_pod_takes(state, nodes, mapping, data["placed"])
    _record_pools(data, state, pools, placement)
    data["serial"] = state.serial
    names = state.k8s_names_after(
        placement.blocks, placement.partitions, placement.nodes, placement.forget, placement.sub_blocks
    )
    requests = [fault_ops.FaultRequest(w.target, w.planned, w.reason) for w in diff.open]
    requests += [fault_ops.FaultRequest(CubeId(d.cube), True, d.reason) for d in diff.handed_back]
    clear_ids = [f.id for f in diff.clear]
    if not apply or not data["has_changes"]:
        data["slices_hit"] = fault_ops.import_preview(state, clear_ids, requests, now)
        return Outcome(data)
    state.name_in_k8s(names)
    state.record_k8s_health(pools.degraded, pools.changes, pools.removed)
    opened = [*data["faults_opened"], *data["drains_opened"], *data["reservation_drains_opened"]]
    return fault_ops.apply_import(state, data, clear_ids, requests, opened, now, _summary(data, source))


def _record(
    nodes: list[Node], placement: Placement, diff: HealthDiff, source: str, mapping: K8sMapping
) -> dict[str, Any]:
    """The documented JSON of the plan (README, "JSON contract")."""
    accelerator = mapping.labels.accelerator
    opened = [w.record() for w in diff.open]
    data: dict[str, Any] = {
        "source": source,
        "nodes": len(nodes),
        "tpu_nodes": sum(1 for n in nodes if accelerator in n.labels),
        "placed": len(placement.hosts),
        # Kubernetes names as every list of names: node-9 before node-10
        "unplaced": [{"node": n, "reason": why} for n, why in sorted(placement.unplaced, key=_by_name)],
        "pods_named": [{"block": b, "pod": p} for b, p in sorted(placement.blocks.items(), key=_by_name)],
        "cubes_added": [{"partition": k, "cube": c} for k, c in sorted(placement.partitions.items(), key=_by_name)],
        "machines_named": len(placement.nodes),
        "names_forgotten": sorted(placement.forget, key=natural_key),
        "sub_blocks_learnt": [
            {"cube": c, "sub_block": p} for c, p in sorted(placement.sub_blocks.items(), key=_by_name)
        ],
        "faults_opened": [w for w in opened if not w["planned"]],
        "drains_opened": [w for w in opened if w["planned"]],
        "faults_cleared": [
            {"id": f.id, "target": str(f.target), "planned": f.planned, "reason": f.reason} for f in diff.clear
        ],
        "reservation_drains_opened": [d.record() for d in diff.handed_back],
        "unchanged_faults": diff.kept,
        "applied": False,
    }
    naming = placement.blocks or placement.partitions or placement.nodes or placement.forget or placement.sub_blocks
    data["has_changes"] = bool(naming or diff.open or diff.clear)
    return data


def _accelerators_on_no_node(nodes: list[Node], mapping: K8sMapping) -> str | None:
    """A mapping whose accelerators are on no node of a list whose nodes carry other ones (a typo, `tpu7` for
    `tpu7x`): every node is left unplaced, which is no change and no drift, so it is said (None: nothing to say)."""
    carried = sorted({n.labels[mapping.labels.accelerator] for n in nodes if mapping.labels.accelerator in n.labels})
    if not carried or mapping.accelerators.intersection(carried):
        return None
    return (
        f"{mapping.source}: field accelerators: none of {', '.join(sorted(mapping.accelerators))} is on a node of the "
        f"list, whose nodes carry {', '.join(carried)}: every node is left unplaced"
    )


def _no_pod_takes(state: FleetState, nodes: list[Node], mapping: K8sMapping, placed: int) -> str | None:
    """A list whose TPU nodes carry only accelerators no pod of the fleet has (another cluster's node list, or a
    state made with another `init --generation`): every node is left unplaced, which is no change and no drift, so
    it is said, as for a mistyped mapping (None: nothing to say; a pod of the built-in model takes any)."""
    key = mapping.labels.accelerator
    carried = {n.labels[key] for n in nodes if key in n.labels} & set(mapping.accelerators)
    if placed or not carried or any(p.generation is None for p in state.fleet.pods):
        return None
    taken = {p.generation.gke_accelerator for p in state.fleet.pods if p.generation is not None}
    if carried & taken:
        return None
    return (
        f"no pod of the fleet takes the nodes' {', '.join(sorted(carried))}: its pods are {', '.join(sorted(taken))} "
        f"({', '.join(p.name for p in state.fleet.pods)}), so every TPU node is left unplaced (another cluster's "
        "node list?)"
    )


def _by_name(item: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row keyed by a Kubernetes name (a node's, a block's, a partition's) in natural order, then the rest."""
    return natural_key(item[0]), item[1:]


def known_accelerators() -> frozenset[str]:
    """The accelerator of every shipped generation, and the built-in TPU v4 model's."""
    from tpufleet.state import generations

    return frozenset({BUILT_IN_ACCELERATOR, *(generations.shipped(n).gke_accelerator for n in generations.names())})


def _record_pools(data: dict[str, Any], state: FleetState, pools: PoolPlan, placement: Placement) -> None:
    """Node pools as slices and degraded cubes, in the documented JSON of the plan."""
    partition_of = {**state.partition_names(), **{c: p for c, (_, p) in placement.cube_states.items()}}

    def degraded_row(cube: str) -> dict[str, Any]:
        return {"cube": cube, "pod": state.fleet.cube_pod[cube], "partition": partition_of.get(cube)}

    def pool_row(name: str) -> dict[str, Any]:
        p = pools.slices.get(name) or state.k8s.node_pools[name]
        change = "new" if name in pools.new else "changed" if name in pools.changed else "unchanged"
        change = "removed" if name in pools.removed else change
        row = {"node_pool": name, **p.record(), "placed": False, "change": change}
        troubled = [
            {"node": n, "planned": planned, "reason": what}
            for n, planned, what in sorted(pools.troubled.get(name, []), key=_by_name)
        ]
        held = {"cubes": p.cubes, "machines": p.machines, "single_host": p.single_host}
        return {**row, **held, "unhealthy_nodes": troubled}

    shown = {*pools.slices, *pools.removed}
    data["node_pool_slices"] = [pool_row(n) for n in sorted(shown, key=natural_key)]  # as status lists them
    data["degraded_new"] = [degraded_row(c) for c in pools.degraded_new]
    data["degraded_cleared"] = [degraded_row(c) for c in pools.degraded_cleared]
    data["has_changes"] = data["has_changes"] or pools.has_changes


def _summary(data: dict[str, Any], source: str) -> str:
    parts = [
        f"{len(data['cubes_added'])} cube(s) named",
        f"{data['machines_named']} machine(s) named",
        f"{sum(p['change'] != 'unchanged' for p in data['node_pool_slices'])} node pool(s) held as unplaced slices",
        f"{len(data['degraded_new'])} cube(s) degraded, {len(data['degraded_cleared'])} no longer",
        f"{len(data['faults_opened'])} fault(s) and {len(data['drains_opened'])} drain(s) opened",
        f"{len(data['reservation_drains_opened'])} reservation drain(s) handed back",
        f"{len(data['faults_cleared'])} cleared",
    ]
    extra = {"pods_named": "pod(s) named", "names_forgotten": "node name(s) forgotten"}
    extra["sub_blocks_learnt"] = "sub-block position(s) learnt"
    parts += [f"{len(data[key])} {words}" for key, words in extra.items() if data[key]]  # only when there are
    return f"import k8s {source}: " + ", ".join(parts)


def last_change(entries: Sequence[JournalEntry], serial: int | None = None) -> float | None:
    """Unix time of the state's last committed change, from the last of its journal `entries` (None if there is
    none, its time is not the journal's UTC stamp, or it is not the change of the state's `serial`: the line of
    the last commit damaged, an earlier change's time is no answer).

    >>> last_change([JournalEntry(1, "1970-01-02T00:00:00Z")]), last_change([])
    (86400.0, None)
    >>> last_change([JournalEntry(1, "1970-01-02T00:00:00Z")], serial=2) is None
    True
    """
    import calendar
    import time

    if not entries or (serial is not None and entries[-1].serial != serial):
        return None
    try:
        return float(calendar.timegm(time.strptime(entries[-1].time, STAMP_FORMAT)))
    except ValueError:
        return None
