"""`tpufleet allocate` and `tpufleet release`."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit
from tpufleet.text import printable, share_text

if TYPE_CHECKING:
    from tpufleet.ops.jobs import JobRequest


@app.command(
    "allocate",
    epilog=examples(
        "tpufleet allocate train --shape 8x8x16 --twisted --min-throughput 0.8",
        "tpufleet allocate dev --shape 2x2x4            # two machines inside one cube",
        "tpufleet allocate eval --shape 4x4x8 --cubes c10,c11 --pod pod0",
        "tpufleet allocate llm --shape 8x8x8 --slices 4 --spread          # a multislice job: llm-0 .. llm-3",
        "tpufleet allocate llm --shape 8x8x8 --slices 4 --elastic 3       # runs on while 3 slices are active",
    ),
)
def allocate_cmd(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(metavar="SLICE|JOB", help="Slice name, or job name with --slices (letters, digits, . _ -)")
    ],
    shape: Annotated[str, typer.Option("--shape", help="AxBxC in chips, e.g. 8x8x8 or 2x2x4")],
    twisted: Annotated[bool, typer.Option("--twisted", help="Twisted torus ((4k,4k,8k) or (4k,8k,8k))")] = False,
    cubes: Annotated[
        str | None, typer.Option("--cubes", help="Use these cubes, comma-separated, in grid order")
    ] = None,
    pod: Annotated[
        list[str] | None,
        typer.Option(
            "--pod",
            metavar="POD",
            help="Allocate in this pod; with --slices, repeat it (or give a comma list) for several",
        ),
    ] = None,
    slices: Annotated[
        int | None,
        typer.Option(
            "--slices",
            help="A multislice job of N identical slices (NAME-0 .. NAME-N-1) joined by the data-centre network",
        ),
    ] = None,
    spread: Annotated[
        bool,
        typer.Option(
            "--spread",
            help="With --slices: put the slices in different pods as far as pods allow (more slices than pods: evenly, and "
            "said)",
        ),
    ] = False,
    elastic: Annotated[
        int | None,
        typer.Option(
            "--elastic",
            metavar="MIN",
            help="With --slices: the job runs on while at least MIN slices are active (default: all or none)",
        ),
    ] = None,
    no_ft: Annotated[
        bool, typer.Option("--no-fault-tolerant-routing", help="Opt out: an OCS fault reschedules instead of rerouting")
    ] = False,
    min_throughput: Annotated[
        float | None,
        typer.Option(
            "--min-throughput",
            min=0.0,
            max=1.0,
            help="Floor for fault-tolerant routing: below this share of "
            "its healthy all-to-all throughput the slice is rescheduled instead of rerouted [default: 0.5]",
        ),
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """Reserve healthy free cubes (any of one pod) or machines inside a cube for a slice; with --slices N, N
    identical slices for one multislice job, all or none."""
    from tpufleet.errors import BadInput, shown
    from tpufleet.shapes import ShapeText, parse_dims
    from tpufleet.state.store import utc_now

    parse_dims(shape)  # the syntax now; the shape rule once the pod (its generation) is known
    floor = _floor(min_throughput, no_ft)
    ctx.obj.store().check_name(name)  # slice names become file names (routing tables)
    pods = _pods(pod)
    if slices is not None:
        from tpufleet.ops.jobs import JobRequest

        _check_job_options(slices, elastic, cubes)
        req = JobRequest(name, ShapeText(shape, twisted), slices, tuple(pods), spread, elastic, not no_ft, floor)
        return _allocate_job(ctx, req, output)
    for option, given_value in (("--spread", spread), ("--elastic", elastic is not None)):
        if given_value:
            raise BadInput(f"bad option {option}: only with --slices N (a multislice job)")
    if len(pods) > 1:
        raise BadInput(
            f"bad option --pod: {', '.join(map(shown, pods))}: a slice lives in one pod (several only with --slices N)"
        )
    given = [c.strip().removeprefix("cube:") for c in cubes.split(",")] if cubes is not None else None
    if given is not None and not any(given):
        raise BadInput(f"bad option --cubes: {cubes!r} names no cube (leave it out to let the tool choose)")
    if given is not None and "" in given:
        raise BadInput(f"bad option --cubes: {cubes!r} names an empty cube (between two commas, or at an end)")
    from tpufleet.ops import slices as ops

    now = utc_now()
    one_pod = pods[0] if pods else None
    outcome = ctx.obj.mutate(
        lambda state: ops.allocate(state, name, ShapeText(shape, twisted), now, one_pod, given, not no_ft, floor)
    )
    emit(
        outcome.data,
        output,
        lambda: "\n".join([_describe(outcome.data), *(f"next: {s}" for s in outcome.data["next"])]),
    )


def _floor(min_throughput: float | None, no_ft: bool) -> float:
    """The slice's throughput floor (default 0.5); given with --no-fault-tolerant-routing, a floor for rerouting
    on a slice that never reroutes: contradictory, bad input."""
    from tpufleet.errors import BadInput
    from tpufleet.fleetstate import DEFAULT_MIN_THROUGHPUT

    if no_ft and min_throughput is not None:
        raise BadInput(
            f"bad option --min-throughput {min_throughput:g}: it is the floor of fault-tolerant routing, which "
            "--no-fault-tolerant-routing turns off (such a slice is rescheduled on any network fault); give one"
        )
    return DEFAULT_MIN_THROUGHPUT if min_throughput is None else min_throughput


def _pods(given: list[str] | None) -> list[str]:
    """--pod values, repeated or comma-separated; an empty one or a pod named twice is a typo (exit 2)."""
    from tpufleet.errors import BadInput, refuse_repeats

    pods = [p.strip() for value in given or [] for p in value.split(",")]
    if "" in pods:
        raise BadInput(
            f"bad option --pod: {','.join(given or [])!r} names an empty pod (between two commas, or at an end)"
        )
    refuse_repeats("--pod", pods)
    return pods


def _check_job_options(count: int, elastic: int | None, cubes: str | None) -> None:
    from tpufleet.errors import BadInput, shown

    if count < 1:
        raise BadInput(f"bad option --slices: {shown(str(count))} is below 1 (a job has at least one slice)")
    if elastic is not None and not 1 <= elastic <= count:
        where = "below 1" if elastic < 1 else f"above --slices {count}"
        raise BadInput(f"bad option --elastic: {shown(str(elastic))} is {where} (the job's minimum of active slices)")
    if cubes is not None:
        raise BadInput(f"bad option --cubes: {cubes!r} with --slices (a job's slices are placed by the tool)")


def _allocate_job(ctx: typer.Context, req: "JobRequest", output: Output) -> None:
    from tpufleet.constants import MAX_NAME_CHARS
    from tpufleet.errors import BadInput
    from tpufleet.ops import jobs as ops
    from tpufleet.state.store import utc_now

    longest = f"{req.name}-{req.count - 1}"  # the last of job_slice_names, without building N names
    if len(longest) > MAX_NAME_CHARS:  # said in words: the quoted name itself is cut short in the message
        raise BadInput(
            f"bad job name {req.name!r}: its slice names (up to {longest!r}) would pass {MAX_NAME_CHARS} characters"
        )
    ctx.obj.store().check_name(longest)  # each slice's name becomes a table file name
    now = utc_now()
    outcome = ctx.obj.mutate(lambda state: ops.allocate_job(state, req, now))
    emit(outcome.data, output, lambda: _describe_job(outcome.data))


def _describe(d: dict) -> str:
    shape = d["shape"] + (" twisted" if d["twisted"] else "")
    where = (
        f"machines {','.join(map(str, d['machines']))} of {d['cubes'][0]}"
        if d.get("machines")
        else f"cubes {','.join(d['cubes'])}"
    )
    pool = f"; node pool {d['node_pool']}, held unplaced until now, is this slice" if d.get("node_pool") else ""
    return f"slice {d['slice']}: {shape} in {d['pod']}, {where} ({d['state']}){pool}"


def _describe_job(d: dict) -> str:
    shape = d["shape"] + (" twisted" if d["twisted"] else "")
    kind = f"elastic, runs on at least {d['elastic_min']}" if d["elastic_min"] is not None else "all or none"
    per_pod = ", ".join(f"{pod}: {n}" for pod, n in d["per_pod"].items())
    lines = [f"job {d['job']}: {len(d['slices'])} x {shape} ({kind}) over {per_pod}"]
    if d.get("node_pools"):
        lines.append(f"  node pools held unplaced until now, these slices: {', '.join(d['node_pools'])}")
    lines += ["  " + _describe(s) for s in d["slices"]]
    if d["note"]:
        lines.append(f"  spread: {d['note']}")
    lines += [f"next: {step}" for step in d["next"]]
    return "\n".join(lines)


@app.command(
    "release", epilog=examples("tpufleet release train", "tpufleet release llm     # a job: every slice of it")
)
def release_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="SLICE|JOB", help="Slice name, or job name (all its slices)")],
    output: OutputOpt = Output.table,
) -> None:
    """Return a slice's cubes (or every slice of a job) to the pool. Cross-connects stay in place (a later slice
    may reuse them). A slice of a job goes only with its job."""
    from tpufleet.errors import Refused
    from tpufleet.ops.pool import release_words
    from tpufleet.state.files import check_name

    check_name(name)  # no slice or job is named so (`allocate` refuses such a name): bad input, not unknown
    store = ctx.obj.store()
    try:
        outcome, linked = _release(store, name)
    except Refused as refused:  # `release` run twice: say which commit released it
        from tpufleet.ops.history import released_earlier
        from tpufleet.state import committed

        if committed.SERIALS:  # released by this very command: its tables could not be deleted after the commit
            raise
        raise released_earlier(store, name) or refused from None
    d = {**outcome.data, "linked_routes": linked}
    what = f"job {name} ({', '.join(d['slices'])})" if "job" in d else name
    emit(d, output, lambda: "\n".join([f"released {what}: {release_words(d)}", *_links_left(linked)]))


def _release(store: Any, name: str) -> tuple[Any, dict[str, str]]:
    """The release in one transaction: its outcome and the symbolic links left where tables were."""
    from tpufleet.ops import slices

    with store.transaction() as tx:
        outcome, gone = slices.release_named(tx.state, name)
        for slice_name in gone:
            store.delete_tables(tx, slice_name)  # deleted once the release is committed (a symbolic link stays)
        linked = store.linked_tables(gone)
        tx.commit(outcome.change)
    return outcome, linked


def _links_left(linked: dict[str, str]) -> list[str]:
    """The symbolic links left where released slices' tables were: tpufleet neither follows nor removes them."""
    return [
        f"left the symbolic link {printable(path)} where the routing tables of {name} were (never followed): remove it if "
        "it is no longer needed"
        for name, path in linked.items()
    ]


