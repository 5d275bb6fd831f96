"""`tpufleet plan-maintenance`: maintenance notices as ordered waves of drains, moves and clears, checked on a copy
of the state: options -> one use case -> render (a table, JSON/YAML, or a Markdown runbook)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, ReportOutput, app, examples, report_output_option
from tpufleet.cli.render import emit, grid
from tpufleet.text import markdown_code, markdown_text


def _moves_text(wave: dict[str, Any]) -> str:
    parts = []
    for m in wave["moves"]:
        if m["status"] == "moved":
            parts.append(f"{m['slice']}: {','.join(m['cubes_out'])} -> {','.join(m['cubes_in']) or '-'}")
        else:
            parts.append(f"{m['slice']}: UNSERVED")
    parts += [f"{r['slice']} reserved: {_out_in(r)}" for r in wave.get("reservations_moved", [])]
    return "; ".join(parts) or "-"


def _out_in(move: dict[str, Any]) -> str:
    return f"{','.join(move['cubes_out']) or '-'} -> {','.join(move['cubes_in']) or '-'}"


def _verdict(plan: dict[str, Any]) -> list[str]:
    lines = [
        f"NOT SERVED: {u['notice']} (wave {u['wave']}) stops slice {u['slice']}"
        + (f" of job {u['job']}" if u["job"] else "")
        + f": {u['reason']}"
        for u in plan["unserved"]
    ]
    lines += [f"spare target {plan['spares']} missed in wave {w}" for w in plan["spare_shortfall_waves"]]
    return lines or [f"every notice served: {len(plan['waves'])} wave(s), {plan['moves']} move(s)"]


def _sub_blocks_named(plan: dict[str, Any]) -> list[str]:
    """The cube each notice given by a reservation sub-block's name is."""
    return [f"sub-block {n['sub_block']} is cube {n['target'][5:]}" for n in plan["notices"] if n.get("sub_block")]


def _table(plan: dict[str, Any], several_pods: bool) -> str:
    """The waves, one a row; in a fleet of several pods each wave's spares are those of its pod with fewest, named."""
    rows = []
    for w in plan["waves"]:
        where = f" in {w['free_healthy_pod']}" if several_pods and w["free_healthy_pod"] else ""
        free = f"{w['free_healthy_cubes']}{where}{'' if w['spares_held'] else ' (short)'}"
        rows.append([w["wave"], w["window_start"], w["window_end"] or "-", ",".join(w["cubes"]), _moves_text(w), free])
    table = grid(rows, ["wave", "start", "end", "cubes", "moves (out -> in)", "free healthy"])
    named = [f"  {line}" for line in _sub_blocks_named(plan)]
    head = "\n".join([f"plan at serial {plan['serial']} from {plan['source']}", *named])
    return f"{head}\n{table}\n" + "\n".join(_verdict(plan))


def _runbook(plan: dict[str, Any], several_pods: bool) -> str:
    """The plan as a Markdown runbook. What came from outside (the notices' file name, reasons, targets) is shown as
    text, never as Markdown; each command is one code span, whatever backticks its quoted reason holds."""
    md = markdown_text
    out = [f"# Maintenance runbook (state serial {plan['serial']}, {md(plan['source'])})", ""]
    out += [f"> {md(line)}" for line in [*_sub_blocks_named(plan), *_verdict(plan)]]
    for w in plan["waves"]:
        out += ["", f"## Wave {w['wave']}: {md(', '.join(w['cubes']))}", ""]
        out.append(f"Window {w['window_start']} to {w['window_end'] or 'when done'}; ")
        where = f" in {w['free_healthy_pod']}" if several_pods and w["free_healthy_pod"] else ""
        out[-1] += f"{w['free_healthy_cubes']} free healthy cube(s) left{where} during it."
        out += [f"- already drained: {md(t)}" for t in w["already_drained"]]
        out += [f"- cannot move {md(m['slice'])}: {md(m['reason'])}" for m in w["moves"] if m["status"] != "moved"]
        out += [
            f"- the move reserved for evicted slice {md(r['slice'])} goes to other cubes: {md(_out_in(r))}"
            for r in w.get("reservations_moved", [])
        ]
        out += [
            f"- stays down after its window (its drain or failure is not the plan's to clear): {md(t)}"
            for t in w.get("kept_down", [])
        ]
        if not w["commands"]:  # every cube drained already, nothing stopped: the list would be empty
            out.append("- nothing to run in this wave")
            continue
        out.append("")
        for i, command in enumerate(w["commands"], 1):
            after = "After the window ends: " if command.startswith("tpufleet clear-fault ") else ""
            out.append(f"{i}. {after}{markdown_code(command)}")
    return "\n".join(out) + "\n"


