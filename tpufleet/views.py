"""Read-only views of the fleet state, as plain JSON-able data (pure).

These are the documented `-o json` shapes of `show` and `status`. A pod of an accelerator generation says which
(`generation`: tpu-v4, tpu-v5p, tpu7x); a pod without one is the built-in TPU v4 model and its rows leave the
field out, as they always have.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from tpufleet import xconnect
from tpufleet.constants import CHIPS_PER_CUBE, MACHINES_PER_CUBE, OPTICAL_LINKS_PER_CUBE
from tpufleet.fleetstate import FleetState, RouteRecord, Slice
from tpufleet.health import Health
from tpufleet.ids import LinkId, OcsId, natural_key
from tpufleet.model import Pod, inventory_counts, pod_ocs
from tpufleet.tableneeds import degraded_without_tables
from tpufleet.xconnect import missing_pairs

Row = dict[str, Any]


def cube_users(state: FleetState) -> dict[str, list[str]]:
    """cube -> names of slices holding it (sub-cube slices may share a cube), as the fleet counts them (s9 before
    s10: the state file keeps its slices in the text order of their names)."""
    users: dict[str, list[str]] = {}
    for name, sl in sorted(state.slices.items(), key=lambda kv: natural_key(kv[0])):
        for cube in sl.cubes:
            users.setdefault(cube, []).append(name)
    return users


def reserved_cubes(state: FleetState) -> dict[str, list[str]]:
    """cube -> the evicted slices whose moves hold it, whole or some of its machines (`allocate` does not take a
    cube any of whose machines are reserved, as `capacity` does not count it free)."""
    reserved: dict[str, list[str]] = {}
    for name, sl in sorted(state.slices.items(), key=lambda kv: natural_key(kv[0])):
        for cube in sl.proposal.cubes if sl.proposal is not None else ():
            reserved.setdefault(cube, []).append(name)
    return reserved


def inventory(state: FleetState, health: Health | None = None) -> list[Row]:
    """One row a cube; a cube whose reservation sub-block is DEGRADED carries `degraded` (it still serves). A cube
    reserved for an evicted slice's move is allocated, named by that slice, as `allocate` refuses it."""
    health = health or state.health()
    users = cube_users(state)
    for cube, names in reserved_cubes(state).items():
        held = users.setdefault(cube, [])
        held.extend(n for n in names if n not in held)  # (a move to other machines of the cube it is on)
    degraded = degraded_cubes(state)
    for cube, part in k8s_degraded_cubes(state).items():
        degraded[cube] = {**degraded.get(cube, {}), **part}
    rows = []
    for pod in state.fleet.pods:
        for pos, cube in enumerate(pod.cubes):
            row: Row = {
                "id": f"cube:{cube}",
                "cube": cube,
                "pod": pod.name,
                "position": pos,
                "machines": MACHINES_PER_CUBE,
                "chips": CHIPS_PER_CUBE,
                "optical_links": OPTICAL_LINKS_PER_CUBE,
                "state": "out" if not health.cube_ok(cube) else ("allocated" if cube in users else "free"),
                "slices": users.get(cube, []),
                "faults": health.cubes_out.get(cube, []),
            }
            if cube in degraded:  # only on degraded cubes: other rows keep their shape
                row["degraded"] = degraded[cube]
            rows.append(with_generation(row, pod))
    return rows


def degraded_cubes(state: FleetState) -> dict[str, Row]:
    """cube -> its DEGRADED reservation sub-block and host counts (imported by `import reservation`)."""
    return {
        r.cube: {"sub_block": name, "healthy_hosts": r.healthy_hosts, "degraded_hosts": r.degraded_hosts}
        for name, r in sorted(state.reservation.sub_blocks.items())
        if r.degraded
    }


def hosts_degraded(row: Row) -> str | None:
    """'1 of 16': the hosts of a DEGRADED sub-block's row (`degraded_cubes`) the reservation reports degraded, of
    all its hosts; None when it gave no host counts (they are optional: the cube still serves all the same).

    >>> hosts_degraded({"healthy_hosts": 15, "degraded_hosts": 1}), hosts_degraded({"healthy_hosts": None})
    ('1 of 16', None)
    """
    healthy, degraded = row.get("healthy_hosts"), row.get("degraded_hosts")
    return None if healthy is None or degraded is None else f"{degraded} of {healthy + degraded}"


