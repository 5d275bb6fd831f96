"""`tpufleet history` (the journal as a timeline) and `tpufleet diff SERIAL [SERIAL]` (what changed between two)."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, app, examples
from tpufleet.cli.render import emit, grid
from tpufleet.text import around, printable
from tpufleet.timeparse import TIME_HELP

if TYPE_CHECKING:
    from tpufleet.ops.views import JournalRead

LISTED = " (`tpufleet history` lists them)"


def warn_journal(journal_path: object, read: "JournalRead") -> None:
    """Say on stderr what a journal read found (`views.journal_notes`): damaged lines skipped, serials missing
    inside it or at its end, entries beyond the state's serial."""
    from tpufleet.ops.views import journal_notes

    for note in journal_notes(read):
        typer.echo(f"tpufleet: warning: {journal_path}: {note}", err=True)


@app.command(
    "history",
    epilog=examples(
        "tpufleet history --since 24h",
        "tpufleet history --slice train-a      # every change that touched the slice (or the job's slices)",
        "tpufleet history --since 120 -o json",
        "tpufleet history --since 2026-11-30 --until 2026-12-01T06:00   # one night's changes",
    ),
)
def history_cmd(
    ctx: typer.Context,
    since: Annotated[
        str | None, typer.Option("--since", metavar="SERIAL|TIME", help=f"From this serial, or from {TIME_HELP}")
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", metavar="SERIAL|TIME", help="Up to this serial or time, included (the same forms)"),
    ] = None,
    slice_name: Annotated[
        str | None, typer.Option("--slice", help="Only changes that touched this slice, or any slice of this job")
    ] = None,
    output: OutputOpt = Output.table,
) -> None:
    """The journal as a readable timeline: who changed what, when, oldest first."""
    from tpufleet.ops.history import history
    from tpufleet.state.files import check_name

    if slice_name is not None:  # a released slice has a history too: only a name no slice can have is refused
        check_name(slice_name, "option --slice")
    store = ctx.obj.store()
    rows, read = history(store, since, slice_name, until)
    warn_journal(store.journal_label, read)
    if (
        slice_name is not None and not rows and since is None and until is None
    ):  # a mistyped name: say so, not a silent `(none)`
        from tpufleet.cli.suggested import say
        from tpufleet.ops.history import never_named

        say(f"tpufleet: note: {never_named(store, slice_name, read.entries)}")
    emit(
        rows,
        output,
        lambda: grid(
            [[r["serial"], r["time"], printable(r["user"]), printable(r["summary"])] for r in rows],  # one line a row
            ["serial", "time (UTC)", "user", "summary"],  # as `show journal` and the JSON name it
        ),
    )


def _shown(value: Any) -> str:
    """A field of a slice as the diff's table shows it: words, not Python's notation (`None`, `{'vcs': 3}`)."""
    if value is None or value == []:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(map(_shown, value))
    if (
        isinstance(value, dict) and {"all_to_all_retained", "vcs", "faults"} <= value.keys()
    ):  # a reroute, as status says it
        return (
            f"keeps {_shown(value['all_to_all_retained'])} of all-to-all, {_shown(value['vcs'])} VCs, around "
            + around([str(f) for f in value["faults"]] if isinstance(value["faults"], list) else [], ",")
        )
    if isinstance(value, dict):
        return ", ".join(f"{k} {_shown(v)}" for k, v in value.items())
    return str(value)


def _diff_text(d: dict[str, Any]) -> str:
    from tpufleet.ops.fleet import counted

    lines = [f"serial {d['from']} -> {d['to']} ({counted(d['commits'], 'commits')})"]
    s, f = d["slices"], d["faults"]
    lines += [f"  + slice {n}" for n in s["added"]] + [f"  - slice {n}" for n in s["removed"]]
    for name, fields in s["changed"].items():
        lines.append(
            f"  ~ slice {name}: " + "; ".join(f"{k} {_shown(v[0])} -> {_shown(v[1])}" for k, v in fields.items())
        )
    lines += [f"  + fault {x['id']} {x['target']}" + (" (drain)" if x.get("planned") else "") for x in f["opened"]]
    lines += [f"  - fault {x} cleared" for x in f["cleared"]]
    lines += _ocs_lines(d["ocs"])
    if d["without_detail"]:
        lines.append(f"  (serials {', '.join(map(str, d['without_detail']))} were recorded without detail)")
    lines = [printable(line) for line in lines]  # names from a hand-edited journal: one line each, no escapes
    # diff compares these three alone: an import's names, sub-blocks or degraded cubes may have changed
    return "\n".join(lines) if len(lines) > 1 else lines[0] + "\n  no change to slices, faults or cross-connects"


def _ocs_lines(ocs: dict[str, dict[str, list]]) -> list[str]:
    """One line per OCS when few changed; else one line per pod and dimension (a wired slice touches dozens)."""
    from tpufleet.ids import natural_key

    if len(ocs) <= 6:
        return [f"  ~ ocs:{k}: +{len(c['add'])} -{len(c['remove'])} cross-connects" for k, c in ocs.items()]
    groups: dict[str, list[int]] = {}
    for key, ch in ocs.items():
        pod, dim, _ = key.split("/")
        g = groups.setdefault(f"{pod}/{dim}", [0, 0, 0])
        g[0], g[1], g[2] = g[0] + 1, g[1] + len(ch["add"]), g[2] + len(ch["remove"])
    return [
        f"  ~ {n} OCS of {k}: +{a} -{r} cross-connects"
        for k, (n, a, r) in sorted(groups.items(), key=lambda kv: natural_key(kv[0]))
    ]


@app.command(
    "diff",
    epilog=examples("tpufleet diff 40          # from serial 40 to now", "tpufleet diff 40 52 -o json"),
)
def diff_cmd(
    ctx: typer.Context,
    start: Annotated[str, typer.Argument(metavar="SERIAL", help="The older serial")],
    end: Annotated[str | None, typer.Argument(metavar="[SERIAL]", help="The newer serial (default: now)")] = None,
    output: OutputOpt = Output.table,
) -> None:
    """What changed between two serials: slices added, removed or changed, faults opened and cleared, cross-connects."""
    from tpufleet.ops.history import changes
    from tpufleet.serials import parse_serial

    first = parse_serial(start, "argument SERIAL", LISTED)
    last = None if end is None else parse_serial(end, "argument SERIAL", LISTED)
    store = ctx.obj.store()
    d, read = changes(store, first, last)
    warn_journal(store.journal_label, read)
    emit(d, output, lambda: _diff_text(d))
