"""`tpufleet inject-fault`, `clear-fault`, `faults` and `reschedule`."""

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, RoutingWorkOpt, app, examples
from tpufleet.cli.blastradius import blast_radius_text, hit_later
from tpufleet.cli.render import emit, grid, link_steps, share_text
from tpufleet.timeparse import TIME_HELP, parse_time

MAX_RANDOM_FAULTS = 10_000  # a batch is one transaction: bounded so a typo cannot exhaust memory

if TYPE_CHECKING:
    from tpufleet.model import Fleet
    from tpufleet.ops.faults import FaultRequest


def _reason_took_target(target: str | None, reason: str) -> str:
    """When no TARGET was given and --reason's text is a target id (`inject-fault --reason host:c00/1`), say so:
    the option took the next word as its text."""
    from tpufleet.errors import BadInput
    from tpufleet.ids import parse_target

    if target is not None:
        return ""
    try:
        parse_target(reason)
    except BadInput:
        return ""
    return f" (--reason took {reason!r} as its text: was the reason left out?)"


# the ids and `next:` steps a dry run prints are those the faults get once recorded, not steps to run now
DRY_RUN_NOTE = (
    "\n(dry run: nothing was changed; the fault ids and next steps above are those of the faults once recorded: "
    "run the command again without --dry-run to record them)"
)