def k8s_degraded_cubes(state: FleetState) -> dict[str, Row]:
    """cube -> its DEGRADED 4x4x4 partition (imported by `import k8s`)."""
    partition_of = state.partition_names()
    return {c: {"partition": partition_of.get(c)} for c in state.k8s.degraded}


def with_generation(row: Row, pod: Pod) -> Row:
    """`row` with the pod's `generation` when it has one; unchanged for the built-in v4 model."""
    if pod.generation is not None:
        row["generation"] = pod.generation.name
    return row


def pod_generations(state: FleetState) -> dict[str, str]:
    """pod -> its generation, for the pods that have one (the others are the built-in TPU v4 model)."""
    return {p.name: p.generation.name for p in state.fleet.pods if p.generation is not None}


def _effect(target: object) -> str:
    if isinstance(target, OcsId):
        return "OCS down: every cube of the pod loses that link"
    if isinstance(target, LinkId):
        return "optical link unusable"
    return "cube out of the pool"


def health_rows(state: FleetState) -> list[Row]:
    rows = []
    for fault in state.open_faults():
        row: Row = {
            "target": str(fault.target),
            "kind": fault.target.kind,
            "fault": fault.id,
            "planned": fault.planned,
            "since": fault.opened,
            "effect": _effect(fault.target),
        }
        if fault.window_start is not None or fault.window_end is not None:  # a drain of announced maintenance
            row["window_start"], row["window_end"] = fault.window_start, fault.window_end
        rows.append(row)
    return rows


def missing_xconnects(state: FleetState, sl: Slice) -> int:
    """Cross-connects a connected slice needs that are not in place (e.g. deferred while an OCS was down)."""
    if not sl.state.wired:
        return 0
    return missing_pairs(sl.shape, state.fleet, sl.coords, state.ocs)


def wiring_wait(state: FleetState, sl: Slice) -> str | None:
    """Why `plan-xconnect SLICE --apply` cannot program a wired slice's missing cross-connects now: a failed or
    drained port (or OCS) refuses its plan, or they are all deferred on an OCS still down. None: it can (or none
    are missing)."""
    if not missing_xconnects(state, sl):
        return None
    health = state.health()
    plan = xconnect.plan(sl.shape, state.fleet, sl.coords, state.ocs, health, sl.fault_tolerant_routing)
    if plan.blocked:
        return f"`plan-xconnect {sl.name} --apply` refuses them until repaired: {'; '.join(plan.blocked[:3])}"
    if any(c.add for c in plan.changes):
        return None
    wanted = xconnect.wanted_pairs(sl.shape, state.fleet, sl.coords)
    down = [o for o in plan.deferred if set(wanted[o]) - state.ocs.get(o, frozenset())]
    faults = sorted({f for o in down for f in health.ocs_down[o]}, key=lambda f: int(f[1:]))
    return (
        f"deferred while {', '.join(map(str, down))} {'is' if len(down) == 1 else 'are'} down: "
        f"`plan-xconnect {sl.name} --apply` programs them once {', '.join(faults)} "
        f"{'is' if len(faults) == 1 else 'are'} cleared"
    )


def slice_rows(state: FleetState, missing: Collection[str] = ()) -> list[Row]:
    """`show slices`: each slice by name; `missing`: slices whose indexed tables are no longer kept (a file
    removed by hand), whose routes read "missing" rather than fresh or stale."""
    rows = []
    for name in sorted(state.slices, key=natural_key):  # a job's j-2 before its j-10
        sl = state.slices[name]
        route = state.routes.get(name)
        rows.append(
            {
                "name": name,
                "shape": sl.shape.text,
                "twisted": sl.shape.twisted,
                "pod": sl.pod,
                "cubes": list(sl.cubes),
                "machines": list(sl.machines),
                "state": sl.state.value,
                "fault_tolerant_routing": sl.fault_tolerant_routing,
                "routes": _routes_word(route, name in missing),
                "missing_xconnects": missing_xconnects(state, sl),
                "min_throughput": sl.min_throughput,
                "degraded": sl.reroute.record() if sl.reroute else None,
                "proposal": sl.proposal.record() if sl.proposal else None,
                "job": sl.job,
            }
        )
    return rows


