"""`tpufleet import slices` (GKE's Slice objects against tpufleet's slices) and `tpufleet drift` (the plans of the
three imports against the state, for cron): options -> one use case -> render."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import ImportDetailedExitcodeOpt, Output, OutputOpt, app, examples
from tpufleet.cli.fleetimport import import_app, run_import, state_before_standard_input, unplaced_lines
from tpufleet.cli.render import emit

if TYPE_CHECKING:
    from collections.abc import Callable

    from tpufleet.ops.drift import DriftInputs


def _slices_text(d: dict[str, Any]) -> str:
    lines = [
        f"{d['source']}: {d['slices']} Slices, {d['matched']} matched to tpufleet's slices ({d['in_sync']} in sync), "
        f"{len(d['drift'])} drift item(s)",
    ]
    signs = {"not_in_tpufleet": "+", "conflict": "!", "not_in_cluster": "-", "shape": "~", "cubes": "~", "state": "~"}
    for item in d["drift"]:
        who = " / ".join(filter(None, (item["slice"], item["tpufleet_slice"] and f"tpufleet {item['tpufleet_slice']}")))
        lines.append(f"  {signs[item['kind']]} {item['kind']} {who}: {item['reason']}")
    lines += [f"  . ignored {g['slice']} ({g['state']}): {g['reason']}" for g in d["ignored"]]
    lines += [
        f"  . activating {a['slice']}"
        + (f" / tpufleet {a['tpufleet_slice']}" if a["tpufleet_slice"] != a["slice"] else "")
        + f" since {a['since'] or '?'}: GKE is bringing up what tpufleet wired (in sync)"
        for a in d["activating"]
    ]
    if not d["has_changes"]:
        verdict = "  no changes" + (" (the drift above is not for import to settle)" if d["drift"] else "")
    elif d["applied"]:
        verdict = f"applied (serial {d['serial']}): {len(d['slices_new'])} slice(s) recorded."
    else:
        verdict = f"plan only: run again with --apply to record {len(d['slices_new'])} slice(s)."
    return "\n".join([*lines, verdict])


@import_app.command(
    "slices",
    epilog=examples(
        "kubectl get slices -o json > slices.json",
        "tpufleet import slices slices.json",
        "tpufleet import slices slices.json --apply",
        "kubectl get slices -o json | tpufleet import slices - --detailed-exitcode",
    ),
)
def import_slices_cmd(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(metavar="FILE|-", help="Output of `kubectl get slices -o json`")],
    apply: Annotated[
        bool, typer.Option("--apply", help="Record the Slices tpufleet does not know, on their cubes")
    ] = False,
    detailed_exitcode: ImportDetailedExitcodeOpt = False,
    output: OutputOpt = Output.table,
) -> None:
    """Compare GKE's Slices (kubectl get slices) with tpufleet's slices and name the drift: a Slice on cubes
    tpufleet holds free, a slice with no Slice, another shape, cubes or state. Changes nothing without --apply,
    which records the Slices tpufleet does not know as slices on their cubes."""
    from tpufleet.ops.gke_slices import import_slices
    from tpufleet.state.slicelists import read_slice_list
    from tpufleet.state.store import utc_now

    state_before_standard_input(ctx, source)
    given, name = read_slice_list(source)
    now = utc_now()
    run_import(
        ctx,
        lambda state, applying: import_slices(state, given, name, now, apply=applying),
        apply,
        detailed_exitcode,
        output,
        _slices_text,
    )


# ---- drift -------------------------------------------------------------------------------------------------
NodesOpt = Annotated[str | None, typer.Option("--nodes", metavar="FILE|-", help="kubectl get nodes -o json")]
MappingOpt = Annotated[Path | None, typer.Option("--mapping", help="Mapping file of the node list (as import k8s)")]
ReservationOpt = Annotated[
    str | None,
    typer.Option("--reservation", metavar="FILE|-", help="gcloud compute reservations sub-blocks list --format=json"),
]
SlicesOpt = Annotated[str | None, typer.Option("--slices", metavar="FILE|-", help="kubectl get slices -o json")]


def check_drift_options(
    nodes: str | None, mapping: Path | None, reservation: str | None, slices: str | None, option: str = "--"
) -> None:
    """What is refused before any input is read (`metrics` reads its goodput logs too): two sources from standard
    input, a mapping without its node list."""
    from tpufleet.errors import BadInput

    given = {"nodes": nodes, "reservation": reservation, "slices": slices}
    dashes = [f"{option}{name}" for name, value in given.items() if value == "-"]
    if len(dashes) > 1:  # named as metrics names --goodput and an export both '-'
        named = ", ".join(dashes[:-1]) + f" and {dashes[-1]}"
        raise BadInput(f"bad options {named}: each is - (standard input); only one can be")
    if nodes is None and mapping is not None:
        raise BadInput(f"bad option {option}mapping: it maps the node list; give {option}nodes too")


def read_drift_inputs(
    nodes: str | None, mapping: Path | None, reservation: str | None, slices: str | None, option: str = "--"
) -> DriftInputs:
    """The given sources, each read through its import's reader (exit 2 on bad input); at most one of them
    from standard input, and that one read last: a file named wrong is refused before a piped export is read."""
    from tpufleet.ops.drift import DriftInputs
    from tpufleet.state.nodelists import read_mapping, read_node_list
    from tpufleet.state.reservations import read_reservation
    from tpufleet.state.slicelists import read_slice_list

    check_drift_options(nodes, mapping, reservation, slices, option)
    keys = read_mapping(mapping)

    def node_input(source: str) -> Any:
        node_list, name = read_node_list(source, keys.labels)
        return node_list, keys, name

    readers: dict[str, tuple[str | None, Callable[[str], Any]]] = {
        "nodes": (nodes, node_input),
        "reservation": (reservation, read_reservation),
        "slices": (slices, read_slice_list),
    }
    given = {
        name: reader(source)
        for name, (source, reader) in sorted(readers.items(), key=lambda item: item[1][0] == "-")
        if source is not None
    }
    return DriftInputs(**given)


def _drift_text(d: dict[str, Any]) -> str:
    lines = []
    for source, s in d["sources"].items():
        kinds = ", ".join(f"{n} {k}" for k, n in s["kinds"].items() if n)
        lines.append(
            f"{source} ({s['file']}): " + (f"{s['drift']} drift item(s): {kinds}" if s["drift"] else "in sync")
        )
        if source == "slices":
            lines += [f"  {i['kind']} {i['slice'] or i['tpufleet_slice']}: {i['reason']}" for i in s["plan"]["drift"]]
        if source == "reservation" and s["plan"]["unplaced"]:  # drift: why each is not placed, as its import says
            lines += unplaced_lines(s["plan"]["unplaced"], "sub_block", "sub-blocks")
            if any("give --pod POD" in u["reason"] for u in s["plan"]["unplaced"]):  # an option of the import's
                lines.append(f"  (`tpufleet import reservation {s['file']} --pod POD` places a block no pod holds)")
    lines.append("in sync" if d["in_sync"] else f"drift: {d['drift']} item(s) (serial {d['serial']})")
    return "\n".join(lines)


@app.command(
    "drift",
    epilog=examples(
        "tpufleet drift --reservation sb.json --slices slices.json",
        "kubectl get slices -o json | tpufleet drift --slices - --nodes nodes.json -o json",
        "tpufleet drift --nodes nodes.json --reservation sb.json --slices slices.json -o json > drift.json",
    ),
)
def drift_cmd(
    ctx: typer.Context,
    nodes: NodesOpt = None,
    mapping: MappingOpt = None,
    reservation: ReservationOpt = None,
    slices: SlicesOpt = None,
    output: OutputOpt = Output.table,
) -> None:
    """Fresh exports of the cluster's nodes, the reservation's sub-blocks and the Slices against the state, in one
    command (for cron): the drift per source and kind. Changes nothing; exit 0 in sync, 4 drift, 2 bad input."""
    from tpufleet.errors import EXIT_PLAN_HAS_CHANGES, BadInput
    from tpufleet.ops.drift import drift
    from tpufleet.state.store import utc_now

    if nodes is None and reservation is None and slices is None:
        raise BadInput("bad options: give at least one of --nodes, --reservation, --slices")
    check_drift_options(nodes, mapping, reservation, slices)
    state_before_standard_input(ctx, nodes, reservation, slices)
    given = read_drift_inputs(nodes, mapping, reservation, slices)
    d = drift(ctx.obj.store().load(), given, utc_now()).data
    emit(d, output, lambda: _drift_text(d))
    _warn(d)
    if not d["in_sync"]:
        raise typer.Exit(EXIT_PLAN_HAS_CHANGES)


def drift_kinds(state: Any, given: DriftInputs | None) -> dict[str, dict[str, int]] | None:
    """`metrics --drift-*`: source -> kind -> drift items of the given sources (None when none is given)."""
    if given is None:
        return None
    from tpufleet.ops.drift import drift
    from tpufleet.state.store import utc_now

    d = drift(state, given, utc_now()).data
    _warn(d)  # a cron's metrics say it too: an empty list counts no drift
    return {source: s["kinds"] for source, s in d["sources"].items()}


def _warn(d: dict[str, Any]) -> None:
    """Each source's warning on stderr, as its import says it (an empty reservation list: a mistyped query?)."""
    for source in d["sources"].values():
        if source["plan"].get("warning"):
            typer.echo(f"tpufleet: warning: {source['plan']['warning']}", err=True)
