"""`tpufleet collective SLICE|JOB --op ... --bytes SIZE`: time and bus bandwidth of a collective on the slice's
tables, or the hierarchical all-reduce of a multislice job (ICI in each slice, DCN between them)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit, grid
from tpufleet.constants import MAX_TABLE_CAPACITY

if TYPE_CHECKING:
    from tpufleet.collectives.profile import Profile
    from tpufleet.fleetstate import FleetState


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.4g} ms"


def _gbs(bps: float | None) -> str:
    return "-" if bps is None else f"{bps / 1e9:.2f} GB/s"


def _text(d: dict[str, Any]) -> str:
    lines = [*_summary_lines(d), *_note_lines(d)]
    lines += ["", grid(_phase_rows(d), ["dim", "ring", "step", "steps", "time", "msgs/link", "hops"])]
    lines += ["", grid(_candidate_rows(d), ["candidate", "time", "bus bandwidth", "cannot deliver"])]
    return "\n".join(lines)


def _summary_lines(d: dict[str, Any]) -> list[str]:
    """The collective, its slice and tables, the algorithm chosen, its time and bandwidths."""
    tables = d["tables"]
    return [
        f"{d['op']} of {d['bytes']} bytes per chip on {'the what-if network' if tables['source'] == 'what-if' else 'slice'} {d['slice']} ({d['shape']}{' twisted' if d['twisted'] else ''}, "
        f"{d['chips']} chips; tables {tables['source']}{', degraded' if tables['degraded'] else ''}"
        f"{', STALE' if tables.get('stale') else ''})",
        f"  algorithm        {d['algorithm']}{' (' + d['dims'] + ')' if d['dims'] else ''}"
        + (f", data split {' / '.join(f'{v:.3g}' for v in d['split'])}" if d["split"] else ""),
        f"  time             {_ms(d['time_s'])}  (latency {_ms(d['latency_s'])}, bandwidth {_ms(d['bandwidth_s'])})",
        f"  bandwidth        algorithm {_gbs(d['algorithm_bandwidth_Bps'])}, bus {_gbs(d['bus_bandwidth_Bps'])}",
    ]


def _profile_line(p: dict[str, Any]) -> str:
    """The figures the times rest on, so a reader can check them by hand (2(n-1)/n x bytes / link bandwidth)."""
    dims = "".join(f", {dim} {_gbs(bps)}" for dim, bps in sorted(p["dimension_bandwidth_Bps"].items()))
    return (
        f"  profile          {p['name']}: {_gbs(p['link_bandwidth_Bps'])} per ICI link and direction{dims}, "
        f"{p['hop_latency_s'] * 1e6:g} us a hop"
    )


def _note_lines(d: dict[str, Any]) -> list[str]:
    """Against the healthy slice, why this algorithm, stale tables, the twist and sparse tables."""
    tables = d["tables"]
    lines = []
    if d["slowdown"] is not None and tables["degraded"]:
        lines.append(f"  healthy          {_ms(d['healthy_time_s'])}; slowdown {d['slowdown']:.3f}x")
    lines.append(f"  why              {d['why']}")
    lines.append(_profile_line(d["profile"]))
    if tables.get("stale"):
        lines.append(
            f"  note             the tables are stale ({tables['stale_reason']}); "
            f"run `tpufleet routes {d['slice']}` to model the network as it is now"
        )
    if d["twist"]:
        lines.append(f"  twist            {d['twist']}")
    if d["sparse"]:
        sp = d["sparse"]
        runs = ", ".join(f"{a['algorithm']} {'runs' if a['runs'] else 'does not run'}" for a in sp["algorithms"])
        lines.append(f"  sparse tables    at most {sp['capacity']} destinations a chip: {runs}")
    return lines


def _phase_rows(d: dict[str, Any]) -> list[list[Any]]:
    return [
        [
            ph["dimension"] or "-",
            ph["ring_size"],
            ph["step"],
            ph["steps"],
            _ms(ph["seconds"]),
            ph["max_link_messages"],
            ph["hops"],
        ]
        for ph in d["phases"]
    ]


def _candidate_rows(d: dict[str, Any]) -> list[list[Any]]:
    return [
        [
            c["algorithm"] + (f" ({c['dims']})" if c["dims"] else ""),
            _ms(c["time_s"]),
            _gbs(c["bus_bandwidth_Bps"]),
            c["not_delivered"] or "",
        ]
        for c in d["candidates"]
    ]


def _profile_for(state: "FleetState", name: str, profile_file: "Path | None") -> "Profile":
    """--profile when given; else the slice's (or the job's first slice's) pod generation's figures over the shipped
    profile; else the shipped TPU v4 profile."""
    from tpufleet.collectives.profile import for_generation
    from tpufleet.state.profiles import read_profile

    member = state.slices_named(name)[0]  # an unknown name: Refused listing the slices and the jobs
    profile = read_profile(profile_file)
    if profile_file is not None:
        return profile
    gen = state.fleet.pod_by_name[member.pod].generation
    return for_generation(profile, gen) if gen is not None else profile


def _job_text(d: dict[str, Any]) -> str:
    lines = _job_summary_lines(d)
    if d["step"] is not None:
        step = d["step"]
        lines.append(
            f"  step             {_ms(step['step_s'])} (compute at peak {_ms(step['compute_s'])}); all-reduce "
            f"{step['all_reduce_fraction']:.1%} of it, DCN {step['dcn_fraction']:.1%}"
        )
    lines.append(_one_slice_line(d["one_slice"]))
    rows = [[ph["phase"], _ms(ph["seconds"]), ph.get("slowest_slice") or ""] for ph in d["phases"]]
    lines += ["", grid(rows, ["phase", "time", "slowest slice"])]
    lines += ["", grid(_job_slice_rows(d), ["slice", "pod", "tables", "reduce-scatter", "all-gather"])]
    stale = [r["slice"] for r in d["per_slice"] if r["tables"].get("stale")]
    if stale:
        lines.append(
            f"note: the stored tables of {', '.join(stale)} are stale (the network changed since): run "
            + ", ".join(f"`tpufleet routes {name}`" for name in stale)
        )
    return "\n".join(lines)


def _job_summary_lines(d: dict[str, Any]) -> list[str]:
    """The job's all-reduce: its slices, chips and pods, its time and the DCN figures."""
    dcn = d["profile"]["dcn"]
    return [
        f"all-reduce of {d['bytes']} bytes per chip on job {d['job']} ({d['slices']} of {d['total_slices']} slices of "
        f"{d['shape']}{' twisted' if d['twisted'] else ''}, {d['chips']} chips, {d['hosts_per_slice']} host{'s' if d['hosts_per_slice'] != 1 else ''} a slice; "
        f"pods {', '.join(d['pods'])})",
        f"  time             {_ms(d['time_s'])}  "
        + (
            "(each chip's share of the sharded gradient all-reduced over the DCN)"
            if d["layout"] == "sharded"
            else "(ICI reduce-scatter, DCN all-reduce of the shards, ICI all-gather)"
        ),
        f"  DCN              {_gbs(dcn['host_bandwidth_Bps'])} per host, latency {_ms(dcn['latency_s'])}, "
        f"oversubscription between pods {dcn['pod_oversubscription']:g} ({dcn['source']})",
    ]


