"""`tpufleet state migrate|push|pull`: a PostgreSQL state's schema, and a fleet moved between a state directory and
a database (tpufleet/state/transfer.py)."""

from pathlib import Path
from typing import Annotated, Any

import typer

from tpufleet.cli.app import Output, OutputOpt, command_group, examples
from tpufleet.cli.render import emit

state_app = command_group(
    "state", "Keep the fleet state in a PostgreSQL database: its schema, and moving a fleet in and out."
)


def _url(text: str, what: str) -> str:
    from tpufleet.errors import BadInput
    from tpufleet.state.dburl import redacted
    from tpufleet.state.store import is_database_url

    if not is_database_url(text):  # (a mistyped scheme's password is not shown either)
        raise BadInput(f"bad argument {what}: {redacted(text)[:80]!r} is not a postgresql:// URL")
    return text


def _directory(text: str) -> Path:
    from tpufleet.errors import BadInput
    from tpufleet.state.dburl import is_mistyped_url, redacted
    from tpufleet.state.paths import expanded
    from tpufleet.state.store import is_database_url

    if text == "" or is_database_url(text) or is_mistyped_url(text):
        raise BadInput(f"bad argument DIR: {redacted(text)[:80]!r} is not a state directory")
    if text == "-":  # as `--state -` is refused: `state pull URL -` made a state directory named '-'
        raise BadInput(
            "bad argument DIR '-': '-' is not standard input or output here; name a directory (for one so named: ./-)"
        )
    return expanded(text, "argument DIR")


def _in_order(command: str, directory: str, url: str) -> None:
    """BadInput when `state push DIR URL` or `state pull URL DIR` was given the URL where the directory goes and a
    directory where the URL goes: the arguments swapped, said with the command in order (password hidden)."""
    import shlex

    from tpufleet.errors import BadInput
    from tpufleet.state.dburl import redacted
    from tpufleet.state.store import is_database_url

    if is_database_url(directory) and not is_database_url(url):
        shown = [shlex.quote(url), shlex.quote(redacted(directory))]
        line = " ".join(shown if command == "push" else shown[::-1])
        order = "DIR URL" if command == "push" else "URL DIR"
        raise BadInput(
            f"bad arguments: `state {command}` takes {order}, given the other way round; run `tpufleet state {command} {line}`"
        )


def _moved_text(d: dict[str, Any]) -> str:
    from tpufleet.text import printable

    source, target = printable(d["from"]), printable(d["to"])  # a directory's name may hold a newline
    if not d["changed"]:
        return f"{target} already holds serial {d['serial']} of {source}: nothing to move"
    kept = d.get("damaged_kept")
    return (
        (
            f"moved serial {d['serial']} from {source} to {target}: {d['journal_lines']} journal line(s), "
            f"{len(d['tables'])} routing table(s)"
        )
        + (f"\n  the damaged state file it replaced is kept as {printable(kept)}" if kept else "")
        + (
            f"\n  the journal with damaged lines it replaced is kept as {printable(d['journal_kept'])}"
            if d.get("journal_kept")
            else ""
        )
    )


@state_app.command(
    "migrate",
    epilog=examples(
        "tpufleet state migrate postgresql://tpufleet_owner@db.example.com/tpufleet?sslmode=verify-full",
        "tpufleet --state postgresql://tpufleet@db/tpufleet state migrate",
    ),
)
def migrate_cmd(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Argument(metavar="URL", help="The database (default: --state)")] = None,
    output: OutputOpt = Output.table,
) -> None:
    """Create or upgrade tpufleet's tables in a PostgreSQL database (versioned; run it as the role owning them)."""
    from tpufleet.state import transfer
    from tpufleet.state.lock import command_line
    from tpufleet.state.store import resolve_state_dir

    target = url if url is not None else resolve_state_dir(ctx.obj.state)
    d = transfer.migrate(_url(str(target), "URL"), ctx.obj.lock_timeout, command_line())
    applied = ", ".join(map(str, d["applied"])) or "none needed"
    emit(d, output, lambda: f"{d['database']}: schema version {d['to_version']} (applied: {applied})")


@state_app.command(
    "push",
    epilog=examples("tpufleet state push ~/.tpufleet postgresql://alice@db.example.com/tpufleet?sslmode=require"),
)
def push_cmd(
    ctx: typer.Context,
    directory: Annotated[str, typer.Argument(metavar="DIR", help="The state directory to copy from")],
    url: Annotated[str, typer.Argument(metavar="URL", help="The database to copy into")],
    output: OutputOpt = Output.table,
) -> None:
    """Copy a state directory's fleet (state, journal, routing tables) into a database; refused when the database
    holds a newer serial or another history."""
    from tpufleet.state import transfer
    from tpufleet.state.lock import command_line

    _in_order("push", directory, url)
    d = transfer.push(_directory(directory), _url(url, "URL"), ctx.obj.lock_timeout, command_line())
    emit(d, output, lambda: _moved_text(d))


@state_app.command(
    "pull",
    epilog=examples("tpufleet state pull postgresql://alice@db.example.com/tpufleet ./fleet-copy"),
)
def pull_cmd(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(metavar="URL", help="The database to copy from")],
    directory: Annotated[str, typer.Argument(metavar="DIR", help="The state directory to copy into")],
    output: OutputOpt = Output.table,
) -> None:
    """Copy a database's fleet into a state directory (made if missing); refused when the directory holds a newer
    serial or another history."""
    from tpufleet.state import transfer
    from tpufleet.state.lock import command_line

    _in_order("pull", directory, url)
    d = transfer.pull(_url(url, "URL"), _directory(directory), ctx.obj.lock_timeout, command_line())
    emit(d, output, lambda: _moved_text(d))
