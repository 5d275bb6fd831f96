"""`tpufleet allocate` and `tpufleet release`."""

from __future__ import annotations

from typing import Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit


@app.command(
    "allocate",
    epilog=examples(
        "tpufleet allocate train --shape 8x8x16 --twisted --min-throughput 0.8",
        "tpufleet allocate dev --shape 2x2x4            # two machines inside one cube",
        "tpufleet allocate eval --shape 4x4x8 --cubes c10,c11 --pod pod0",
    ),
)
def allocate_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name (letters, digits, . _ -)")],
    shape: Annotated[str, typer.Option("--shape", help="AxBxC in chips, e.g. 8x8x8 or 2x2x4")],
    twisted: Annotated[bool, typer.Option("--twisted", help="Twisted torus ((4k,4k,8k) or (4k,8k,8k))")] = False,
    cubes: Annotated[
        str | None, typer.Option("--cubes", help="Use these cubes, comma-separated, in grid order")
    ] = None,
    pod: Annotated[str | None, typer.Option("--pod", help="Allocate in this pod")] = None,
    no_ft: Annotated[
        bool, typer.Option("--no-fault-tolerant-routing", help="Opt out: an OCS fault reschedules instead of rerouting")
    ] = False,
    min_throughput: Annotated[
        float,
        typer.Option(
            "--min-throughput",
            min=0.0,
            max=1.0,
            help="Floor for fault-tolerant routing: below this share of "
            "its healthy all-to-all throughput the slice is rescheduled instead of rerouted",
        ),
    ] = 0.5,
    output: OutputOpt = Output.table,
) -> None:
    """Reserve healthy free cubes (any of one pod) or machines inside a cube for a slice."""
    from tpufleet.ops import slices
    from tpufleet.shapes import parse_shape
    from tpufleet.state.files import safe_child
    from tpufleet.state.store import utc_now

    parsed = parse_shape(shape, twisted)
    safe_child(ctx.obj.store().dir, name)  # slice names become file names (routing tables)
    given = [c.strip() for c in cubes.split(",") if c.strip()] if cubes is not None else None
    if given is not None and not given:
        from tpufleet.errors import BadInput

        raise BadInput(f"bad option --cubes: {cubes!r} names no cube (leave it out to let the tool choose)")
    now = utc_now()
    outcome = ctx.obj.mutate(
        lambda state: slices.allocate(state, name, parsed, now, pod, given, not no_ft, min_throughput)
    )
    emit(outcome.data, output, lambda: _describe(outcome.data))


def _describe(d: dict) -> str:
    shape = d["shape"] + (" twisted" if d["twisted"] else "")
    where = (
        f"machines {','.join(map(str, d['machines']))} of {d['cubes'][0]}"
        if d.get("machines")
        else f"cubes {','.join(d['cubes'])}"
    )
    return f"slice {d['slice']}: {shape} in {d['pod']}, {where} ({d['state']})"


@app.command("release", epilog=examples("tpufleet release train"))
def release_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name")],
    output: OutputOpt = Output.table,
) -> None:
    """Return a slice's cubes to the pool. Cross-connects stay in place (a later slice may reuse them)."""
    from tpufleet.ops import slices

    store = ctx.obj.store()
    with store.transaction() as tx:
        outcome = slices.release(tx.state, name)
        store.delete_tables(name)  # under the lock, so a concurrent `routes` cannot index a deleted file
        tx.commit(outcome.change)
    d = outcome.data
    emit(d, output, lambda: f"released {name}: {','.join(d['released_cubes'])} back in the pool")


@app.command(
    "policy",
    epilog=examples(
        "tpufleet policy train                          # show it",
        "tpufleet policy train --min-throughput 0.9",
        "tpufleet policy train --no-fault-tolerant-routing",
    ),
)
def policy_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name")],
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

    outcome = ctx.obj.mutate(lambda state: slices.set_policy(state, name, min_throughput, fault_tolerant_routing))
    d = outcome.data
    emit(
        d,
        output,
        lambda: (
            f"slice {name}: fault-tolerant routing {'on' if d['fault_tolerant_routing'] else 'off'}, "
            f"rerouted only above {d['min_throughput']:g} of healthy all-to-all throughput"
        ),
    )
