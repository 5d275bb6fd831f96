"""Use case of `tpufleet collective`: model a collective on a slice's current routing tables (read-only), or the
hierarchical all-reduce of a multislice job (ICI in each slice, DCN between them)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tpufleet.collectives.algorithms import Context, best_of, complete_order, estimate, why
from tpufleet.collectives.model import Estimate
from tpufleet.collectives.profile import Profile
from tpufleet.collectives.schedules import twist_note
from tpufleet.collectives.tables import Tables
from tpufleet.constants import DIMS
from tpufleet.errors import Refused
from tpufleet.fleetstate import FleetState, RouteRecord, SliceState
from tpufleet.ops.outcome import Outcome


@dataclass
class Request:
    op: str
    nbytes: int
    algorithm: str = "auto"
    order: tuple[int, ...] | None = None
    table_capacity: int | None = None
    assume_healthy: bool = False


def _chip(t: Tables, chip: int) -> str:
    _X, Y, Z = t.shape.dims
    return f"chip {chip} ({chip // (Y * Z)},{chip // Z % Y},{chip % Z})"


class TableSource(Protocol):
    """Where a slice's stored tables are (the state layer's `StoredTables`): read only when the index has them."""

    @property
    def path(self) -> Path: ...

    def read(self) -> Tables | None: ...

    def waiting(self, entry: RouteRecord) -> bool: ...


def slice_tables(
    state: FleetState, name: str, source: TableSource, assume_healthy: bool
) -> tuple[Tables, dict[str, Any]]:
    """The slice's stored tables (or, with `assume_healthy` and none stored, the healthy DOR ones of its shape)."""
    from tpufleet.collectives import tables

    sl = state.slice(name)
    if sl.state is SliceState.EVICTED and not assume_healthy:
        # its stored tables describe cubes it no longer holds, and `routes` refuses it until it is placed again
        from tpufleet.movesteps import evicted_refusal

        also = f"; or pass --assume-healthy to model the healthy tables of a {sl.shape}"
        raise evicted_refusal(name, " and runs nowhere", also)
    record = None if sl.state is SliceState.EVICTED else state.routes.get(name)
    t = source.read() if record is not None else None
    if record is None or t is None:
        if not assume_healthy:
            _refuse_unwired(sl)
            raise Refused(
                f"slice {name!r} has no routing tables; run `tpufleet routes {name}` first "
                f"(or pass --assume-healthy to model the healthy tables of a {sl.shape})"
            )
        return tables.healthy(sl.shape), {"source": "assumed-healthy", "routing": "dor"}
    # a command killed after its commit, before its tables were renamed in: the file holds the ones before them
    waiting = source.waiting(record)
    foreign = tables.not_indexed(t.meta, name, record, waiting)
    if foreign is not None:  # first: another slice's tables of another shape are named as theirs, with the file
        raise Refused(f"{source.path} {foreign}; run `tpufleet routes {name}`")
    if t.shape != sl.shape:
        raise Refused(
            f"the tables of {name!r} are for a {t.shape}, the slice is a {sl.shape}; run `tpufleet routes {name}`"
        )
    info = {
        "source": "stored",
        "file": str(source.path),
        "made": record.made,
        "routing": record.algorithm,
        "stale": record.stale,
        "stale_reason": record.stale_reason,
    }
    if waiting and not record.stale:  # the next change installs the indexed tables
        info["stale"] = True
        info["stale_reason"] = tables.WAITING_REASON
    return t, info


def _refuse_unwired(sl: Any) -> None:
    """Refused naming the wiring step when the slice has no tables because it is not wired yet: `routes` refuses
    such a slice, so it is not the next step."""
    if not sl.state.wired and not sl.shape.is_subcube:
        raise Refused(
            f"slice {sl.name!r} is {sl.state}, not wired, and has no routing tables; run "
            f"`tpufleet plan-xconnect {sl.name} --apply`, then `tpufleet routes {sl.name}` "
            f"(or pass --assume-healthy to model the healthy tables of a {sl.shape})"
        )


def best_estimate(ests: list[Estimate], t: Tables) -> Estimate:
    best = best_of(ests)
    if best is None:
        first: dict[str, str] = {}
        for e in ests:
            if e.undelivered is not None and e.algorithm not in first:
                s, d = e.undelivered
                first[e.algorithm] = f"{e.name}: {_chip(t, s)} has no route to {_chip(t, d)}"
        raise Refused(f"no algorithm for {ests[0].op} runs on these tables ({t.source})", list(first.values()))
    return best