def _one_slice_line(one: dict[str, Any]) -> str:
    """The same chips as one ICI slice, or why there is none."""
    if one["shape"] is None:
        return f"  one slice        {one['note']}"
    ratio = f"; step throughput {one['throughput_ratio']:.3f}x of it" if one["throughput_ratio"] is not None else ""
    versus = (
        f"(the job's takes {one['all_reduce_ratio']:.3f}x as long)"
        if one["all_reduce_ratio"] is not None
        else f"({one['note']})"
    )
    return (
        f"  one slice        {one['shape']}{' twisted' if one['twisted'] else ''}: all-reduce "
        f"{_ms(one['all_reduce_s'])} {versus}{ratio}"
    )


def _job_slice_rows(d: dict[str, Any]) -> list[list[Any]]:
    return [
        [
            r["slice"],
            r["pod"],
            r["tables"]["source"]
            + (", degraded" if r["tables"]["degraded"] else "")
            + (", STALE" if r["tables"].get("stale") else ""),
            f"{_ms(r['reduce_scatter_s'])} {r['reduce_scatter_algorithm']}",
            _ms(r["all_gather_s"]),
        ]
        for r in d["per_slice"]
    ]


def _run_job(state: Any, name: str, request: tuple[int, float | None, bool, str], profile: Any, store: Any) -> Any:
    """`collective JOB`: the job's hierarchical all-reduce (--layout checked here, as the other options are)."""
    from tpufleet.errors import BadInput
    from tpufleet.ops import collective_job

    nbytes, flops, assume_healthy, layout = request
    if layout not in collective_job.LAYOUTS:
        raise BadInput(f"bad option --layout: {layout!r} is not one of {', '.join(collective_job.LAYOUTS)}")
    jreq = collective_job.JobRequest(nbytes, flops, assume_healthy, layout)
    return collective_job.run_job(state, name, jreq, profile, store.stored_tables)


