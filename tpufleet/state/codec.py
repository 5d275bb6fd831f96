"""The state document <-> `FleetState`: the only place that knows the file's field names (with `records.py`, the
file forms of the records, kept apart from the output contract's `record()`).

`decode` expects a document that passed `schema.validate`; `encode` gives one that passes it again, with the
same keys the file has always had (the JSON contract of `state.json`).
"""

from __future__ import annotations

from typing import Any

from tpufleet.allocation import Allocation
from tpufleet.fleetparts import Pair
from tpufleet.fleetstate import (
    DEFAULT_MIN_THROUGHPUT,
    Fault,
    FleetState,
    Job,
    Reroute,
    RouteRecord,
    Slice,
    SliceState,
)
from tpufleet.gkerecords import AlertMark, K8sNames, MaintenanceWindow, NodePoolSlice, ReservationNames, SubBlockRecord
from tpufleet.ids import HostId, OcsId, parse_target
from tpufleet.model import Fleet, Pod
from tpufleet.shapes import Shape, Vec, parse_dims, parse_shape
from tpufleet.state import generations, records

Doc = dict[str, Any]


def _vec(value: list[int]) -> Vec:
    return (int(value[0]), int(value[1]), int(value[2]))


def decode(doc: Doc) -> FleetState:
    fleet = Fleet(tuple(_decode_pod(p) for p in doc["fleet"]["pods"]))
    return FleetState(
        fleet=fleet,
        serial=doc["serial"],
        created=doc.get("created"),
        next_fault=doc["next_fault"],
        faults=[_decode_fault(f) for f in doc["faults"]],
        slices={name: _decode_slice(name, sl) for name, sl in doc["slices"].items()},
        ocs={OcsId.from_key(key): frozenset((int(n), int(s)) for n, s in pairs) for key, pairs in doc["ocs"].items()},
        routes={name: RouteRecord(**entry) for name, entry in doc["routes"].items()},
        k8s=_decode_k8s(doc.get("k8s", {})),
        jobs={name: _decode_job(name, job) for name, job in doc.get("jobs", {}).items()},
        reservation=_decode_reservation(doc.get("reservation", {})),
        alert_marks=_decode_alert_marks(doc.get("alert_marks", [])),
        pruned_history=dict(doc.get("pruned_fault_history", {})),
    )


def _decode_alert_marks(marks: list[Doc]) -> dict[str, AlertMark]:
    """Alerts that opened faults, oldest first (absent from states written before they were kept)."""
    return {m["fingerprint"]: AlertMark(m["fingerprint"], m["starts_at"], m["target"], m["fault"]) for m in marks}


def _decode_reservation(res: Doc) -> ReservationNames:
    """A reservation's sub-blocks as cubes (absent from states without an imported reservation)."""
    sub_blocks = {}
    for name, r in res.get("sub_blocks", {}).items():
        m = r.get("maintenance")
        window = None
        if m is not None:
            window = MaintenanceWindow(m["status"], m.get("type"), m.get("window_start"), m.get("window_end"))
        sub_blocks[name] = SubBlockRecord(
            r["cube"],
            r["block"],
            r["health"],
            r.get("healthy_hosts"),
            r.get("degraded_hosts"),
            window,
            r.get("sub_block"),
        )
    return ReservationNames(dict(res.get("blocks", {})), sub_blocks)


def _decode_pod(pod: Doc) -> Pod:
    """A pod; `generation` names a shipped profile (absent: the built-in TPU v4 model, as in older states)."""
    name = pod.get("generation")
    return Pod(pod["name"], tuple(pod["cubes"]), None if name is None else generations.shipped(name))


def _encode_pod(pod: Pod) -> Doc:
    out: Doc = {"name": pod.name, "cubes": list(pod.cubes)}
    if pod.generation is not None:  # only when set: a state of the built-in v4 model keeps the file's old shape
        out["generation"] = pod.generation.name
    return out


def _decode_job(name: str, job: Doc) -> Job:
    """A multislice job (absent from states written before jobs existed)."""
    return Job(
        name=name,
        shape=parse_shape(job["shape"], job["twisted"]),
        slices=tuple(job["slices"]),
        elastic_min=job.get("elastic_min"),
        spread=job["spread"],
        created=job.get("created"),
    )


def _decode_k8s(names: Doc) -> K8sNames:
    """Kubernetes names (absent from states written before `import k8s` existed); hosts already checked."""
    nodes = {}
    for node, host in names.get("nodes", {}).items():
        cube, _, machine = host[len("host:") :].partition("/")
        nodes[node] = HostId(cube, int(machine))
    pools = {
        name: NodePoolSlice(
            Shape(parse_dims(p["shape"])),
            p["accelerator"],
            p["pod"],
            tuple(p["nodes"]),
            tuple(p.get("placed_cubes", ())),
            tuple(p.get("topology", ())),  # absent from states written before it was kept
        )
        for name, p in names.get("node_pools", {}).items()
    }
    degraded = frozenset(names.get("degraded_cubes", ()))
    blocks, partitions, sub_blocks = (dict(names.get(k, {})) for k in ("blocks", "partitions", "sub_blocks"))
    return K8sNames(blocks, partitions, nodes, degraded, pools, sub_blocks)


