"""`tpufleet import ...`: a real fleet's inventory and health in (a Kubernetes node list, a GKE reservation)."""

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import (
    ImportDetailedExitcodeOpt,
    Output,
    OutputOpt,
    command_group,
    examples,
)
from tpufleet.cli.render import emit
from tpufleet.errors import EXIT_PLAN_HAS_CHANGES

if TYPE_CHECKING:
    from tpufleet.fleetstate import FleetState
    from tpufleet.ops.outcome import Outcome

import_app = command_group("import", "Read a real fleet's inventory and health into the state.")


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
    if d.get("names_forgotten"):
        lines.append(
            "  - node name(s) forgotten (their machines are other nodes' now): " + ", ".join(d["names_forgotten"])
        )
    lines += [
        f"  + {s['cube']}: sub-block position {s['sub_block']} learnt from its nodes"
        for s in d.get("sub_blocks_learnt", [])
    ]
    for key, sign, kind in (
        ("faults_opened", "+", "fault"),
        ("drains_opened", "+", "drain"),
        ("faults_cleared", "-", "clear"),
        ("reservation_drains_opened", "+", "drain"),  # the reservation's maintenance, back once a failure clears
    ):
        for f in d[key]:
            ident = f" {f['id']}" if f.get("id") else ""
            lines.append(f"  {sign} {kind}{ident} {f['target']}: {f['reason']}")
    lines += _hit_lines(d)
    lines += _pool_lines(d)
    lines += unplaced_lines(d["unplaced"], "node", "nodes")
    return "\n".join([*lines, _plan_verdict(d)])


def _hit_lines(d: dict[str, Any]) -> list[str]:
    """The slices the import's faults and drains stop or reroute, said before `--apply` does it."""
    verb = {"reschedule": "stops", "reroute": "reroutes"}
    return [
        f"  ! {h['target']} {verb.get(h['action'], h['action'])} slice {h['slice']} ({h['action']}: {h['reason']})"
        + _job_part(h)
        for h in d.get("slices_hit", [])
    ]


def _job_part(hit: dict[str, Any]) -> str:
    """The job a hit slice belongs to, and the job's state after the fault (a job that is not elastic stops whole)."""
    if not hit.get("job"):
        return ""
    return (
        f"; job {hit['job']} {hit['job_state']} ({hit['job_active_slices']} of {hit['job_total_slices']} slices active)"
    )


def _placed_part(pool: dict[str, Any]) -> str:
    """The cubes a partly relabelled pool's other nodes are on (named cubes, not held unplaced), if any."""
    cubes = pool.get("placed_cubes")
    return f"; its nodes on {', '.join(cubes)} are machines of named cubes, not held" if cubes else ""


def _pool_slices(pool: dict[str, Any]) -> str:
    """What a pool holds: one slice of its nodes, or, a single-host pool (GKE scales it node by node), a slice a
    node."""
    nodes, shape = len(pool["nodes"]), pool["shape"]
    if pool.get("single_host") and nodes > 1:
        return f"{nodes} single-host {shape} slices (one a node)"
    return f"{shape} slice of {nodes} node" + ("" if nodes == 1 else "s")


def _pool_lines(d: dict[str, Any]) -> list[str]:
    """Node pools held as unplaced slices, and partitions DEGRADED (degraded cubes that still serve)."""
    sign = {"new": "+", "changed": "~", "unchanged": "="}
    rows = d.get("node_pool_slices", [])
    lines = [
        f"  {sign[p['change']]} node pool {p['node_pool']}: {_pool_slices(p)} on "
        f"{p['pod']}, unplaced (no label says which cubes; counted against {p['pod']}'s free cubes)" + _placed_part(p)
        for p in rows
        if p["change"] != "removed"
    ]
    lines += [
        f"  ! node pool {p['node_pool']}: node {u['node']} {u['reason']}: no {'drain' if u['planned'] else 'fault'} "
        "opened (a node pool's nodes are on no machine)"
        for p in rows
        for u in p.get("unhealthy_nodes", [])
    ]
    lines += [
        f"  - node pool {p['node_pool']}: gone, its nodes now in other pools, on machines, or tpufleet's slice of "
        "its name"
        for p in rows
        if p["change"] == "removed"
    ]
    lines += [f"  + degraded {g['cube']} (partition {g['partition']}): still serves" for g in d.get("degraded_new", [])]
    lines += [
        f"  - degraded {g['cube']} (partition {g['partition']}): healthy again" for g in d.get("degraded_cleared", [])
    ]
    return lines


