"""`tpufleet plan-xconnect` and `tpufleet apply-xconnect`: Terraform-style plan / apply of OCS cross-connects."""

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
        "tpufleet plan-xconnect llm --apply             # a job: every slice, in one locked step",
    ),
)
def plan_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Slice name, or job name (every slice of the job)")],
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
    """Plan the OCS cross-connects of a slice (or of every slice of a job): coordinates, neighbours, port pairs,
    diff against the OCS."""
    from tpufleet.ops import xconnect as ops
    from tpufleet.state.files import check_output_path, write_output
    from tpufleet.state.store import utc_now

    if out is not None:
        check_output_path(out, "--out")
    now = utc_now()
    if name in ctx.obj.store().load().jobs:
        _plan_job(ctx, name, out, apply, detailed_exitcode, verbose, output, now)
        return
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


def _plan_job(
    ctx: typer.Context,
    name: str,
    out: Path | None,
    apply: bool,
    detailed_exitcode: bool,
    verbose: bool,
    output: Output,
    now: str,
) -> None:
    """`plan-xconnect JOB`: the plan of every slice of the job; with --apply, all wired in one transaction."""
    from tpufleet.ops import jobs as ops
    from tpufleet.state.files import write_output

    if apply:
        doc, has_changes = ctx.obj.mutate(lambda s: ops.plan_and_apply_job(s, name, now)).data, False
    else:
        doc, has_changes = ops.plan_job(ctx.obj.store().load(), name, now)
    if out is not None:
        write_output(out, (json.dumps(doc, indent=1) + "\n").encode())
    state = ctx.obj.store().load()
    parts = [_render_plan(p, verbose, _pod_cubes(ctx, p, state)) for p in doc["plans"]]
    s = doc["summary"]
    total = f"job {name}: {len(parts)} slice(s), {s['add']} to add, {s['remove']} to remove, {s['keep']} in place"
    tail = (f"\nsaved to {out}" if out else "") + ("\napplied." if apply else "")
    emit(doc, output, lambda: "\n".join([*parts, total]) + tail)
    if detailed_exitcode and has_changes:
        raise typer.Exit(EXIT_PLAN_HAS_CHANGES)


def _pod_cubes(ctx: typer.Context, pdoc: dict, state) -> list[str]:
    """The cube at each OCS port of the slice's pod, to name the ports in `-v` output."""
    state = state or ctx.obj.store().load()
    return list(state.fleet.pod_of(next(iter(pdoc["cubes"]))).cubes)


@app.command(
    "apply-xconnect",
    epilog=examples("tpufleet apply-xconnect train.plan", "tpufleet apply-xconnect llm.plan   # a job's plan"),
)
def apply_cmd(
    ctx: typer.Context,
    plan_file: Annotated[Path, typer.Argument(help="A plan saved by plan-xconnect --out (of a slice or a job)")],
    output: OutputOpt = Output.table,
) -> None:
    """Apply a saved plan. Refuses it when something it depends on changed since it was made (its slice, its
    cubes, a fault on them or on an OCS it touches; unrelated changes elsewhere do not matter), and when it is
    not the plan the state gives (edited, or made for another state directory)."""
    from tpufleet.ops import xconnect as ops
    from tpufleet.state import planfile
    from tpufleet.state.store import utc_now

    job_plan = _read_job_plan(plan_file)
    if job_plan is not None:
        _apply_job_plan(ctx, *job_plan, output)
        return
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


_JOB_PLAN_SCHEMA = {
    "type": "object",
    "required": ["kind", "schema_version", "job", "serial", "plans"],
    "properties": {
        "schema_version": {"const": 1},
        "job": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"},
        "serial": {"type": "integer", "minimum": 0},
        "plans": {"type": "array", "minItems": 1},
    },
}


def _read_job_plan(path: Path) -> tuple[str, list] | None:
    """A job's plan file (`plan-xconnect JOB --out`): the job and each slice's plan, each checked as a slice's
    plan file is; None when the file is a slice's plan (planfile.read reports any problem with it)."""
    from tpufleet.ops.jobs import JOB_PLAN_KIND
    from tpufleet.state import planfile
    from tpufleet.state.inputfiles import MAX_SPEC_BYTES, load_json_file
    from tpufleet.state.schema import check

    doc = load_json_file(path, "plan file", MAX_SPEC_BYTES)
    if not isinstance(doc, dict) or doc.get("kind") != JOB_PLAN_KIND:
        return None
    check(_JOB_PLAN_SCHEMA, doc, str(path))
    saved = []
    for i, part in enumerate(doc["plans"]):
        check(planfile.PLAN_SCHEMA, part, str(path), f"plans.{i}")
        saved.append(_saved(part, str(path), i))
    return doc["job"], saved


def _saved(doc: dict, path: str, i: int):
    """One slice's part of a job plan as a SavedPlan (what planfile.read makes of a slice's plan file)."""
    from tpufleet.errors import BadStateFile
    from tpufleet.ids import OcsId
    from tpufleet.state.planfile import SavedPlan
    from tpufleet.xconnect import OcsChange

    changes = []
    for j, o in enumerate(doc["ocs"]):
        try:
            ocs = OcsId.from_key(o["id"].split(":", 1)[1])
        except ValueError:
            raise BadStateFile(path, f"plans.{i}.ocs.{j}.id", o["id"], "not an OCS id") from None
        pairs = [[(int(a), int(b)) for a, b in o[k]] for k in ("add", "remove")]
        changes.append(OcsChange(ocs, pairs[0], pairs[1], o["keep"]))
    cubes = tuple(doc["cubes"])
    return SavedPlan(
        path, doc["slice"], doc["serial"], changes, doc["shape"], doc["twisted"], cubes, doc.get("made", "")
    )


def _apply_job_plan(ctx: typer.Context, job: str, saved: list, output: Output) -> None:
    from tpufleet.ops import jobs as ops
    from tpufleet.state.store import utc_now

    now = utc_now()
    d = ctx.obj.mutate(lambda state: ops.apply_saved_job(state, job, saved, now)).data
    s = d["summary"]
    emit(
        d,
        output,
        lambda: (
            f"applied plan for job {job} ({len(d['plans'])} slices): {s['add']} added, {s['remove']} removed, "
            f"{s['keep']} kept (serial {d['serial']})"
        ),
    )