@app.command(
    "policy",
    epilog=examples(
        "tpufleet policy train                          # show it",
        "tpufleet policy train --min-throughput 0.9",
        "tpufleet policy train --no-fault-tolerant-routing",
        "tpufleet policy llm --min-throughput 0.8       # a job: every slice of it",
    ),
)
def policy_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="SLICE|JOB", help="Slice name, or job name (every slice of the job)")],
    min_throughput: Annotated[
        float | None,
        typer.Option(
            "--min-throughput", min=0.0, max=1.0, help="Reroute only while keeping this share of healthy throughput"
        ),
    ] = None,
    fault_tolerant_routing: Annotated[
        bool | None,
        typer.Option(
            "--fault-tolerant-routing/--no-fault-tolerant-routing",
            help="Reroute around OCS and link faults, or be rescheduled",
            show_default=False,
        ),
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """Show or change how a slice meets network faults (its throughput floor, fault-tolerant routing on or off)."""
    from tpufleet.ops import slices

    _floor(min_throughput, fault_tolerant_routing is False)  # the same contradiction allocate refuses
    outcome = ctx.obj.mutate(lambda state: slices.set_policy(state, name, min_throughput, fault_tolerant_routing))
    d = outcome.data
    if isinstance(d.get("slices"), list):  # a job: every slice (one slice of a job also names its job)
        emit(d, output, lambda: "\n".join(_policy_line(s["slice"], s) for s in d["slices"]))
        return
    emit(
        d,
        output,
        lambda: _policy_line(name, d),
    )


def _policy_line(name: str, d: dict) -> str:
    if not d["fault_tolerant_routing"]:
        line = f"slice {name}: fault-tolerant routing off, rescheduled on any network fault"
    else:
        line = (
            f"slice {name}: fault-tolerant routing on, "
            f"rerouted only while keeping at least {d['min_throughput']:g} of its healthy all-to-all throughput"
        )
    return line + _running_below(name, d)


def _running_below(name: str, d: dict) -> str:
    """A slice running rerouted now, below the floor (or without the rerouting) just set: nothing moves it for
    that, as `explain` says; the policy is judged when a fault strikes it."""
    rr = d.get("reroute")
    if d.get("state") != "degraded" or not rr:
        return ""
    if d["fault_tolerant_routing"] and rr["all_to_all_retained"] >= d["min_throughput"]:
        return ""
    return (
        f"\n  note: it runs rerouted around {', '.join(rr['faults'])} now, keeping {share_text(rr['all_to_all_retained'])}: "
        f"nothing moves it for that (the policy is judged when a fault strikes it; `tpufleet explain {name}`)"
    )
