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
    from tpufleet import wiring
    from tpufleet.cli.common import get_slice
    from tpufleet.errors import BadInput, Refused
    from tpufleet.health import health_of
    from tpufleet.model import Fleet
    from tpufleet.routing import export
    from tpufleet.routing.report import TRAFFICS, evaluate
    from tpufleet.state.files import atomic_write, ensure_private_dir, safe_child
    from tpufleet.state.store import utc_now

    traffics = [t.strip() for t in traffic.split(",") if t.strip()]
    for t in traffics:
        if t not in TRAFFICS:
            raise BadInput(f"bad option --traffic: {t!r} is not one of {', '.join(TRAFFICS)}")
    store = ctx.obj.store()
    doc = store.load()
    sl = get_slice(doc, name)
    shape = wiring.slice_shape(sl)
    if sl["state"] == "evicted":
        raise Refused(f"slice {name!r} is evicted; run `tpufleet reschedule {name}` first")
    if sl["state"] != "connected" and not shape.is_subcube:
        raise Refused(f"slice {name!r} is {sl['state']}, not wired; run `tpufleet plan-xconnect {name} --apply` first")
    graph = wiring.build(sl, Fleet.from_doc(doc["fleet"]), doc["ocs"], health_of(doc))
    if graph.miswired:
        raise Refused(f"slice {name!r} is not wired as a {shape}: {len(graph.miswired)} miswired link(s)", graph.miswired)
    report = evaluate(shape, graph.expected, graph.nbr, algorithm.value, traffics, not no_deadlock_check)
    s = report.summary
    if s["deadlock_free"] is False:
        raise Refused(
            f"tables for {name!r} have a channel-dependency cycle; not written: " + " -> ".join(report.cycle[:12])
        )
    meta = {"slice": name, "shape": shape.text, "twisted": shape.twisted, "serial": doc["serial"], "made": utc_now(), **{k: s[k] for k in ("algorithm", "vcs")}}
    routes_dir = store.dir / "routes"
    ensure_private_dir(routes_dir)
    table_path = safe_child(routes_dir, name, ".npz")
    with store.transaction() as tx:
        if tx.doc["serial"] != doc["serial"] or name not in tx.doc["slices"]:
            raise Refused(f"the state changed while routes for {name!r} were computed (serial {doc['serial']} -> {tx.doc['serial']}); run again")
        atomic_write(table_path, export.npz_bytes(report.tables, meta))
        tx.doc["routes"][name] = {
            "file": f"routes/{table_path.name}",
            "serial": doc["serial"] + 1,
            "made": meta["made"],
            "algorithm": s["algorithm"],
            "vcs": s["vcs"],
            "routable_pairs": s["routable_pairs"],
            "unroutable_pairs": s["unroutable_pairs"],
            "stale": False,
        }
        tx.summary = f"routes {name}: {s['routable_pairs']} routable, {s['unroutable_pairs']} unroutable, {s['vcs']} VCs"
    if out is not None:
        names = graph.chip_names
        if fmt is TableFormat.npz:
            atomic_write(out, export.npz_bytes(report.tables, meta))
        elif fmt is TableFormat.json:
            atomic_write(out, export.json_text(report.tables, meta, names).encode())
        else:
            atomic_write(out, export.ibroute_text(report.tables, names, name).encode())
    unroutable = [f"{graph.chip_names[a]} -> {graph.chip_names[b]}" for a, b in report.unroutable]
    data = {"slice": name, **s, "unroutable": unroutable[:1000], "tables": str(table_path)}
    emit(data, output, lambda: _text(name, s, str(table_path), unroutable))
    if s["unroutable_pairs"]:
        raise typer.Exit(1)