def _check_job_options(op: str, algorithm: str, dims: str | None, table_capacity: int | None) -> None:
    from tpufleet.errors import BadInput

    if op != "all-reduce":
        raise BadInput(f"bad option --op: {op!r}; a multislice job models all-reduce only")
    for flag, given in (("--algorithm", algorithm != "auto"), ("--dims", dims is not None)):
        if given:
            raise BadInput(f"bad option {flag}: a multislice job picks the fastest algorithm in each slice")
    if table_capacity is not None:
        raise BadInput("bad option --table-capacity: applies to a slice, not a multislice job")


def _refuse_for_what_if(
    flops: float | None,
    table_capacity: int | None,
    layout: str,
    name: str | None,
    topology: str | None,
    assume_healthy: bool = False,
) -> None:
    from tpufleet.errors import BadInput

    if name is not None and topology is None:  # --wrap alone: it is the option to name, not a --topology never given
        raise BadInput(f"bad option --wrap: goes with a what-if --topology, not with the slice or job {name!r}")
    if name is not None:
        raise BadInput(f"bad argument {name!r}: --topology models a network of its own, not a slice or job")
    if topology is None:
        raise BadInput("bad option --topology: give a slice or job name, or a what-if --topology such as 128x32")
    # a what-if network has no stored tables to do without: --assume-healthy there is a mistake, not a no-op
    given_flags = (("--model-flops-per-step", flops), ("--table-capacity", table_capacity))
    for flag, given in (*given_flags, ("--assume-healthy", True if assume_healthy else None)):
        if given is not None:
            raise BadInput(f"bad option {flag}: applies to a slice or job, not a what-if --topology")
    if layout != "replicated":
        raise BadInput("bad option --layout: applies to a multislice job, not a what-if --topology")


def _what_if(topology: str, wrap: str | None, req: Any, how: tuple[Path | None, Output]) -> None:
    """`collective --topology AxB[xC] --wrap DIMS`: the collective on a network that needs no fleet. `how`: the
    profile file and the output."""
    from tpufleet.collectives.whatif import parse_topology, parse_wrap
    from tpufleet.ops import collective as ops
    from tpufleet.state.profiles import read_profile

    profile_file, output = how
    dims = parse_topology(topology)
    wraps = parse_wrap(wrap, dims)
    if req.order is not None and req.algorithm == "auto":
        req.algorithm = "dim-by-dim"
    outcome = ops.run_what_if(dims, wraps, req, read_profile(profile_file))
    emit(outcome.data, output, lambda: _text(outcome.data))


def _flops(value: float | None) -> float | None:
    import math

    from tpufleet.errors import BadInput

    if value is not None and (not math.isfinite(value) or value <= 0):
        raise BadInput(f"bad option --model-flops-per-step: {value:g} FLOPs: give a number above 0")
    return value


