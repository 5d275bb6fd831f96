"""The checks of a state document that JSON Schema cannot express (`schema.validate` runs them after the
schema): ids that must exist, be unique, or not be held twice; ports, machines and layouts within their pods.

Errors name the file, the field path (dotted, list positions as numbers) and the offending value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from tpufleet.constants import MACHINES_PER_CUBE, MAX_FAULT_ID_CHARS, MAX_FAULT_NUMBER, OCS_PER_DIM
from tpufleet.errors import NO_VALUE, BadStateFile
from tpufleet.state import generations
from tpufleet.state.timefields import check_times


def check_references(doc: dict[str, Any], file: str) -> None:
    """What JSON Schema cannot say: ids that must exist, be unique, or not be held twice."""
    pods = {p["name"]: p["cubes"] for p in doc["fleet"]["pods"]}
    seen: dict[str, str] = {}
    for i, pod in enumerate(doc["fleet"]["pods"]):
        for j, cube in enumerate(pod["cubes"]):
            if cube in seen:
                raise BadStateFile(file, f"fleet.pods.{i}.cubes.{j}", cube, f"cube id also used in {seen[cube]}")
            seen[cube] = pod["name"]
    if len(pods) != len(doc["fleet"]["pods"]):
        raise BadStateFile(file, "fleet.pods", list(pods), "pod names must be unique")
    _check_pods(doc["fleet"]["pods"], file)
    _check_slices(doc["slices"], seen, file)
    _check_ocs(doc["ocs"], pods, file)
    _check_faults(doc, pods, seen, file)
    _check_k8s(doc.get("k8s", {}), pods, seen, file)
    _check_jobs(doc.get("jobs", {}), doc["slices"], file)
    _check_reservation(doc.get("reservation", {}), pods, seen, file)
    _check_alert_marks(doc.get("alert_marks", []), file)
    check_times(doc, file)
    for cube in doc.get("pruned_fault_history", {}):
        if cube not in seen:
            raise BadStateFile(file, "pruned_fault_history", cube, "a key that is no cube of the fleet")


def _check_alert_marks(marks: list[dict[str, Any]], file: str) -> None:
    """Each remembered alert names a component as a fault does, and is remembered once."""
    from tpufleet.errors import BadInput
    from tpufleet.ids import parse_target

    first: dict[str, int] = {}
    for i, mark in enumerate(marks):
        try:
            parse_target(mark["target"])
        except BadInput as exc:
            raise BadStateFile(file, f"alert_marks.{i}.target", mark["target"], str(exc)) from None
        fingerprint = mark["fingerprint"]
        if fingerprint in first:
            raise BadStateFile(
                file, f"alert_marks.{i}.fingerprint", fingerprint, f"also the alert of alert_marks.{first[fingerprint]}"
            )
        first[fingerprint] = i


def _check_reservation(res: dict[str, Any], pods: dict[str, Any], pod_of: dict[str, str], file: str) -> None:
    """Each block is a pod of the fleet; each sub-block a cube of the fleet (in its block's pod, when the block is
    placed), no cube two sub-blocks."""
    for block, pod in res.get("blocks", {}).items():
        if pod not in pods:
            raise BadStateFile(file, f"reservation.blocks.{block}", pod, f"no pod {pod} in the fleet")
    owner: dict[str, str] = {}
    for name, sb in res.get("sub_blocks", {}).items():
        cube, where = sb["cube"], f"reservation.sub_blocks.{name}.cube"
        pod = res.get("blocks", {}).get(sb["block"])
        if cube not in pod_of:
            raise BadStateFile(file, where, cube, f"no cube {cube} in the fleet")
        if pod is not None and pod_of[cube] != pod:
            raise BadStateFile(file, where, cube, f"not a cube of {pod}, the pod of block {sb['block']}")
        if cube in owner:
            raise BadStateFile(file, where, cube, f"{cube} is also sub-block {owner[cube]!r}")
        owner[cube] = name


def _check_pods(pods: list[dict[str, Any]], file: str) -> None:
    """A pod of a generation has at most one cube per port on a side of its OCS (the schema checks the others)."""
    for i, pod in enumerate(pods):
        if "generation" not in pod:
            continue
        gen = generations.shipped(pod["generation"])
        if len(pod["cubes"]) > gen.ports_per_side:
            raise BadStateFile(
                file,
                f"fleet.pods.{i}.cubes",
                f"{len(pod['cubes'])} cubes",
                f"a {gen.name} pod has at most {gen.ports_per_side} cubes (its OCS has {gen.ocs_ports} ports)",
            )


def _check_jobs(jobs: dict[str, Any], slices: dict[str, Any], file: str) -> None:
    """A job's slices exist, have its shape and name it back; no slice is in two jobs; a slice naming a job is
    one of its slices; the elastic minimum is at most its slice count; no job shares a name with a slice (a
    command given that name could not tell which is meant)."""
    owner: dict[str, str] = {}
    for name, job in jobs.items():
        where = f"jobs.{name}"
        if name in slices:
            raise BadStateFile(file, where, name, "a job and a slice cannot share a name")
        if job.get("elastic_min", 1) > len(job["slices"]):
            raise BadStateFile(
                file, f"{where}.elastic_min", job["elastic_min"], f"above the job's {len(job['slices'])} slice(s)"
            )
        for j, member in enumerate(job["slices"]):
            problem = _job_slice_problem(name, job, member, slices.get(member), owner.get(member))
            if problem is not None:
                raise BadStateFile(file, f"{where}.slices.{j}", member, problem)
            owner[member] = name
    for name, sl in slices.items():
        if "job" in sl and owner.get(name) != sl["job"]:
            raise BadStateFile(file, f"slices.{name}.job", sl["job"], f"no job {sl['job']} lists slice {name}")


def _job_slice_problem(job_name: str, job: dict[str, Any], member: str, sl: Any, other_job: str | None) -> str | None:
    if other_job is not None:
        return f"slice {member} is also in job {other_job}"
    if sl is None:
        return f"no slice {member} in the state"
    if sl.get("job") != job_name:
        return f"slice {member} does not name job {job_name} (its job: {sl.get('job')})"
    if (sl["shape"], sl["twisted"]) != (job["shape"], job["twisted"]):
        shape = sl["shape"] + (" twisted" if sl["twisted"] else "")
        return f"slice {member} is {shape}; a job's slices all have its shape {job['shape']}"
    return None


def _check_k8s(names: dict[str, Any], pods: dict[str, Any], pod_of: dict[str, str], file: str) -> None:
    """Kubernetes names point at parts of the fleet, one name per part (else two nodes would be one machine)."""
    checks: list[tuple[str, Callable[[str], str | None]]] = [
        ("blocks", lambda pod: None if pod in pods else f"no pod {pod} in the fleet"),
        ("partitions", lambda cube: None if cube in pod_of else f"no cube {cube} in the fleet"),
        ("nodes", lambda host: _bad_host(host, pod_of)),
    ]
    for key, problem_of in checks:
        owner: dict[str, str] = {}
        for name, part in names.get(key, {}).items():
            problem = problem_of(part)
            if problem is None and part in owner:
                problem = f"{part} is also named {owner[part]!r}"
            if problem is not None:
                raise BadStateFile(file, f"k8s.{key}.{name}", part, problem)
            owner[part] = name
    for j, cube in enumerate(names.get("degraded_cubes", [])):
        if cube not in pod_of:
            raise BadStateFile(file, f"k8s.degraded_cubes.{j}", cube, f"no cube {cube} in the fleet")
    for cube in names.get("sub_blocks", {}):
        if cube not in pod_of:
            raise BadStateFile(file, f"k8s.sub_blocks.{cube}", cube, f"no cube {cube} in the fleet")
    _check_node_pools(names.get("node_pools", {}), pods, pod_of, file)


def _check_node_pools(pools: dict[str, Any], pods: dict[str, Any], pod_of: dict[str, str], file: str) -> None:
    """Each unplaced node-pool slice is on a pod of the fleet, has a slice's shape (its nodes' topology labels, as
    written, are that shape), its placed cubes are cubes of that pod, and no node is in two pools."""
    from tpufleet.errors import BadInput
    from tpufleet.shapes import Shape, parse_dims, require_allocatable

    pool_of: dict[str, str] = {}
    for name, pool in pools.items():
        if pool["pod"] not in pods:
            raise BadStateFile(file, f"k8s.node_pools.{name}.pod", pool["pod"], f"no pod {pool['pod']} in the fleet")
        try:
            require_allocatable(Shape(parse_dims(pool["shape"])))
        except BadInput as exc:
            raise BadStateFile(file, f"k8s.node_pools.{name}.shape", pool["shape"], str(exc)) from None
        for j, text in enumerate(pool.get("topology", [])):  # the shape as its nodes write it: its sides, any order
            if parse_dims(text) != parse_dims(pool["shape"]):
                problem = f"not the pool's shape {pool['shape']} (its sides in any order)"
                raise BadStateFile(file, f"k8s.node_pools.{name}.topology.{j}", text, problem)
        for j, cube in enumerate(pool.get("placed_cubes", [])):
            if pod_of.get(cube) != pool["pod"]:
                problem = f"no cube {cube} in {pool['pod']}"
                raise BadStateFile(file, f"k8s.node_pools.{name}.placed_cubes.{j}", cube, problem)
        for j, node in enumerate(pool["nodes"]):
            if node in pool_of:
                raise BadStateFile(file, f"k8s.node_pools.{name}.nodes.{j}", node, f"also in node pool {pool_of[node]}")
            pool_of[node] = name


def _bad_host(host: str, pod_of: dict[str, str]) -> str | None:
    cube, _, machine = host[len("host:") :].partition("/")
    if cube not in pod_of:
        return f"no cube {cube} in the fleet"
    return None if int(machine) < MACHINES_PER_CUBE else f"machine {machine} is outside 0-{MACHINES_PER_CUBE - 1}"


def _check_slices(slices: dict[str, Any], pod_of: dict[str, str], file: str) -> None:
    """Each slice's layout, its cubes in its pod, and no cube (or machine of a cube) held by two slices."""
    from tpufleet.constants import MACHINES_PER_CUBE

    whole = (1 << MACHINES_PER_CUBE) - 1
    held: dict[str, list[tuple[int, str]]] = {}  # cube -> (machine mask, slice) of each slice holding some of it
    for name, sl in slices.items():
        _check_slice_layout(name, sl, file)
        _check_slice_state(name, sl, pod_of, file)
        mask = sum(1 << m for m in sl["machines"]) if sl.get("machines") else whole
        for j, cube in enumerate(sl["cubes"]):
            if pod_of.get(cube) != sl["pod"]:
                raise BadStateFile(file, f"slices.{name}.cubes.{j}", cube, f"not a cube of {sl['pod']}")
            holders = held.setdefault(cube, [])
            for other_mask, other in holders:
                common = mask & other_mask
                if common:
                    if common == whole:
                        problem = f"cube {cube} is also held by slice {other}"
                    else:
                        shared = ",".join(str(m) for m in range(MACHINES_PER_CUBE) if common >> m & 1)
                        problem = f"machine(s) {shared} of cube {cube} are also held by slice {other}"
                    field = f"slices.{name}.machines" if sl.get("machines") else f"slices.{name}.cubes.{j}"
                    raise BadStateFile(file, field, sl.get("machines") or cube, problem)
            holders.append((mask, name))


