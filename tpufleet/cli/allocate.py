"""`tpufleet allocate` and `tpufleet release`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from tpufleet.cli.app import Output, OutputOpt, app
from tpufleet.cli.render import emit


def _describe(name: str, sl: dict) -> str:
    shape = sl["shape"] + (" twisted" if sl["twisted"] else "")
    where = f"machines {','.join(map(str, sl['machines']))} of {sl['cubes'][0]}" if sl.get("machines") else f"cubes {','.join(sl['cubes'])}"
    return f"slice {name}: {shape} in {sl['pod']}, {where} ({sl['state']})"


@app.command("allocate")
def allocate_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name (letters, digits, . _ -)")],
    shape: Annotated[str, typer.Option("--shape", help="AxBxC in chips, e.g. 8x8x8 or 2x2x4")],
    twisted: Annotated[bool, typer.Option("--twisted", help="Twisted torus ((4k,4k,8k) or (4k,8k,8k))")] = False,
    cubes: Annotated[Optional[str], typer.Option("--cubes", help="Use these cubes, comma-separated, in grid order")] = None,
    pod: Annotated[Optional[str], typer.Option("--pod", help="Allocate in this pod")] = None,
    no_ft: Annotated[
        bool, typer.Option("--no-fault-tolerant-routing", help="Opt out: an OCS fault reschedules instead of rerouting")
    ] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Reserve healthy free cubes (any of one pod) or machines inside a cube for a slice."""
    from tpufleet import allocation
    from tpufleet.errors import Refused
    from tpufleet.health import health_of
    from tpufleet.model import Fleet
    from tpufleet.shapes import parse_shape
    from tpufleet.state.files import safe_child
    from tpufleet.state.store import utc_now

    parsed = parse_shape(shape, twisted)
    store = ctx.obj.store()
    safe_child(store.dir, name)  # slice names become file names (routing tables)
    given = [c.strip() for c in cubes.split(",") if c.strip()] if cubes is not None else None
    with store.transaction() as tx:
        doc = tx.doc
        if name in doc["slices"]:
            raise Refused(f"slice {name!r} already exists (release it first)")
        fleet = Fleet.from_doc(doc["fleet"])
        alloc = allocation.allocate(parsed, fleet, doc["slices"], health_of(doc), pod, given)
        record = {
            "shape": parsed.text,
            "twisted": parsed.twisted,
            "pod": alloc.pod,
            "cubes": alloc.cubes,
            "coords": alloc.coords,
            "state": "allocated",
            "fault_tolerant_routing": not no_ft,
            "created": utc_now(),
        }
        if alloc.machines:
            record["machines"], record["origin"] = alloc.machines, alloc.origin
        doc["slices"][name] = record
        tx.summary = f"allocate {name}: {parsed} on {','.join(alloc.cubes)}"
    emit({"slice": name, "serial": tx.doc["serial"], **record}, output, lambda: _describe(name, record))


@app.command("release")
def release_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name")],
    output: OutputOpt = Output.table,
) -> None:
    """Return a slice's cubes to the pool. Cross-connects stay in place (a later slice may reuse them)."""
    from tpufleet.cli.common import get_slice
    from tpufleet.state.files import safe_child

    store = ctx.obj.store()
    with store.transaction() as tx:
        sl = get_slice(tx.doc, name)
        del tx.doc["slices"][name]
        tx.doc["routes"].pop(name, None)
        tx.summary = f"release {name}: {','.join(sl['cubes'])}"
    table = safe_child(store.dir / "routes", name, ".npz") if (store.dir / "routes").exists() else None
    if table is not None and table.exists():
        table.unlink()
    emit({"slice": name, "serial": tx.doc["serial"], "released_cubes": sl["cubes"]}, output,
         lambda: f"released {name}: {','.join(sl['cubes'])} back in the pool")
