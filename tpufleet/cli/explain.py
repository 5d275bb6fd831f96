"""`tpufleet explain SLICE|TARGET`: why a slice is pending, evicted or degraded; what depends on a component."""

from typing import Annotated

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit


def _text(r: dict) -> str:
    if r["kind"] == "job":
        shape = r["shape"] + (" twisted" if r["twisted"] else "")
        lines = [f"job {r['name']}: {r['total_slices']} x {shape} over {','.join(r['pods'])}, {r['state']}"]
        return "\n".join(lines + [f"  why: {w}" for w in r["why"]] + [f"  next: {n}" for n in r["next"]])
    if r["kind"] == "slice":
        lines = [f"slice {r['name']}: {r['shape']} in {r['pod']}, cubes {','.join(r['cubes'])}, {r['state']}"]
    else:
        lines = [f"{r['target']}: {r['state']}"]
    lines += [f"  why: {w}" for w in r.get("why", [])]
    for f in r["faults"]:
        kind = "drain" if f["planned"] else "fault"
        lines.append(
            f"  {kind} {f['id']} on {f['target']} since {f['since']}" + (f": {f['reason']}" if f["reason"] else "")
        )
    if r["kind"] != "slice":
        lines.append(f"  slices depending on it: {', '.join(r['slices']) or 'none'}")
        lines.append(f"  stored routing tables depending on it: {', '.join(r['tables']) or 'none'}")
    lines += [f"  next: {n}" for n in r["next"]]
    return "\n".join(lines)


@app.command(
    "explain",
    epilog=examples(
        "tpufleet explain train-a          # why it is pending, evicted or degraded, and what moves it on",
        "tpufleet explain ocs:pod0/x/3     # its faults, the slices and tables that depend on it",
        "tpufleet explain cube:c12 -o json",
    ),
)
def explain_cmd(
    ctx: typer.Context,
    what: Annotated[
        str, typer.Argument(metavar="SLICE|JOB|TARGET", help="A slice or job name, or a component id such as cube:c12")
    ],
    output: OutputOpt = Output.table,
) -> None:
    """Explain a slice's state (the faults, ports and cubes behind it, and what `reschedule` would do) or a
    component's dependants."""
    from tpufleet.errors import BadInput
    from tpufleet.ops.explain import explain, slices_told
    from tpufleet.ops.views import tables_as_stored
    from tpufleet.state.store import utc_now

    if not what.strip():  # no slice, job or component is named so: bad input, as `allocate ""` is
        raise BadInput(f"bad argument SLICE|JOB|TARGET {what!r}: name a slice, a job or a component id (cube:c12)")
    store = ctx.obj.store()
    loaded = store.load()
    state, missing = tables_as_stored(store, loaded, slices_told(loaded, what))
    r = explain(state, what, utc_now(), missing, store.linked_tables(state.slices)).data
    emit(r, output, lambda: _text(r))
