"""`tpufleet routes SLICE`: discover the slice's network, generate, check and store its routing tables."""

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer

from tpufleet.cli.app import Output, OutputOpt, RoutingWorkOpt, app, examples
from tpufleet.cli.render import emit, of_the_optimum
from tpufleet.constants import EXPORT_FORMATS, MAX_TABLE_CAPACITY
from tpufleet.text import meant_of, printable, share_text

if TYPE_CHECKING:
    from tpufleet.fleetstate import FleetState
    from tpufleet.ops.routes import RoutedSlice, RouteRequest
    from tpufleet.state import Store


class Algorithm(str, enum.Enum):
    auto = "auto"
    dor = "dor"
    wild_first = "wild-first"


def _optimum_share(s: dict, traffic: str) -> str:
    return of_the_optimum(
        s["throughput_retained"][traffic],
        (s.get("throughput_retained_vs_optimum") or {}).get(traffic),
        (s.get("healthy_optimum_max_link_load") or {}).get(traffic),
        s.get("healthy_optimum_exact", True),
    )


def _text(name: str, s: dict, stored: str | None, unroutable: list[str]) -> str:
    lines = [
        f"slice {name}: {s['chips']} chips, algorithm {s['algorithm']} ({s['strategy']})",
        f"  routable pairs   {s['routable_pairs']}   unroutable {s['unroutable_pairs']}",
        f"  route length     diameter {s['diameter']}, mean {s['mean_hops']:.4f} hops",
    ]
    if s["deadlock_free"] is None:
        lines.append("  deadlock check   skipped (--no-deadlock-check)")
    else:
        lines.append(
            f"  virtual channels {s['vcs']}   {'deadlock-free' if s['deadlock_free'] else 'DEADLOCK POSSIBLE'}"
        )
    for traffic, load in s["max_link_load"].items():
        lines.append(
            f"  {traffic:<16} max link load {load:g} (healthy {s['healthy_max_link_load'][traffic]:g}), "
            f"throughput retained {share_text(s['throughput_retained'][traffic])}{_optimum_share(s, traffic)}"
        )
    if s["pairs_broken_by_faults"]:
        lines.append(
            f"  faults broke {s['pairs_broken_by_faults']} routes of the healthy tables; "
            f"{s['pairs_repaired_wild']} routes here start with a wild hop"
        )
    if s.get("entries_relieved"):
        lines.append(f"  {s['entries_relieved']} table entries moved off the busiest links (wild hops)")
    if s.get("thorough"):
        lines.append("  thorough: candidates made past their size limits (--thorough)")
    if s.get("kept_stored_tables"):
        lines.append("  stored tables kept: they still route every pair and are lighter than new ones")
    for pair in unroutable[:10]:
        lines.append(f"  unroutable: {pair}")
    if s.get("exported"):
        lines.append(f"  tables exported to {printable(s['exported'])}")
    if stored and not s.get("changed", True):
        lines.append(f"  tables in {printable(str(stored))} are already these: nothing changed")
    elif stored:
        lines.append(f"  tables stored in {printable(str(stored))}")  # a state directory's name may hold a newline
    return "\n".join(lines)