@app.command(
    "collective",
    epilog=examples(
        "tpufleet collective s --op all-reduce --bytes 1GiB",
        "tpufleet collective s --op all-reduce --bytes 512MiB --algorithm dim-by-dim --dims yxz -o json",
        "tpufleet collective s --op all-to-all --bytes 64MiB --table-capacity 64",
        "tpufleet collective s --op all-gather --bytes 4096 --assume-healthy --profile my-profile.yaml",
        "tpufleet collective job --op all-reduce --bytes 1GiB --model-flops-per-step 4.1e17",
        "tpufleet collective --topology 128x32 --wrap y --profile tpu-v3 --op all-reduce --bytes 1GiB",
    ),
)
def collective_cmd(
    ctx: typer.Context,
    op: Annotated[str, typer.Option("--op", help="all-reduce, reduce-scatter, all-gather or all-to-all")],
    size: Annotated[str, typer.Option("--bytes", help="Bytes per chip: 1GiB, 512MiB, 1.5GB, 4096")],
    algorithm: Annotated[
        str,
        typer.Option(
            "--algorithm", help="auto, ring, bidir-ring, dim-by-dim, multi-dim (all-to-all: direct, dim-by-dim)"
        ),
    ] = "auto",
    dims: Annotated[
        str | None,
        typer.Option("--dims", help="Dimension order for dim-by-dim (largest payload first) and multi-dim, e.g. yxz"),
    ] = None,
    profile_file: Annotated[
        Path | None,
        typer.Option(
            "--profile",
            metavar="FILE|NAME",
            help="Hardware profile YAML, or a shipped one by name: tpu-v4, tpu-v3, or a generation's, tpu-v5p, tpu7x "
            "(default: the shipped profile of the slice's generation; TPU v4 for the built-in model)",
        ),
    ] = None,
    table_capacity: Annotated[
        int | None,
        typer.Option(
            "--table-capacity",
            min=1,
            max=MAX_TABLE_CAPACITY,
            help="Model sparse tables: each chip holds at most N destinations",
        ),
    ] = None,
    assume_healthy: Annotated[
        bool, typer.Option("--assume-healthy", help="Without stored tables, model the healthy DOR tables of the shape")
    ] = False,
    model_flops: Annotated[
        float | None,
        typer.Option(
            "--model-flops-per-step",
            min=0.0,
            help="Job only: model FLOPs of one training step (all chips), for the step time and the all-reduce's share",
        ),
    ] = None,
    layout: Annotated[
        str,
        typer.Option(
            "--layout",
            help="Job only: replicated (every chip holds the whole gradient, data parallel inside each slice) or "
            "sharded (each chip holds its own share: the model is sharded over each slice, data parallel between "
            "slices, as Pathways' islands); --bytes is what one chip holds",
        ),
    ] = "replicated",
    topology: Annotated[
        str | None,
        typer.Option("--topology", help="What-if network, no fleet needed: AxB or AxBxC chips, e.g. 128x32"),
    ] = None,
    wrap: Annotated[
        str | None, typer.Option("--wrap", help="With --topology: the dimensions that are tori, e.g. y (others: mesh)")
    ] = None,
    output: OutputOpt = Output.table,
    name: Annotated[
        str | None, typer.Argument(metavar="[SLICE|JOB]", help="Slice or multislice job name (none with --topology)")
    ] = None,
) -> None:
    """Model a collective on the slice's current routing tables (healthy or rerouted, as `routes` stored them).

    An alpha-beta model per link: each step lasts as long as its most loaded link needs, plus the per-hop latency
    of its longest route. `auto` compares a ring through every chip, a bidirectional ring, dimension-by-dimension
    bidirectional rings in every order, and multi-dim (dimension by dimension on every dimension at once, one part
    of the data per dimension), and says why it picked the fastest.

    For a multislice job: the hierarchical all-reduce, an ICI reduce-scatter in each slice (on its current tables),
    a ring all-reduce of each chip's shard among the slices over the hosts' DCN links (the profile's `dcn`
    figures), then an ICI all-gather; with --model-flops-per-step, the step at peak and the all-reduce's share,
    against the same chips in one ICI slice.
    """
    from tpufleet.collectives.algorithms import check_algorithm, parse_order
    from tpufleet.collectives.model import ALGORITHMS, OPS
    from tpufleet.collectives.profile import parse_size
    from tpufleet.errors import BadInput
    from tpufleet.ops import collective as ops
    from tpufleet.text import meant_of

    if op not in OPS:
        raise BadInput(f"bad option --op: {op!r} is not one of {', '.join(OPS)}{meant_of(op, OPS)}")
    if algorithm not in ALGORITHMS:
        raise BadInput(
            f"bad option --algorithm: {algorithm!r} is not one of {', '.join(ALGORITHMS)}{meant_of(algorithm, ALGORITHMS)}"
        )
    check_algorithm(op, algorithm)
    nbytes = parse_size(size)
    order = parse_order(dims) if dims is not None else None
    if order is not None and algorithm not in ("dim-by-dim", "multi-dim", "auto"):
        raise BadInput(f"bad option --dims: {dims!r} applies to dim-by-dim and multi-dim, not {algorithm}")
    flops = _flops(model_flops)
    if topology is not None or wrap is not None or name is None:
        _refuse_for_what_if(flops, table_capacity, layout, name, topology, assume_healthy)
        _what_if(topology or "", wrap, ops.Request(op, nbytes, algorithm, order), (profile_file, output))
        return
    store = ctx.obj.store()
    state = store.load()
    profile = _profile_for(state, name, profile_file)
    if name not in state.jobs and name in state.slices and (flops is not None or layout != "replicated"):
        flag = "--model-flops-per-step" if flops is not None else "--layout"
        raise BadInput(f"bad option {flag}: applies to a multislice job, not a slice")
    if name in state.jobs:
        _check_job_options(op, algorithm, dims, table_capacity)
        job_outcome = _run_job(state, name, (nbytes, flops, assume_healthy, layout), profile, store)
        emit(job_outcome.data, output, lambda: _job_text(job_outcome.data))
        return
    source = store.stored_tables(name)
    req = ops.Request(
        op, nbytes, "dim-by-dim" if order and algorithm == "auto" else algorithm, order, table_capacity, assume_healthy
    )
    outcome = ops.run(state, name, req, profile, source)
    emit(outcome.data, output, lambda: _text(outcome.data))
