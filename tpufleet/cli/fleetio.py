"""`tpufleet import ...` and `tpufleet export ...`: a real fleet in (Kubernetes/GKE) and out (Kueue, Slurm, Prometheus)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit

if TYPE_CHECKING:
    from tpufleet.integrations.k8s import K8sMapping

MAX_NODE_LIST_BYTES = 512 * 1024 * 1024  # kubectl prints 2-4 KB a node: room for 100,000 nodes

import_app = typer.Typer(
    name="import",
    help="Read a real fleet's inventory and health into the state.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
export_app = typer.Typer(
    name="export",
    help="Write the fleet for other tools: Kueue, Slurm, GKE Slice objects, node labels.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(import_app, name="import")
app.add_typer(export_app, name="export")


def read_node_list(source: str) -> tuple[Any, str]:
    """The JSON document in FILE, or on stdin for "-", read through the bounded reader; and its name."""
    from tpufleet.state import inputfiles

    name = "<stdin>" if source == "-" else source
    if source == "-":
        data = sys.stdin.buffer.read(MAX_NODE_LIST_BYTES + 1)
        if len(data) > MAX_NODE_LIST_BYTES:
            from tpufleet.errors import BadStateFile

            raise BadStateFile(name, "", None, f"larger than the {MAX_NODE_LIST_BYTES // 2**20} MiB allowed")
    else:
        data = inputfiles.read_bytes(source, "node list", MAX_NODE_LIST_BYTES)
    text = inputfiles.decode_utf8(data, name)
    try:
        # the event logs' fast path: no numbers of a node list are used, and nesting stays bounded by the decoder
        return inputfiles.parse_json_line(text), name
    except inputfiles.JsonProblem as exc:
        from tpufleet.errors import BadStateFile

        raise BadStateFile(name, "", exc.value, exc.problem) from None


def load_mapping(path: Path | None) -> K8sMapping:
    from tpufleet.integrations.k8s import K8sMapping, parse_mapping
    from tpufleet.state import inputfiles

    if path is None:
        return K8sMapping()
    return parse_mapping(inputfiles.load_yaml(path, "mapping file"), str(path))


def _import_text(d: dict[str, Any]) -> str:
    lines = [
        f"{d['source']}: {d['nodes']} nodes, {d['tpu_nodes']} TPU nodes, {d['placed']} placed on machines",
    ]
    if d["pods_named"]:
        lines.append("  pods named: " + ", ".join(f"{p['pod']} = block {p['block']}" for p in d["pods_named"]))
    if d["cubes_added"]:
        lines.append(f"  + {len(d['cubes_added'])} cube(s) named by their partition ids")
    if d["machines_named"]:
        lines.append(f"  + {d['machines_named']} machine(s) named by their nodes")
    for key, sign, kind in (
        ("faults_opened", "+", "fault"),
        ("drains_opened", "+", "drain"),
        ("faults_cleared", "-", "clear"),
    ):
        for f in d[key]:
            ident = f" {f['id']}" if f.get("id") else ""
            lines.append(f"  {sign} {kind}{ident} {f['target']}: {f['reason']}")
    for u in d["unplaced"]:
        lines.append(f"  ? not placed: {u['node']}: {u['reason']}")
    if not d["has_changes"]:
        lines.append("  no changes")
    elif d["applied"]:
        lines.append(f"applied (serial {d['serial']}).")
    else:
        lines.append("plan only: run again with --apply to record it.")
    return "\n".join(lines)


@import_app.command(
    "k8s",
    epilog=examples(
        "kubectl get nodes -o json > nodes.json",
        "tpufleet import k8s nodes.json",
        "tpufleet import k8s nodes.json --apply",
        "kubectl get nodes -o json | tpufleet import k8s - --mapping mapping.yaml --detailed-exitcode",
    ),
)
def import_k8s_cmd(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(metavar="FILE|-", help="Output of `kubectl get nodes -o json` (- for stdin)")
    ],
    mapping: Annotated[
        Path | None, typer.Option("--mapping", help="YAML/JSON file naming labels, pods, cubes or nodes your own way")
    ] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Record it: names, faults opened and cleared")] = False,
    detailed_exitcode: Annotated[
        bool, typer.Option("--detailed-exitcode", help="Exit 4 when the import has changes, 0 when none")
    ] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Compare a Kubernetes node list with the state: cubes added, faults opened and cleared, drains; nodes that
    cannot be placed are listed. Changes nothing without --apply."""
    from tpufleet.errors import EXIT_INTERNAL, EXIT_PLAN_HAS_CHANGES
    from tpufleet.integrations.k8s import parse_nodes
    from tpufleet.ops import fleetio
    from tpufleet.state.store import utc_now

    keys = load_mapping(mapping)
    doc, name = read_node_list(source)
    nodes = parse_nodes(doc, name, keys.labels)
    now = utc_now()
    if apply:
        outcome = ctx.obj.mutate(lambda state: fleetio.import_k8s(state, nodes, keys, name, now, apply=True))
    else:
        outcome = fleetio.import_k8s(ctx.obj.store().load(), nodes, keys, name, now)
    d = outcome.data
    emit(d, output, lambda: _import_text(d))
    if d.get("analysis_errors"):
        typer.echo(
            f"tpufleet: internal error while analysing a blast radius ({d['analysis_errors'][0]}); the faults are "
            "recorded and the slices moved to be safe; please report it with the state directory",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL)
    if detailed_exitcode and d["has_changes"] and not d["applied"]:
        raise typer.Exit(EXIT_PLAN_HAS_CHANGES)