@app.command(
    "plan-maintenance",
    epilog=examples(
        "tpufleet plan-maintenance                       # the maintenance `import reservation` found",
        "tpufleet plan-maintenance --notices notices.yaml --max-parallel 2 --spares 4 -o md",
        "tpufleet plan-maintenance --notices notices.yaml --out plan.json",
    ),
)
def plan_maintenance_cmd(
    ctx: typer.Context,
    notices: Annotated[
        Path | None,
        typer.Option(
            "--notices",
            help="YAML/JSON list of {target, window_start, window_end}; a target is cube:cNN or an imported "
            "reservation sub-block's name",
        ),
    ] = None,
    max_parallel: Annotated[int, typer.Option("--max-parallel", min=1, max=10_000, help="Cubes per wave")] = 1,
    spares: Annotated[int, typer.Option("--spares", min=0, help="Healthy free cubes to keep during a wave")] = 0,
    out: Annotated[Path | None, typer.Option("--out", metavar="PLAN", help="Write the JSON plan here")] = None,
    output: Annotated[
        ReportOutput, report_output_option(ReportOutput.md, help_text="table, json, yaml or md")
    ] = ReportOutput.table,
) -> None:
    """Take maintenance notices (default: the maintenance `import reservation` found, drained or announced) in
    waves of at most K cubes, earliest window first; each wave's drains and moves are replayed on a copy of the state with the code of
    `inject-fault` and `reschedule`. Exit 1 when a notice cannot be served without stopping a slice, or a wave
    leaves fewer free healthy cubes than --spares."""
    from tpufleet.cli.render import to_json
    from tpufleet.maintenance import notices_from_document
    from tpufleet.ops import maintenance as ops
    from tpufleet.state.inputfiles import load_yaml
    from tpufleet.state.outputs import check_output_path, write_output

    if out is not None:
        check_output_path(out, "--out", [notices])  # the plan must not replace the notices it reads
    state = ctx.obj.store().load()
    if notices is None:
        found, source = ops.recorded_notices(state)
    else:
        sub_blocks = {name: r.cube for name, r in state.reservation.sub_blocks.items()}
        # no field of a notice is a number: a NaN or infinity is named by its notice and field, as other values are
        found = notices_from_document(
            load_yaml(notices, "notices file", finite=False), str(notices), state.fleet.cubes, sub_blocks
        )
        source = str(notices)
    plan = ops.plan(state, found, max_parallel, spares, source).data
    if out is not None:
        write_output(out, (to_json(plan) + "\n").encode())
    several = len(state.fleet.pods) > 1
    emit(plan, output, lambda: _table(plan, several), {"md": lambda: _runbook(plan, several)})
    if not plan["served"]:
        from tpufleet.errors import Refused

        stopped = [f"wave {m['wave']}: slice {m['slice']}: {m['reason']}" for m in plan["unserved"]]
        free = {w["wave"]: w["free_healthy_cubes"] for w in plan["waves"]}
        short = [
            f"wave {w}: too few spare cubes: {free[w]} free healthy, --spares {spares} wanted"
            for w in plan["spare_shortfall_waves"]
        ]
        what = [
            f"{len(stopped)} slice(s) stopped" if stopped else "",
            f"{len(short)} wave(s) short of spares" if short else "",
        ]
        raise Refused(f"the plan does not meet its notices: {', '.join(w for w in what if w)}", [*stopped, *short])