@app.command(
    "routes",
    epilog=examples(
        "tpufleet routes train                       # make, check and store the tables",
        "tpufleet routes train --traffic all-to-all -o json",
        "tpufleet routes train --out train.ibroute --format ibroute",
        "tpufleet routes train --algorithm wild-first --out wf.npz  # these tables, stored when they pass the checks",
        "tpufleet routes train --max-vcs 6 --table-capacity 64 --out study.npz  # a study: never stored",
        "tpufleet routes pod --thorough              # a full pod with faults: seconds more, lighter tables",
        "tpufleet routes llm                         # a multislice job: each wired slice",
    ),
)
def routes_cmd(
    ctx: typer.Context,
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="SLICE|JOB",
            help="Slice name, or a multislice job (each wired slice routed and stored); none with --stale",
            show_default=False,
        ),
    ] = None,
    stale: Annotated[
        bool,
        typer.Option(
            "--stale",
            help="Every slice whose stored tables are stale or missing (as `status` lists them), each routed and "
            "stored in turn; an evicted slice waits for its move",
        ),
    ] = False,
    algorithm: Annotated[
        Algorithm,
        typer.Option(
            "--algorithm",
            help="auto: try every repair below (and other dimension orders) and keep the one with the lightest "
            "busiest link that fits the virtual channels; dor: plain dimension-order routes, each dimension the "
            "shorter way round, and pairs a fault cuts off are left unroutable; wild-first: like dor, but a chip "
            "whose route crosses a failed link first steps to a neighbour whose own route is intact",
        ),
    ] = Algorithm.auto,
    traffic: Annotated[
        str,
        typer.Option(
            "--traffic",
            help="Traffic patterns to measure, comma-separated: all-to-all (one unit between every ordered pair "
            "of chips), all-reduce (one unit to each ring neighbour)",
        ),
    ] = "all-to-all,all-reduce",
    out: Annotated[Path | None, typer.Option("--out", help="Also export the tables to this file")] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            click_type=click.Choice(EXPORT_FORMATS),
            help="Export format for --out: npz, json (<= 1024 chips), ibroute (default: the one --out's suffix names, else npz)",
        ),
    ] = None,
    no_deadlock_check: Annotated[
        bool,
        typer.Option(
            "--no-deadlock-check",
            help="Skip the check that the tables cannot deadlock (no cycle among the links' virtual channels)",
        ),
    ] = False,
    max_vcs: Annotated[
        int | None,
        typer.Option(
            "--max-vcs",
            min=1,
            max=16,
            help="Virtual channels the tables may use [default: the hardware's 3]; "
            "tables needing more than the hardware has are not stored (study them with --out)",
        ),
    ] = None,
    table_capacity: Annotated[
        int | None,
        typer.Option(
            "--table-capacity",
            min=1,
            max=MAX_TABLE_CAPACITY,
            help="Keep at most N destinations a chip (sparse tables, as the TPU-v3 multipod used: its own rings "
            "first); for study and export with --out, never stored",
        ),
    ] = None,
    thorough: Annotated[
        bool,
        typer.Option(
            "--thorough",
            help="With --algorithm auto, also try per-destination dimension order pairs on slices above their size "
            "limit (2,048 chips, 9,216 with one broken dimension; twisted 512): two OCS down in different dimensions "
            "on a full pod keep 0.80 of the healthy all-to-all throughput instead of 0.69, in seconds more; on twisted "
            "tori of 513-2,048 chips with OCS down, pre-leg trees in every dimension (twisted 8x8x16, one OCS: 0.97 "
            "instead of 0.94, 10-12 s of CPU; two OCS, made by default and relieved further here: 0.97 of the LP "
            "instead of 0.94; 8x16x16: 0.93-0.96 instead of 0.92, up to a minute and a half; the ring "
            "collectives' steps kept as the default tables route them where the trees allow: the modelled "
            "all-reduce on them is up to 1.07x slower)",
        ),
    ] = False,
    verbose: RoutingWorkOpt = False,
    output: OutputOpt = Output.table,
) -> None:
    """Generate routing tables from the slice as wired and as healthy as it is; check them; store them.

    Tables are stored (and the slice's index entry updated) only when every pair is routable, they are
    deadlock-free and they fit the hardware's virtual channels; otherwise the figures are shown, --out still
    exports them for study, and the command exits 1 saying why.

    For a multislice job, every wired slice is routed and stored in turn (one transaction each); with --stale,
    every slice whose stored tables are stale or missing.
    """
    from tpufleet.constants import HARDWARE_VCS
    from tpufleet.errors import BadInput, Refused
    from tpufleet.ops.routes import STUDY_ONLY, RouteRequest, export_format
    from tpufleet.ops.views import tables_to_remake
    from tpufleet.state.outputs import check_output_path

    traffics = _traffics(traffic)
    if (name is None) is not stale:
        if not stale:  # neither given: the argument is what is missing, not an option never typed
            raise BadInput("missing argument SLICE|JOB: give the slice or job to route, or --stale for every stale one")
        raise BadInput("bad option --stale: it names the slices itself: give no SLICE|JOB")
    if thorough and algorithm is not Algorithm.auto:
        raise BadInput(f"bad option --thorough: it makes more auto candidates; --algorithm {algorithm.value} has none")
    if fmt is not None and out is None:
        raise BadInput(f"bad option --format: {fmt!r} is the format of an exported file; it needs --out FILE")
    if out is not None:
        check_output_path(out, "--out")  # before any work, let alone a commit
    store = ctx.obj.store()
    vcs = HARDWARE_VCS if max_vcs is None else max_vcs
    opts = RouteRequest(algorithm.value, traffics, not no_deadlock_check, vcs, thorough)
    state = store.load()  # read once here; each slice of several reads the state its own transaction left
    if name is not None:
        state.slices_named(name)  # an unknown name: Refused listing the slices and the jobs
    many = _job_of(state, name) if name is not None else tables_to_remake(store, state)
    if name is None or many is not None:
        if out is not None or table_capacity is not None:
            one = "one slice of the job (JOB-k), not the whole job" if name else "one SLICE, not --stale"
            raise BadInput(f"bad option --out/--table-capacity: give {one}")
        _route_many(store, name, many or ([], {}), opts, output, verbose)
        return
    data, unroutable, refusal = _route_slice(
        store, name, opts, table_capacity, out, export_format(str(out or ""), fmt), state, verbose
    )
    emit(data, output, lambda: _text(name, data, data.get("tables"), unroutable))
    if refusal is not None and refusal in STUDY_ONLY and out is not None:  # study tables written where asked
        typer.echo(f"tpufleet: tables for {name!r} not stored ({refusal}): written to {printable(str(out))}", err=True)
    elif refusal is not None:
        export = "; export them with --out" if refusal in STUDY_ONLY else ""
        raise Refused(f"tables for {name!r} not stored: {refusal}{export}")


