"""Use case of `tpufleet collective JOB`: the hierarchical all-reduce of a multislice job (ICI reduce-scatter in each
slice, DCN all-reduce between them, ICI all-gather), its share of a training step, and the same step on one slice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tpufleet.collectives.algorithms import Context, estimate
from tpufleet.collectives.profile import Profile
from tpufleet.errors import Refused
from tpufleet.fleetstate import FleetState
from tpufleet.ops.collective import TableSource, best_estimate, check_fits_hbm, slice_tables
from tpufleet.ops.outcome import Outcome

LAYOUTS = ("replicated", "sharded")


@dataclass
class JobRequest:
    nbytes: int
    model_flops_per_step: float | None = None
    assume_healthy: bool = False
    layout: str = "replicated"  # sharded: each chip of a slice holds its own share of the gradient


def _members(state: FleetState, name: str, req: JobRequest) -> list[Any]:
    """The slices the job runs on now: its active slices (an elastic job runs on without its evicted ones), or
    every slice while it is still being wired. Refused when it is stopped, and when it is pending and its tables
    are read (the job's wiring, then its tables: one slice's `routes` leaves the others unwired)."""
    from tpufleet.jobs import JobState, job_status

    status = job_status(state, name)
    if status.state is JobState.STOPPED:
        raise Refused(
            f"job {name!r} is stopped ({len(status.active)} of {status.total} slices active; evicted: "
            f"{', '.join(status.evicted)}); `tpufleet explain {name}` says how to bring it back"
        )
    slices = state.job_slices(name)
    if status.state is JobState.PENDING:
        unwired = [s.name for s in slices if not s.state.wired and not s.shape.is_subcube]
        if unwired and req.layout == "replicated" and not req.assume_healthy:
            raise Refused(
                f"job {name!r} is pending ({', '.join(unwired)} not wired yet) and has no routing tables for them; "
                f"run `tpufleet plan-xconnect {name} --apply`, then `tpufleet routes {name}` (or pass "
                f"--assume-healthy to model the healthy tables of a {state.job(name).shape})"
            )
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
    rs = best_estimate(estimate(ctx, "reduce-scatter", req.nbytes, "auto", None), t)
    ag = best_estimate(estimate(ctx, "all-gather", req.nbytes, "auto", None), t)
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

    check_fits_hbm(req.nbytes, profile, job=req.layout != "sharded")  # sharded already: no hint to shard
    job = state.job(name)
    members = _members(state, name, req)
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