def _applied_text(d: dict[str, Any]) -> str:
    head = f"{'dry run of ' if d['dry_run'] else ''}wave {d['wave']} of {d['waves']} ({', '.join(d['cubes'])})"
    if d.get("already_applied"):
        return f"{head}, plan {d['plan']}: applied at serial {d['applied_serial']} already; nothing to do"
    lines = [f"{head}, plan {d['plan']} made at serial {d['plan_serial']}"]
    for s in d["steps"]:
        if s["step"] == "drain":
            lines.append(f"  drain {s['target']}: {'opened' if s['opened'] else 'already open'} {s['fault_id']}")
        elif s["step"] == "reschedule":
            moved = f"{','.join(s['cubes_out'])} -> {','.join(s['cubes_in']) or '-'}"
            lines.append(f"  move {s['slice']}: {moved}, wired +{s['add']} -{s['remove']} ={s['keep']}")
        elif s["step"] == "plan-xconnect":
            done = not s["add"] and not s["remove"]  # the move before it wired the slice where it landed
            change = f"all {s['keep']} in place already" if done else f"+{s['add']} -{s['remove']} ={s['keep']}"
            lines.append(f"  wire {s['slice']}: {change}")
        elif s["step"] == "routes":
            lines.append(f"  routes {s['slice']}: {s['routable_pairs']} routable pairs, {s['vcs']} VCs")
        elif "kept_failure" in s:
            lines.append(f"  clear {s['target']}: {s['kept_failure']} kept open (a failure, not a drain)")
        elif "kept_drain" in s:
            lines.append(
                f"  clear {s['target']}: {s['kept_drain']} kept open (opened before the plan: not its to clear)"
            )
        elif "left_open" in s:
            until = f"its window ends {s['until']}" if s["until"] else "its window's end is unknown"
            lines.append(
                f"  clear {s['target']}: {s['left_open']} left open ({until}: `tpufleet clear-fault {s['left_open']}` then)"
            )
        else:
            lines.append(f"  clear {s['target']}: {', '.join(s['fault_ids']) or 'nothing open'}")
    lines += [f"  {r['slice']} (evicted): its reserved move goes {_out_in(r)}" for r in d["reservations_moved"]]
    tail = "nothing was changed (dry run)" if d["dry_run"] else f"applied (serial {d['serial']})"
    return "\n".join([*lines, tail])


@app.command(
    "apply-maintenance",
    epilog=examples(
        "tpufleet apply-maintenance plan.json --wave 1 --dry-run   # check it, change nothing",
        "tpufleet apply-maintenance plan.json --wave 1",
    ),
)
def apply_maintenance_cmd(
    ctx: typer.Context,
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN", help="A plan saved by plan-maintenance --out")],
    wave: Annotated[int, typer.Option("--wave", min=1, max=10_000, help="The wave to apply (waves go in order)")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check and work out the wave; change nothing")] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Apply one wave of a saved maintenance plan in one transaction: its drains, the moves of the slices they
    stop (reschedule, cross-connects, routing tables) and the clears of the drains it and earlier waves opened
    whose window is over (others stay open until then). Refused (exit 1, nothing
    changed) when an earlier wave is not applied, or something the wave depends on changed since the plan was made
    (a slice or fault on a cube it touches, an OCS fault in its pod); changes elsewhere do not matter. A wave
    applied before has nothing to do: exit 0, nothing changed (a runbook run twice)."""
    from tpufleet.ops import maintenance as ops
    from tpufleet.state.maintenanceplan import read
    from tpufleet.state.store import utc_now

    saved, now, store = read(plan_file), utc_now(), ctx.obj.store()
    if dry_run:
        state = store.load()
        applied = ops.applied_waves(store.journal(state.serial), saved)
        d = ops.apply_wave(state, saved, wave, applied, now, None).data
    else:
        with store.transaction() as tx:
            applied = ops.applied_waves(store.journal(tx.state.serial), saved)

            def keep(name: str, npz: bytes) -> str:
                return f"{store.routes_dir.name}/{store.save_tables(tx, name, npz).name}"

            outcome = ops.apply_wave(tx.state, saved, wave, applied, now, keep)
            tx.commit(outcome.change)
        d = outcome.data
    emit(d, output, lambda: _applied_text(d))