def _plan_verdict(d: dict[str, Any]) -> str:
    """The last line of an import's plan: nothing to do, recorded, or a plan to apply; with what it left out."""
    left = len(d.get("unplaced", []))
    if not d["has_changes"]:
        return "  no changes" + (f" ({left} not placed: see above)" if left else "")
    return f"applied (serial {d['serial']})." if d["applied"] else "plan only: run again with --apply to record it."


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
        str, typer.Argument(metavar="FILE|-", help="Output of `kubectl get nodes -o json` (- for standard input)")
    ],
    mapping: Annotated[
        Path | None, typer.Option("--mapping", help="YAML/JSON file naming labels, pods, cubes or nodes your own way")
    ] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Record it: names, faults opened and cleared")] = False,
    detailed_exitcode: ImportDetailedExitcodeOpt = False,
    output: OutputOpt = Output.table,
) -> None:
    """Compare a Kubernetes node list with the state: cubes added, faults opened and cleared, drains; nodes that
    cannot be placed are listed. Changes nothing without --apply."""
    from tpufleet.ops import fleetio
    from tpufleet.state.nodelists import read_mapping, read_node_list
    from tpufleet.state.store import utc_now

    keys = read_mapping(mapping)
    state_before_standard_input(ctx, source)
    nodes, name = read_node_list(source, keys.labels)
    now = utc_now()
    run_import(
        ctx,
        lambda state, applying: fleetio.import_k8s(state, nodes, keys, name, now, apply=applying),
        apply,
        detailed_exitcode,
        output,
        _import_text,
    )


def _reservation_text(d: dict[str, Any]) -> str:
    from tpufleet.ops.fleet import counted

    lines = [
        f"{d['source']}: {counted(d['sub_blocks'], 'sub-blocks')}, {d['mapped']} mapped to cubes "
        f"({len(d['sub_blocks_new'])} new, {d['sub_blocks_known']} known), {len(d['degraded'])} degraded",
    ]
    lines += [f"  pod named: {b['pod']} = {_block_text(b['block'])}" for b in d["blocks_named"]]
    if d["sub_blocks_new"]:
        lines.append(f"  + {len(d['sub_blocks_new'])} sub-block(s) named as cubes")
    if d["sub_blocks_updated"]:
        lines.append(f"  ~ {len(d['sub_blocks_updated'])} sub-block(s) with new health or maintenance")
    for g in d["degraded_new"]:  # the host counts are optional
        hosts = "" if g["degraded_hosts"] is None else f": {g['degraded_hosts']} degraded host(s)"
        lines.append(f"  + degraded {g['cube']} ({g['sub_block']}){hosts}")
    lines += [f"  - degraded {g['cube']} ({g['sub_block']}): healthy again" for g in d["degraded_cleared"]]
    for f in d["drains_opened"]:
        ident = f" {f['id']}" if f.get("id") else ""
        lines.append(f"  + drain{ident} {f['target']}: {f['reason']}")
    lines += [f"  - clear {f['id']} {f['target']}: {f['reason']}" for f in d["drains_cleared"]]
    lines += [f"  ~ reschedule {f['id']} {f['target']}: {f['reason']}" for f in d["drains_rescheduled"]]
    lines += [_announced_line(a) for a in d["maintenance_announced"]]
    lines += _hit_lines(d)
    lines += unplaced_lines(d["unplaced"], "sub_block", "sub-blocks")
    return "\n".join([*lines, _plan_verdict(d)])


def unplaced_lines(rows: list[dict[str, str]], key: str, plural: str) -> list[str]:
    """One line per reason, naming the first and last of its rows' `key` (in the rows' order): a block no pod takes
    is every one of its sub-blocks, a cluster's CPU nodes are a thousand nodes of one reason, one line each else
    (`import k8s`, `import reservation`, and `drift` for the reservation's sub-blocks, which are drift there).

    >>> unplaced_lines([{"node": f"cpu-{i}", "reason": "not a TPU node"} for i in (1, 2, 3)], "node", "nodes")
    ['  ? not placed: 3 nodes (cpu-1 ... cpu-3): not a TPU node']
    """
    by_reason: dict[str, list[str]] = {}
    for u in rows:
        by_reason.setdefault(u["reason"], []).append(u[key])
    return [
        f"  ? not placed: {names[0]}: {reason}"
        if len(names) == 1
        else f"  ? not placed: {len(names)} {plural} ({names[0]} ... {names[-1]}): {reason}"
        for reason, names in by_reason.items()
    ]


def _announced_line(a: dict[str, Any]) -> str:
    now = "serves until then"
    if a["drained_by"]:  # drained ahead by a wave or by hand; the window may have moved since
        now = f"drained already ({a['drained_by']}; `tpufleet clear-fault {a['drained_by']}` serves it until then)"
    elif a["out_of_pool"]:
        now = "out of the pool now (a fault holds it)"
    jobs = f" of job(s) {', '.join(a['jobs'])}" if a["jobs"] else ""
    on = (
        f"; slice(s) on it: {', '.join(a['slices'])}{jobs} (move them first: `tpufleet plan-maintenance`)"
        if a["slices"]
        else ""
    )
    return (
        f"  = maintenance announced cube:{a['cube']} ({a['sub_block']}) {a['window_start']} to "
        f"{a['window_end'] or '?'}: {now}; the import run at its start opens the drain{on}"
    )


