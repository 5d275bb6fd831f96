"""Use case of `tpufleet collective`: model a collective on a slice's current routing tables (read-only)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpufleet.collectives.algorithms import Context, best_of, estimate, why
from tpufleet.collectives.model import Estimate
from tpufleet.collectives.profile import Profile
from tpufleet.collectives.schedules import DIMS, twist_note
from tpufleet.collectives.tables import Tables
from tpufleet.errors import Refused
from tpufleet.fleetstate import FleetState
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


def slice_tables(state: FleetState, name: str, table_file: Path, assume_healthy: bool) -> tuple[Tables, dict[str, Any]]:
    """The slice's stored tables (or, with `assume_healthy` and none stored, the healthy DOR ones of its shape)."""
    from tpufleet.collectives import tables

    sl = state.slice(name)
    record = state.routes.get(name)
    if record is None or not table_file.exists():
        if not assume_healthy:
            raise Refused(
                f"slice {name!r} has no routing tables; run `tpufleet routes {name}` first "
                f"(or pass --assume-healthy to model the healthy tables of a {sl.shape})"
            )
        return tables.healthy(sl.shape), {"source": "assumed-healthy", "routing": "dor"}
    t = tables.load(table_file)
    if t.shape != sl.shape:
        raise Refused(
            f"the tables of {name!r} are for a {t.shape}, the slice is a {sl.shape}; run `tpufleet routes {name}`"
        )
    info = {
        "source": "stored",
        "file": str(table_file),
        "made": record.made,
        "routing": record.algorithm,
        "stale": record.stale,
        "stale_reason": record.stale_reason,
    }
    return t, info


def _best(ests: list[Estimate], t: Tables) -> Estimate:
    best = best_of(ests)
    if best is None:
        first: dict[str, str] = {}
        for e in ests:
            if e.undelivered is not None and e.algorithm not in first:
                s, d = e.undelivered
                first[e.algorithm] = f"{e.name}: {_chip(t, s)} has no route to {_chip(t, d)}"
        raise Refused(f"no algorithm for {ests[0].op} runs on these tables ({t.source})", list(first.values()))
    return best


def run(state: FleetState, name: str, req: Request, profile: Profile, table_file: Path) -> Outcome:
    """The modelled time and bandwidths of the collective, the algorithm chosen and why, and the candidates."""
    t, info = slice_tables(state, name, table_file, req.assume_healthy)
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
    best = _best(ests, t)
    data = _result(name, ctx, req, best, ests, info)
    data["sparse"] = sparse_info
    if t.degraded:
        from tpufleet.collectives.tables import healthy

        # Against the same request on the healthy slice (with auto, the best algorithm there).
        ref = best_of(estimate(Context(healthy(t.shape), profile), req.op, req.nbytes, req.algorithm, req.order))
        if ref is not None:
            data["healthy_time_s"] = ref.seconds
            data["slowdown"] = best.seconds / ref.seconds
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