def _check_slice_state(name: str, sl: dict[str, Any], pod_of: dict[str, str], file: str) -> None:
    """A degraded slice carries its reroute; a proposed move names a pod of the fleet and cubes of that pod, laid
    out as the slice's shape (`_check_slice_layout` on the proposal's cubes and coordinates)."""
    where = f"slices.{name}"
    if sl["state"] == "degraded" and not sl.get("reroute"):
        raise BadStateFile(
            file, f"{where}.reroute", sl.get("reroute", NO_VALUE), "a degraded slice carries its reroute"
        )
    proposal = sl.get("proposal")
    if not proposal:
        return
    if proposal["pod"] not in set(pod_of.values()):
        raise BadStateFile(file, f"{where}.proposal.pod", proposal["pod"], "no such pod in the fleet")
    for j, cube in enumerate(proposal["cubes"]):
        if pod_of.get(cube) != proposal["pod"]:
            raise BadStateFile(file, f"{where}.proposal.cubes.{j}", cube, f"not a cube of {proposal['pod']}")
    _check_slice_layout(f"{name}.proposal", {**sl, **proposal}, file)


def _check_ocs(ocs: dict[str, Any], pods: dict[str, Any], file: str) -> None:
    """Each OCS exists, named as tpufleet writes it; each cross-connect is [north, south] within the cabled ports;
    no port in two of them."""
    for key, pairs in ocs.items():
        pod, _, index = key.split("/")
        if pod not in pods or len(index) > 6 or int(index) >= OCS_PER_DIM:
            raise BadStateFile(file, f"ocs.{key}", key, "no such OCS in the fleet")
        if index != str(int(index)):  # pod0/x/00 beside pod0/x/0 would be one OCS read twice, the last one winning
            raise BadStateFile(file, f"ocs.{key}", key, f"must be written {pod}/{key.split('/')[1]}/{int(index)}")
        limit = len(pods[pod])
        if not pairs:
            continue
        # whole-list checks run at C speed (a fully wired 4-pod fleet has 12,288 pairs)
        if set(map(type, pairs)) != {list} or set(map(len, pairs)) != {2}:
            _bad_pair(key, pairs, limit, file)
        norths, souths = zip(*pairs, strict=True)
        if (
            set(map(type, norths)) != {int}
            or set(map(type, souths)) != {int}
            or min(norths) < 0
            or min(souths) < 0
            or max(norths) >= limit
            or max(souths) >= limit
        ):
            _bad_pair(key, pairs, limit, file)
        if len(set(norths)) != len(pairs) or len(set(souths)) != len(pairs):
            _port_reused(key, pairs, file)