@import_app.command(
    "reservation",
    epilog=examples(
        "gcloud compute reservations sub-blocks list RESERVATION --block-name BLOCK --zone ZONE --format=json > sb.json",
        "tpufleet import reservation sb.json",
        "tpufleet import reservation sb.json --pod pod0 --apply",
        "gcloud compute reservations sub-blocks list ... --format=json | tpufleet import reservation - --detailed-exitcode",
    ),
)
def import_reservation_cmd(
    ctx: typer.Context,
    source: Annotated[
        str,
        typer.Argument(metavar="FILE|-", help="Output of `gcloud compute reservations sub-blocks list --format=json`"),
    ],
    pod: Annotated[str | None, typer.Option("--pod", metavar="POD", help="The pod a new physical block is")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Record it: cubes, health, drains opened and cleared")] = False,
    detailed_exitcode: Annotated[
        bool,
        typer.Option(
            "--detailed-exitcode",
            help=f"Exit {EXIT_PLAN_HAS_CHANGES} when the import has changes or sub-blocks it cannot place, 0 when none",
        ),
    ] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Compare a reservation's sub-blocks with the state: each a cube, DEGRADED ones degraded (still serving),
    maintenance under way a planned drain with its window, maintenance announced for later kept and listed (the
    cube serves until its window); what cannot be placed is listed. Changes nothing without --apply."""
    from tpufleet.model import known_pod
    from tpufleet.ops.reservation import import_reservation
    from tpufleet.state.reservations import read_reservation
    from tpufleet.state.store import utc_now

    if pod is not None:  # a typo refused before the list is read: standard input is not lost to it
        pod = known_pod(ctx.obj.store().load().fleet, pod)
    state_before_standard_input(ctx, source)
    given, name = read_reservation(source)
    now = utc_now()
    run_import(
        ctx,
        lambda state, applying: import_reservation(state, given, pod, name, now, apply=applying),
        apply,
        detailed_exitcode,
        output,
        _reservation_text,
        # A sub-block it cannot place is the state and the reservation disagreeing, as `drift` counts it.
        out_of_sync=lambda d: bool(d["has_changes"] or d["unplaced"]),
    )


def state_before_standard_input(ctx: typer.Context, *sources: str | None) -> None:
    """With a source on standard input, a missing state (a mistyped --state, $TPUFLEET_STATE unset) or a database
    that cannot be reached is refused before it is read: the export piped in is not lost to it, read whole first."""
    if "-" in sources:
        store = ctx.obj.store()
        if not store.exists():
            store.load()  # refused: no fleet state in ...


def run_import(
    ctx: typer.Context,
    use_case: "Callable[[FleetState, bool], Outcome]",
    apply: bool,
    detailed_exitcode: bool,
    output: Output,
    text: Callable[[dict[str, Any]], str],
    out_of_sync: Callable[[dict[str, Any]], bool] = lambda d: bool(d["has_changes"]),
) -> None:
    """An import: the plan against the state as loaded, or with `--apply` the same in a transaction; rendered; a
    blast radius that could not be analysed said (exit 70); `--detailed-exitcode` 4 when a plan is `out_of_sync`
    (by default: it has changes)."""
    store = ctx.obj.store()
    outcome = ctx.obj.mutate(lambda state: use_case(state, True)) if apply else use_case(store.load(), False)
    d = outcome.data
    emit(d, output, lambda: text(d))
    if d.get("warning"):  # stdout stays the plan (a script's JSON), the exit code its own
        typer.echo(f"tpufleet: warning: {d['warning']}", err=True)
    _check_analysis(d)
    if detailed_exitcode and out_of_sync(d) and not d["applied"]:
        raise typer.Exit(EXIT_PLAN_HAS_CHANGES)


def _check_analysis(d: dict[str, Any]) -> None:
    from tpufleet.errors import EXIT_INTERNAL

    if d.get("analysis_errors"):
        typer.echo(
            f"tpufleet: internal error while analysing a blast radius ({d['analysis_errors'][0]}); the faults are "
            "recorded and the slices moved to be safe; please report it with the state directory",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL)


def _block_text(block: str) -> str:
    """'block NAME', or what a reservation's one block is when its sub-blocks name none (`physicalTopology.block`)."""
    return f"block {block}" if block else "the reservation's one block (no sub-block names its physicalTopology.block)"