def _routes_word(route: RouteRecord | None, missing: bool) -> str:
    if route is None:
        return "none"
    return "missing" if missing else "stale" if route.stale else "fresh"


def job_rows(state: FleetState) -> list[Row]:
    """`show jobs`: each multislice job with its state derived from its slices, by name."""
    from tpufleet.jobs import all_statuses

    return [status.record() for status in all_statuses(state)]


def _ocs_health(state: FleetState, ocs: OcsId, health: Health) -> str:
    """ok, failed, or drained (a planned fault: maintenance), as `show map` and `explain` say it."""
    if ocs not in health.ocs_down:
        return "ok"
    fault = state.open_fault_on(ocs)
    return "drained" if fault is not None and fault.planned else "failed"


def ocs_rows(state: FleetState, health: Health | None = None) -> list[Row]:
    health = health or state.health()
    rows = []
    for pod in state.fleet.pods:
        for ocs in pod_ocs(pod.name):
            row: Row = {
                "id": str(ocs),
                "pod": ocs.pod,
                "dim": ocs.dim,
                "index": ocs.index,
                "health": _ocs_health(state, ocs, health),
                "ports_cabled": 2 * len(pod.cubes),
                "xconnects": [list(p) for p in sorted(state.ocs.get(ocs, ()))],
            }
            if pod.generation is not None:
                row["ports"] = pod.generation.ocs_ports
            rows.append(with_generation(row, pod))
    return rows


def status(state: FleetState, missing: Collection[str] = (), linked: Mapping[str, str] | None = None) -> Row:
    """`status`: one screen of the fleet; `missing` as for `slice_rows`; `linked`: of those, the slices with a
    symbolic link where their tables belong, by name, the link's path (`routes` refuses it: it is removed first)."""
    health = state.health()
    counts = {"free": 0, "allocated": 0, "out": 0}
    free_by_pod: dict[str, int] = {}
    for row in inventory(state, health):
        counts[row["state"]] += 1
        free_by_pod[row["pod"]] = free_by_pod.get(row["pod"], 0) + (row["state"] == "free")
    inv = inventory_counts(state.fleet)
    slices = slice_rows(state, missing)
    generations = pod_generations(state)
    ocs_down = [_ocs_health(state, ocs, health) for ocs in health.ocs_down]  # failed, or drained (planned)
    return {
        "serial": state.serial,
        "inventory": inv,
        **({"generations": generations} if generations else {}),
        "cubes": counts,
        "ocs": {
            "total": inv["ocs"],
            "failed": ocs_down.count("failed"),
            "drained": ocs_down.count("drained"),
            "xconnects": sum(len(p) for p in state.ocs.values()),
        },
        # `open_faults` counts both, as it always did; the metrics' `tpufleet_open_faults` is `unplanned_faults`
        "open_faults": len(state.open_faults()),
        "unplanned_faults": sum(1 for f in state.open_faults() if not f.planned),
        "planned_drains": sum(1 for f in state.open_faults() if f.planned),
        "faults": health_rows(state),
        "slices": slices,
        # a slice whose stale tables are gone is missing only: one list, one alert, for one cause
        "stale_routes": sorted((n for n, r in state.routes.items() if r.stale and n not in missing), key=natural_key),
        "missing_routes": sorted((n for n in state.routes if n in missing), key=natural_key),
        "degraded_without_routes": degraded_without_tables(state),  # through their faults until `routes`
        "linked_routes": {
            n: path for n, path in sorted((linked or {}).items(), key=lambda i: natural_key(i[0])) if n in missing
        },
        "incomplete_wiring": [s["name"] for s in slices if s["missing_xconnects"]],
        "wiring_waits": {  # of those, the ones `plan-xconnect --apply` cannot program yet, and why
            s["name"]: why
            for s in slices
            if s["missing_xconnects"] and (why := wiring_wait(state, state.slices[s["name"]]))
        },
        "jobs": job_rows(state),
        **_reservation_status(state),
        **_k8s_status(state, free_by_pod),
    }