def _bad_pair(key: str, pairs: list[Any], limit: int, file: str) -> NoReturn:
    for j, p in enumerate(pairs):
        if type(p) is not list or len(p) != 2 or type(p[0]) is not int or type(p[1]) is not int:
            raise BadStateFile(file, f"ocs.{key}.{j}", p, "must be [north port, south port], two integers")
        if not (0 <= p[0] < limit and 0 <= p[1] < limit):
            raise BadStateFile(file, f"ocs.{key}.{j}", p, f"port outside the {limit} cabled ports (0-{limit - 1})")
    raise BadStateFile(file, f"ocs.{key}", pairs, "must be a list of [north port, south port] pairs")


def _port_reused(key: str, pairs: list[list[int]], file: str) -> NoReturn:
    first: dict[tuple[str, int], int] = {}
    for j, pair in enumerate(pairs):
        for side, port in zip(("north", "south"), pair, strict=True):
            if (side, port) in first:
                raise BadStateFile(
                    file,
                    f"ocs.{key}.{j}",
                    pair,
                    f"{side} port {port} is already cross-connected by ocs.{key}.{first[side, port]}",
                )
            first[side, port] = j
    raise BadStateFile(file, f"ocs.{key}", pairs, "a port is cross-connected twice")


def _check_faults(doc: dict[str, Any], pods: dict[str, Any], pod_of: dict[str, str], file: str) -> None:
    """Each fault's target is in the fleet, ids are unique, and the counter is beyond every id (else the next
    fault would reuse one, and clearing it would clear both)."""
    from tpufleet.errors import BadInput
    from tpufleet.ids import OcsId, parse_target

    where: dict[str, int] = {}
    highest = 0
    for i, fault in enumerate(doc["faults"]):
        try:
            target = parse_target(fault["target"])
        except BadInput as exc:
            raise BadStateFile(file, f"faults.{i}.target", fault["target"], str(exc)) from None
        if isinstance(target, OcsId):
            if target.pod not in pods:
                raise BadStateFile(file, f"faults.{i}.target", fault["target"], f"no pod {target.pod} in the fleet")
        elif target.cube not in pod_of:
            raise BadStateFile(file, f"faults.{i}.target", fault["target"], f"no cube {target.cube} in the fleet")
        fid = fault["id"]
        if fid in where:
            raise BadStateFile(file, f"faults.{i}.id", fid, f"fault id also used by faults.{where[fid]}")
        where[fid] = i
        if len(fid) > MAX_FAULT_ID_CHARS:
            raise BadStateFile(file, f"faults.{i}.id", fid, "fault number too large")
        highest = max(highest, int(fid[1:]))
    if doc["next_fault"] > MAX_FAULT_NUMBER:  # the next fault's id could not be written (nor loaded again)
        raise BadStateFile(
            file,
            "next_fault",
            doc["next_fault"],
            f"fault number too large: the next fault's id would be over f{MAX_FAULT_NUMBER}, the last id "
            f"({MAX_FAULT_ID_CHARS} characters)",
        )
    if doc["next_fault"] <= highest:
        raise BadStateFile(
            file,
            "next_fault",
            doc["next_fault"],
            f"must be above the highest fault id (f{highest}): a new fault would reuse an id",
        )