def _decode_fault(f: Doc) -> Fault:
    return Fault(
        f["id"],
        parse_target(f["target"]),
        f["planned"],
        f["opened"],
        f["cleared"],
        f.get("reason", ""),
        f.get("opened_serial"),
        f.get("window_start"),
        f.get("window_end"),
    )


def _decode_slice(name: str, sl: Doc) -> Slice:
    shape = parse_shape(sl["shape"], sl["twisted"])
    return Slice(
        name=name,
        shape=shape,
        pod=sl["pod"],
        cubes=tuple(sl["cubes"]),
        coords={c: _vec(v) for c, v in sl["coords"].items()},
        state=SliceState(sl["state"]),
        fault_tolerant_routing=sl["fault_tolerant_routing"],
        created=sl.get("created"),
        machines=tuple(sl.get("machines", ())),
        origin=_vec(sl["origin"]) if sl.get("origin") else None,
        connected_serial=sl.get("connected_serial"),
        evicted_by=sl.get("evicted_by"),
        min_throughput=sl.get("min_throughput", DEFAULT_MIN_THROUGHPUT),
        reroute=_decode_reroute(sl["reroute"]) if "reroute" in sl else None,
        proposal=_decode_placement(sl["proposal"]) if "proposal" in sl else None,
        job=sl.get("job"),
    )


def _decode_reroute(r: Doc) -> Reroute:
    return Reroute(r["all_to_all_retained"], r["vcs"], tuple(r["faults"]))


def _decode_placement(p: Doc) -> Allocation:
    origin = _vec(p["origin"]) if p.get("origin") else None
    return Allocation(
        p["pod"], tuple(p["cubes"]), {c: _vec(v) for c, v in p["coords"].items()}, tuple(p.get("machines", ())), origin
    )


def encode(state: FleetState) -> Doc:
    doc: Doc = {
        "serial": state.serial,
        "next_fault": state.next_fault,
        "fleet": {"pods": [_encode_pod(p) for p in state.fleet.pods]},
        "faults": [records.fault_doc(f) for f in state.faults],
        "slices": {name: records.slice_doc(sl) for name, sl in state.slices.items()},
        "ocs": {k.key: _pairs(v) for k, v in sorted(state.ocs.items()) if v},
        "routes": {name: _encode_route(r) for name, r in state.routes.items()},
    }
    if state.created is not None:
        doc["created"] = state.created
    if state.k8s:  # only once a cluster was imported: other states keep the file's old shape
        doc["k8s"] = {
            "blocks": dict(sorted(state.k8s.blocks.items())),
            "partitions": dict(sorted(state.k8s.partitions.items())),
            "nodes": {node: str(host) for node, host in sorted(state.k8s.nodes.items())},
        }
        if state.k8s.sub_blocks:  # only once a partition's nodes gave their physical sub-block
            doc["k8s"]["sub_blocks"] = dict(sorted(state.k8s.sub_blocks.items()))
        if state.k8s.degraded:  # only once a partition was DEGRADED: other states keep the file's old shape
            doc["k8s"]["degraded_cubes"] = sorted(state.k8s.degraded)
        if state.k8s.node_pools:  # only once a node pool was held unplaced
            doc["k8s"]["node_pools"] = {
                name: records.node_pool_doc(p) for name, p in sorted(state.k8s.node_pools.items())
            }
    if state.jobs:  # only once there are jobs, as for `k8s`: other states keep the file's old shape
        doc["jobs"] = {name: _encode_job(job) for name, job in sorted(state.jobs.items())}
    if state.reservation:  # only once a reservation was imported, as for `k8s`
        doc["reservation"] = {
            "blocks": dict(sorted(state.reservation.blocks.items())),
            "sub_blocks": {name: records.sub_block_doc(r) for name, r in sorted(state.reservation.sub_blocks.items())},
        }
    if state.alert_marks:  # only while alerts that opened faults are remembered, as for `k8s`
        doc["alert_marks"] = [records.alert_mark_doc(m) for m in state.alert_marks.values()]
    if state.pruned_history:  # only once cleared faults have been moved to the journal
        doc["pruned_fault_history"] = dict(sorted(state.pruned_history.items()))
    return doc


def _encode_job(job: Job) -> Doc:
    out: Doc = {
        "shape": job.shape.text,
        "twisted": job.shape.twisted,
        "slices": list(job.slices),
        "spread": job.spread,
    }
    if job.elastic_min is not None:
        out["elastic_min"] = job.elastic_min
    if job.created is not None:
        out["created"] = job.created
    return out


def _pairs(pairs: frozenset[Pair]) -> list[list[int]]:
    return [list(p) for p in sorted(pairs)]


_ROUTE_FIELDS = ("file", "serial", "made", "algorithm", "vcs", "routable_pairs", "unroutable_pairs", "stale")


def _encode_route(r: RouteRecord) -> Doc:
    return records.fields_doc(r, _ROUTE_FIELDS, ("stale_reason", "tables_id"))