@app.command(
    "inject-fault",
    epilog=examples(
        "tpufleet inject-fault ocs:pod0/x/5 --dry-run    # what would happen, nothing changed",
        "tpufleet inject-fault host:c12/3 --reason 'healthd: PCIe errors'",
        "tpufleet inject-fault link:c07/z/11/out --planned   # drain it for repair",
        "tpufleet inject-fault --from faults.yaml",
        "tpufleet inject-fault --random 5 --seed 7 --dry-run",
    ),
)
def inject_cmd(
    ctx: typer.Context,
    target: Annotated[
        str | None,
        typer.Argument(
            help="What failed: chip:c07/1,2,3, host:c07/5 (a machine), ici:c07/1,2,3/+x (an electrical link), "
            "link:c07/x/5/out (an optical link), ocs:pod0/x/5 or cube:c07"
        ),
    ] = None,
    planned: Annotated[
        bool, typer.Option("--planned", help="A maintenance drain (cleared once the work is done), not a failure")
    ] = False,
    reason: Annotated[str, typer.Option("--reason", help="Free text kept with the fault")] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the blast radius; change nothing")] = False,
    from_file: Annotated[
        Path | None, typer.Option("--from", help="YAML/JSON list of faults, injected in one transaction")
    ] = None,
    random_count: Annotated[
        int | None,
        typer.Option(
            "--random",
            min=1,
            max=MAX_RANDOM_FAULTS,
            help=f"Draw N faults (at most {MAX_RANDOM_FAULTS}), each kind in proportion to its daily failure rate "
            "times how many the fleet has (shipped rates: machines 0.08%, optical links 0.005%, OCS 0.04% a day)",
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", min=0, max=2**63 - 1, help="Seed for --random (default 0)")
    ] = None,
    verbose: RoutingWorkOpt = False,
    output: OutputOpt = Output.table,
) -> None:
    """Fail (or drain) a component and show its blast radius: cubes out, slices rescheduled or rerouted.

    A failed chip, machine, electrical link or cube takes its cube out of the pool and the slices on it are
    evicted, with the replacement cubes proposed. A failed OCS or optical link leaves the cubes in place: a
    slice with fault-tolerant routing keeps running on rerouted tables if every pair still arrives, the
    tables fit the hardware's 3 virtual channels and it keeps at least its throughput floor; otherwise it is
    evicted too.
    """
    from tpufleet.errors import BadInput
    from tpufleet.ops import faults as fault_ops
    from tpufleet.state.store import utc_now

    if sum(x is not None for x in (target, from_file, random_count)) != 1:
        raise BadInput("give exactly one of TARGET, --from FILE or --random N" + _reason_took_target(target, reason))
    if seed is not None and random_count is None:  # as `show --tail` without `journal`: not taken unsaid
        raise BadInput("bad option --seed: only with --random")
    store = ctx.obj.store()
    snapshot = store.load()
    if target is not None:
        from tpufleet.fault_clearing import refuse_a_slice

        refuse_a_slice(snapshot, target)
    requests = _requests(snapshot.fleet, target, from_file, random_count, seed or 0, planned, reason)
    now = utc_now()
    from tpufleet.cli.progress import routing_progress
    from tpufleet.routing import memo

    cache = store.table_cache()  # read by a dry run too; written only once the faults are recorded
    links = store.linked_tables(snapshot.slices)  # the jobs' steps remove them before their slices' `routes`
    label = "recording and analysing" if not dry_run else "analysing"
    with routing_progress(label, verbose), memo.using(cache):
        if dry_run:  # works out the same on the state as loaded, without taking the lock
            outcome = fault_ops.inject(snapshot, requests, now, dry_run=True, linked_tables=links)
        else:
            outcome = ctx.obj.mutate(lambda state: fault_ops.inject(state, requests, now, linked_tables=links))
            cache.flush()
    radii = outcome.data
    result = radii[0] if len(radii) == 1 and target is not None else radii
    note = DRY_RUN_NOTE if dry_run else ""
    linked = store.linked_tables({n for r in radii for n in r.get("routes_stale", ())})
    emit(
        result,
        output,
        lambda: "\n".join(blast_radius_text(r, hit_later(radii, i), linked) for i, r in enumerate(radii)) + note,
    )
    _exit_on_analysis_errors(radii, dry_run)


def _exit_on_analysis_errors(radii: list[dict], dry_run: bool) -> None:
    """Exit 70 (internal error) when analysing a blast radius failed, saying what was done all the same."""
    errors = [e for r in radii for e in r.get("analysis_errors", [])]
    if errors:
        from tpufleet.errors import EXIT_INTERNAL

        done = "nothing was changed (dry run)" if dry_run else "the fault is recorded and the slice moved to be safe"
        typer.echo(
            f"tpufleet: internal error while analysing the blast radius ({errors[0]}); {done}; "
            "please report it with the state directory",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL)


def _requests(
    fleet: "Fleet",
    target: str | None,
    from_file: Path | None,
    random_count: int | None,
    seed: int,
    planned: bool,
    reason: str,
) -> "list[FaultRequest]":
    """The faults to inject, every id checked against the fleet before the lock is taken."""
    from tpufleet.errors import BadInput
    from tpufleet.faults import normalize, random_targets
    from tpufleet.fleetparts import fault_reason
    from tpufleet.ops import faults as fault_ops

    fault_reason(reason)  # bad input before the lock, and before every fault's analysis
    if random_count is not None:
        from tpufleet.state.siminputs import load_rates

        return [
            fault_ops.FaultRequest(t, planned, reason)
            for t in random_targets(fleet, random_count, seed, load_rates(None))
        ]
    if from_file is not None:
        from tpufleet.state import scenario

        items = scenario.read(from_file)
    else:
        items = [{"target": target}]
    out = []
    for i, item in enumerate(items):
        # the file's items numbered as its schema's messages number them (`field 1.planned`: from 0)
        field = "target"
        try:
            parsed = normalize(fleet, item["target"])
            field = "reason"
            fault_reason(item.get("reason", reason))
        except BadInput as exc:
            raise BadInput(f"{from_file}: field {i}.{field}: {exc}" if from_file else str(exc)) from None
        out.append(fault_ops.FaultRequest(parsed, item.get("planned", planned), item.get("reason", reason)))
    return out


@app.command(
    "clear-fault",
    epilog=examples("tpufleet clear-fault f12", "tpufleet clear-fault ocs:pod0/x/5   # every open fault on it"),
)
def clear_cmd(
    ctx: typer.Context,
    key: Annotated[
        str, typer.Argument(metavar="ID|TARGET", help="A fault id (f12) or a target id (all its open faults)")
    ],
    output: OutputOpt = Output.table,
) -> None:
    """Repair: close the fault; its components return to the pool. Routing tables of affected slices go stale."""
    from tpufleet.cli.clearedtext import cleared_text
    from tpufleet.ops import faults as fault_ops
    from tpufleet.state.store import utc_now

    now = utc_now()
    outcome = ctx.obj.mutate(lambda state: fault_ops.clear(state, key, now))
    d = outcome.data
    linked = ctx.obj.store().linked_tables(d["routes_stale"])
    emit(d, output, lambda: cleared_text(d, linked))
    from tpufleet.cli.suggested import say

    for note in filter(None, map(fault_ops.reopen_note, d["cleared"])):  # an import's fault, cleared by hand
        say(f"tpufleet: note: {note}")


def _opened_window(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """--since and --until as moments (None: not given); an --until before --since is refused, the line swapped."""
    from tpufleet.timeparse import refuse_reversed

    opened_from = None if since is None else parse_time(since, "--since")
    opened_to = None if until is None else parse_time(until, "--until", end=True)
    if opened_from is not None and opened_to is not None and opened_to < opened_from:
        refuse_reversed(str(since), str(until))
    return opened_from, opened_to


@app.command(
    "faults",
    epilog=examples(
        "tpufleet faults",
        "tpufleet faults --all -o json",
        "tpufleet faults --all --since 7d",
        "tpufleet faults --all --since 14d --until 7d   # what failed the week before",
    ),
)
def faults_cmd(
    ctx: typer.Context,
    all_faults: Annotated[bool, typer.Option("--all", help="Include cleared faults")] = False,
    since: Annotated[
        str | None, typer.Option("--since", metavar="TIME", help=f"Only faults opened since {TIME_HELP}")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", metavar="TIME", help="Only faults opened up to this time (the same forms)")
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """List open faults (with --all, cleared ones too)."""
    from tpufleet.ops import faults as fault_ops

    opened_from, opened_to = _opened_window(since, until)
    store = ctx.obj.store()
    if not all_faults:
        rows = fault_ops.listing(store)
    else:  # cleared faults come from the journal too: a damaged line's are not listed
        from tpufleet.cli.history import warn_journal
        from tpufleet.ops.views import of_scan

        state = store.load()  # the journal read against the state the listing shows
        moved, found = store.fault_history(state.serial)
        rows = fault_ops.listing(store, True, moved, state)
        warn_journal(store.journal_label, of_scan(found, state.serial, store))
    if opened_from is not None or opened_to is not None:
        rows = fault_ops.opened_between(rows, opened_from, opened_to)
    emit(
        rows,
        output,
        lambda: (
            grid(
                [
                    [
                        r["id"],
                        r["target"],
                        "drain" if r["planned"] else "fault",
                        r["opened"],
                        r["cleared"] or "open",
                        (r["reason"] or "") + _window_part(r),
                    ]
                    for r in rows
                ],
                ["id", "target", "kind", "opened", "cleared", "reason"],
            )
            if rows
            else "no faults"
        ),
    )


@app.command("reschedule", epilog=examples("tpufleet reschedule train", "tpufleet reschedule train --avoid c120,c121"))
def reschedule_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="SLICE", help="An evicted slice")],
    avoid: Annotated[
        str | None,
        typer.Option(
            "--avoid",
            help="Cubes (comma-separated) to take only when no other fits, as cubes under announced maintenance",
        ),
    ] = None,
    output: OutputOpt = Output.table,
    verbose: RoutingWorkOpt = False,
) -> None:
    """Move an evicted slice onto the proposed replacement: allocation plus applied cross-connects."""
    from tpufleet.cli.progress import routing_progress
    from tpufleet.ops import faults as fault_ops
    from tpufleet.routing import memo

    avoided = _avoided_cubes(avoid)
    store = ctx.obj.store()
    # a landing among network faults is routed to judge it: with the repair cache, as `inject-fault` and
    # `routes` route, so the tables `routes` stores next are not worked out twice
    cache = store.table_cache()
    with routing_progress("rescheduling", verbose), memo.using(cache):
        outcome = ctx.obj.mutate(lambda state: fault_ops.reschedule(state, name, avoided))
        cache.flush()
    linked = store.linked_tables([*outcome.data["routes_stale"], *outcome.data["routes_none"]])
    emit(outcome.data, output, lambda: _rescheduled_text(name, outcome.data, linked))


def _avoided_cubes(text: str | None) -> list[str]:
    """`--avoid c120,c121` (a cube also as its target id, `cube:c120`): the cubes, each named once; whether the
    fleet has them is checked against the state in the transaction."""
    from tpufleet.errors import BadInput, refuse_repeats

    if text is None:
        return []
    cubes = [c.strip().removeprefix("cube:") for c in text.split(",")]
    if not any(cubes):
        raise BadInput(f"bad option --avoid: {text!r} names no cube (leave it out to avoid none)")
    if "" in cubes:
        raise BadInput(f"bad option --avoid: {text!r} names an empty cube (between two commas, or at an end)")
    refuse_repeats("--avoid", cubes)
    return cubes


def _rescheduled_text(name: str, d: dict, linked: Mapping[str, str]) -> str:
    x = d["xconnect_changes"]
    text = f"rescheduled {name} onto {d['pod']} {','.join(d['cubes'])}; cross-connects +{x['add']} -{x['remove']} ={x['keep']}"
    rr = d.get("reroute")
    if rr:  # landed where an OCS (or optical link) is down: it runs on around it, as the fault path leaves it
        text += (
            f"; degraded: routed around {', '.join(rr['faults'])} it keeps "
            f"{share_text(rr['all_to_all_retained'])} of its all-to-all throughput with {rr['vcs']} VCs (`tpufleet routes {name}` "
            "stores those tables)"
        )
    if d.get("job"):
        j = d["job"]
        text += f"; job {j['name']} {j['state']} ({j['active_slices']} of {j['total_slices']} slices active)"
    if name in d.get("routes_stale", ()):  # a link where its tables belong: removed before the `routes` named
        text += "".join(f"\n{line}" for line in link_steps("  ", name, linked))
    if name in d.get("routes_stale", ()) and not rr:  # back in place: stale as the eviction left them
        made = "went stale while it was evicted" if d.get("in_place") else "were made before the move"
        text += f"\n  next: tpufleet routes {name}  (its stored tables {made})"
    if name in d.get("routes_none", ()) and not rr:  # wired by the move, never routed: as plan-xconnect says it
        text += "".join(f"\n{line}" for line in link_steps("  ", name, linked))
        text += f"\n  next: tpufleet routes {name}  (no tables stored for it)"
    if d.get("deferred"):  # its pairs on a down OCS wait for the repair, as `explain` gives the steps after it
        text += (
            f"\n  cross-connects on {', '.join(d['deferred'])} deferred while down: once repaired and cleared, "
            f"`tpufleet plan-xconnect {name} --apply` programs them, then `tpufleet routes {name}`"
        )
    return text


def _window_part(row: dict[str, Any]) -> str:
    """A drain's window, unless its reason says it already (a reservation's drain names its window)."""
    if "window_start" not in row:
        return ""
    start, end = row["window_start"], row.get("window_end") or "?"  # no end given: its reason says `to ?`
    return "" if f"{start} to {end}" in (row["reason"] or "") else f" [{start} .. {end}]"