def _k8s_status(state: FleetState, free_by_pod: dict[str, int]) -> Row:
    """`status` of an imported cluster: its DEGRADED partitions and the node pools held as unplaced slices, with
    the free cubes left once those are counted, pod by pod (absent when there are neither). Pools holding more
    cubes than their pod has free (`over_committed`, per pod) say the state and the cluster disagree: slices
    allocated here that the cluster does not run, or pools on cubes the state holds for others."""
    from tpufleet.integrations.k8s_pools import unplaced_cubes

    k8s = state.k8s
    if not (k8s.degraded or k8s.node_pools):
        return {}
    pod_of = state.fleet.cube_pod
    degraded = [
        {"cube": c, "pod": pod_of[c], **r}
        for c, r in sorted(k8s_degraded_cubes(state).items(), key=lambda kv: natural_key(kv[0]))
    ]
    held = unplaced_cubes(k8s.node_pools.values())
    pools = [
        {"name": name, "node_pool": name, **p.record(), "cubes": p.cubes, "machines": p.machines}
        for name, p in sorted(k8s.node_pools.items(), key=lambda kv: natural_key(kv[0]))  # pool-9 before pool-10
    ]
    by_pod = dict(sorted(held.items(), key=lambda kv: natural_key(kv[0])))
    unplaced = {"slices": pools, "cubes": sum(held.values()), "by_pod": by_pod}
    left = {pod: free_by_pod.get(pod, 0) - held.get(pod, 0) for pod in free_by_pod}
    over = {pod: -n for pod, n in sorted(left.items(), key=lambda kv: natural_key(kv[0])) if n < 0}
    after = sum(max(0, n) for n in left.values())
    return {
        "k8s": {"degraded_cubes": degraded, "unplaced_slices": unplaced, "free_after_unplaced": after}
        | ({"over_committed": over} if over else {})
    }


def _reservation_status(state: FleetState) -> Row:
    """`status` of an imported reservation: its sub-blocks and the degraded cubes (absent without one)."""
    if not state.reservation:
        return {}
    pod_of = state.fleet.cube_pod
    rows = sorted(degraded_cubes(state).items(), key=lambda kv: natural_key(kv[0]))
    degraded = [{"cube": c, "pod": pod_of[c], **r} for c, r in rows]
    return {
        "reservation": {
            "sub_blocks": len(state.reservation.sub_blocks),
            "degraded_cubes": degraded,
            "maintenance": reservation_maintenance(state),
        }
    }


def reservation_maintenance(state: FleetState) -> list[Row]:
    """The sub-blocks under announced or ongoing maintenance, earliest window first: `drained` once a planned drain
    is open on the cube, `out_of_pool` while any fault holds it out (a failure too), else the cube still serves and
    `slices` are on it (the ones to move before the window)."""
    drained, out = state.cubes_drained(), state.health().cubes_out
    rows: list[Row] = []
    for name, r in state.reservation.sub_blocks.items():
        w = r.maintenance
        if w is None or not w.drains:
            continue
        rows.append(
            {
                "sub_block": name,
                "cube": r.cube,
                "pod": state.fleet.cube_pod[r.cube],
                "status": w.status,
                "window_start": w.start,
                "window_end": w.end,
                "drained": r.cube in drained,
                "out_of_pool": r.cube in out,
                "slices": state.slices_holding(r.cube),
            }
        )
    return sorted(rows, key=lambda row: (row["window_start"] or "", natural_key(row["cube"])))


def cube_holders(state: FleetState) -> dict[str, str]:
    """cube -> who holds it, for a refusal of given cubes (`allocate --cubes`, a Slice `import slices` cannot place):
    the slices on it (an evicted one keeps its cubes until it moves) and evicted slices whose move is reserved there.

    >>> from tpufleet.fleetstate import FleetState
    >>> from tpufleet.model import default_fleet
    >>> cube_holders(FleetState(default_fleet()))
    {}
    """
    said: dict[str, list[str]] = {}
    for sl in sorted(state.slices.values(), key=lambda s: natural_key(s.name)):
        for c in sl.cubes:
            said.setdefault(c, []).append(f"held by slice {sl.name}")
        for c in sl.proposal.cubes if sl.proposal is not None else ():
            if c not in sl.cubes:
                said.setdefault(c, []).append(f"reserved for the move of evicted slice {sl.name}")
    return {c: "; ".join(words) for c, words in said.items()}
