"""Use case of `tpufleet collective`: model a collective on a slice's current routing tables (read-only), or the
hierarchical all-reduce of a multislice job (ICI in each slice, DCN between them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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
        raise Refused(
            f"slice {name!r} is evicted and runs nowhere; run `tpufleet reschedule {name}` first "
            f"(or pass --assume-healthy to model the healthy tables of a {sl.shape})"
        )
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
    if t.shape != sl.shape:
        raise Refused(
            f"the tables of {name!r} are for a {t.shape}, the slice is a {sl.shape}; run `tpufleet routes {name}`"
        )
    # a command killed after its commit, before its tables were renamed in: the file holds the ones before them
    waiting = source.waiting(record)
    foreign = tables.not_indexed(t.meta, name, record, waiting)
    if foreign is not None:
        raise Refused(f"{source.path} {foreign}; run `tpufleet routes {name}`")
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
    best = _best(ests, t)
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
    data = _result(describe(dims, wraps), ctx, req, _best(ests, t), ests, {"source": "what-if", "routing": "dor"})
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


# ---- multislice jobs: the hierarchical all-reduce -----------------------------------------------------------------


LAYOUTS = ("replicated", "sharded")


@dataclass
class JobRequest:
    nbytes: int
    model_flops_per_step: float | None = None
    assume_healthy: bool = False
    layout: str = "replicated"  # sharded: each chip of a slice holds its own share of the gradient


def check_fits_hbm(nbytes: int, profile: Profile, job: bool) -> None:
    """A collective of more bytes per chip than a chip's HBM cannot run: BadInput naming the figure."""
    from tpufleet.errors import BadInput

    if nbytes > profile.hbm_bytes:
        hint = " (a larger gradient is sharded over the slice: give each chip's share with --layout sharded)"
        raise BadInput(
            f"bad option --bytes: {nbytes} bytes a chip is more than a chip's HBM ({profile.hbm_bytes:.0f} bytes in "
            f"the profile){hint if job else ''}"
        )


def _members(state: FleetState, name: str) -> list[Any]:
    """The slices the job runs on now: its active slices (an elastic job runs on without its evicted ones), or
    every slice while it is still being wired. Refused when it is stopped."""
    from tpufleet.jobs import JobState, job_status

    status = job_status(state, name)
    if status.state is JobState.STOPPED:
        raise Refused(
            f"job {name!r} is stopped ({len(status.active)} of {status.total} slices active; evicted: "
            f"{', '.join(status.evicted)}); `tpufleet explain {name}` says how to bring it back"
        )
    slices = state.job_slices(name)
    if status.state is JobState.PENDING:
        return slices
    return [s for s in slices if s.name in status.active]


def _slice_phases(state: FleetState, sl: Any, req: JobRequest, profile: Profile, source: TableSource) -> dict[str, Any]:
    """One slice's ICI reduce-scatter and all-gather of the job's bytes, on its current tables (none when the
    gradient is sharded: each chip's share is already its own)."""
    row = {"slice": sl.name, "pod": sl.pod, "state": sl.state.value}
    if req.layout == "sharded":
        none = "none (sharded)"
        return {**row, "reduce_scatter_s": 0.0, "reduce_scatter_algorithm": none, "all_gather_s": 0.0,
                "all_gather_algorithm": none, "tables": {"source": "not used", "degraded": False}}  # fmt: skip
    t, info = slice_tables(state, sl.name, source, req.assume_healthy)
    ctx = Context(t, profile)
    rs = _best(estimate(ctx, "reduce-scatter", req.nbytes, "auto", None), t)
    ag = _best(estimate(ctx, "all-gather", req.nbytes, "auto", None), t)
    return {
        **row,
        "reduce_scatter_s": rs.seconds,
        "reduce_scatter_algorithm": rs.name,
        "all_gather_s": ag.seconds,
        "all_gather_algorithm": ag.name,
        "tables": {**info, "degraded": t.degraded},
    }


def run_job(
    state: FleetState, name: str, req: JobRequest, profile: Profile, tables_of: Callable[[str], TableSource]
) -> Outcome:
    """The hierarchical all-reduce of a multislice job (ICI reduce-scatter, DCN all-reduce, ICI all-gather), its
    share of a training step, and the same step on one ICI slice of as many chips."""
    from tpufleet.collectives import dcn

    check_fits_hbm(req.nbytes, profile, job=True)
    job = state.job(name)
    members = _members(state, name)
    rows = [_slice_phases(state, sl, req, profile, tables_of(sl.name)) for sl in members]
    pods = sorted({sl.pod for sl in members})
    link = profile.dcn_link()
    # Replicated: after the reduce-scatter a slice's chips hold SIZE between them; sharded, SIZE x chips.
    per_slice = req.nbytes * (job.shape.chips if req.layout == "sharded" else 1)
    phase = dcn.dcn_all_reduce(per_slice, len(members), dcn.hosts(job.shape), link, across_pods=len(pods) > 1)
    h = dcn.hierarchical([r["reduce_scatter_s"] for r in rows], phase, [r["all_gather_s"] for r in rows])
    chips = job.shape.chips * len(members)
    step = None
    if req.model_flops_per_step is not None:
        step = dcn.step(req.model_flops_per_step, chips, profile, h.seconds, phase.seconds)
    # one slice of the job's chips: in a pod of the job's generation (the built-in TPU v4 pod's forms without one)
    generation = state.fleet.pod_by_name[members[0].pod].generation if members else None
    alike = [p for p in state.fleet.pods if p.generation == generation]
    max_cubes = max((len(p.cubes) for p in alike), default=0)
    data = {
        "job": name,
        "shape": job.shape.text,
        "twisted": job.shape.twisted,
        "slices": len(members),
        "total_slices": len(job.slices),
        "chips": chips,
        "hosts_per_slice": phase.hosts_per_slice,
        "pods": pods,
        "op": "all-reduce",
        "bytes": req.nbytes,
        "layout": req.layout,
        "time_s": h.seconds,
        "phases": _phases(h, rows),
        "per_slice": rows,
        "step": _step_record(step, req.model_flops_per_step),
        "one_slice": _one_slice(chips, req, profile, (max_cubes, generation), h.seconds, step),
        "profile": _profile_record(profile),
    }
    return Outcome(data, None)