def _traffics(traffic: str) -> list[str]:
    """The patterns `--traffic` names, each known and named once."""
    from tpufleet.errors import BadInput, refuse_repeats
    from tpufleet.routing.report import TRAFFICS

    traffics = [t.strip() for t in traffic.split(",") if t.strip()]
    if not traffics:
        raise BadInput(f"bad option --traffic: {traffic!r} names no traffic pattern (one of {', '.join(TRAFFICS)})")
    for t in traffics:
        if t not in TRAFFICS:
            raise BadInput(f"bad option --traffic: {t!r} is not one of {', '.join(TRAFFICS)}{meant_of(t, TRAFFICS)}")
    refuse_repeats("--traffic", traffics)
    return traffics


def _job_of(state: "FleetState", name: str) -> tuple[list[str], dict[str, str]] | None:
    """The slices of the multislice job `name` to route now (wired, or sub-cube ones, which need no wiring) and
    the others with their state (None when `name` is no job)."""
    if name not in state.jobs:
        return None
    slices = state.job_slices(name)
    routed = [sl.name for sl in slices if sl.state.wired or (sl.shape.is_subcube and sl.state.value == "allocated")]
    return routed, {sl.name: sl.state.value for sl in slices if sl.name not in routed}


def _route_many(
    store: "Store",
    job: str | None,
    many: tuple[list[str], dict[str, str]],
    opts: "RouteRequest",
    output: Output,
    verbose: bool,
) -> None:
    """Route the `many` slices of the job (`job`), or with --stale (`job` None) those whose stored tables are stale
    or missing, each stored in its own transaction as `routes SLICE` does; the others are listed as skipped with
    their state (with --stale, why)."""
    from tpufleet.errors import Refused

    slices, skipped = many
    if job is not None and not slices:
        raise Refused(f"job {job!r} has no wired slice to route: `tpufleet plan-xconnect {job} --apply` wires them")
    results = [(sl, *_route_slice(store, sl, opts, None, None, "npz", verbose=verbose)) for sl in slices]
    data = {
        **({"job": job} if job is not None else {"stale": slices}),
        "slices": [d for _, d, _, _ in results],
        "skipped": [{"slice": sl, ("state" if job else "reason"): why} for sl, why in skipped.items()],
        "stored": all(refusal is None for _, _, _, refusal in results),
    }
    lines = [*(_text(sl, d, d.get("tables"), u) for sl, d, u, _ in results)]
    lines += [f"slice {sl}: skipped ({why})" for sl, why in skipped.items()]
    nothing = "no stale or missing routing tables" if job is None and not slices and not skipped else ""
    emit(data, output, lambda: "\n".join(lines) or nothing)
    refused = [f"{sl}: {refusal}" for sl, _, _, refusal in results if refusal is not None]
    if refused:
        of = f"of job {job!r}" if job else "with stale or missing tables"
        raise Refused(f"tables of {len(refused)} slice(s) {of} not stored", refused)


def _route_slice(
    store: "Store",
    name: str,
    opts: "RouteRequest",
    table_capacity: int | None,
    out: Path | None,
    fmt: str,
    state: "FleetState | None" = None,
    verbose: bool = False,
) -> tuple[dict, list[str], str | None]:
    """One slice's `routes` (`ops.routes.route_slice`), its tables stored in a transaction of their own and the
    export written to `out` if asked. Returns the result, the unroutable pairs and why the tables were not stored
    (None when they were)."""
    from tpufleet.cli.progress import routing_progress
    from tpufleet.ops import routes as ops
    from tpufleet.routing import memo
    from tpufleet.state.routetables import routing_members
    from tpufleet.state.store import utc_now

    table_path = store.table_path(name)  # a name that cannot be a file name is refused before any work
    store.check_tables_place(name)  # as is a symbolic link where the tables belong
    cache, stored = store.table_cache(), store.stored_tables(name)

    def store_tables(routed: "RoutedSlice", npz: bytes) -> tuple[str, bool]:
        with store.transaction() as tx:
            where = f"{store.routes_dir.name}/{table_path.name}"
            outcome = ops.record(tx.state, routed, where, lambda: routing_members(stored))
            if outcome.change is None:  # the very tables stored, nothing else changes: no new serial
                return str(table_path), False
            store.save_tables(tx, name, npz)
            tx.commit(outcome.change)
        cache.flush()
        return str(table_path), True

    with routing_progress(f"routing {name}", verbose), memo.using(cache):
        snapshot = state if state is not None else store.load()
        exported_as = None if out is None else fmt
        done = ops.route_slice(
            snapshot,
            name,
            opts,
            utc_now(),
            store_tables,
            table_capacity,
            exported_as,
            lambda: routing_members(stored),
        )
    if out is None:
        return done.data, done.unroutable, done.refusal
    _export(out, done.exported or b"", name, bool(done.data.get("changed")))
    return {**done.data, "exported": str(out)}, done.unroutable, done.refusal


def _export(out: Path, data: bytes, name: str, committed: bool) -> None:
    """Write `--out`; when the tables were committed first, a failure says they were (a run again only exports)."""
    from tpufleet.errors import Refused
    from tpufleet.state.outputs import write_output

    try:
        write_output(out, data)
    except Refused as exc:
        if not committed:
            raise
        raise Refused(f"{exc}; the tables of {name!r} were stored all the same (run again, it only exports)") from None
