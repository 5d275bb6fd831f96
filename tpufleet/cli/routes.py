"""`tpufleet routes SLICE`: discover the slice's network, generate, check and store its routing tables."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from tpufleet.cli.app import Output, OutputOpt, app
from tpufleet.cli.render import emit


class Algorithm(str, enum.Enum):
    auto = "auto"
    dor = "dor"
    wild_first = "wild-first"


class TableFormat(str, enum.Enum):
    npz = "npz"
    json = "json"
    ibroute = "ibroute"


def _text(name: str, s: dict, stored: str | None, unroutable: list[str]) -> str:
    lines = [
        f"slice {name}: {s['chips']} chips, algorithm {s['algorithm']} ({s['strategy']})",
        f"  routable pairs   {s['routable_pairs']}   unroutable {s['unroutable_pairs']}",
        f"  route length     diameter {s['diameter']}, mean {s['mean_hops']:.4f} hops",
    ]
    if s["deadlock_free"] is None:
        lines.append("  deadlock check   skipped (--no-deadlock-check)")
    else:
        lines.append(f"  virtual channels {s['vcs']}   {'deadlock-free' if s['deadlock_free'] else 'DEADLOCK POSSIBLE'}")
    for traffic, load in s["max_link_load"].items():
        lines.append(
            f"  {traffic:<16} max link load {load:g} (healthy {s['healthy_max_link_load'][traffic]:g}), "
            f"throughput retained {s['throughput_retained'][traffic]:.3f}"
        )
    if s["pairs_broken_by_faults"]:
        lines.append(f"  faults broke {s['pairs_broken_by_faults']} routes; {s['pairs_repaired_wild']} repaired with wild first hops")
    for pair in unroutable[:10]:
        lines.append(f"  unroutable: {pair}")
    if stored:
        lines.append(f"  tables stored in {stored}")
    return "\n".join(lines)


@app.command("routes")
def routes_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name")],
    algorithm: Annotated[Algorithm, typer.Option("--algorithm", help="auto, dor or wild-first")] = Algorithm.auto,
    traffic: Annotated[str, typer.Option("--traffic", help="Comma-separated: all-to-all, all-reduce")] = "all-to-all,all-reduce",
    out: Annotated[Optional[Path], typer.Option("--out", help="Also export the tables to this file")] = None,
    fmt: Annotated[TableFormat, typer.Option("--format", help="Export format for --out: npz, json (<= 1024 chips), ibroute")] = TableFormat.npz,
    no_deadlock_check: Annotated[bool, typer.Option("--no-deadlock-check", help="Skip the channel-dependency check")] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Generate routing tables from the slice as wired and as healthy as it is; check them; store them."""
    from tpufleet.errors import BadInput
    from tpufleet.ops import routes as ops
    from tpufleet.routing.report import TRAFFICS
    from tpufleet.state.files import atomic_write
    from tpufleet.state.store import utc_now

    traffics = [t.strip() for t in traffic.split(",") if t.strip()]
    for t in traffics:
        if t not in TRAFFICS:
            raise BadInput(f"bad option --traffic: {t!r} is not one of {', '.join(TRAFFICS)}")
    store = ctx.obj.store()
    store.table_path(name)  # a name that cannot be a file name is refused before any work
    routed = ops.compute(store.load(), name, algorithm.value, traffics, not no_deadlock_check, utc_now())
    stored = ops.export_bytes(routed, "npz")
    # An export that cannot be made (JSON of a huge slice) refuses here, before anything is committed.
    exported = None if out is None else stored if fmt is TableFormat.npz else ops.export_bytes(routed, fmt.value)
    with store.transaction() as tx:
        table_path = store.table_path(name)
        outcome = ops.record(tx.state, routed, f"{store.routes_dir.name}/{table_path.name}")
        store.save_tables(name, stored)
        tx.commit(outcome.change)
    if out is not None and exported is not None:
        atomic_write(out, exported)
    data = {**outcome.data, "tables": str(table_path)}
    emit(data, output, lambda: _text(name, data, str(table_path), routed.unroutable))
    if data["unroutable_pairs"]:
        raise typer.Exit(1)
