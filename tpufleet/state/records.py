"""The file forms of the state's records: what `state.json` (and the journal's moved faults) hold.

These are the file schema's, kept apart from the `record()` methods of the typed objects, which are the output
contract (`-o json`): today the two agree field for field, and either can change without the other (a test holds
`encode` independent of `record()`). `codec.py` assembles the document from them.
"""

from __future__ import annotations

from typing import Any

from tpufleet.allocation import Allocation
from tpufleet.fleetstate import Fault, Reroute, Slice
from tpufleet.gkerecords import AlertMark, MaintenanceWindow, NodePoolSlice, SubBlockRecord
from tpufleet.journalentry import MOVED_FAULTS, JournalEntry

Doc = dict[str, Any]

__all__ = [
    "alert_mark_doc",
    "fault_doc",
    "fields_doc",
    "journal_doc",
    "node_pool_doc",
    "placement_doc",
    "reroute_doc",
    "slice_doc",
    "sub_block_doc",
    "with_set",
]


def with_set(out: Doc, **optional: object) -> Doc:
    """`out` with those of `optional` that are set (not None): optional fields only when set, so older files keep
    their shape."""
    out.update({k: v for k, v in optional.items() if v is not None})
    return out


def fields_doc(obj: object, always: tuple[str, ...], optional: tuple[str, ...] = ()) -> Doc:
    """The attributes `always` of `obj`, then those of `optional` that are set, each under its own name."""
    return with_set({k: getattr(obj, k) for k in always}, **{k: getattr(obj, k) for k in optional})


_FAULT_FIELDS = ("id", "target", "planned", "reason", "opened", "cleared")
_FAULT_OPTIONAL = ("opened_serial", "window_start", "window_end")  # the window only on drains of announced maintenance


def fault_doc(f: Fault) -> Doc:
    out = fields_doc(f, _FAULT_FIELDS, _FAULT_OPTIONAL)
    out["target"] = str(f.target)
    return out


def alert_mark_doc(m: AlertMark) -> Doc:
    return {"fingerprint": m.fingerprint, "starts_at": m.starts_at, "target": m.target, "fault": m.fault}


def reroute_doc(r: Reroute) -> Doc:
    return {"all_to_all_retained": r.retained, "vcs": r.vcs, "faults": list(r.faults)}


def placement_doc(a: Allocation) -> Doc:
    out: Doc = {"pod": a.pod, "cubes": list(a.cubes), "coords": {c: list(v) for c, v in a.coords.items()}}
    if a.machines:
        out["machines"], out["origin"] = list(a.machines), list(a.origin or (0, 0, 0))
    return out


def slice_doc(sl: Slice) -> Doc:
    """A slice (its name is the key, not a field); optional fields only when set, so older files keep their shape."""
    out: Doc = {
        "shape": sl.shape.text,
        "twisted": sl.shape.twisted,
        "pod": sl.pod,
        "cubes": list(sl.cubes),
        "coords": {c: list(v) for c, v in sl.coords.items()},
        "state": sl.state.value,
        "fault_tolerant_routing": sl.fault_tolerant_routing,
    }
    with_set(
        out,
        created=sl.created,
        connected_serial=sl.connected_serial,
        evicted_by=sl.evicted_by,
        reroute=reroute_doc(sl.reroute) if sl.reroute else None,
        proposal=placement_doc(sl.proposal) if sl.proposal else None,
    )
    out["min_throughput"] = sl.min_throughput
    if sl.job is not None:
        out["job"] = sl.job
    if sl.machines:
        out["machines"] = list(sl.machines)
        out["origin"] = list(sl.origin or (0, 0, 0))
    return out


def _window_doc(m: MaintenanceWindow) -> Doc:
    return with_set({"status": m.status}, type=m.kind, window_start=m.start, window_end=m.end)


def sub_block_doc(r: SubBlockRecord) -> Doc:
    maintenance = _window_doc(r.maintenance) if r.maintenance is not None else None
    out: Doc = {"cube": r.cube, "block": r.block, "health": r.health}
    hosts = {"healthy_hosts": r.healthy_hosts, "degraded_hosts": r.degraded_hosts}
    return with_set(out, **hosts, maintenance=maintenance, sub_block=r.position)


def node_pool_doc(p: NodePoolSlice) -> Doc:
    out: Doc = {"shape": p.shape.text, "accelerator": p.accelerator, "pod": p.pod, "nodes": list(p.nodes)}
    return with_set(out, placed_cubes=list(p.placed_cubes) or None, topology=list(p.topology) or None)


def journal_doc(e: JournalEntry) -> Doc:
    """A journal line (its keys sorted when written); optional fields only when set."""
    out: Doc = {"serial": e.serial, "time": e.time, "user": e.user, "command": e.command, "summary": e.summary}
    with_set(out, pid=e.pid, details=e.details, delta=e.delta)
    if e.moved_faults:
        out[MOVED_FAULTS] = list(e.moved_faults)
    return out