def _slowest(rows: list[dict[str, Any]], key: str) -> str:
    return str(max(rows, key=lambda r: r[key])["slice"])


def _phases(h: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    d = h.dcn
    return [
        {
            "phase": "ici-reduce-scatter",
            "seconds": h.reduce_scatter_s,
            "slowest_slice": _slowest(rows, "reduce_scatter_s"),
        },
        {
            "phase": "dcn-all-reduce",
            "seconds": d.seconds,
            "latency_s": d.latency_s,
            "bandwidth_s": d.bandwidth_s,
            "ring_size": d.slices,
            "bytes_per_host": d.bytes_per_host,
            "host_bandwidth_Bps": d.host_bandwidth,
            "oversubscription": d.oversubscription,
        },
        {"phase": "ici-all-gather", "seconds": h.all_gather_s, "slowest_slice": _slowest(rows, "all_gather_s")},
    ]


def _step_record(step: Any, flops: float | None) -> dict[str, Any] | None:
    if step is None:
        return None
    return {
        "model_flops_per_step": flops,
        "compute_s": step.compute_s,
        "step_s": step.seconds,
        "all_reduce_fraction": step.all_reduce_fraction,
        "dcn_fraction": step.dcn_fraction,
    }


def _one_slice(
    chips: int, req: JobRequest, profile: Profile, pods: tuple[int, Any], job_s: float, job_step: Any
) -> dict[str, Any]:
    """The same chips as one ICI slice: the fastest shape of that many chips a pod of the job's generation holds
    (`pods`: its most cubes, the generation; healthy tables), or why there is none."""
    from tpufleet.collectives import dcn
    from tpufleet.collectives.cost import collective_time

    max_cubes, generation = pods
    shapes = dcn.one_slice_shapes(chips, max_cubes, generation)
    if req.layout == "sharded":  # one slice has no shards to exchange: its step is the compute alone
        return _one_sharded_slice(shapes, chips, req, profile, pods, job_step)
    timed = [(collective_time(s, req.nbytes, "all-reduce", profile), s) for s in shapes]
    timed = [(t, s) for t, s in timed if t != float("inf")]
    if not timed:
        note = _no_one_slice(chips, max_cubes, generation)
        return {"shape": None, "twisted": None, "all_reduce_s": None, "all_reduce_ratio": None,
                "step_s": None, "throughput_ratio": None, "note": note}  # fmt: skip
    seconds, shape = min(timed, key=lambda ts: ts[0])
    one_step = None if job_step is None else dcn.step(req.model_flops_per_step or 0.0, chips, profile, seconds)
    return {
        "shape": shape.text,
        "twisted": shape.twisted,
        "all_reduce_s": seconds,
        "all_reduce_ratio": job_s / seconds,
        "step_s": None if one_step is None else one_step.seconds,
        "throughput_ratio": None if one_step is None else one_step.seconds / job_step.seconds,
        "note": f"fastest of {', '.join(str(s) for _, s in timed)} (healthy tables)",
    }


def _one_sharded_slice(
    shapes: list[Any], chips: int, req: JobRequest, profile: Profile, pods: tuple[int, Any], job_step: Any
) -> dict[str, Any]:
    """With a sharded gradient, the same chips as one slice have no DCN exchange, and what the chips exchange
    inside a slice (not modelled) is the same in both: the step is the compute alone."""
    from tpufleet.collectives import dcn

    if not shapes:
        return {"shape": None, "twisted": None, "all_reduce_s": None, "all_reduce_ratio": None,
                "step_s": None, "throughput_ratio": None, "note": _no_one_slice(chips, *pods)}  # fmt: skip
    one_step = None if job_step is None else dcn.step(req.model_flops_per_step or 0.0, chips, profile, 0.0)
    return {
        "shape": shapes[0].text,
        "twisted": shapes[0].twisted,
        "all_reduce_s": 0.0,
        "all_reduce_ratio": None,
        "step_s": None if one_step is None else one_step.seconds,
        "throughput_ratio": None if one_step is None else one_step.seconds / job_step.seconds,
        "note": "sharded: one slice of these chips exchanges no shards over the DCN; the step is its compute",
    }


def _no_one_slice(chips: int, max_cubes: int, generation: Any = None) -> str:
    """Why the same chips cannot be one slice: no slice shape has that many chips, or none fits a pod."""
    from tpufleet.collectives import dcn

    if dcn.one_slice_shapes(chips, 10**9, generation):
        return f"no slice of {chips} chips: its shapes need more cubes than a pod of {max_cubes} has"
    return f"no slice of {chips} chips: no documented slice shape (torus or sub-cube block) has that many chips"


def _profile_record(profile: Profile) -> dict[str, Any]:
    link = profile.dcn_link()
    return {
        "name": profile.name,
        "file": profile.file,
        "link_bandwidth_Bps": profile.link_bandwidth,
        "hop_latency_s": profile.hop_latency,
        "peak_flops": profile.peak_flops,
        "dcn": {
            "host_bandwidth_Bps": link.host_bandwidth,
            "latency_s": link.latency,
            "pod_oversubscription": link.pod_oversubscription,
            "source": link.source,
        },
    }