def _check_slice_layout(name: str, sl: dict[str, Any], file: str) -> None:
    """The slice's shape, cubes, grid coordinates and machines agree (a hand edit may break any of them)."""
    import itertools

    from tpufleet.errors import BadInput
    from tpufleet.shapes import parse_shape

    where = f"slices.{name}"
    try:
        shape = parse_shape(sl["shape"], sl["twisted"])
    except BadInput as exc:
        raise BadStateFile(file, f"{where}.shape", sl["shape"], str(exc)) from None
    if len(sl["cubes"]) != shape.cubes:
        raise BadStateFile(file, f"{where}.cubes", sl["cubes"], f"a {shape.text} slice holds {shape.cubes} cube(s)")
    if set(sl["coords"]) != set(sl["cubes"]):
        raise BadStateFile(file, f"{where}.coords", sorted(sl["coords"]), "must give a position to each of its cubes")
    grid = {tuple(v) for v in sl["coords"].values()}
    if grid != set(itertools.product(*(range(n) for n in shape.cube_grid))):
        raise BadStateFile(
            file, f"{where}.coords", sl["coords"], f"positions must fill the {shape.cube_grid} cube grid"
        )
    if shape.is_subcube and len(sl.get("machines", ())) != shape.machines:
        raise BadStateFile(
            file,
            f"{where}.machines",
            sl.get("machines", NO_VALUE),
            f"a {shape.text} slice holds {shape.machines} machine(s)",
        )
