"""`tpufleet plan-xconnect` and `tpufleet apply-xconnect`: Terraform-style plan / apply of OCS cross-connects."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit, link_steps
from tpufleet.constants import DIMS
from tpufleet.errors import EXIT_PLAN_HAS_CHANGES
from tpufleet.text import printable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tpufleet.ops.plans import Planned


def _render_plan(pdoc: dict, verbose: bool, cube_names: list[str]) -> str:
    lines = [
        f"plan for slice {pdoc['slice']} ({pdoc['shape']}{' twisted' if pdoc['twisted'] else ''}) at serial {pdoc['serial']}"
    ]
    if not pdoc["ocs"]:
        return lines[0] + "\n  sub-cube slice: no cross-connects needed"
    lines.append("  cube coordinates: " + ", ".join(f"{c}={tuple(v)}" for c, v in pdoc["cubes"].items()))
    for dim in DIMS:
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
    name: Annotated[str, typer.Argument(metavar="SLICE|JOB", help="Slice name, or job name (every slice of the job)")],
    out: Annotated[Path | None, typer.Option("--out", help="Save the plan to this file for apply-xconnect")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Plan and apply in one locked step")] = False,
    detailed_exitcode: Annotated[
        bool,
        typer.Option(
            "--detailed-exitcode", help=f"Exit {EXIT_PLAN_HAS_CHANGES} when the plan has changes, 0 when none"
        ),
    ] = False,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="List every port pair to add or remove")] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Plan the OCS cross-connects of a slice (or of every slice of a job): coordinates, neighbours, port pairs,
    diff against the OCS."""
    from tpufleet.ops import plans as ops
    from tpufleet.state import planfile
    from tpufleet.state.outputs import check_output_path
    from tpufleet.state.store import utc_now

    if out is not None:
        check_output_path(out, "--out")
    now = utc_now()
    if apply:
        planned = ctx.obj.mutate(lambda s: ops.plan(s, name, now, apply=True))
    else:
        planned = ops.plan(ctx.obj.store().load(), name, now, apply=False)
    assert isinstance(planned, ops.Planned)
    if out is not None:
        planfile.write(out, planned.data)
    linked = ctx.obj.store().linked_tables(
        [*planned.data.get("routes_stale", ()), *planned.data.get("routes_none", ())]
    )
    tail = (f"\nsaved to {printable(str(out))}" if out else "") + (
        "\napplied." + _routes_steps(planned.data, linked) if apply else ""
    )
    emit(planned.data, output, lambda: _render_planned(name, planned, verbose) + tail)
    if detailed_exitcode and planned.has_changes:
        raise typer.Exit(EXIT_PLAN_HAS_CHANGES)


def _routes_steps(d: dict, linked: "Mapping[str, str]") -> str:
    """The `routes` each wired slice with stale stored tables needs: the wiring's (its cross-connects changed), or,
    with nothing to add or remove, the slice's own made stale before (e.g. by a repair); and each wired slice with
    none stored; a symbolic link standing where its tables belong (`linked`) removed first."""
    s = d["summary"]
    why = "its stored tables " + ("predate this wiring" if s["add"] or s["remove"] else "are stale")
    steps = [(n, why) for n in d.get("routes_stale", ())] + [
        (n, "no tables stored for it") for n in d.get("routes_none", ())
    ]
    return "".join(
        "".join(f"\n{line}" for line in link_steps("  ", n, linked)) + f"\n  next: tpufleet routes {n}  ({reason})"
        for n, reason in steps
    )


def _render_planned(name: str, planned: "Planned", verbose: bool) -> str:
    """A slice's plan, or each slice's plan of a job and the job's total."""
    doc = planned.data
    if not planned.job:
        return _render_plan(doc, verbose, planned.port_cubes[doc["slice"]])
    parts = [_render_plan(p, verbose, planned.port_cubes[p["slice"]]) for p in doc["plans"]]
    s = doc["summary"]
    total = f"job {name}: {len(parts)} slice(s), {s['add']} to add, {s['remove']} to remove, {s['keep']} in place"
    return "\n".join([*parts, total])


@app.command(
    "apply-xconnect",
    epilog=examples("tpufleet apply-xconnect train.plan", "tpufleet apply-xconnect llm.plan   # a job's plan"),
)
def apply_cmd(
    ctx: typer.Context,
    plan_file: Annotated[
        Path, typer.Argument(metavar="PLAN", help="A plan saved by plan-xconnect --out (of a slice or a job)")
    ],
    output: OutputOpt = Output.table,
) -> None:
    """Apply a saved plan. Refuses it when something it depends on changed since it was made (its slice, its
    cubes, a fault on them or on an OCS it touches; unrelated changes elsewhere do not matter), and when it is
    not the plan the state gives (edited, or made for another state directory)."""
    from tpufleet.journalentry import JournalEntry
    from tpufleet.ops import plans as ops
    from tpufleet.state import planfile
    from tpufleet.state.journal import whole_from_first
    from tpufleet.state.store import utc_now

    saved, now, store = planfile.read_any(plan_file), utc_now(), ctx.obj.store()
    with store.transaction() as tx:

        def journal(serial: int) -> list[JournalEntry]:  # the lines after the plan's serial, read from the end
            enough = lambda entries: entries[0].serial <= serial + 1 and whole_from_first(entries)  # noqa: E731
            return store.journal_back(enough, tx.state.serial).entries

        outcome = ops.apply(tx.state, saved, now, journal)
        tx.commit(outcome.change)
    d = outcome.data
    s = d["summary"]
    job = isinstance(saved, planfile.SavedJobPlan)
    what = f"job {d['job']} ({len(d['plans'])} slices)" if job else d["slice"]
    done = f"applied plan for {what}: {s['add']} added, {s['remove']} removed, {s['keep']} kept"
    if d.get("already_applied"):
        done = already_applied_line(what, d["plan_cross_connects"], s["keep"])
    linked = store.linked_tables([*d["routes_stale"], *d["routes_none"]])
    emit(d, output, lambda: f"{done} (serial {d['serial']})" + _routes_steps(d, linked))


def already_applied_line(what: str, plan_pairs: int, slice_pairs: int) -> str:
    """What is true of a plan applied before: its own cross-connects are in place (and the slice's, when it holds
    more since: pairs the plan deferred on an OCS then down, put in place after its repair)."""
    held = f" (the slice holds {slice_pairs})" if slice_pairs != plan_pairs else ""
    return f"plan for {what} already applied: its {plan_pairs} cross-connects are in place{held}, nothing changed"
