"""`tpufleet plan-xconnect` and `tpufleet apply-xconnect`: Terraform-style plan / apply of OCS cross-connects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit
from tpufleet.errors import EXIT_PLAN_HAS_CHANGES


def _render_plan(pdoc: dict, verbose: bool, cube_names: list[str]) -> str:
    lines = [
        f"plan for slice {pdoc['slice']} ({pdoc['shape']}{' twisted' if pdoc['twisted'] else ''}) at serial {pdoc['serial']}"
    ]
    if not pdoc["ocs"]:
        return lines[0] + "\n  sub-cube slice: no cross-connects needed"
    lines.append("  cube coordinates: " + ", ".join(f"{c}={tuple(v)}" for c, v in pdoc["cubes"].items()))
    for dim in "xyz":
        rows = [o for o in pdoc["ocs"] if o["id"].split("/")[1] == dim]
        add, rem, keep = (
            sum(len(o["add"]) for o in rows),
            sum(len(o["remove"]) for o in rows),
            sum(o["keep"] for o in rows),
        )
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


@app.command(
    "plan-xconnect",
    epilog=examples(
        "tpufleet plan-xconnect train                   # what would change on the OCS",
        "tpufleet plan-xconnect train --out train.plan  # save it for review, then apply-xconnect",
        "tpufleet plan-xconnect train --apply",
    ),
)
def plan_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name")],
    out: Annotated[Path | None, typer.Option("--out", help="Save the plan to this file for apply-xconnect")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Plan and apply in one locked step")] = False,
    detailed_exitcode: Annotated[
        bool,
        typer.Option(
            "--detailed-exitcode", help=f"Exit {EXIT_PLAN_HAS_CHANGES} when the plan has changes, 0 when none"
        ),
    ] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="List every port pair")] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Plan the OCS cross-connects of a slice: coordinates, neighbours, port pairs, diff against the OCS."""
    from tpufleet.ops import xconnect as ops
    from tpufleet.state.files import check_output_path, write_output
    from tpufleet.state.store import utc_now

    if out is not None:
        check_output_path(out, "--out")
    now = utc_now()
    if apply:
        state = None
        outcome = ctx.obj.mutate(lambda s: ops.plan_and_apply(s, name, now))
        pdoc, has_changes = outcome.data, False
    else:
        state = ctx.obj.store().load()
        pdoc, plan = ops.make_plan(state, name, now)
        has_changes = plan.has_changes
    if out is not None:
        write_output(out, (json.dumps(pdoc, indent=1) + "\n").encode())
    pod_cubes = _pod_cubes(ctx, pdoc, state)
    emit(
        pdoc,
        output,
        lambda: (
            _render_plan(pdoc, verbose, pod_cubes)
            + (f"\nsaved to {out}" if out else "")
            + ("\napplied." if apply else "")
        ),
    )
    if detailed_exitcode and has_changes:
        raise typer.Exit(EXIT_PLAN_HAS_CHANGES)


def _pod_cubes(ctx: typer.Context, pdoc: dict, state) -> list[str]:
    """The cube at each OCS port of the slice's pod, to name the ports in `-v` output."""
    state = state or ctx.obj.store().load()
    return list(state.fleet.pod_of(next(iter(pdoc["cubes"]))).cubes)


@app.command("apply-xconnect", epilog=examples("tpufleet apply-xconnect train.plan"))
def apply_cmd(
    ctx: typer.Context,
    plan_file: Annotated[Path, typer.Argument(help="A plan saved by plan-xconnect --out")],
    output: OutputOpt = Output.table,
) -> None:
    """Apply a saved plan. Refuses it when something it depends on changed since it was made (its slice, its
    cubes, a fault on them or on an OCS it touches; unrelated changes elsewhere do not matter), and when it is
    not the plan the state gives (edited, or made for another state directory)."""
    from tpufleet.ops import xconnect as ops
    from tpufleet.state import planfile
    from tpufleet.state.store import utc_now

    saved = planfile.read(plan_file)
    now = utc_now()
    outcome = ctx.obj.mutate(lambda state: ops.apply_saved(state, saved, now))
    d = outcome.data
    s = d["summary"]
    emit(
        d,
        output,
        lambda: (
            f"applied plan for {d['slice']}: {s['add']} added, {s['remove']} removed, {s['keep']} kept (serial {d['serial']})"
        ),
    )