def run(state: FleetState, name: str, req: Request, profile: Profile, source: TableSource) -> Outcome:
    """The modelled time and bandwidths of the collective, the algorithm chosen and why, and the candidates."""
    check_fits_hbm(req.nbytes, profile, job=False)
    t, info = slice_tables(state, name, source, req.assume_healthy)
    req = dataclasses.replace(req, order=complete_order(req.order, t.shape.dims))
    sparse_info: dict[str, Any] | None = None
    if req.table_capacity is not None:
        from tpufleet.collectives.sparse import sparse

        t, missing = sparse(t, req.table_capacity)
        kept = (t.port >= 0).sum(axis=1)  # the chip itself is -1, not counted
        sparse_info = {"capacity": req.table_capacity, "max_entries": int(kept.max()), "ring_entries_missing": missing}
        info["source"] = "sparse"
    ctx = Context(t, profile)
    if sparse_info is not None:
        sparse_info["algorithms"] = _which_run(estimate(ctx, req.op, req.nbytes, "auto", None))
    ests = estimate(ctx, req.op, req.nbytes, req.algorithm, req.order)
    best = best_estimate(ests, t)
    data = _result(name, ctx, req, best, ests, info)
    data["sparse"] = sparse_info
    if t.degraded:
        from tpufleet.collectives.tables import healthy_as_routed

        # Against the same request on the healthy slice's own tables (with auto, the best algorithm there).
        healthy_ctx = Context(healthy_as_routed(t.shape), profile)
        ref = best_of(estimate(healthy_ctx, req.op, req.nbytes, req.algorithm, req.order))
        if ref is not None:
            data["healthy_time_s"] = ref.seconds
            data["slowdown"] = best.seconds / ref.seconds
    return Outcome(data, None)


def run_what_if(dims: tuple[int, int, int], wraps: tuple[bool, bool, bool], req: Request, profile: Profile) -> Outcome:
    """The collective on a topology that needs no fleet (`--topology 128x32 --wrap y`): its healthy
    dimension-order tables (`tpufleet.collectives.whatif`); `slice` is the topology's description."""
    from tpufleet.collectives.whatif import describe, what_if_tables

    check_fits_hbm(req.nbytes, profile, job=False)
    req = dataclasses.replace(req, order=complete_order(req.order, dims))
    t = what_if_tables(dims, wraps)
    ctx = Context(t, profile)
    ests = estimate(ctx, req.op, req.nbytes, req.algorithm, req.order)
    data = _result(
        describe(dims, wraps), ctx, req, best_estimate(ests, t), ests, {"source": "what-if", "routing": "dor"}
    )
    data["wrap"] = t.meta["wrap"]
    data["sparse"] = None
    return Outcome(data, None)


def _which_run(ests: list[Estimate]) -> list[dict[str, Any]]:
    """Per algorithm: whether it runs on the tables, and in which dimension orders."""
    out: dict[str, dict[str, Any]] = {}
    for e in ests:
        row = out.setdefault(e.algorithm, {"algorithm": e.algorithm, "runs": False, "dims": []})
        row["runs"] = row["runs"] or e.runs
        if e.order and e.runs:
            row["dims"].append("".join(DIMS[d] for d in e.order))
    return list(out.values())


def _result(
    name: str, ctx: Context, req: Request, best: Estimate, ests: list[Estimate], info: dict[str, Any]
) -> dict[str, Any]:
    t, profile = ctx.tables, ctx.profile
    dims = "".join(DIMS[d] for d in best.order) if best.order else None
    return {
        "slice": name,
        "shape": t.shape.text,
        "twisted": t.shape.twisted,
        "chips": t.n,
        "op": req.op,
        "bytes": req.nbytes,
        "algorithm": best.algorithm,
        "dims": dims,
        "time_s": best.seconds,
        "latency_s": best.latency,
        "bandwidth_s": best.bandwidth,
        "algorithm_bandwidth_Bps": req.nbytes / best.seconds if best.seconds else None,
        "bus_bandwidth_Bps": best.bus_bandwidth(),
        "split": list(best.shares) if best.shares else None,
        "why": why(best, ests) if len(ests) > 1 else f"{best.name}, as asked",
        "twist": twist_note(t.shape, ctx.dim_phases(best.order)) if best.order else None,
        "phases": [ph.as_dict(profile, best.passes) for ph in best.phases],
        "tables": {**info, "degraded": t.degraded},
        "healthy_time_s": best.seconds if not t.degraded else None,
        "slowdown": 1.0 if not t.degraded else None,
        "candidates": [_candidate(e, t) for e in sorted(ests, key=lambda e: e.seconds)],
        "profile": {
            "name": profile.name,
            "file": profile.file,
            "link_bandwidth_Bps": profile.link_bandwidth,
            "dimension_bandwidth_Bps": dict(profile.dimension_bandwidth),
            "hop_latency_s": profile.hop_latency,
        },
    }


def _candidate(e: Estimate, t: Tables) -> dict[str, Any]:
    return {
        "algorithm": e.algorithm,
        "dims": "".join(DIMS[d] for d in e.order) if e.order else None,
        "runs": e.runs,
        "time_s": e.seconds if e.runs else None,
        "bus_bandwidth_Bps": e.bus_bandwidth() if e.runs else None,
        "not_delivered": None
        if e.undelivered is None
        else f"{_chip(t, e.undelivered[0])} -> {_chip(t, e.undelivered[1])}",
    }


def check_fits_hbm(nbytes: int, profile: Profile, job: bool) -> None:
    """A collective of more bytes per chip than a chip's HBM cannot run: BadInput naming the figure."""
    from tpufleet.errors import BadInput

    if nbytes > profile.hbm_bytes:
        hint = " (a larger gradient is sharded over the slice: give each chip's share with --layout sharded)"
        raise BadInput(
            f"bad option --bytes: {nbytes} bytes a chip is more than a chip's HBM ({profile.hbm_bytes:.0f} bytes in "
            f"the profile){hint if job else ''}"
        )
