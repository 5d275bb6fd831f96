"""`tpufleet plan-xconnect` and `tpufleet apply-xconnect`: Terraform-style plan / apply of OCS cross-connects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from tpufleet.cli.app import Output, OutputOpt, app
from tpufleet.cli.render import emit
from tpufleet.errors import EXIT_PLAN_HAS_CHANGES


def _make_plan(doc: dict, name: str):
    from tpufleet import xconnect
    from tpufleet.cli.common import get_slice
    from tpufleet.errors import Refused
    from tpufleet.health import health_of
    from tpufleet.model import Fleet
    from tpufleet.plans import plan_doc
    from tpufleet.state.store import utc_now
    from tpufleet.wiring import slice_shape

    sl = get_slice(doc, name)
    if sl["state"] == "evicted":
        raise Refused(f"slice {name!r} is evicted; run `tpufleet reschedule {name}` first")
    fleet = Fleet.from_doc(doc["fleet"])
    health = health_of(doc)
    bad_cubes = [c for c in sl["cubes"] if not health.cube_ok(c)]
    if bad_cubes:
        raise Refused(f"slice {name!r} holds cubes out of the pool: {', '.join(bad_cubes)}; choose other cubes", bad_cubes)
    plan = xconnect.plan(slice_shape(sl), fleet, sl["coords"], doc["ocs"], health, sl["fault_tolerant_routing"])
    if plan.blocked:
        raise Refused(
            f"cannot wire slice {name!r}: {len(plan.blocked)} needed OCS or port(s) are failed or drained; choose other cubes",
            plan.blocked,
        )
    return plan_doc(name, doc["serial"], sl, plan, utc_now()), plan


def _apply(tx, pdoc: dict) -> dict:
    from tpufleet import xconnect
    from tpufleet.cli.common import get_slice, mark_routes_stale
    from tpufleet.model import Fleet
    from tpufleet.plans import changes_of

    doc = tx.doc
    sl = get_slice(doc, pdoc["slice"])
    changes = changes_of(pdoc)
    fleet = Fleet.from_doc(doc["fleet"])
    touched = set()
    owners = xconnect.owner_of_ports(doc["slices"], fleet)
    for change in changes:
        pod = change.id.split(":")[1].split("/")[0]
        for north, south in change.remove:
            touched.update(owners.get((pod, p)) for p in (north, south))
    doc["ocs"] = xconnect.apply(doc["ocs"], changes)
    sl["state"] = "connected"
    sl["connected_serial"] = doc["serial"] + 1
    changed = any(c.add or c.remove for c in changes)
    stale = mark_routes_stale(doc, (({pdoc["slice"]} if changed else set()) | touched) - {None}, "cross-connects changed")
    s = pdoc["summary"]
    tx.summary = f"apply-xconnect {pdoc['slice']}: +{s['add']} -{s['remove']} ={s['keep']}"
    tx.details = {"slice": pdoc["slice"], **s, "routes_stale": stale}
    return {"applied": True, "routes_stale": stale}


def _render_plan(pdoc: dict, verbose: bool, cube_names: list[str]) -> str:
    lines = [f"plan for slice {pdoc['slice']} ({pdoc['shape']}{' twisted' if pdoc['twisted'] else ''}) at serial {pdoc['serial']}"]
    if not pdoc["ocs"]:
        return lines[0] + "\n  sub-cube slice: no cross-connects needed"
    lines.append("  cube coordinates: " + ", ".join(f"{c}={tuple(v)}" for c, v in pdoc["cubes"].items()))
    for dim in "xyz":
        rows = [o for o in pdoc["ocs"] if o["id"].split("/")[1] == dim]
        add, rem, keep = (sum(len(o["add"]) for o in rows), sum(len(o["remove"]) for o in rows), sum(o["keep"] for o in rows))
        lines.append(f"  {dim}: {len(rows)} OCS  add {add:>4}  remove {rem:>4}  keep {keep:>4}")
        if verbose:
            for o in rows:
                for tag, pairs in (("+", o["add"]), ("-", o["remove"])):
                    for n, s in pairs:
                        lines.append(f"    {tag} {o['id']}  N{n} ({cube_names[n]} out) -> S{s} ({cube_names[s]} in)")
    for key in pdoc.get("deferred", []):
        lines.append(f"  {key} is down: its pairs wait for the repair; fault-tolerant routing bridges the gap")
    s = pdoc["summary"]
    verdict = "no changes" if not (s["add"] or s["remove"]) else f"{s['add']} to add, {s['remove']} to remove"
    lines.append(f"  total: {verdict}, {s['keep']} already in place")
    return "\n".join(lines)


@app.command("plan-xconnect")
def plan_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Save the plan to this file for apply-xconnect")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Plan and apply in one locked step")] = False,
    detailed_exitcode: Annotated[
        bool, typer.Option("--detailed-exitcode", help=f"Exit {EXIT_PLAN_HAS_CHANGES} when the plan has changes, 0 when none")
    ] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="List every port pair")] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Plan the OCS cross-connects of a slice: coordinates, neighbours, port pairs, diff against the OCS."""
    from tpufleet.model import Fleet
    from tpufleet.state.files import atomic_write

    store = ctx.obj.store()
    if apply:
        with store.transaction() as tx:
            pdoc, plan = _make_plan(tx.doc, name)
            result = _apply(tx, pdoc)
        doc = tx.doc
        pdoc.update(result, serial=doc["serial"])
    else:
        doc = store.load()
        pdoc, plan = _make_plan(doc, name)
    if out is not None:
        atomic_write(out, (json.dumps(pdoc, indent=1) + "\n").encode())
    pod = doc["slices"][name]["pod"]
    pod_cubes = list(Fleet.from_doc(doc["fleet"]).pod_by_name[pod].cubes)
    emit(pdoc, output, lambda: _render_plan(pdoc, verbose, pod_cubes) + (f"\nsaved to {out}" if out else "") + ("\napplied." if apply else ""))
    if detailed_exitcode and plan.has_changes and not apply:
        raise typer.Exit(EXIT_PLAN_HAS_CHANGES)


@app.command("apply-xconnect")
def apply_cmd(
    ctx: typer.Context,
    plan_file: Annotated[Path, typer.Argument(help="A plan saved by plan-xconnect --out")],
    output: OutputOpt = Output.table,
) -> None:
    """Apply a saved plan; refuses a stale one (the state serial moved on since it was made)."""
    from tpufleet.errors import BadStateFile, Refused
    from tpufleet.plans import PLAN_SCHEMA
    from tpufleet.state.schema import check

    try:
        pdoc = json.loads(plan_file.read_bytes())
    except OSError as exc:
        raise BadStateFile(str(plan_file), "", None, f"cannot be read: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadStateFile(str(plan_file), "", None, f"not valid JSON ({exc})") from None
    check(PLAN_SCHEMA, pdoc, str(plan_file))
    store = ctx.obj.store()
    with store.transaction() as tx:
        if pdoc["serial"] != tx.doc["serial"]:
            raise Refused(
                f"stale plan {plan_file}: made at serial {pdoc['serial']}, state is at serial {tx.doc['serial']}; plan again"
            )
        result = _apply(tx, pdoc)
    s = pdoc["summary"]
    data = {"slice": pdoc["slice"], "serial": tx.doc["serial"], "summary": s, **result}
    emit(data, output, lambda: f"applied plan for {pdoc['slice']}: {s['add']} added, {s['remove']} removed, {s['keep']} kept (serial {tx.doc['serial']})")
