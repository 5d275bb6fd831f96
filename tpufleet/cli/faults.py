"""`tpufleet inject-fault`, `clear-fault`, `faults` and `reschedule`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tpufleet.cli.app import Output, OutputOpt, app
from tpufleet.cli.render import emit, grid

SCENARIO_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["target"],
        "additionalProperties": False,
        "properties": {"target": {"type": "string"}, "planned": {"type": "boolean"}, "reason": {"type": "string"}},
    },
}


def _scenario(path: Path) -> list[dict]:
    import yaml

    from tpufleet.errors import BadInput, BadStateFile
    from tpufleet.state.schema import check

    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise BadStateFile(str(path), "", None, f"cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise BadStateFile(str(path), "", None, f"not valid YAML/JSON ({str(exc).splitlines()[0]})") from None
    if isinstance(data, list):  # a bare string is shorthand for {target: ...}
        data = [{"target": d} if isinstance(d, str) else d for d in data]
    check(SCENARIO_SCHEMA, data, str(path))
    items = data
    if not items:
        raise BadInput(f"{path}: the scenario lists no faults")
    return items


def _describe(r: dict) -> str:
    if r.get("duplicate_of"):
        return f"{r['target']} already has open fault {r['duplicate_of']}: nothing changed"
    kind = "planned drain" if r["planned"] else "fault"
    lines = [f"{kind} {r['fault_id']} on {r['target']}"]
    lines.append(f"  cubes out of the pool: {', '.join(r['cubes_out']) or 'none'}")
    if not r["slices"]:
        lines.append("  slices hit: none")
    for s in r["slices"]:
        line = f"  slice {s['slice']}: {s['action']} ({s['reason']})"
        rep = s.get("replacement")
        if rep:
            if rep["status"] == "pending":
                line += f" -> pending: {rep['why']}"
            else:
                x = rep["xconnect_changes"]
                line += f" -> {rep['pod']} {','.join(rep['cubes'])}; cross-connects +{x['add']} -{x['remove']} ={x['keep']}"
        rr = s.get("reroute")
        if rr:
            line += (f": fully routable, {'deadlock-free' if rr['deadlock_free'] else 'DEADLOCK'}, {rr['vcs']} VCs, "
                     f"all-to-all throughput retained {rr['all_to_all_retained']:.3f}")
        lines.append(line)
    return "\n".join(lines)


@app.command("inject-fault")
def inject_cmd(
    ctx: typer.Context,
    target: Annotated[Optional[str], typer.Argument(help="chip:, host:, ici:, link:, ocs: or cube: id")] = None,
    planned: Annotated[bool, typer.Option("--planned", help="A maintenance drain: jobs notified, link drained first")] = False,
    reason: Annotated[str, typer.Option("--reason", help="Free text kept with the fault")] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the blast radius; change nothing")] = False,
    from_file: Annotated[Optional[Path], typer.Option("--from", help="YAML/JSON list of faults, injected in one transaction")] = None,
    random_count: Annotated[Optional[int], typer.Option("--random", help="Draw N faults with the brief's daily rates")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for --random")] = 0,
    output: OutputOpt = Output.table,
) -> None:
    """Fail (or drain) a component and show its blast radius: cubes out, slices rescheduled or rerouted."""
    from tpufleet import faults
    from tpufleet.cli.common import mark_routes_stale
    from tpufleet.errors import BadInput
    from tpufleet.model import Fleet
    from tpufleet.state.store import utc_now

    sources = sum(x is not None for x in (target, from_file, random_count))
    if sources != 1:
        raise BadInput("give exactly one of TARGET, --from FILE or --random N")
    store = ctx.obj.store()
    if from_file is not None:
        items = _scenario(from_file)
    elif random_count is not None:
        items = [{"target": t} for t in faults.random_targets(Fleet.from_doc(store.load()["fleet"]), random_count, seed)]
    else:
        items = [{"target": target}]
    fleet = Fleet.from_doc(store.load()["fleet"])
    for i, item in enumerate(items):  # reject bad ids before taking the lock
        try:
            faults.normalize(fleet, item["target"])
        except BadInput as exc:
            where = f"{from_file}: item {i}: " if from_file else ""
            raise BadInput(f"{where}{exc}") from None
    now = utc_now()
    with store.transaction() as tx:
        radii = []
        for item in items:
            r = faults.inject(tx.doc, item["target"], item.get("planned", planned), item.get("reason", reason), now)
            mark_routes_stale(tx.doc, {s.slice for s in r.slices if s.action != "none"}, f"fault {r.fault_id}")
            radii.append(r.to_dict())
        new = [r for r in radii if not r.get("duplicate_of")]
        if new and not dry_run:
            tx.summary = "inject-fault " + ", ".join(f"{r['fault_id']} {r['target']}" for r in new)
            tx.details = {"faults": [r["fault_id"] for r in new]}
    result = radii[0] if len(radii) == 1 and target is not None else radii
    if dry_run:
        note = "(dry run: nothing was changed)"
        emit(result, output, lambda: "\n".join(_describe(r) for r in radii) + "\n" + note)
    else:
        emit(result, output, lambda: "\n".join(_describe(r) for r in radii))


@app.command("clear-fault")
def clear_cmd(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="A fault id (f12) or a target id (all its open faults)")],
    output: OutputOpt = Output.table,
) -> None:
    """Repair: close the fault; its components return to the pool. Routing tables of affected slices go stale."""
    from tpufleet import faults
    from tpufleet.cli.common import mark_routes_stale
    from tpufleet.model import Fleet
    from tpufleet.state.store import utc_now

    store = ctx.obj.store()
    with store.transaction() as tx:
        cleared = faults.clear(tx.doc, key, utc_now())
        fleet = Fleet.from_doc(tx.doc["fleet"])
        touched = set()
        for f in cleared:
            touched |= {name for name, how in faults.touched_slices(tx.doc, fleet, faults.normalize(fleet, f["target"])) if how == "network"}
        stale = mark_routes_stale(tx.doc, touched, "fault cleared")
        tx.summary = "clear-fault " + ", ".join(f"{f['id']} {f['target']}" for f in cleared)
    from tpufleet.views import missing_pairs

    rewire = sorted(n for n, sl in tx.doc["slices"].items() if missing_pairs(tx.doc, sl, fleet))
    hint = [f"  {n}: cross-connects deferred during the fault; run `tpufleet plan-xconnect {n} --apply`" for n in rewire]
    emit({"cleared": cleared, "routes_stale": stale, "rewire": rewire, "serial": tx.doc["serial"]}, output,
         lambda: "\n".join([f"cleared {f['id']} on {f['target']}" for f in cleared] + hint))


@app.command("faults")
def faults_cmd(
    ctx: typer.Context,
    all_faults: Annotated[bool, typer.Option("--all", help="Include cleared faults")] = False,
    output: OutputOpt = Output.table,
) -> None:
    """List open faults (with --all, cleared ones too)."""
    doc = ctx.obj.store().load()
    rows = [
        {k: f.get(k) for k in ("id", "target", "planned", "opened", "cleared", "reason")}
        for f in doc["faults"]
        if all_faults or not f["cleared"]
    ]
    emit(rows, output, lambda: grid(
        [[r["id"], r["target"], "drain" if r["planned"] else "fault", r["opened"], r["cleared"] or "open", r["reason"] or ""] for r in rows],
        ["id", "target", "kind", "opened", "cleared", "reason"],
    ) if rows else "no faults")


@app.command("reschedule")
def reschedule_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="An evicted slice")],
    output: OutputOpt = Output.table,
) -> None:
    """Move an evicted slice onto the proposed replacement: allocation plus applied cross-connects."""
    from tpufleet import faults, xconnect
    from tpufleet.cli.common import get_slice, mark_routes_stale
    from tpufleet.errors import Refused
    from tpufleet.health import health_of
    from tpufleet.ids import parse_target
    from tpufleet.model import Fleet
    from tpufleet.shapes import parse_shape

    store = ctx.obj.store()
    with store.transaction() as tx:
        doc = tx.doc
        sl = get_slice(doc, name)
        if sl["state"] != "evicted":
            raise Refused(f"slice {name!r} is {sl['state']}, not evicted; nothing to reschedule")
        fleet = Fleet.from_doc(doc["fleet"])
        cause = next((f for f in doc["faults"] if f["id"] == sl.get("evicted_by")), None)
        open_cause = cause is not None and not cause["cleared"]
        proposal = faults.propose_replacement(doc, fleet, name, parse_target(cause["target"]) if open_cause else None)
        if proposal["status"] == "pending":
            raise Refused(f"cannot reschedule {name!r} yet: {proposal['why']}")
        faults.apply_replacement(doc, name, proposal)
        shape = parse_shape(sl["shape"], sl["twisted"])
        plan = xconnect.plan(shape, fleet, sl["coords"], doc["ocs"], health_of(doc), sl["fault_tolerant_routing"])
        doc["ocs"] = xconnect.apply(doc["ocs"], plan.changes)
        sl["state"] = "connected"
        sl["connected_serial"] = doc["serial"] + 1
        mark_routes_stale(doc, {name}, "rescheduled")
        tx.summary = f"reschedule {name}: {','.join(sl['cubes'])} (+{plan.summary['add']} -{plan.summary['remove']})"
    emit({"slice": name, "serial": tx.doc["serial"], **proposal}, output,
         lambda: f"rescheduled {name} onto {proposal['pod']} {','.join(proposal['cubes'])}; "
                 f"cross-connects +{plan.summary['add']} -{plan.summary['remove']} ={plan.summary['keep']}")
